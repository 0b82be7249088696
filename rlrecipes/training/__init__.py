"""The training job: plan a run (`plan`: RunPlan, check_run, dry_run), run it (`job`: train),
continue it (`resume`), evaluate what it trained (`final_eval`). Above the recipes, the engine
and the evaluation. Import from the submodules: `job` imports TRL (and the optional vLLM), which
`rlrecipes train` defers until the command line has composed."""

"""LLM-as-a-judge: prompts, verdict parsing, preference pairs, rewards and judge metrics.

Pure modules (no model, no Typer) shared by `recipe=j1` (training a judge with verifiable
rewards, Whitehouse et al. 2025, arXiv 2505.10320), `rlrecipes judge-eval` (judging pair
files), `rlrecipes judge-pairs` (building pairs from graded samples) and `reward=judge`
(a trained judge as another recipe's reward).
"""

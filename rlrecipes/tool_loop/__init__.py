"""The multi-turn tool loop, below both the training engine and the evaluation: generate until a
tool's closing tag, run the tool, append its result (masked out of the loss), go on
(`rollout.py`); build that loop from a config's `rollout.*` settings (`build.py`); greedy
decoding through it for held-out accuracy, the toys' warm-start and `rlrecipes eval` (`greedy.py`).
The engine hands it to TRL as `rollout_func`; nothing here imports TRL."""

"""The paper's LLM-classifier prompts for the four behaviours on Countdown, verbatim from the
authors' code (kanishkg/cognitive-behaviors at 9c90d33, Apache-2.0:
behavioral_evals/gpt_api_eval.py l.313-335, CountdownAnalyzer.create_analysis_prompts), and
the reading of their answer (l.297-298: the first <count>N</count>, 0 when there is none).

The authors send each prompt to gpt-4o-mini (l.75) after the system message
"You are a helpful assistant that analyzes mathematical reasoning." (l.77), 512 new tokens at
most (l.80); `rlrecipes.rewards.behaviours` sends them to any model through the judge's
generation path, which adds no system message.
"""

from __future__ import annotations

import re

COUNT = re.compile(r"<count>(\d+)</count>")


def classifier_prompts(numbers: list[int], target: int, completion: str) -> list[str]:
    """The four prompts, in the order verification, backtracking, subgoal setting, backward chaining."""
    prompts = [
        # 1. Answer-verification steps
        "\n".join(
            [
                f"Here is a chain-of-reasoning that a Language Model generated while trying to play the game of CountDown with the numbers {numbers}. The goal is to reach the target number {target}. The chain-of-reasoning the model used is: {completion}. ",
                "Evaluate whether the chain-of-reasoning contains any answer-verification steps. An example of an answer-verification step is: 'This sequence results in 1, which is not equal to 22' and 'Since 25 is not equal to 22' for explicit verification and 'Too high!' or 'This works!' for implicit verification. We want to mark instances where the chain-of-reasoning explicitly checks the current result against the target number. ",
                "If you find any answer-verification steps, please count them and provide the count as between the tags <count> </count>. If the chain-of-reasoning does not contain any answer-verification steps, please provide a count of 0 as <count>0</count>.",
            ]
        ),
        # 2. Backtracking behavior
        "\n".join(
            [
                f"Here is a chain-of-reasoning that a Language Model generated while trying to play the game of CountDown with the numbers {numbers}. The goal is to reach the target number {target}. The chain-of-reasoning the model used is: {completion}.",
                "Evaluate whether the chain-of-reasoning contains any backtracking behavior, where the model realizes a path won't work and explicitly goes back to try a different approach. Due to the nature of the problem, any attempt at a new combination of numbers that does not directly use the result from the previous computation is considered backtracking. ",
                'For example, in the reasoning trace with numbers [20, 7, 11, 78] - "(78 - 20) - (11 - 7) = 58 - 4 = 54, (54 - 78) + 11 = -24 + 11 = -13, (-13 + 78) - 11 = 65 - 11 = 54, (78 - 58) + 11 = 20 + 11 = 31, (78 - 58) + (20 - 11) = 20 + 9 = 29, (78 - 20) + (11 - 7) = 58 + 4 = 62, (78 - 11) - (20 - 7) = 67 - 13 = 54, (78 - 20) + (11 / 7) = 58 + 1.5714 = 59.5714, (78 - 11) / (20 - 7) = 67 / 13 = 5, (78 - 20) + (11 + 7) = 58", there are 5 instances of backtracking to the initial numbers.',
                "Count the number of distinct backtracking instances and provide the count between the tags <count> </count>. If the chain-of-reasoning does not contain any backtracking behavior, please provide a count of 0 as <count>0</count>.",
            ]
        ),
        # 3. Subgoal setting
        "\n".join(
            [
                f"Here is a chain-of-reasoning that a Language Model generated while trying to play the game of CountDown with the numbers {numbers}. The goal is to reach the target number {target}. The chain-of-reasoning the model used is: {completion}.",
                f'Evaluate whether the chain-of-reasoning contains any explicit subgoal setting, where the model breaks down the problem into smaller, intermediate goals. An example of subgoal setting is: "First, I\'ll try to get close to {target // 2}, then...".',
                "Count the number of distinct subgoals set and provide the count between the tags <count> </count>. If the chain-of-reasoning does not contain any subgoal setting, please provide a count of 0 as <count>0</count>.",
            ]
        ),
        # 4. Backward-chaining
        "\n".join(
            [
                f"Here is a chain-of-reasoning that a Language Model generated while trying to play the game of CountDown with the numbers {numbers}. The goal is to reach the target number {target}. The chain-of-reasoning the model used is: {completion}.",
                'Evaluate whether the chain-of-reasoning contains any backward-chaining behavior, where the model starts from the target number and works backwards to the initial numbers. An example of backward-chaining when the target is 24 and the numbers are 12 and 2 is: "Let\'s work backwards from the target. 24/2 = 12. So, 12*2=24." and if the target is 22 and the numbers are 25 and 3 is: "Since the target is 22, and 22 + 3 = 25, ...".',
                "Count the number of distinct backward-chaining instances and provide the count between the tags <count> </count>. If the chain-of-reasoning does not contain any backward-chaining behavior, please provide a count of 0 as <count>0</count>.",
            ]
        ),
    ]
    return prompts


def parse_count(text: str) -> int:
    """The classifier's count (0 when its answer has no <count>N</count>, as the authors read it)."""
    found = COUNT.search(text)
    return int(found.group(1)) if found else 0

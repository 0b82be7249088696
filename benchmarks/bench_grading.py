"""Grading throughput: rlrecipes' GradingPool against single-process math-verify.

Records (benchkit.save_result; progress goes to stderr):

- ``math_verify_single_aps``: answers/s of plain math-verify in this process
  (``parse(gold)``, ``parse(response)``, ``verify``: its defaults, one item at a time);
- ``rlrecipes_single_aps``: answers/s of ``rlrecipes.grading.grade`` in this process;
- ``rlrecipes_pool_aps``: answers/s of ``GradingPool`` with ``--workers`` processes,
  all three on the *same* unique (response, gold) items, in the same run;
- ``ratio_pool_vs_math_verify`` (the issue's target: >= 1.8 on 2 cores) and
  ``ratio_pool_vs_rlrecipes_single`` (the pure multi-process speed-up);
- ``symbolic_*``: the same pool-vs-single comparison on pairs that only sympy can
  decide (no fast path), i.e. the pure multi-process speed-up on the expensive part;
- ``all_answers_wall_s``: grading ``--problems`` (500) problems x ``--samples`` (16)
  responses with a started pool, and ``pool_start_s``, the time to start that pool
  (reported separately: a training run starts its pool once).

- ``agreement_*``: extraction quality on *whole responses*: MATH-500's own worked
  solutions rewritten in the answer styles models use (the original ``\\boxed{}``,
  Minerva's "Final Answer: The final answer is X. I hope it is correct.", ``**Answer:** X``,
  "the answer is $X$", the box removed so the answer is the last expression, a
  ``####`` line, a draft box followed by a corrected answer line), each paired with its
  own gold (right) and with another problem's gold (wrong). ``agreement_rlrecipes`` and
  ``agreement_math_verify`` are the shares of verdicts that match those labels, for
  ``rlrecipes.grading.grade`` and for plain ``math_verify.parse`` + ``verify`` (its own
  extraction, default targets); ``agreement_ratio`` = rlrecipes / math-verify, per style
  in ``agreement_by_style``. ``--agreement-only`` runs just this part.

- ``cpu_parallelism_probe``: the speed-up ``--workers`` processes get on pure-Python
  work on this machine at this moment (2.0 on two idle cores): the ceiling for the
  symbolic ratio. On a machine shared with other jobs it drops, and ``load_average``
  records how busy the machine was.

Responses are synthetic: MATH-500 gold answers (from ``--data-dir`` when the file is
there, else built-in ones) written in equivalent and wrong forms inside CoT-like text,
with some responses lacking any answer, as a sampled eval produces them.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

from benchkit import parse_bench_args, save_result

MODES = {
    "full": {
        "items": 1200,
        "symbolic": 300,
        "workers": 2,
        "seed": 0,
        "problems": 500,
        "samples": 16,
        "vote_groups": 8,
        "agreement_limit": 0,
        "agreement_only": False,
    },
    "quick": {"items": 600, "symbolic": 150},
    "smoke": {"items": 40, "symbolic": 10, "problems": 20, "samples": 4, "vote_groups": 2, "agreement_limit": 30},
}
MATH500 = Path("math500") / "One-Shot-RLVR" / "test.jsonl"  # under --data-dir
_FALLBACK_GOLDS = [
    "25",
    "\\frac{1}{2}",
    "2\\sqrt{2}",
    "(3, \\frac{\\pi}{2})",
    "\\text{Evelyn}",
    "x^2+1",
    "[2, 5)",
    "\\{1, 2\\}",
    "0.75",
    "336^\\circ",
    "10\\%",
    "-4",
]
_FILLER = (
    "We first rewrite the expression and simplify both sides. Substituting the value "
    "into the equation gives a consistent system, so we can solve for the unknown. "
)


def _golds(data_dir: Path, n: int) -> list[str]:
    path = data_dir / MATH500
    if path.is_file():
        golds = [json.loads(line)["answer"] for line in path.read_text().splitlines() if line.strip()]
    else:
        golds = _FALLBACK_GOLDS
    return [golds[i % len(golds)] for i in range(n)]


def _variants(gold: str, rng: random.Random, others: list[str]) -> list[str]:
    """Equivalent and wrong ways of writing an answer."""
    from rlrecipes.grading import parse_answer

    a = parse_answer(gold)
    right = [gold, a.latex, f"x = {a.latex}" if "=" not in a.latex else a.latex]
    if a.value is not None:
        v = Fraction(a.value)
        right += [f"\\dfrac{{{v.numerator}}}{{{v.denominator}}}", f"{float(v):.10g}"]
        wrong = [str(v + 1), str(-v - 2)]
        if Fraction(v.numerator + 1, v.denominator + 2) != v:
            wrong.append(f"\\frac{{{v.numerator + 1}}}{{{v.denominator + 2}}}")
    else:
        right += [
            a.latex.replace("\\frac", "\\dfrac"),
            "\\left(" + a.latex[1:-1] + "\\right)"
            if a.latex.startswith("(") and a.latex.endswith(")")
            else a.latex + " ",
        ]
        wrong = [a.latex + "+1", "2" + a.latex if not a.is_text else "Bob", rng.choice(others)]
    return right, wrong


def make_items(golds: list[str], samples: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    items = []
    for gold in golds:
        right, wrong = _variants(gold, rng, golds)
        for _ in range(samples):
            text = _FILLER * rng.randint(2, 8)
            roll = rng.random()
            if roll < 0.1:  # truncated: no final answer
                items.append((text, gold))
                continue
            answer = rng.choice(right) if roll < 0.6 else rng.choice(wrong)
            items.append((text + f"Therefore the answer is $\\boxed{{{answer}}}$.", gold))
    return items


_STYLES = ("boxed", "minerva", "bold", "answer_is", "bare", "gsm8k", "corrected")


def _solutions(data_dir: Path) -> list[tuple[str, str]]:
    """(worked solution, gold) of MATH-500 whose solution ends in a box."""
    from rlrecipes.grading import last_boxed

    path = data_dir / MATH500
    if not path.is_file():
        raise SystemExit(f"agreement needs MATH-500 with solutions: {path} (pass --data-dir)")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["solution"], r["answer"]) for r in rows if last_boxed(r["solution"])]


def _restyle(solution: str, style: str, rng: random.Random) -> str:
    """The solution with its final answer written in ``style``."""
    from rlrecipes.grading.boxes import boxes

    start, end, content = boxes(solution)[-1]
    unboxed = solution[:start] + content + solution[end:]
    if style == "boxed":
        return solution
    if style == "minerva":
        return unboxed + f"\nFinal Answer: The final answer is ${content}$. I hope it is correct."
    if style == "bold":
        return unboxed + f"\n\n**Answer:** ${content}$"
    if style == "answer_is":
        return unboxed + f"\nSo the answer is ${content}$."
    if style == "bare":
        return unboxed
    if style == "gsm8k":
        return unboxed + f"\n#### {content}"
    # a draft answer boxed early, then corrected on a final answer line
    return (
        f"A first guess is $\\boxed{{{rng.randint(2, 99)}}}$, but let us check.\n"
        + unboxed
        + f"\nFinal Answer: ${content}$"
    )


def agreement_cases(data_dir: Path, seed: int, limit: int = 0) -> list[tuple[str, str, str, bool]]:
    """(style, response, gold, label): each solution (the first `limit`, 0 = all) restyled,
    with its gold and a wrong one."""
    from rlrecipes.grading import is_equivalent

    rng = random.Random(seed)
    pairs = _solutions(data_dir)[: limit or None]
    cases = []
    for i, (solution, gold) in enumerate(pairs):
        for style in rng.sample(_STYLES, 2):
            response = _restyle(solution, style, rng)
            other = pairs[(i + rng.randint(1, len(pairs) - 1)) % len(pairs)][1]
            cases.append((style, response, gold, True))
            if not is_equivalent(other, gold):  # another problem with the same answer is no negative
                cases.append((style, response, other, False))
    return cases


def _agreement_math_verify(cases: list) -> list[bool]:
    from math_verify import parse, verify

    return [bool(verify(parse("$" + gold + "$"), parse(response))) for _, response, gold, _ in cases]


def _agreement_rlrecipes(cases: list) -> list[bool]:
    from rlrecipes.grading import grade

    return [grade(response, gold) for _, response, gold, _ in cases]


def agreement(data_dir: Path, seed: int, limit: int = 0) -> dict:
    cases = agreement_cases(data_dir, seed, limit)
    ours, theirs = _agreement_rlrecipes(cases), _agreement_math_verify(cases)
    labels = [label for *_, label in cases]

    def share(verdicts: list[bool], keep: list[int]) -> float:
        return sum(verdicts[i] == labels[i] for i in keep) / len(keep)

    every = list(range(len(cases)))
    by_style = {}
    for style in _STYLES:
        keep = [i for i, c in enumerate(cases) if c[0] == style]
        by_style[style] = {
            "cases": len(keep),
            "rlrecipes": round(share(ours, keep), 3),
            "math_verify": round(share(theirs, keep), 3),
        }
    a_ours, a_theirs = share(ours, every), share(theirs, every)
    return {
        "agreement_cases": len(cases),
        "agreement_rlrecipes": round(a_ours, 4),
        "agreement_math_verify": round(a_theirs, 4),
        "agreement_ratio": round(a_ours / a_theirs, 3),
        "agreement_by_style": by_style,
    }


def _math_verify_single(items: list[tuple[str, str]]) -> float:
    from math_verify import parse, verify

    start = time.perf_counter()
    for response, gold in items:
        verify(parse("$" + gold + "$"), parse(response))
    return time.perf_counter() - start


def _rlrecipes_single(items: list[tuple[str, str]]) -> float:
    from rlrecipes.grading import grade

    start = time.perf_counter()
    for response, gold in items:
        grade(response, gold)
    return time.perf_counter() - start


def _burn(n: int) -> float:
    start, total = time.perf_counter(), 0
    for i in range(n):
        total += i * i
    return time.perf_counter() - start


def _cpu_parallelism(workers: int, n: int = 4_000_000) -> float:
    """How much faster ``workers`` processes finish ``workers`` units of pure-Python work
    than one process does them in turn: the ceiling for any process pool right now."""
    import multiprocessing as mp

    single = _burn(n) * workers
    with mp.get_context("spawn").Pool(workers) as pool:
        pool.map(_burn, [1000] * workers)  # start the processes first
        start = time.perf_counter()
        pool.map(_burn, [n] * workers)
        parallel = time.perf_counter() - start
    return single / parallel


def _symbolic_single(pairs: list[tuple[str, str]]) -> float:
    from rlrecipes.grading import is_equivalent

    start = time.perf_counter()
    for pred, gold in pairs:
        is_equivalent(pred, gold)
    return time.perf_counter() - start


def _symbolic_pairs(items: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """(answer, gold) pairs that only sympy can decide (no fast path applies)."""
    from rlrecipes.grading import answer_of, fast_verdict

    pairs = []
    for response, gold in items:
        answer = answer_of(response)
        if answer is not None and fast_verdict(answer, gold) is None and (answer, gold) not in pairs:
            pairs.append((answer, gold))
        if len(pairs) >= n:
            break
    return pairs


def _timed_fresh(fn_name: str, warmup: list, items: list) -> float:
    """Warm up, then time, in a fresh process: no sympy cache carried between contenders."""
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    from rlrecipes.grading.equivalence import WARMUP_PAIRS

    fn = globals()[fn_name]
    fn(
        list(WARMUP_PAIRS)
        if fn_name == "_symbolic_single"
        else warmup + [(f"$\\boxed{{{p}}}$", g) for p, g in WARMUP_PAIRS]
    )
    return fn(items)


def _vote_groups(golds: list[str], groups: int, size: int, seed: int) -> list[list[str]]:
    """Vote groups as a weak model produces them on hard problems: mostly distinct answers."""
    rng = random.Random(seed)
    return [[rng.choice(golds) for _ in range(size)] for _ in range(groups)]


def _timed_votes(groups: list[list[str]], fast_reject: bool) -> tuple[float, list]:
    """Seconds for TTRL-style majority votes (equivalence grouping), in a fresh process."""
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    import rlrecipes.grading.equivalence as equivalence
    from rlrecipes.grading.vote import majority_vote

    if not fast_reject:
        equivalence._clearly_different = lambda *args: False
    majority_vote(WARMUP_VOTES)
    start = time.perf_counter()
    winners = [majority_vote(group) for group in groups]
    return time.perf_counter() - start, winners


WARMUP_VOTES = ["\\frac{1}{2}", "\\sqrt{2}", "3\\pi", "(1, 2)"]


def _votes_in_fresh_process(groups: list[list[str]], fast_reject: bool) -> tuple[float, list]:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(_timed_votes, groups, fast_reject).result()


def _in_fresh_process(fn_name: str, warmup: list, items: list) -> float:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(_timed_fresh, fn_name, warmup, items).result()


def main() -> None:
    args = parse_bench_args(__file__, MODES, data_dir=True)
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    print("[bench] whole-response agreement", file=sys.stderr)
    agreed = agreement(args.data_dir, args.seed, args.agreement_limit)
    if args.agreement_only:
        save_result(args, agreed)
        return
    from rlrecipes.grading import GradingPool, grade_many

    items_all = make_items(_golds(args.data_dir, args.problems), args.samples, args.seed)
    unique = list(dict.fromkeys(items_all))
    random.Random(args.seed).shuffle(unique)
    warmup, ratio_items = unique[:60], unique[60 : 60 + args.items]

    print(f"[bench] {len(ratio_items)} unique items", file=sys.stderr)
    t_mv = _in_fresh_process("_math_verify_single", warmup, ratio_items)
    t_own = _in_fresh_process("_rlrecipes_single", warmup, ratio_items)
    with GradingPool(workers=args.workers) as pool:
        pool.start()
        pool.grade_many([r for r, _ in warmup], [g for _, g in warmup])
        start = time.perf_counter()
        pool.grade_many([r for r, _ in ratio_items], [g for _, g in ratio_items])
        t_pool = time.perf_counter() - start

    print("[bench] symbolic-only pairs", file=sys.stderr)
    symbolic = _symbolic_pairs(unique[60:], args.symbolic)
    t_sym_single = _in_fresh_process("_symbolic_single", [], symbolic)
    with GradingPool(workers=args.workers) as pool:
        pool.start()
        start = time.perf_counter()
        pool.equivalent_many([p for p, _ in symbolic], [g for _, g in symbolic])
        t_sym_pool = time.perf_counter() - start

    print("[bench] majority votes", file=sys.stderr)
    vote_groups = _vote_groups(_golds(args.data_dir, args.problems), args.vote_groups, 64, args.seed)
    t_votes_plain, winners_plain = _votes_in_fresh_process(vote_groups, fast_reject=False)
    t_votes_fast, winners_fast = _votes_in_fresh_process(vote_groups, fast_reject=True)

    probe = _cpu_parallelism(args.workers)

    print(f"[bench] {args.problems} x {args.samples}", file=sys.stderr)
    start = time.perf_counter()
    pool = GradingPool(workers=args.workers).start()
    t_start = time.perf_counter() - start
    start = time.perf_counter()
    verdicts = grade_many([r for r, _ in items_all], [g for _, g in items_all], pool=pool)
    t_all = time.perf_counter() - start
    pool.close()

    n = len(ratio_items)
    result = {
        "workers": args.workers,
        "ratio_items": n,
        "math_verify_single_aps": round(n / t_mv, 1),
        "rlrecipes_single_aps": round(n / t_own, 1),
        "rlrecipes_pool_aps": round(n / t_pool, 1),
        "ratio_pool_vs_math_verify": round(t_mv / t_pool, 2),
        "ratio_pool_vs_rlrecipes_single": round(t_own / t_pool, 2),
        "target_ratio": 1.8,
        "symbolic_items": len(symbolic),
        "symbolic_single_aps": round(len(symbolic) / t_sym_single, 1),
        "symbolic_pool_aps": round(len(symbolic) / t_sym_pool, 1),
        "symbolic_ratio_pool_vs_single": round(t_sym_single / t_sym_pool, 2),
        "golds": "math500" if (args.data_dir / MATH500).is_file() else "built-in",
        "vote_groups": f"{len(vote_groups)} x 64 answers (the golds, mostly distinct)",
        "vote_seconds_per_group_symbolic_only": round(t_votes_plain / len(vote_groups), 3),
        "vote_seconds_per_group": round(t_votes_fast / len(vote_groups), 3),
        "vote_ratio": round(t_votes_plain / t_votes_fast, 1),
        "vote_winners_agree": winners_plain == winners_fast,
        "cpu_parallelism_probe": round(probe, 2),
        "all_answers": f"{args.problems} problems x {args.samples} responses",
        "all_answers_wall_s": round(t_all, 2),
        "all_answers_accuracy": round(sum(verdicts) / len(verdicts), 3),
        "pool_start_s": round(t_start, 2),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **agreed,
    }
    save_result(args, result)


if __name__ == "__main__":
    main()

"""The grader's hard bounds cost nothing on ordinary answers.

Records (benchkit.save_result): answers/s of `rlrecipes.grading.grade` on ordinary whole responses
(MATH-500 golds written right and wrong, bench_grading's items) with the bounds of
issue 14 on (answers over `MAX_ANSWER_CHARS` compared as text, power towers and deep
nesting compared as text) and with them switched off, same items, same process, the
order alternated; `ratio_bounded_vs_unbounded` (1.0 = no cost). Also the seconds each
megabyte-sized degenerate response takes with the bounds (without them they took
minutes to hours, so they are not run unbounded).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grading import MATH500, _golds, make_items  # noqa: E402
from benchkit import parse_bench_args, save_result  # noqa: E402

MODES = {
    "full": {"items": 600, "pairs": 4},
    "quick": {"pairs": 2},
    "smoke": {"items": 40, "pairs": 2},
}


def _rate(items: list[tuple[str, str]]) -> float:
    from rlrecipes.grading import grade
    from rlrecipes.grading.normalize import parse_answer

    parse_answer.cache_clear()  # each pass parses afresh
    started = time.perf_counter()
    for response, gold in items:
        grade(response, gold)
    return len(items) / (time.perf_counter() - started)


def main() -> None:
    args = parse_bench_args(__file__, MODES, data_dir=True)
    import rlrecipes.grading.equivalence as equivalence
    import rlrecipes.grading.normalize as normalize

    items = make_items(_golds(args.data_dir, args.items // 4), 4, 0)
    _rate(items[:50])  # warm-up: imports, math-verify's first parse
    bounds = (normalize.MAX_ANSWER_CHARS, equivalence.MAX_ANSWER_CHARS, equivalence.explosive)

    def unbounded() -> float:
        normalize.MAX_ANSWER_CHARS = equivalence.MAX_ANSWER_CHARS = 10**12
        equivalence.explosive = lambda latex: False
        try:
            return _rate(items)
        finally:
            normalize.MAX_ANSWER_CHARS, equivalence.MAX_ANSWER_CHARS, equivalence.explosive = bounds

    on, off = [], []
    for i in range(args.pairs):  # the order alternates: later passes find warmer caches
        if i % 2:
            off.append(unbounded())
            on.append(_rate(items))
        else:
            on.append(_rate(items))
            off.append(unbounded())
    from rlrecipes.grading import grade

    megabyte = {
        "newline_run_in_box": "\\boxed{1" + "\n" * 1_000_000 + "1}",
        "unclosed_boxes": "\\boxed{" * 200_000,
        "million_digits": "1" * 1_000_000,
    }
    seconds = {}
    for name, text in megabyte.items():
        started = time.perf_counter()
        grade(text, "11")
        seconds[name] = round(time.perf_counter() - started, 2)
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    save_result(
        args,
        {
            "items": len(items),
            "golds": "math500" if (args.data_dir / MATH500).is_file() else "built-in",
            "bounded_aps": round(median(on), 1),
            "unbounded_aps": round(median(off), 1),
            "ratio_bounded_vs_unbounded": round(median(on) / median(off), 3),
            "megabyte_seconds_bounded": seconds,
        },
    )


if __name__ == "__main__":
    main()

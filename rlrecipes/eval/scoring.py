"""Grade sample records and turn them into a benchmark's metrics.

Per benchmark (n samples per problem, k in the protocol's ks, k <= n):

- ``pass@1``: mean over problems of c/n (greedy accuracy when n = 1);
- ``avg@n`` (n > 1): the same number under the papers' name;
- ``pass@k``: Chen et al.'s unbiased estimator, averaged over problems;
- ``maj@k`` (k > 1): majority vote over the first k extracted answers, grouped by
  equivalence (``rlrecipes.metrics.vote_groups``); a group is right when its first
  sample is right; ties by the protocol's ``maj_ties`` (``first`` | ``fractional``,
  ``rlrecipes.metrics.vote_score``), named in the metrics as ``maj_ties``;
- ``by_subject`` / ``by_level``: ``pass@1`` and counts per group, where the benchmark has them;
- ``mean_completion_tokens`` (or ``mean_completion_chars`` when token counts are unknown),
  ``truncated_fraction`` (stopped by the token limit), ``no_answer_fraction``,
  ``ambiguous_answer_fraction`` (several different boxed answers);
- ``tools`` (with ``rollout.tools``): what training logs each step as ``tools/*``
  (``rlrecipes.tool_loop.rollout.rollout_metrics``): tool calls and turns per problem,
  tool error rate, invalid-action rate, answer rate, share of completion tokens that are
  tool output, void-turn rate; over every completion of the benchmark.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Sequence

from rlrecipes.eval.samples import ProblemRecord
from rlrecipes.grading import DEFAULT_REL_TOL, GradingPool, extract, is_equivalent
from rlrecipes.grading.vote import vote_groups
from rlrecipes.metrics import default_ks, pass_at_k, vote_score
from rlrecipes.tool_loop.rollout import STAT_KEYS, rollout_metrics


def extract_records(records: Sequence[ProblemRecord], style: str) -> None:
    """Fill ``answers`` and ``answer_status`` from the completions (style ``none``: each
    completion is itself the answer)."""
    for rec in records:
        found = [extract(c, style) for c in rec.completions]
        rec.answers = [f.answer for f in found]
        rec.answer_status = [f.status for f in found]


def grade_records(
    records: Sequence[ProblemRecord],
    style: str | None,
    *,
    verify: Callable[[str, str], bool] | None = None,
    pool: GradingPool | None = None,
    timeout_s: int = 3,
    rel_tol: float = DEFAULT_REL_TOL,
) -> None:
    """Fill ``answers``, ``answer_status`` and ``correct`` of each record in place.

    ``style`` None: the records already hold their answers (pre-extracted, e.g. a
    generations file's ``answers``); they are graded as they are.
    """
    if style is not None:
        extract_records(records, style)
    else:
        for rec in records:
            rec.answer_status = ["none" if a is None or not str(a).strip() else "ok" for a in rec.answers]
    if verify is not None:  # synthetic tasks: the task's own checker
        for rec in records:
            rec.correct = [bool(verify(c, rec.gold)) for c in rec.completions]
        return
    answers = [a for rec in records for a in rec.answers]
    golds = [rec.gold for rec in records for _ in rec.answers]
    if pool is not None:
        verdicts = pool.equivalent_many(answers, golds)
    else:  # in this process (answers are already extracted: compare them as they are)
        cache: dict[tuple, bool] = {}
        for pair in zip(answers, golds):
            if pair not in cache:
                cache[pair] = is_equivalent(*pair, timeout_s=timeout_s, rel_tol=rel_tol)
        verdicts = [cache[pair] for pair in zip(answers, golds)]
    pos = 0
    for rec in records:
        rec.correct = verdicts[pos : pos + len(rec.answers)]
        pos += len(rec.answers)


def _votes(
    records: Sequence[ProblemRecord],
    ks: Sequence[int],
    pool: GradingPool | None,
    ties: str,
    timeout_s: int,
    rel_tol: float,
) -> dict[int, list[float]]:
    lists = [(k, rec) for k in ks for rec in records]
    answer_lists = [rec.answers[:k] for k, rec in lists]

    def eq(a: str, b: str) -> bool:
        return is_equivalent(a, b, timeout_s=timeout_s, rel_tol=rel_tol)

    groups = pool.vote_many(answer_lists) if pool is not None else [vote_groups(a, equivalent=eq) for a in answer_lists]
    out: dict[int, list[float]] = defaultdict(list)
    for (k, rec), found in zip(lists, groups):
        # a group's answer is right when its first member (the representative) was graded right
        out[k].append(vote_score(found, lambda rep, rec=rec: rec.correct[rec.answers.index(rep)], ties))
    return out


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _breakdown(records: Sequence[ProblemRecord], attr: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        key = getattr(rec, attr)
        if key is not None:
            groups[str(key)].append(sum(rec.correct) / len(rec.correct))
    return {
        k: {"problems": len(v), "pass@1": round(_mean(v) or 0.0, 6)}
        for k, v in sorted(groups.items(), key=lambda kv: _natural(kv[0]))
    }


def _natural(key: str) -> tuple:
    return (0, int(key), "") if key.isdigit() else (1, 0, key)


def compute_metrics(
    records: Sequence[ProblemRecord],
    requested_ks: Sequence[int] = (),
    pool: GradingPool | None = None,
    ties: str = "first",
    *,
    timeout_s: int = 3,
    rel_tol: float = DEFAULT_REL_TOL,
) -> dict[str, Any]:
    """Every metric of one benchmark from its graded records."""
    if not records:
        return {"problems": 0}
    n = min(len(r.correct) for r in records)
    per_problem = [sum(r.correct) / len(r.correct) for r in records]
    m: dict[str, Any] = {
        "problems": len(records),
        "samples_per_problem": n,
        "pass@1": round(_mean(per_problem) or 0.0, 6),
    }
    most = max(len(r.correct) for r in records)
    if most != n:  # uneven sample counts: every k-metric uses k <= the smallest count
        m["samples_per_problem_max"] = most
    too_large = sorted(k for k in requested_ks if k > n)
    if too_large:
        m["ks_not_reported"] = too_large  # requested k above the samples per problem
    if n > 1:
        m[f"avg@{n}"] = m["pass@1"]
    ks = default_ks(n, requested_ks)
    for k in ks:
        if k > 1:
            m[f"pass@{k}"] = round(_mean([pass_at_k(len(r.correct), sum(r.correct), k) for r in records]) or 0.0, 6)
    votes = _votes(records, [k for k in ks if k > 1], pool, ties, timeout_s, rel_tol)
    for k, scores in sorted(votes.items()):
        m[f"maj@{k}"] = round(_mean(scores) or 0.0, 6)
    if votes:
        m["maj_ties"] = ties  # which tie rule produced the maj@k numbers
    samples = [
        (c, t, f, a)
        for r in records
        for c, t, f, a in zip(
            r.completions,
            r.num_tokens or [None] * len(r.completions),
            r.finish_reasons or [None] * len(r.completions),
            r.answers,
        )
    ]
    tokens = [t for _, t, _, _ in samples if t is not None]
    if tokens:
        m["mean_completion_tokens"] = round(_mean(tokens) or 0.0, 2)
    else:
        m["mean_completion_chars"] = round(_mean([len(c) for c, _, _, _ in samples]) or 0.0, 2)
    m["truncated_fraction"] = round(sum(f == "length" for _, _, f, _ in samples) / len(samples), 6)
    m["no_answer_fraction"] = round(sum(a is None for _, _, _, a in samples) / len(samples), 6)
    statuses = [st for r in records for st in r.answer_status]
    if statuses:
        m["ambiguous_answer_fraction"] = round(statuses.count("ambiguous") / len(statuses), 6)
    for attr in ("subject", "level"):
        groups = _breakdown(records, attr)
        if groups:
            m[f"by_{attr}"] = groups
    tools = tool_metrics(records)
    if tools is not None:
        m["tools"] = tools
    return m


def tool_metrics(records: Sequence[ProblemRecord]) -> dict[str, float] | None:
    """The tool loop's metrics over every completion of `records`, by the function training
    logs them with (names without its ``tools/`` prefix); None when no record used tools."""
    stats = [s for r in records for s in r.tool_stats or []]
    if not stats:
        return None
    total = {key: sum(s[key] for s in stats) for key in STAT_KEYS}
    return {name.removeprefix("tools/"): round(value, 6) for name, value in rollout_metrics(total).items()}


def headline(metrics: dict[str, Any]) -> tuple[str, float | None]:
    """The number a paper would quote: avg@n when sampled, pass@1 when greedy."""
    n = metrics.get("samples_per_problem", 1)
    key = f"avg@{n}" if n > 1 else "pass@1"
    return key, metrics.get(key)

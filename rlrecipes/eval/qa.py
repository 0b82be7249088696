"""Search-R1's question-answering benchmarks (Jin et al. 2025, arXiv 2503.09516, main results table).

The seven test sets its evaluation reads, each from FlashRAG's hub copy
(`RUC-NLPIR/FlashRAG_datasets`, one config per set) with the split Search-R1 takes: `test`
where the set has one, else `dev` (scripts/data_process/qa_search_test_merge.py:57-69 in
PeterGriffinJin/Search-R1 @ a14dc3a). A row is `{id, question, golden_answers: [...]}`; every
alias is kept (gold_from="answer_list") and a completion is right when the last
`<answer>` it wrote matches one after SQuAD normalisation: the recipe's exact match
(`rlrecipes.grading.exact_match`, the authors' qa_em.py), not maths equivalence.
"""

from __future__ import annotations

from rlrecipes.eval.items import BenchmarkSpec
from rlrecipes.grading.exact_match import exact_match

FLASHRAG = "RUC-NLPIR/FlashRAG_datasets"


def qa_exact_match(completion: str, gold: str) -> bool:
    """Exact match of the completion's last `<answer>` against the item's gold aliases (a JSON list)."""
    return exact_match(completion, gold)


def _qa(name: str, config: str, split: str, size: int, description: str) -> BenchmarkSpec:
    return BenchmarkSpec(
        name,
        FLASHRAG,
        split,
        size,
        hub_config=config,
        answer_style="none",  # graded by `verify` on the whole completion; no maths answer to extract
        local_files=(f"{name}/FlashRAG/{split}.jsonl", f"{name}/FlashRAG/{split}.parquet"),
        problem_fields=("question",),
        gold_fields=("golden_answers",),
        gold_from="answer_list",
        id_fields=("id",),
        verify=qa_exact_match,
        template="search_r1",
        max_new_tokens=3584,  # the whole tool rollout: turns and passages (conf/protocol/search_r1.yaml)
        description=description,
    )


# Sizes: the rows of each FlashRAG split (a sanity note, not enforced).
QA_BENCHMARKS = (
    _qa("nq", "nq", "test", 3610, "Natural Questions (general QA)"),
    _qa("triviaqa", "triviaqa", "test", 11313, "TriviaQA (general QA)"),
    _qa("popqa", "popqa", "test", 14267, "PopQA (general QA, long-tail entities)"),
    _qa("hotpotqa", "hotpotqa", "dev", 7405, "HotpotQA (multi-hop QA)"),
    _qa("twowiki", "2wikimultihopqa", "dev", 12576, "2WikiMultiHopQA (multi-hop QA; FlashRAG's 2wikimultihopqa)"),
    _qa("musique", "musique", "dev", 2417, "MuSiQue (multi-hop QA)"),
    _qa("bamboogle", "bamboogle", "test", 125, "Bamboogle (multi-hop QA)"),
)

"""The multi-turn tool rollout: an engine capability any recipe switches on with `rollout.tools`.

One rollout (Search-R1's loop, `search_r1/llm_agent/generation.py:run_llm_loop`, rebuilt in
token space): the model generates until a tool's closing tag; the tool runs on the text
between its tags; its result, wrapped (`<information>...</information>`) and cut to
`rollout.max_tool_result_tokens`, is appended; generation continues, until an answer
(`</answer>`), EOS, `rollout.max_turns` tool turns or the completion budget
(`trainer.max_completion_length`, model and tool tokens together); then one final turn
without tools. A turn samples at most `rollout.max_turn_tokens` of that budget (Search-R1's
`data.max_response_length=500`, the vLLM `max_tokens` of each of its calls; SimpleTIR's 8000
per turn within 16000). A result longer than `rollout.max_tool_result_chars` characters keeps
its first and last halves around a note before the token cut (SimpleTIR's `truncate_content`,
ltzheng/SimpleTIR recipe/simpletir/agent_utils.py:19-29, applied at :630 and :637-639).

A tool turn that ends with neither a complete tool call nor an answer (EOS or its token cap
came first, or a closing tag had no opening one) ends the rollout, as SimpleTIR stops such a
trajectory (agent_utils.py:594-598); with `rollout.invalid_action_note` set, that text is
appended instead, masked like a tool result, and the rollout goes on to its next turn, as
Search-R1 does (PeterGriffinJin/Search-R1 search_r1/llm_agent/generation.py:395-401: the
"My previous action is invalid..." observation, the trajectory left active). The EOS such a
turn sampled is not kept there: Search-R1 re-tokenises each turn's text decoded without
special tokens (generation.py:56-59, 74), so the context goes on after the turn's text.

A *void turn* (SimpleTIR, ltzheng/SimpleTIR recipe/simpletir/agent_utils.py:594-604) ends
with neither a complete tool call nor an answer: EOS or the budget came first, or a closing
tag had no opening one. An answer is the `answer_close` tag or, where set, `answer_mark` in
a turn that ended at EOS or the budget (SimpleTIR's `\\boxed{`, agent_utils.py:573). With
`void_turn_masking` a trajectory holding a void turn keeps its reward (it still counts in
its group's mean and std) but its whole completion is out of the loss, as SimpleTIR
multiplies its loss mask by `void_turn_mask` (simpletir_ray_trainer.py:1162-1165).

What the rest of the engine relies on:
- kept tokens are exactly what was sampled: each turn is cut at its first stop tag in
  *token* space (the shortest sampled prefix whose text holds the tag), never re-tokenised;
- `env_mask` is 0 on every token the model did not sample (tool results, and the EOS put
  after an answer so TRL sees the rollout as finished, not truncated); TRL multiplies it
  into the loss mask, so these tokens are out of the policy loss, the KL term and the vLLM
  importance ratio, yet stay in the context. Their sampling log-probs are NaN, which TRL and
  `vllm/logprob_gap` read as "no log-prob" and leave out;
- `model_text` is the text of the model's own tokens only; the trainer scores rewards on it,
  so an answer that appears only inside a tool result earns nothing;
- every process makes the same number of `generate` calls with the same number of rows
  (vLLM server mode gathers prompts from all of them): a process with fewer unfinished
  rows pads with copies of its first prompt, whose outputs are dropped.

Generation is a function `generate(prompt_ids, max_new_tokens) -> (ids, logprobs or None)`;
`trainer_generate` binds it to TRL's `_generate_single_turn` (transformers, paged, vLLM
colocate and server alike); tests pass a scripted one.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from rlrecipes.tools import ToolSpec, call_tool

Generate = Callable[[list[list[int]], int], tuple[list[list[int]], "list[list[float]] | None"]]
Sync = Callable[[int, int], tuple[int, int]]  # (local count, local budget) -> global maxima

MODEL, TOOL, FILLER = 1, 0, 2  # who wrote a completion token
NAN = float("nan")


@dataclass(frozen=True)
class ToolRolloutSettings:
    max_turns: int = 2  # turns in which tools run; one more, without tools, follows
    max_completion_tokens: int = 512  # model and tool tokens together
    max_result_tokens: int = 500  # per tool result (Search-R1's max_obs_length)
    timeout_s: float = 10.0
    answer_close: str = "</answer>"
    mask_tool_output: bool = True  # False: the masking ablation (tool tokens trained on)
    void_turn_masking: bool = False  # True: a trajectory with a void turn gets no gradient
    answer_mark: str = ""  # text that makes a turn ending at EOS or the budget an answer
    max_turn_tokens: int | None = None  # new tokens per turn; None: what is left of the budget
    max_result_chars: int | None = None  # characters per tool result before the token cut
    invalid_action_note: str | None = None  # None: an invalid tool turn ends the rollout; text: appended, go on


@dataclass
class Trajectory:
    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)
    origin: list[int] = field(default_factory=list)  # MODEL / TOOL / FILLER per token of `ids`
    logprobs: list[float] | None = field(default_factory=list)
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    invalid_actions: int = 0
    void_turns: int = 0  # turns with neither a complete tool call nor an answer
    answered: bool = False
    done: bool = False

    def env_mask(self, mask_tool_output: bool = True, void_turn_masking: bool = False) -> list[int]:
        if void_turn_masking and self.void_turns:
            return [0] * len(self.origin)  # SimpleTIR: the whole trajectory out of the loss
        if not mask_tool_output:
            return [0 if o == FILLER else 1 for o in self.origin]
        return [1 if o == MODEL else 0 for o in self.origin]

    def append(self, ids: Sequence[int], origin: int, logprobs: Sequence[float] | None = None) -> None:
        self.ids.extend(ids)
        self.origin.extend([origin] * len(ids))
        if self.logprobs is not None:
            self.logprobs.extend(logprobs if logprobs is not None else [NAN] * len(ids))


@dataclass(frozen=True)
class Stop:
    end: int  # character index just past the stop tag
    tool: ToolSpec | None  # None: the answer's closing tag
    query: str | None  # the text between the tool's tags; None: a closing tag without an opening one


def find_stop(text: str, tools: Sequence[ToolSpec], answer_close: str) -> Stop | None:
    """The earliest-ending stop in `text`: a tool's closing tag (after its opening tag, if any)
    or the answer's closing tag."""
    best: Stop | None = None
    at = text.find(answer_close) if answer_close else -1
    if at >= 0:
        best = Stop(at + len(answer_close), None, None)
    for tool in tools:
        opened = text.find(tool.open)
        if opened < 0 and tool.close in tool.open:
            # a markdown fence: a lone "```" may be the start of the opening one ("```python"),
            # so it is no stray closing tag; the call is the text between the fences
            continue
        start = opened + len(tool.open) if opened >= 0 else 0
        closed = text.find(tool.close, start)
        if closed >= 0 and (best is None or closed + len(tool.close) < best.end):
            best = Stop(closed + len(tool.close), tool, text[start:closed] if opened >= 0 else None)
    return best


class ToolRollout:
    def __init__(
        self,
        tools: Sequence[ToolSpec],
        settings: ToolRolloutSettings,
        tokenizer: Any,
        eos_ids: Sequence[int] | None = None,  # None: the trainer's (TRL's eos_token_ids) at the first call
    ):
        self.tools, self.settings, self.tokenizer = list(tools), settings, tokenizer
        self.eos_ids = set(eos_ids) if eos_ids is not None else {tokenizer.eos_token_id} - {None}
        self.filler_eos = tokenizer.eos_token_id

    # ------------------------------------------------------------------ the loop
    def run(self, prompt_ids: list[list[int]], generate: Generate, sync: Sync | None = None) -> list[Trajectory]:
        rows = [Trajectory(list(p)) for p in prompt_ids]
        for turn in range(self.settings.max_turns + 1):
            tools = self.tools if turn < self.settings.max_turns else []
            active = [r for r in rows if not r.done]
            need = max((self.turn_room(r) for r in active), default=0)
            count, need = sync(len(active), need) if sync else (len(active), need)
            if count == 0:
                break
            inputs = [r.prompt_ids + r.ids for r in active]
            inputs += [rows[0].prompt_ids] * (count - len(active))  # same row count on every process
            sampled, logprobs = generate(inputs, max(need, 1))
            for i, row in enumerate(active):
                self._take_turn(row, list(sampled[i]), None if logprobs is None else list(logprobs[i]), tools)
        return rows

    def turn_room(self, row: Trajectory) -> int:
        """New tokens `row`'s next turn may sample: what is left of the completion budget, at
        most `max_turn_tokens`."""
        left = self.settings.max_completion_tokens - len(row.ids)
        cap = self.settings.max_turn_tokens
        return left if cap is None else min(cap, left)

    def _take_turn(self, row: Trajectory, ids: list[int], logprobs: list[float] | None, tools: list[ToolSpec]) -> None:
        row.turns += 1
        if logprobs is None:
            row.logprobs = None
        room = self.turn_room(row)
        ids = ids[:room]
        eos_at = next((i for i, t in enumerate(ids) if t in self.eos_ids), None)
        body = ids if eos_at is None else ids[:eos_at]
        cut, stop = self._cut(body, tools)
        if stop is None:  # EOS, the turn's or the whole budget, or no stop tag at all
            mark = self.settings.answer_mark
            if mark and mark in self._decode(body):  # e.g. "\boxed{": an answer with no closing tag
                self._end_turn(row, ids, eos_at, logprobs)
                row.answered = True
                return
            row.invalid_actions += 1  # ended without an answer or a tool call
            row.void_turns += 1
            if self._notes(tools):  # Search-R1: the note (none once the budget is spent), then the next turn
                row.append(body, MODEL, None if logprobs is None else logprobs[: len(body)])
                self._append_note(row)
                return
            self._end_turn(row, ids, eos_at, logprobs)  # the rollout ends here
            return
        row.append(body[:cut], MODEL, None if logprobs is None else logprobs[:cut])
        if stop.tool is None:  # the answer is complete
            row.answered = row.done = True
            if cut < len(ids) and ids[cut] in self.eos_ids:  # the model's own EOS: sampled, so kept
                row.append(ids[cut : cut + 1], MODEL, None if logprobs is None else logprobs[cut : cut + 1])
            elif len(row.ids) < self.settings.max_completion_tokens and self.filler_eos is not None:
                row.append([self.filler_eos], FILLER)
            return
        if stop.query is None:  # a closing tag without its opening tag: say so, count it, go on
            row.invalid_actions += 1
            row.void_turns += 1
            if self._notes(tools):  # Search-R1's regex finds no <search>...</search>: its note
                self._append_note(row)
            else:
                self._append_result(row, stop.tool, f"error: {stop.tool.close} without {stop.tool.open}")
            return
        result = call_tool(stop.tool, stop.query, self.settings.timeout_s)
        row.tool_calls += 1
        row.tool_errors += int(result.error)
        self._append_result(row, stop.tool, result.text)

    def _cut(self, ids: list[int], tools: list[ToolSpec]) -> tuple[int, Stop | None]:
        """The shortest prefix of `ids` whose text holds a stop tag (its length and the stop),
        by bisection over prefix lengths: a prefix's text only grows with its length."""
        decode = self._decode
        if find_stop(decode(ids), tools, self.settings.answer_close) is None:
            return len(ids), None
        low, high = 1, len(ids)  # invariant: ids[:high] holds a stop
        while low < high:
            mid = (low + high) // 2
            if find_stop(decode(ids[:mid]), tools, self.settings.answer_close) is None:
                low = mid + 1
            else:
                high = mid
        return high, find_stop(decode(ids[:high]), tools, self.settings.answer_close)

    def _end_turn(self, row: Trajectory, ids: list[int], eos_at: int | None, logprobs: list[float] | None) -> None:
        """Keep the turn's tokens up to and with its EOS, and end the rollout."""
        kept = ids if eos_at is None else ids[: eos_at + 1]
        row.append(kept, MODEL, None if logprobs is None else logprobs[: len(kept)])
        row.done = True

    def _notes(self, tools: list[ToolSpec]) -> bool:
        """Whether an invalid turn gets the note: set, and a tool turn (not the final one)."""
        return self.settings.invalid_action_note is not None and bool(tools)

    def _append_note(self, row: Trajectory) -> None:
        """The invalid-action note, cut as a tool result is (Search-R1 cuts every observation to
        max_obs_length, generation.py:87-89) and to the budget."""
        note = self._encode(str(self.settings.invalid_action_note))[: self.settings.max_result_tokens]
        self._append_tokens(row, note)

    def _append_result(self, row: Trajectory, tool: ToolSpec, text: str) -> None:
        """The wrapped result, its text cut to `max_result_chars` characters, then to
        `max_result_tokens` tokens, and the whole to the budget."""
        before, _, after = tool.wrap.partition("{}")
        content = self._encode(cap_chars(text, self.settings.max_result_chars))[: self.settings.max_result_tokens]
        self._append_tokens(row, self._encode(before) + content + self._encode(after))

    def _append_tokens(self, row: Trajectory, tokens: list[int]) -> None:
        left = self.settings.max_completion_tokens - len(row.ids)
        row.append(tokens[:left], TOOL)
        if len(tokens) >= left:
            row.done = True  # the budget is spent

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    # -------------------------------------------------------------- for TRL
    def model_text(self, row: Trajectory) -> str:
        """The model's own tokens as text, each run of them decoded on its own."""
        runs, current = [], []
        for token, origin in zip(row.ids, row.origin):
            if origin == MODEL:
                current.append(token)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        return "".join(self._decode(run) for run in runs)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """TRL's `rollout_func(prompts, trainer)`."""
        self.eos_ids |= set(getattr(trainer, "eos_token_ids", None) or ())
        prompt_ids, _, _ = trainer._tokenize_prompts(prompts)
        rows = self.run(prompt_ids, trainer_generate(trainer), trainer_sync(trainer))
        log_rollout_metrics(trainer, rollout_stats(rows))
        logprobs = None if any(r.logprobs is None for r in rows) else [r.logprobs for r in rows]
        return {
            "prompt_ids": [r.prompt_ids for r in rows],
            "completion_ids": [r.ids for r in rows],
            "logprobs": logprobs,
            "env_mask": [r.env_mask(self.settings.mask_tool_output, self.settings.void_turn_masking) for r in rows],
            "model_text": [self.model_text(r) for r in rows],
            "tool_calls": [r.tool_calls for r in rows],
        }


def cap_chars(text: str, limit: int | None) -> str:
    """`text`, or past `limit` characters its first and last halves around a note, as
    SimpleTIR's `truncate_content` writes it (agent_utils.py:19-29; `-limit // 2` is
    `(-limit) // 2`, as there)."""
    if limit is None or len(text) <= limit:
        return text
    note = f"\n..._This content has been truncated to stay below {limit} characters_...\n"
    return text[: limit // 2] + note + text[-limit // 2 :]


def model_written(inputs: Sequence[dict[str, Any]], completions: list[Any]) -> list[Any]:
    """The texts rewards score: each row's `model_text` after a tool rollout, else TRL's completions."""
    if inputs and "model_text" in inputs[0]:
        return [row["model_text"] for row in inputs]
    return completions


# ---------------------------------------------------------------------------- TRL binding
@contextmanager
def turn_budget(trainer: Any, max_new_tokens: int) -> Iterator[None]:
    """TRL generates `max_completion_length` tokens per call; one turn may use only what is left."""
    saved = []
    targets = [(getattr(trainer, "generation_config", None), "max_new_tokens")]
    targets.append((getattr(trainer, "vllm_generation", None), "max_completion_length"))
    for obj, name in targets:
        if obj is not None and hasattr(obj, name):
            saved.append((obj, name, getattr(obj, name)))
            setattr(obj, name, max_new_tokens)
    kwargs = getattr(trainer, "generation_kwargs", None)
    old_kwarg = kwargs.get("max_new_tokens") if isinstance(kwargs, dict) else None
    if isinstance(kwargs, dict) and "max_new_tokens" in kwargs:
        kwargs["max_new_tokens"] = max_new_tokens
    try:
        yield
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)
        if isinstance(kwargs, dict) and old_kwarg is not None:
            kwargs["max_new_tokens"] = old_kwarg


def trainer_generate(trainer: Any) -> Generate:
    def generate(prompt_ids: list[list[int]], max_new_tokens: int):
        with turn_budget(trainer, max_new_tokens):
            return trainer._generate_single_turn(prompt_ids, None, {}, 1)

    return generate


def trainer_sync(trainer: Any) -> Sync | None:
    """Maxima over processes of the unfinished-row count and the token budget (one all-gather)."""
    if trainer.accelerator.num_processes == 1:
        return None
    import torch

    def sync(count: int, budget: int) -> tuple[int, int]:
        local = torch.tensor([[count, budget]], device=trainer.accelerator.device)
        both = trainer.accelerator.gather(local).max(dim=0).values
        return int(both[0]), int(both[1])

    return sync


# ------------------------------------------------------------------------------ metrics
STAT_KEYS = ("rollouts", "turns", "calls", "errors", "invalid", "answered", "tool_tokens", "tokens", "void")


def rollout_stats(rows: Sequence[Trajectory]) -> dict[str, int]:
    """Sums over this process's rollouts (summed again over processes before the ratios)."""
    return {
        "rollouts": len(rows),
        "turns": sum(r.turns for r in rows),
        "calls": sum(r.tool_calls for r in rows),
        "errors": sum(r.tool_errors for r in rows),
        "invalid": sum(r.invalid_actions for r in rows),
        "answered": sum(r.answered for r in rows),
        "tool_tokens": sum(o == TOOL for r in rows for o in r.origin),
        "tokens": sum(len(r.ids) for r in rows),
        "void": sum(r.void_turns > 0 for r in rows),  # trajectories, as SimpleTIR's env/void_turn_ratio
    }


def rollout_metrics(stats: dict[str, int]) -> dict[str, float]:
    def share(num: int, den: int) -> float:
        return num / den if den else 0.0

    return {
        "tools/calls_per_rollout": share(stats["calls"], stats["rollouts"]),
        "tools/error_rate": share(stats["errors"], stats["calls"]),
        "tools/invalid_action_rate": share(stats["invalid"], stats["turns"]),
        "tools/turns": share(stats["turns"], stats["rollouts"]),
        "tools/answer_rate": share(stats["answered"], stats["rollouts"]),
        "tools/tool_token_share": share(stats["tool_tokens"], stats["tokens"]),
        "tools/void_turn_rate": share(stats["void"], stats["rollouts"]),
    }


def log_rollout_metrics(trainer: Any, stats: dict[str, int]) -> None:
    if trainer.accelerator.num_processes > 1:
        import torch

        local = torch.tensor([[stats[k] for k in STAT_KEYS]], device=trainer.accelerator.device)
        total = trainer.accelerator.gather(local).sum(dim=0).tolist()
        stats = dict(zip(STAT_KEYS, (int(v) for v in total)))
    for name, value in rollout_metrics(stats).items():
        trainer.log_metric(name, value)

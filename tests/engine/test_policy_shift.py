"""policy_shift: the step's KL(before ‖ after) on its own micro-batch (engine/policy_shift.py)."""

import contextlib
import math

import pytest
import torch

from rlrecipes.engine.policy_shift import PolicyShift, k3_kl, probed_rows, rows_of


def test_k3_is_the_mean_of_r_minus_1_minus_log_r_over_the_counted_tokens():
    before = torch.log(torch.tensor([[0.5, 0.25, 0.9]], dtype=torch.float64))
    after = torch.log(torch.tensor([[0.25, 0.5, 0.01]], dtype=torch.float64))
    # r = 1/2: 1/2 - 1 + ln 2; r = 2: 2 - 1 - ln 2; their mean is exactly 1/4 (the third token is masked)
    assert k3_kl(before, after, torch.tensor([[1, 1, 0]])) == pytest.approx(0.25, rel=1e-12)
    assert k3_kl(before, after, torch.tensor([[1, 0, 0]])) == pytest.approx(math.log(2) - 0.5, rel=1e-12)
    assert k3_kl(before, after, torch.zeros(1, 3)) is None


def test_k3_of_a_tiny_step_keeps_its_digits():
    # log r = 1e-9: (r - 1) - log r = x²/2 = 5e-19; exp(x) - 1, even in float64, is off by ~1e-16
    before = torch.zeros(1, 1, dtype=torch.float64)
    assert k3_kl(before, before + 1e-9, torch.ones(1, 1)) == pytest.approx(
        5e-19, rel=1e-6, abs=0
    )  # approx allows 1e-12 by default


@pytest.mark.parametrize("every, probed", [(1, [0, 1, 2, 3]), (2, [0, 1, 3]), (0, [])])
def test_the_first_step_and_every_nth_are_probed(every, probed):
    shift = PolicyShift(trainer=None, every=every)
    assert [step for step in range(4) if shift.due(step)] == probed  # steps done before the probed one


@pytest.mark.parametrize("key", ["policy_shift_every", "policy_shift_rows"])
@pytest.mark.parametrize("value, ok", [(0, True), (3, True), (-1, False)])
def test_the_probes_settings_are_checked_and_reach_the_trainer(key, value, ok, tmp_path):
    from rlrecipes.config.checks import check_train_values
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.errors import ConfigError
    from tests.conftest import compose

    cfg = compose(f"trainer.{key}={value}")
    if not ok:
        with pytest.raises(ConfigError, match=rf"^trainer.{key}=-1 must be at least 0$"):
            check_train_values(cfg)
        return
    check_train_values(cfg)
    assert getattr(build_grpo_config(cfg, tmp_path, {}, [1.0]), key) == value


class StandIn:
    """A trainer as PolicyShift sees it: its log-prob pass returns `passes` in turn (before, after
    the step), and its accelerator adds another process's (sum, tokens) in the reduction."""

    def __init__(self, passes, other=(0.0, 0.0), step=0, skipped=False):
        from types import SimpleNamespace

        self.passes, self.logged = list(passes), {}
        self.state = SimpleNamespace(global_step=step)
        self.args = SimpleNamespace(per_device_train_batch_size=2)
        self.model_wrapped = torch.nn.Linear(1, 1)  # train mode, switched to eval around each pass
        self.modes, self.rows = [], []  # each pass's mode and rows

        def reduce(sums, reduction):
            assert reduction == "sum"
            return sums + torch.tensor(other, dtype=sums.dtype)

        self.accelerator = SimpleNamespace(reduce=reduce, optimizer_step_was_skipped=skipped, sync_gradients=True)
        self.model = self.model_wrapped  # no dropout: the loss's forward may stand for "before"
        self.contexts = 0

    @contextlib.contextmanager
    def compute_loss_context_manager(self):
        self.contexts += 1
        yield

    def _get_per_token_logps_and_entropies(self, model, ids, mask, keep, batch_size=None, **extras):
        self.modes.append(model.training)
        self.rows.append(ids.size(0))
        assert ids.size(1) == 3 and keep == 1 and batch_size is None and not extras  # one pass, as the loss
        return self.passes.pop(0), None, None

    def log_metric(self, name, value):
        self.logged[name] = value


def micro_batch(tool_mask=None, rows=2):
    batch = {
        "prompt_ids": torch.zeros(rows, 2, dtype=torch.long),
        "prompt_mask": torch.ones(rows, 2, dtype=torch.long),
        "completion_ids": torch.zeros(rows, 1, dtype=torch.long),
        "completion_mask": torch.ones(rows, 1, dtype=torch.long),
    }
    if tool_mask is not None:
        batch["tool_mask"] = torch.tensor(tool_mask)
    return batch


def probe(trainer, batch):
    shift = PolicyShift(trainer, every=1)
    shift.remember(batch)
    shift.on_pre_optimizer_step(None, trainer.state, None)
    shift.on_optimizer_step(None, trainer.state, None)
    return shift


HALF = math.log(0.5)
# before log 1/2 on both tokens; after log 1/4 (r = 1/2) and log 1 (r = 2): per token ln2 - 1/2, 1 - ln2
PASSES = (torch.tensor([[HALF], [HALF]]), torch.tensor([[math.log(0.25)], [0.0]]))


def test_a_probed_step_logs_the_token_weighted_kl_over_every_process():
    # this process: (ln2 - 1/2) + (1 - ln2) = 1/2 over 2 tokens; the other: 1.5 over 2; (0.5 + 1.5) / 4
    trainer = StandIn(PASSES, other=(1.5, 2.0))
    shift = probe(trainer, micro_batch())
    assert trainer.logged["policy_shift"] == pytest.approx(0.5, rel=1e-6)
    assert trainer.modes == [False, False] and trainer.model_wrapped.training  # eval for the passes only
    assert shift.batch is None and shift.before is None  # nothing kept past the step


def test_tool_results_are_left_out_and_a_skipped_step_logs_nothing():
    trainer = StandIn(PASSES)
    probe(trainer, micro_batch(tool_mask=[[1], [0]]))  # the second token is a tool's: ln2 - 1/2 alone
    assert trainer.logged["policy_shift"] == pytest.approx(math.log(2) - 0.5, rel=1e-6)
    skipped = StandIn(PASSES, skipped=True)  # fp16's inf/NaN step moved nothing
    probe(skipped, micro_batch())
    assert skipped.logged == {}
    every_third = PolicyShift(StandIn(PASSES, step=1), every=3)
    every_third.remember(micro_batch())  # the run's second step: not probed, nothing kept
    assert every_third.batch is None


def loss_forward(logps):
    """Log-probs as the loss's forward gives them: with gradients."""
    return logps.clone().requires_grad_(True)


def probed_step(shift, trainer, batch, seen=None):
    shift.remember(batch)
    if seen is not None:
        shift.seen(loss_forward(seen))
    shift.stop_watching()
    shift.on_pre_optimizer_step(None, trainer.state, None)
    shift.on_optimizer_step(None, trainer.state, None)


def test_the_loss_forward_stands_for_before_once_checked_against_an_eval_pass():
    # one process: (ln2 - 1/2) + (1 - ln2) over 2 tokens = 1/4
    before, after = PASSES
    # first probed step: an eval-mode "before" (the check) and "after"; the capture equals the check
    trainer = StandIn([before, after])
    shift = PolicyShift(trainer, every=1)
    probed_step(shift, trainer, micro_batch(), seen=before)
    assert trainer.logged["policy_shift"] == pytest.approx(0.25, rel=1e-6) and trainer.passes == []
    # later probed steps: the capture is "before", one pass ("after") only
    trainer.passes, trainer.modes, trainer.logged = [after], [], {}
    probed_step(shift, trainer, micro_batch(), seen=before)
    assert trainer.logged["policy_shift"] == pytest.approx(0.25, rel=1e-6)
    assert trainer.passes == [] and trainer.modes == [False]


def test_a_loss_forward_that_differs_from_the_eval_pass_is_never_trusted():
    # the loss's forward lies 0.01 off the eval pass: k3 = 5e-5 nats, above CAPTURE_NOISE_NATS (1e-5)
    before, after = PASSES
    trainer = StandIn([before, after])
    shift = PolicyShift(trainer, every=1)
    probed_step(shift, trainer, micro_batch(), seen=before + 0.01)
    assert trainer.logged["policy_shift"] == pytest.approx(0.25, rel=1e-6)  # measured from the eval pass
    trainer.passes, trainer.modes = [before, after], []
    probed_step(shift, trainer, micro_batch(), seen=before)  # even an equal capture: its own pass from now on
    assert trainer.passes == [] and trainer.modes == [False, False]


@pytest.mark.parametrize(
    "model, seen",
    [
        (torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Dropout(0.1)), torch.zeros(2, 1)),  # noisy
        (torch.nn.Linear(1, 1), torch.zeros(2, 2)),  # another batch's log-probs: not this micro-batch's
    ],
)
def test_before_is_an_eval_pass_when_the_loss_forward_cannot_stand_for_it(model, seen):
    trainer = StandIn(PASSES)
    trainer.model = model
    shift = PolicyShift(trainer, every=1)
    shift._random_forward = isinstance(model, torch.nn.Sequential) or None
    probed_step(shift, trainer, micro_batch(), seen=seen)
    assert trainer.logged["policy_shift"] == pytest.approx(0.25, rel=1e-6)
    assert trainer.passes == [] and trainer.modes == [False, False]


def test_only_the_loss_forward_of_the_last_micro_batch_in_training_is_captured():
    trainer = StandIn([])
    shift = PolicyShift(trainer, every=1)
    shift._random_forward = False  # checked already
    trainer.accelerator.sync_gradients = False  # an earlier micro-batch of the step
    shift.remember(micro_batch())
    assert shift.batch is None and not shift.watching
    trainer.accelerator.sync_gradients = True
    shift.remember(micro_batch())
    with torch.no_grad():  # a pass without gradients (a reference or critic pass): not the loss's
        shift.seen(PASSES[0])
    assert shift.seen_logps is None and shift.watching
    shift.stop_watching()  # compute_loss returned: nothing later is its forward
    shift.seen(loss_forward(PASSES[0]))
    assert shift.seen_logps is None
    trainer.model.eval()  # an evaluation's loss
    shift.batch = None
    shift.remember(micro_batch())
    assert shift.batch is None


@pytest.mark.parametrize(
    "n, cap, rows",
    [
        (64, 8, [0, 8, 16, 24, 32, 40, 48, 56]),  # the toy's rollout, as TRL shuffled it
        (65, 8, [0, 8, 16, 24, 32, 40, 48, 56]),  # ⌊i·65/8⌋
        (65, 64, list(range(64))),  # just above the cap: 64 rows, not every other one
        (10, 4, [0, 2, 5, 7]),
        (8, 8, None),  # no more rows than the cap: all
        (64, 0, None),  # 0: all
    ],
)
def test_the_probed_rows_are_evenly_spaced_and_at_most_the_cap(n, cap, rows):
    index = probed_rows({"completion_ids": torch.zeros(n, 3)}, cap)
    assert (index if index is None else index.tolist()) == rows


def test_a_batch_with_image_inputs_is_probed_whole():
    # pixel_values hold patches, not a row a completion: cutting rows would misalign them
    batch = {"completion_ids": torch.zeros(64, 3), "pixel_values": torch.zeros(100, 8)}
    assert probed_rows(batch, 8) is None
    # token type ids are a row a completion: cut with the rest
    batch = {"completion_ids": torch.zeros(64, 3), "token_type_ids": torch.zeros(64, 5)}
    index = probed_rows(batch, 8)
    assert index is not None and rows_of(batch, index)["token_type_ids"].shape == (8, 5)


def test_log_probs_that_do_not_pair_up_are_refused():
    with pytest.raises(ValueError, match=r"^log-probs of shapes \(2, 1\) and \(1, 1\) do not pair up$"):
        k3_kl(torch.zeros(2, 1), torch.zeros(1, 1), torch.ones(1, 1))


def test_rows_of_cuts_each_row_a_completion_tensor_and_keeps_the_rest():
    batch = {
        "completion_ids": torch.arange(4).view(4, 1),
        "advantages": torch.arange(4.0),
        "other": torch.zeros(3),
        "n": 7,
    }
    cut = rows_of(batch, torch.tensor([0, 2]))
    assert cut["completion_ids"].tolist() == [[0], [2]] and cut["advantages"].tolist() == [0.0, 2.0]
    assert cut["other"].shape == (3,) and cut["n"] == 7


def test_a_capped_probe_measures_its_rows_and_cuts_the_captured_before_to_them():
    # rows=2 of 4: rows 0 and 2. The loss forward's "before", row by row: log 1/2, log 1/4, log 1/2,
    # log 1/8; "after" on rows 0 and 2: log 1/4 (r = 1/2) and log 1 (r = 2): (ln2 - 1/2 + 1 - ln2) / 2 = 1/4.
    # rows 0-1 of "before" instead (a cut in the wrong place) pair row 1's log 1/4 with log 1 (r = 4,
    # 3 - ln 4): (0.193 + 1.614) / 2 = 0.90
    before = torch.tensor([[HALF], [math.log(0.25)], [HALF], [math.log(0.125)]])
    trainer = StandIn([torch.tensor([[math.log(0.25)], [0.0]])])
    shift = PolicyShift(trainer, every=1, rows=2)
    shift._random_forward = False  # the capture was checked on an earlier step
    probed_step(shift, trainer, micro_batch(rows=4), seen=before)
    assert trainer.logged["policy_shift"] == pytest.approx(0.25, rel=1e-6)
    assert trainer.rows == [2]  # the one pass ("after") took two rows


def test_a_capped_probe_takes_its_own_passes_on_its_rows_where_the_forward_is_random():
    # dropout: "before" and "after" are both eval passes, on row 0 alone
    trainer = StandIn([torch.tensor([[HALF]]), torch.tensor([[math.log(0.25)]])])
    trainer.model = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Dropout(0.1))
    shift = PolicyShift(trainer, every=1, rows=1)
    probed_step(shift, trainer, micro_batch())
    assert trainer.logged["policy_shift"] == pytest.approx(math.log(2) - 0.5, rel=1e-6)
    assert trainer.rows == [1, 1]

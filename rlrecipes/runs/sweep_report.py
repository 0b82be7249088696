"""The Hydra callback of every sweep (`conf/train.yaml`): a line naming each job's overrides as
it starts, and at the end the comparison table (what `rlrecipes report SWEEP` prints), its
exports and a figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from rlrecipes.compose.hydra_app import expand_sweep
from rlrecipes.display import wrapped
from rlrecipes.errors import UserError
from rlrecipes.rundir import is_main_process
from rlrecipes.runs.plots import plot_comparison
from rlrecipes.runs.report import make_report, print_report, write_exports


class SweepReport(Callback):
    """During `rlrecipes train -m`: `[job 2] starts (3/4): seed=1 recipe.beta=0.01` as each job
    starts; at the end the table of the runs, report.{csv,json,md} and comparison.{png,svg} in
    the sweep folder. A failure at the end is one line, never a failed sweep (the runs are done)."""

    def __init__(self) -> None:
        self.jobs: int | None = None  # the sweep's number of jobs; None: not known (another sweeper)
        self.shared: list[str] = []  # the overrides every job has: said once, not on each job's line

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        """The jobs the basic sweeper makes of the command line (a launcher that runs jobs
        elsewhere, joblib or Slurm, takes this callback along with what it learnt here)."""
        sweeper = str(OmegaConf.select(config, "hydra.sweeper._target_", default=""))
        if not sweeper.endswith("BasicSweeper"):  # an optimiser's sweeper decides its jobs as it goes
            return
        try:
            jobs = expand_sweep([str(o) for o in OmegaConf.select(config, "hydra.overrides.task", default=[])])
        except UserError:  # Hydra parses them next and says what is wrong
            return
        self.jobs = len(jobs)
        self.shared = [o for o in jobs[0] if all(o in job for job in jobs)] if len(jobs) > 1 else []

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        mode = OmegaConf.select(config, "hydra.mode")
        if getattr(mode, "name", str(mode)) != "MULTIRUN" or not is_main_process():
            return
        num = int(OmegaConf.select(config, "hydra.job.num", default=0))
        overrides = [str(o) for o in OmegaConf.select(config, "hydra.overrides.task", default=[])]
        print(wrapped(job_line(num, self.jobs, [o for o in overrides if o not in self.shared])), flush=True)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep = Path(str(config.hydra.sweep.dir))
        if not is_main_process() or not sweep.is_dir():
            return
        notes: list[str] = []
        try:
            report = make_report([sweep], log=notes.append)
        except (UserError, OSError, ValueError) as exc:  # no run was made (every job failed early)
            print(wrapped(f"no sweep report: {exc}"), flush=True)
            return
        print_report(report, notes)  # what `rlrecipes report SWEEP` prints
        written: list[Path] = []
        for what, make in (
            ("table", lambda: write_exports(report, sweep)),
            ("plot", lambda: plot_comparison([sweep])[1]),
        ):
            try:
                written += make()
            except (UserError, OSError, ValueError) as exc:
                print(wrapped(f"sweep {what} not written: {exc}"), flush=True)
        if written:  # the folder once, then the file names: a line per path would not fit 80 columns
            folders = sorted({str(Path(p).parent) for p in written})
            names = ", ".join(Path(p).name for p in written)
            print(wrapped(f"sweep report in {', '.join(folders)}: {names}"), flush=True)


def job_line(num: int, jobs: int | None, overrides: list[str]) -> str:
    """`[job 2] starts (3/4): seed=1 recipe.beta=0.01`: the job's number as its progress lines
    and run folder (`2-...`) give it, its place in the sweep, and the overrides it runs with."""
    where = f" ({num + 1}/{jobs})" if jobs else ""
    return f"[job {num}] starts{where}" + (f": {' '.join(overrides)}" if overrides else "")

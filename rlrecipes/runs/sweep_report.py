"""The Hydra callback that ends every sweep (`conf/train.yaml`): a report and a figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from rlrecipes.display import wrapped
from rlrecipes.errors import UserError
from rlrecipes.rundir import is_main_process
from rlrecipes.runs.plots import plot_comparison
from rlrecipes.runs.report import make_report, write_exports


class SweepReport(Callback):
    """At the end of `rlrecipes train -m`: report.{csv,json,md} and comparison.{png,svg} in
    the sweep folder. A failure here is one line, never a failed sweep (the runs are done)."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep = Path(str(config.hydra.sweep.dir))
        if not is_main_process() or not sweep.is_dir():
            return
        written: list[Path] = []
        for what, make in (
            ("table", lambda: write_exports(make_report([sweep]), sweep)),
            ("plot", lambda: plot_comparison([sweep])[1]),
        ):
            try:
                written += make()
            except (UserError, OSError, ValueError) as exc:
                print(f"sweep {what} not written: {exc}", flush=True)
        if written:  # the folder once, then the file names: a line per path would not fit 80 columns
            folders = sorted({str(Path(p).parent) for p in written})
            names = ", ".join(Path(p).name for p in written)
            print(wrapped(f"sweep report in {', '.join(folders)}: {names}"), flush=True)

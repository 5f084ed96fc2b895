"""Reopening what cnsim wrote: `cnsim.open_results(DIR)` gives a run's
directory back as its Results and a sweep's as a SweepResults, and `cnsim
report DIR` draws a run's report again from its files. This module sits
above results, report and sweeps, which do not import it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import ScenarioError
from .report import write_report
from .results import read_results
from .sweeps import SWEEP_JSON, SweepResults


def open_results(path: str | Path) -> Any:
    """Reopens a saved run (a directory written by `Results.save` or `cnsim
    run --out`) as a Results, or a sweep directory as a SweepResults."""
    out = Path(path)
    if (out / SWEEP_JSON).is_file():
        return SweepResults(out)
    return read_results(out)


def rebuild_report(out: Path) -> Path:
    """Writes report.html and its plots again from a run's results directory."""
    need = [n for n in ("scenario.toml", "summary.json", "runs.parquet") if not (Path(out) / n).is_file()]
    if need:
        raise ScenarioError(
            f"report: {out} is neither a sweep (no sweep.json) nor a run's results (no {', '.join(need)})"
        )
    return write_report(read_results(out), out)

"""Reopening what cnsim wrote: `cnsim.open_results(DIR)` gives a run's
directory back as its Results and a sweep's as a SweepResults, `cnsim
report DIR` draws a run's report again from its files, and `cnsim check
DIR` checks a run's or a sweep's directory file by file. This module sits
above results, saved, report and sweeps, which do not import it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .check import DirCheck, check_results
from .errors import ScenarioError
from .report import write_report
from .saved import read_checked, read_results
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


def check_run(path: str | Path) -> DirCheck:
    """What `cnsim check` finds in a run's results directory: every file
    against summary.json, read whole (the trace's files too), and
    summary.json's values against the run reopened from its files."""
    return check_results(path, full=True, reopen=read_checked)


def check(path: str | Path) -> list[DirCheck]:
    """`cnsim check DIR`: a run's directory (one DirCheck), or a sweep's
    (sweep.json, then each point that finished)."""
    out = Path(path)
    if (out / SWEEP_JSON).is_file():
        return check_sweep(out)
    return [check_run(out)]


def check_sweep(path: str | Path) -> list[DirCheck]:
    """A sweep directory: sweep.json, and every point that finished (a point
    not run yet is a note, not a problem: resuming the sweep runs it)."""
    from .sweeps import read_meta
    from .sweeps.store import damaged_points

    out = Path(path)
    meta = read_meta(out)  # a damaged sweep.json raises, naming it
    head = DirCheck(out, title=f"sweep of {meta.get('scenario')}: {len(meta.get('points') or [])} points")
    head.add("sweep.json", "the sweep's description", "readable")
    checks = [head]
    damaged = set(damaged_points(out, meta))
    for p in meta.get("points") or []:
        pdir = out / p["id"]
        if not pdir.exists():
            head.notes.append(f"{p['id']}: not run yet (resuming the sweep runs it)")
            continue
        if p["id"] in damaged:
            head.add(
                p["id"],
                "a point's results",
                "incomplete",
                f"{pdir}: an incomplete point (resuming the sweep redoes it)",
            )
            continue
        checks.append(check_run(pdir))
    return checks

"""`cnsim bench --whole FILE...`: what a user feels. Each scenario is run as
`cnsim run FILE --seed 0 --jobs 1 --no-report --json` in a process of its
own, `repeat` times, and timed from the outside: wall time from start to
exit, the child's user and system CPU and its peak resident memory (from
`wait4`, so each child's own figures, not the sum of all children). The
engine's share is the run's own engine wall time (summary `engine.wall_s`)
over the whole process's; frames per second are the run's delivered frames
over the whole process's wall time. `--set KEY=VALUE` overrides are passed to
every run (the UET case of docs/performance.md: `uet_fattree --set
uet.paths=128`)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import ScenarioError


@dataclass
class WholeRun:
    """One `cnsim run` process, timed from outside."""

    wall_s: float
    user_s: float
    sys_s: float
    peak_rss_mb: float
    engine_s: float
    frames_delivered: int
    events: int


@dataclass
class WholeFigure:
    """The figures of one scenario over its runs."""

    scenario: str
    runs: int
    wall_best_s: float
    wall_median_s: float
    user_best_s: float
    user_median_s: float
    sys_median_s: float
    engine_best_s: float
    engine_share: float  # best engine / best whole wall
    peak_rss_mb: float  # the largest of the runs
    frames_delivered: int
    frames_per_s_whole: float  # delivered frames / best whole wall
    frames_per_s_engine: float  # delivered frames / best engine wall

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cnsim_command() -> list[str]:
    """The `cnsim` a user runs: the console script beside this interpreter,
    else `python -m cnsim`."""
    script = Path(sys.executable).parent / "cnsim"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "cnsim"]


def check_files(files: list[str], sets: list[str] | None = None) -> None:
    """Refuses, before anything runs, a FILE that is neither a scenario file
    nor a built-in scenario, and `sets` a FILE does not take (the child would
    fail after its start-up)."""
    from .scenario import apply_sets, builtin_names, load

    names = set(builtin_names())
    for f in files:
        if f not in names and not Path(f).is_file():
            raise ScenarioError(
                f"{f}: no such scenario file or built-in scenario ({', '.join(sorted(names))})"
            )
        if sets:
            apply_sets(load(f), sets)


def run_once(scenario: str, extra: list[str] | None = None) -> WholeRun:
    """One `cnsim run` of `scenario` (seed 0, one job, no report) in a child
    process; its outside figures and what it printed."""
    out_dir = Path(tempfile.mkdtemp(prefix="cnsim-bench-whole-"))
    try:
        cmd = [*cnsim_command(), "run", scenario, "--seed", "0", "--jobs", "1", "--no-report", "--json"]
        cmd += ["--out", str(out_dir / "run"), *(extra or [])]
        with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4
            stdout.seek(0)
            stderr.seek(0)
            text, err = stdout.read().decode(), stderr.read().decode()
        if proc.returncode != 0:
            last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}"
            raise ScenarioError(f"{scenario}: cnsim run failed ({last})")
        summary = json.loads(text.strip().splitlines()[-1])
        engine = summary.get("engine", {})
        return WholeRun(
            wall_s=wall,
            user_s=usage.ru_utime,
            sys_s=usage.ru_stime,
            peak_rss_mb=usage.ru_maxrss / 1024,  # KiB on Linux
            engine_s=float(engine.get("wall_s", 0.0)),
            frames_delivered=int(summary.get("frames", {}).get("delivered", 0)),
            events=int(engine.get("events", 0)),
        )
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def summarize(scenario: str, runs: list[WholeRun]) -> WholeFigure:
    """Best and median of `runs` (best: the least wall time, the user's
    figure on a quiet machine; peak memory: the largest)."""
    walls = [r.wall_s for r in runs]
    users = [r.user_s for r in runs]
    best_engine = min(r.engine_s for r in runs)
    best_wall = min(walls)
    frames = runs[0].frames_delivered
    return WholeFigure(
        scenario=scenario,
        runs=len(runs),
        wall_best_s=best_wall,
        wall_median_s=statistics.median(walls),
        user_best_s=min(users),
        user_median_s=statistics.median(users),
        sys_median_s=statistics.median(r.sys_s for r in runs),
        engine_best_s=best_engine,
        engine_share=best_engine / best_wall if best_wall > 0 else 0.0,
        peak_rss_mb=max(r.peak_rss_mb for r in runs),
        frames_delivered=frames,
        frames_per_s_whole=frames / best_wall if best_wall > 0 else 0.0,
        frames_per_s_engine=frames / best_engine if best_engine > 0 else 0.0,
    )


def bench_whole(
    files: list[str], repeat: int, on_run: Any = None, sets: list[str] | None = None
) -> list[WholeFigure]:
    """Every file's figures; the files take turns (run 1 of each, then run 2
    of each, ...) so that a machine's drift spreads over all of them.
    `on_run(file, i, run)` is called after each run; `sets`: `--set KEY=VALUE`
    overrides of every run."""
    check_files(files, sets)
    extra = [a for s in sets or [] for a in ("--set", s)]
    runs: dict[str, list[WholeRun]] = {f: [] for f in files}
    for i in range(repeat):
        for f in files:
            r = run_once(f, extra)
            runs[f].append(r)
            if on_run is not None:
                on_run(f, i, r)
    for f, rs in runs.items():
        if len({r.frames_delivered for r in rs}) != 1:  # same (scenario, seed): same frames
            raise RuntimeError(f"{f}: runs of the same seed delivered different frame counts")
    return [summarize(f, runs[f]) for f in files]

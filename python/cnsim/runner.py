"""Running replications: one engine simulation per seed, on all local cores
(threads: the engine releases the GIL), with a progress bar over simulated
time. Results never depend on the number of workers or their timing."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import _core
from .errors import ScenarioError
from .scenario import Scenario

#: Chunks per run: how often a replication reports its simulated time.
CHUNKS = 100


class SeedRun:
    """The raw output of one replication."""

    def __init__(self, seed: int, result: dict[str, Any], series: list[tuple[str, str, np.ndarray]]):
        self.seed = seed
        self.result = result
        self.series = series


def run_seed(config_json: str, seed: int, advance: Callable[[float], None] | None = None) -> SeedRun:
    """Runs one replication; `advance(ms)` is called as simulated time passes."""
    try:
        sim = _core.Simulation(config_json, seed)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    dur = sim.duration_ps
    step = max(dur // CHUNKS, 1)
    t = 0
    while True:
        t = min(t + step, dur)
        done = sim.run_until(t)
        if advance is not None:
            advance(step / 1e9)
        if done:
            break
    result = json.loads(sim.results_json())
    series = [(s, k, np.frombuffer(b, dtype="<f8")) for (s, k, b) in sim.series()]
    return SeedRun(seed, result, series)


def run(scenario: Scenario, *, jobs: int | None = None, progress: bool | None = None) -> Any:
    """Runs every seed of `scenario` and returns its Results."""
    from .results import Results

    config = scenario.engine_json()
    seeds = scenario.seeds
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(seeds)))
    show = sys.stderr.isatty() if progress is None else progress
    runs: dict[int, SeedRun] = {}
    if show:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        total_ms = scenario.duration_ms * len(seeds)
        lock = threading.Lock()
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[sim]} simulated"),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
            console=_stderr_console(),
        ) as bar:
            task = bar.add_task(
                f"{scenario.name} {scenario.scheme}{' +pause' if scenario.pause else ''}",
                total=len(seeds),
                sim="0 ms",
            )
            done_ms = [0.0]

            def advance(ms: float) -> None:
                with lock:
                    done_ms[0] += ms
                    bar.update(task, sim=f"{done_ms[0]:.0f}/{total_ms:.0f} ms")

            def one(seed: int) -> SeedRun:
                r = run_seed(config, seed, advance)
                bar.advance(task)
                return r

            with ThreadPoolExecutor(jobs) as pool:
                for r in pool.map(one, seeds):
                    runs[r.seed] = r
    else:
        with ThreadPoolExecutor(jobs) as pool:
            for r in pool.map(lambda s: run_seed(config, s), seeds):
                runs[r.seed] = r
    return Results(scenario, [runs[s] for s in seeds])


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)

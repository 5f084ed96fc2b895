"""Running replications: one engine simulation per seed, on all local cores
(threads: the engine releases the GIL), with a progress bar over simulated
time. Results never depend on the number of workers or their timing."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from .errors import ScenarioError
from .scenario import Scenario

if TYPE_CHECKING:
    from .results import Results

#: Chunks per run: how often a replication reports its simulated time.
CHUNKS = 100


class SeedRun:
    """The raw output of one replication."""

    def __init__(self, seed: int, result: dict[str, Any], series: list[tuple[str, str, np.ndarray]]):
        self.seed = seed
        self.result = result
        self.series = series


def run_seed(config_json: str, seed: int, advance: Callable[[float], None] | None = None) -> SeedRun:
    """Runs one replication in CHUNKS steps; `advance(ms)` is called with the
    simulated time each step covered."""
    try:
        sim = _core.Simulation(config_json, seed)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    dur = sim.duration_ps
    step = max(dur // CHUNKS, 1)
    t = 0
    while True:
        prev, t = t, min(t + step, dur)
        done = sim.run_until(t)
        if advance is not None:
            advance((t - prev) / 1e9)
        if done or t >= dur:
            break
    result = json.loads(sim.results_json())
    series = [(s, k, np.frombuffer(b, dtype="<f8")) for (s, k, b) in sim.series()]
    return SeedRun(seed, result, series)


def run(
    scenario: Scenario,
    *,
    seeds: int | Iterable[int] | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
    backend: str = "local",
    address: str | None = None,
    client: Any | None = None,
) -> Results:
    """Runs every seed of `scenario` (or `seeds`: a count or a list) on `jobs`
    threads (default: all cores) and returns its Results, sorted by seed.
    `progress`: a bar on stderr (simulated ms of all seeds, elapsed and
    remaining time); None shows it when stderr is a terminal.
    `backend="dask"` runs one task per seed on a Dask cluster: the scheduler
    at `address`, an open `client`, or a LocalCluster of `jobs` workers
    started for the run; the results are the same bit for bit."""
    from .results import Results

    if seeds is not None:
        scenario = scenario.replace(seeds=seeds)
    config = scenario.engine_json()
    order = sorted(scenario.seeds)
    if address is not None or client is not None:
        backend = "dask"
    if backend == "dask":
        return Results(scenario, _run_dask(config, order, jobs, address, client))
    if backend != "local":
        raise ScenarioError(f"backend: {backend!r} is not allowed; expected local or dask")
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(order)))
    show = sys.stderr.isatty() if progress is None else progress
    runs: dict[int, SeedRun] = {}
    if not show:
        with ThreadPoolExecutor(jobs) as pool:
            for r in pool.map(lambda s: run_seed(config, s), order):
                runs[r.seed] = r
        return Results(scenario, [runs[s] for s in order])

    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    total_ms = scenario.duration_ms * len(order)
    pause = " + PAUSE" if scenario.pause else ""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} simulated ms"),
        TextColumn("{task.fields[seeds]}"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=_stderr_console(),
    ) as bar:
        task = bar.add_task(
            f"{scenario.name} {scenario.scheme}{pause}",
            total=total_ms,
            seeds=f"0/{len(order)} seeds",
        )
        lock = threading.Lock()
        finished = [0]

        def one(seed: int) -> SeedRun:
            r = run_seed(config, seed, lambda ms: bar.advance(task, ms))
            with lock:
                finished[0] += 1
                bar.update(task, seeds=f"{finished[0]}/{len(order)} seeds")
            return r

        with ThreadPoolExecutor(jobs) as pool:
            for r in pool.map(one, order):
                runs[r.seed] = r
    return Results(scenario, [runs[s] for s in order])


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def _run_dask(
    config: str, seeds: list[int], jobs: int | None, address: str | None, client: Any
) -> list[SeedRun]:
    """Every seed as one Dask task (retried if its worker dies), in seed order."""
    from .sweep import _DaskBackend

    be = _DaskBackend(jobs, address, client)
    ok = False
    try:
        futures = [be.submit(config, s, None) for s in seeds]
        runs = [be.result(f) for f in futures]
        ok = True
        return runs
    finally:
        be.close(cancel=not ok)

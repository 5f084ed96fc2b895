"""`cnsim.run`: every seed of a scenario on the executor (local threads or
Dask), one progress bar, the Results sorted by seed."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from .errors import ScenarioError, ScenarioWarning
from .executor import Interrupted, Unit, check_backend, run_units
from .results import Results
from .scenario import Scenario


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
    started for the run; the results are the same bit for bit.
    Ctrl-C raises `cnsim.executor.Interrupted` (a KeyboardInterrupt) within
    about a second, whose `results` holds the seeds that finished (None if
    none did; `Results.complete` is false)."""
    if not isinstance(scenario, Scenario):
        raise ScenarioError(
            f"scenario: expected a cnsim.Scenario (cnsim.load(...)), got {type(scenario).__name__}"
        )
    check_backend(backend, jobs, address, client)  # before anything is built
    if seeds is not None:
        scenario = scenario.replace(seeds=seeds)
    from .guards import check_run_memory

    check_run_memory(scenario)
    config = scenario.engine_config_checked()
    for w in scenario.engine_warnings():  # legal, almost certainly unintended: said once per run
        warnings.warn(w, ScenarioWarning, stacklevel=2)
    units = [Unit(config, s, scenario.duration_ms) for s in sorted(scenario.seeds)]
    pause = " + PAUSE" if scenario.pause else ""
    try:
        runs = run_units(
            units,
            description=f"{scenario.name} {scenario.scheme}{pause}",
            backend_name=backend,
            jobs=jobs,
            address=address,
            client=client,
            progress=progress,
        )
    except Interrupted as e:
        # Ctrl-C: the seeds that finished, as an incomplete Results, for the caller to keep.
        done = [r for _, r in e.done]
        e.results = Results(scenario, done) if done else None  # type: ignore[attr-defined]
        raise
    return Results(scenario, runs)

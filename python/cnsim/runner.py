"""`cnsim.run`: every seed of a scenario on the executor (local threads or
Dask), one progress bar, the Results sorted by seed."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import ScenarioError, ScenarioWarning
from .executor import Interrupted, Unit, check_backend, run_units
from .results import Results, trace_identity
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
    trace_dir: str | Path | None = None,
    while_running: Callable[[], None] | None = None,
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
    none did; `Results.complete` is false).
    A scenario with `[trace] events` or `pcap` writes its trace into
    `trace_dir` (a new or empty directory; default: a temporary directory
    removed with the Results; `Results.save` keeps it), read by
    `Results.events()` and `Results.pcap_files()` (cnsim.trace). A trace
    file that cannot be written (a full disk, `ulimit -f`) stops the run
    with an OSError naming it.
    `while_running()`: called once in this thread while the engine runs (it
    releases the GIL), for work that does not need the results; `cnsim run`
    imports its printing and renders the scenario's TOML there."""
    if not isinstance(scenario, Scenario):
        raise ScenarioError(
            f"scenario: expected a cnsim.Scenario (cnsim.load(...)), got {type(scenario).__name__}"
        )
    check_backend(backend, jobs, address, client)  # before anything is built
    if seeds is not None:
        scenario = scenario.replace(seeds=seeds)
    from .trace import records, trace_dir_checked, unintended

    if trace_dir is not None:
        trace_dir = trace_dir_checked(trace_dir)
    from .guards import check_run_memory

    check_run_memory(scenario)
    from .executor import Status, show_progress

    with Status(show_progress(progress), f"{scenario.name}: building and checking the network"):
        config = scenario.compiled()  # checked once; every seed runs from it
    from .collectives import job_warnings

    for w in [
        *scenario.engine_warnings(),
        *unintended(scenario),
        *job_warnings(scenario),
    ]:  # legal, almost certainly unintended: said once per run
        warnings.warn(w, ScenarioWarning, stacklevel=2)

    tdir: Path | None = None
    owned = False
    if records(scenario):
        from .trace import staging_dir

        tdir = Path(trace_dir) if trace_dir is not None else staging_dir()
        owned = trace_dir is None
    where = str(tdir) if tdir is not None else None
    # Every trace file names its run as the results' other files do (Results.identity).
    run_id = trace_identity(scenario) if tdir is not None else ()
    units = [
        Unit(config, s, scenario.duration_ms, trace_dir=where, trace_run=run_id)
        for s in sorted(scenario.seeds)
    ]
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
            while_running=while_running,
        )
    except Interrupted as e:
        # Ctrl-C: the seeds that finished, as an incomplete Results, for the caller to keep.
        done = [r for _, r in e.done]
        e.results = Results(scenario, done) if done else None  # type: ignore[attr-defined]
        if tdir is not None:
            if done:
                e.results.trace = _trace_files(tdir, done, owned)  # type: ignore[attr-defined]
            elif owned:
                shutil.rmtree(tdir, ignore_errors=True)
        raise
    except BaseException:
        if owned and tdir is not None:
            shutil.rmtree(tdir, ignore_errors=True)
        raise
    res = Results(scenario, runs)
    if scenario.model.fidelity == "flow":
        # What the flow-level model found while it ran (PAUSE, losses in its
        # link runs; its validity), once per run.
        said = set(scenario.engine_warnings())
        for line in dict.fromkeys(w for r in runs for w in getattr(r, "warnings", ())):
            if line not in said:
                warnings.warn(line, ScenarioWarning, stacklevel=2)
    if tdir is not None:
        res.trace = _trace_files(tdir, runs, owned)
        from .trace import TraceCapWarning, cap_warnings

        for line in cap_warnings(res.trace.per_seed):
            warnings.warn(line, TraceCapWarning, stacklevel=2)
    return res


def _trace_files(tdir: Path, runs: list[Any], owned: bool) -> Any:
    from .trace import TraceFiles

    return TraceFiles(tdir, {r.seed: r.trace or {} for r in runs}, owned=owned)

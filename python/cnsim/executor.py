"""One executor for every replication cnsim runs (`run`, `sweep`,
`validate`): a unit is (engine config, seed); units run on local threads
(the engine releases the GIL) or as Dask tasks, under one progress bar that
advances with simulated time. Results never depend on the number of
workers or their timing: each unit is a pure function of (config, seed)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from .engine import SeedRun, run_seed
from .errors import ScenarioError


@dataclass
class Unit:
    """One replication to run: an engine config (JSON) and a seed, with its
    simulated length for the progress bar and a tag for the caller."""

    config: Any
    seed: int
    duration_ms: float
    tag: Any = field(default=None, compare=False)
    #: Where the unit writes its event trace and captures (cnsim.trace), if it records any.
    trace_dir: str | None = None
    #: (key, value) pairs naming the run, kept in every trace file (Results.identity).
    trace_run: tuple[tuple[str, str], ...] = ()


class Cancelled(Exception):
    """A local unit stopped early because the run was cancelled."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped the units; `done` holds the (unit, run)
    pairs that had finished, in unit order, for the caller to keep."""

    def __init__(self, done: list[tuple[Unit, SeedRun]]) -> None:
        super().__init__()
        self.done = done


# ------------------------------------------------------------- progress


class ProgressBar:
    """A rich progress bar on stderr over simulated milliseconds, with a
    count of finished items (seeds, points, runs). With `show` false it
    does nothing."""

    def __init__(self, show: bool, description: str, total_ms: float, item: str, total: int, done: int = 0):
        self.item = item
        self.done = done
        self.total = total
        self.lock = threading.Lock()
        self.progress: Any = None
        if not show:
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f} simulated ms"),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task(description, total=total_ms, count=self._count())

    def _count(self) -> str:
        return f"{self.done}/{self.total} {self.item}"

    def __enter__(self) -> ProgressBar:
        if self.progress is not None:
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def advance(self, ms: float) -> None:
        if self.progress is not None:
            self.progress.advance(self.task, ms)

    def count(self) -> None:
        """One more item finished."""
        with self.lock:
            self.done += 1
        if self.progress is not None:
            self.progress.update(self.task, count=self._count())


class Status:
    """A line on stderr saying what a long step is doing ("building the
    network ..."), with a spinner and the seconds so far; it appears only
    once the step has taken `after_s` (a small scenario shows nothing) and
    disappears when the step ends. With `show` false it does nothing."""

    def __init__(self, show: bool, text: str, after_s: float = 0.5):
        self.show, self.text, self.after_s = show, text, after_s
        self._timer: threading.Timer | None = None
        self._live: Any = None
        self._lock = threading.Lock()
        self._ended = False

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with self._lock:
            if self._ended:
                return
            live = Progress(
                SpinnerColumn(),
                TextColumn(self.text, markup=False),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            live.add_task(self.text, total=None)
            live.start()
            self._live = live

    def __enter__(self) -> Status:
        if self.show:
            self._timer = threading.Timer(self.after_s, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._ended = True
            if self._live is not None:
                self._live.stop()


def show_progress(progress: bool | None) -> bool:
    """`progress` None: show a bar when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


# -------------------------------------------------------------- backends


def _futures_completed(futures: list[Future[Any]]) -> Iterator[Future[Any]]:
    pending = set(futures)
    while pending:
        # A short timeout: a signal may be delivered to a worker thread, and
        # the main thread only runs Python's handler (Ctrl-C) when it wakes.
        done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
        yield from (f for f in futures if f in done)


class LocalBackend:
    """Threads over local cores."""

    name = "local"
    streams_progress = True

    def __init__(self, jobs: int) -> None:
        self.pool = ThreadPoolExecutor(jobs, thread_name_prefix="cnsim")
        self.stop = threading.Event()

    def submit(self, unit: Unit, advance: Callable[[float], None] | None) -> Future[SeedRun]:
        def step(ms: float) -> None:
            if self.stop.is_set():
                raise Cancelled
            if advance is not None:
                advance(ms)

        return self.pool.submit(run_seed, unit.config, unit.seed, step, unit.trace_dir, unit.trace_run)

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        return _futures_completed(futures)

    def result(self, fut: Future[SeedRun]) -> SeedRun:
        return fut.result()

    def close(self, cancel: bool) -> None:
        if cancel:
            self.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=cancel)


def _dask_unit(
    config: Any, seed: int, trace_dir: str | None = None, trace_run: tuple[tuple[str, str], ...] = ()
) -> tuple[str, SeedRun]:
    """One replication on a Dask worker (with the worker's engine version);
    a trace is written to `trace_dir`, which the worker must see."""
    import cnsim._core as _core

    return _core.version(), run_seed(config, seed, trace_dir=trace_dir, trace_run=trace_run)


class DaskBackend:
    """One Dask task per replication, on a running scheduler (`address` or a
    `client`) or on a LocalCluster started here."""

    name = "dask"
    streams_progress = False

    def __init__(self, jobs: int | None, address: str | None, client: Any | None) -> None:
        try:
            import distributed
        except ImportError:
            raise ScenarioError(
                "--backend dask: Dask is not installed; install it with: pip install 'cnsim[dask]'"
            ) from None
        self.distributed = distributed
        self.cluster = None
        self.own_client = client is None
        if client is not None:
            self.client = client
        elif address is not None:
            try:
                self.client = distributed.Client(address, timeout="10s")
            except (OSError, TimeoutError, ValueError) as e:
                raise ScenarioError(f"--address {address}: no Dask scheduler answers there ({e})") from None
        else:
            import logging

            self.cluster = distributed.LocalCluster(
                n_workers=jobs or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self.client = distributed.Client(self.cluster)
        self.futures: list[Any] = []
        self.token = os.urandom(4).hex()

    def submit(self, unit: Unit, advance: Any) -> Any:
        key = f"cnsim-{self.token}-{len(self.futures)}-seed{unit.seed}"
        fut = self.client.submit(
            _dask_unit,
            unit.config,
            unit.seed,
            unit.trace_dir,
            unit.trace_run,
            key=key,
            retries=3,
            pure=False,
        )
        self.futures.append(fut)
        return fut

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        return iter(self.distributed.as_completed(futures))

    def result(self, fut: Any) -> SeedRun:
        import cnsim._core as _core

        version, run = fut.result()
        if version != _core.version():
            raise RuntimeError(
                f"a Dask worker runs cnsim engine {version}, this process {_core.version()}; "
                "install the same cnsim on the workers"
            )
        return run

    def close(self, cancel: bool) -> None:
        with contextlib.suppress(Exception):
            if cancel and self.futures:
                self.client.cancel(self.futures)
        if self.own_client:
            with contextlib.suppress(Exception):
                self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


#: The executors by name (`--backend`).
BACKENDS = ("local", "dask")


def check_backend(name: str | None, jobs: int | None, address: str | None = None, client: Any = None) -> str:
    """The one check of `--backend` and `--jobs` (run, sweep, validate and
    the Python API), before anything runs or is written: the backend's name
    (None: local; a Dask scheduler address or client means dask)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ScenarioError(f"--jobs: {jobs!r} is not allowed; expected an integer >= 1")
    if address is not None or client is not None:
        name = "dask"
    name = name or "local"
    if name not in BACKENDS:
        raise ScenarioError(f"--backend: {name!r} is not allowed; allowed: {', '.join(BACKENDS)}")
    return name


def backend(name: str, jobs: int | None, address: str | None, client: Any | None, units: int) -> Any:
    """The backend `name` (local or dask; an address or a client means dask)."""
    name = check_backend(name, jobs, address, client)
    if name == "local":
        return LocalBackend(max(1, min(jobs or os.cpu_count() or 1, units)))
    return DaskBackend(jobs, address, client)


# ------------------------------------------------------------- execute


def execute(
    units: list[Unit],
    be: Any,
    bar: ProgressBar,
    on_result: Callable[[Unit, SeedRun], None] | None = None,
    while_running: Callable[[], None] | None = None,
) -> list[SeedRun]:
    """Runs every unit on backend `be` under `bar`; `on_result(unit, run)` is
    called in this thread as each finishes. `while_running()` is called once
    in this thread after every unit is submitted: the engine releases the
    GIL, so work that does not need the runs (imports, rendering the
    scenario) overlaps the simulation instead of following it. Returns the
    runs in unit order. The backend is closed at the end (its pending units
    cancelled if anything failed or was interrupted)."""
    out: dict[int, SeedRun] = {}
    futures: dict[Any, int] = {}
    ok = False
    try:
        with bar:
            futures = {
                be.submit(u, bar.advance if be.streams_progress else None): i for i, u in enumerate(units)
            }
            if while_running is not None:
                while_running()
            for fut in be.as_completed(list(futures)):
                i = futures.pop(fut)
                run = be.result(fut)
                if not be.streams_progress:
                    bar.advance(units[i].duration_ms)
                out[i] = run
                if on_result is not None:
                    on_result(units[i], run)
        ok = True
    except KeyboardInterrupt:
        be.close(cancel=True)  # the running units stop within one step
        for fut, i in list(futures.items()):  # finished while we were interrupted: keep them
            with contextlib.suppress(BaseException):
                if fut.done() and not fut.cancelled():
                    out[i] = be.result(fut)
        raise Interrupted([(units[i], out[i]) for i in sorted(out)]) from None
    finally:
        be.close(cancel=not ok)
    return [out[i] for i in range(len(units))]


def run_units(
    units: list[Unit],
    *,
    description: str,
    item: str = "seeds",
    backend_name: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    client: Any | None = None,
    progress: bool | None = None,
    while_running: Callable[[], None] | None = None,
) -> list[SeedRun]:
    """Runs `units` and returns their runs in order, counting each as one
    `item`; `while_running`: see `execute`."""
    be = backend(backend_name, jobs, address, client, len(units))
    total = sum(u.duration_ms for u in units)
    bar = ProgressBar(show_progress(progress), description, total, item, len(units))
    return execute(units, be, bar, lambda u, r: bar.count(), while_running)

"""Resource guards: what a run will need, estimated before it starts, so
that a run that cannot fit is refused with one line naming the parameter to
change instead of ending in an allocation abort or a MemoryError.

The cap is a fraction of this machine's memory (half), or the value of the
environment variable CNSIM_MEMORY_CAP (bytes, or with a unit: 500M, 8G);
under an address-space limit (`ulimit -v`, RLIMIT_AS) it is at most what
the limit leaves this process.

The estimate is one function, `run_memory`: the time series (bins x series
x seeds) and the transport flows (flows x seeds); the process itself (75 to
210 MB) is left out, and under RLIMIT_AS counted as what it maps.
Its constants were measured (peak RSS of `cnsim run`, results written):

- baseline, bin_us = 1 (100,001 bins x 38 series), 5 / 10 / 20 seeds:
  1.35 / 2.48 / 4.77 GB, 0.234 GB per seed = 62 bytes per binned value;
- fsmall (8 hosts), 1-byte flows, 250k / 500k / 1M flows: 207 / 339 /
  597 MB, 527 bytes per flow.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from .errors import ScenarioError

#: Bytes a binned value costs by the time a run is saved: the engine's f64
#: while its seed runs (a Vec that grows by doubling: up to twice its
#: length) and the one buffer per finished seed handed to Python
#: (series_buffer); the engine writes timeseries.parquet from those buffers,
#: with no per-value Python object or dataframe row. Measured 14 to 28 from
#: run to run (baseline, bin_us = 1, the peak of 6 seeds less that of 2: how
#: much freed memory the allocator reuses varies); 62 when Python built the
#: long table itself. An upper bound, as a guard must be.
BYTES_PER_VALUE = 32
#: Bytes a transport flow costs: the engine's flow, its sender's RL while it
#: runs, its record, and its row in the flows table. Measured 527.
BYTES_PER_FLOW = 600
#: Address space a process maps beyond what it uses, under RLIMIT_AS: the
#: thread pools' stacks and malloc arenas (a 4-seed baseline run, saved:
#: 1.4 GB mapped for 0.2 GB resident, 14 threads on 2 cores, 1.0 GB more
#: than after the imports), and per core for larger pools.
AS_RESERVE = 2**30
AS_RESERVE_PER_CORE = 128 * 2**20
#: Most points a sweep grid may have.
MAX_GRID_POINTS = 100_000


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgGtT]?)[bB]?\s*", text)
    if not m:
        raise ScenarioError(f"CNSIM_MEMORY_CAP: {text!r} is not allowed; expected bytes, or e.g. 500M, 8G")
    scale = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def memory_cap() -> tuple[int, str]:
    """(bytes, where it comes from)."""
    env = os.environ.get("CNSIM_MEMORY_CAP")
    if env:
        cap, source = _size(env), "CNSIM_MEMORY_CAP"
    else:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
            total = 8 * 2**30
        cap, source = total // 2, "half this machine's memory; CNSIM_MEMORY_CAP changes it"
    left = address_space_left()
    if left is not None and left < cap:
        cap, source = left, "what the address-space limit (ulimit -v) leaves this process"
    return cap, source


def address_space_left() -> int | None:
    """Bytes the address-space limit (RLIMIT_AS, `ulimit -v`) leaves for
    results: the limit less what this process maps now and a reserve for
    worker threads; None without a limit."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    reserve = AS_RESERVE + AS_RESERVE_PER_CORE * (os.cpu_count() or 1)
    return max(0, soft - _mapped() - reserve)


def _mapped() -> int:
    """Bytes of address space this process maps now (VmSize)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return 0


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PB"  # pragma: no cover


def series_count(sc: Any) -> int:
    """An upper bound on the binned series one run records (engine-interface.md)."""
    m = sc.model
    cap = m.stats.max_series_keys
    stations = sum(1 for n in m.nodes if n.kind == "station")
    directions = 2 * len(m.links)
    # The traced ports (the engine's choice, compile.rs), bounded without
    # resolving the scenario: those named, else at most one per direction
    # and at most the cap.
    t = m.trace.ports if m.trace.ports is not None else (m.cp_ports or None)
    traced = len(t) if t is not None else min(cap, directions)
    loaded = [n for n in m.nodes if n.kind == "station" and n.load > 0]
    flows = sum(
        len(n.dest)
        if type(n.dest) is dict
        else 1
        if isinstance(n.dest, str) and n.dest != "uniform"
        else stations - 1
        for n in loaded
    )
    # A rate limiter per flow (or per CP a source hears from: no more than its flows).
    rls = len(m.trace.rate_limiters) if m.trace.rate_limiters is not None else min(256, flows)
    flows = min(flows, 64)  # per-flow series only when a scenario has at most 64 flows
    # Per-destination, per-link and per-port families only up to stats.max_series_keys keys.
    stations = stations if stations <= cap else 0
    directions = directions if directions <= cap else 0
    paused = directions if m.pause.enabled else 0
    return 1 + stations + flows + directions + 2 * traced + paused + (2 * rls if sc.table is not None else 0)


@dataclass
class Need:
    """What running every seed of a scenario is expected to keep in memory."""

    bins: int
    series: int
    flows: float
    seeds: int

    @property
    def series_bytes(self) -> float:
        return self.bins * self.series * self.seeds * BYTES_PER_VALUE

    @property
    def flow_bytes(self) -> float:
        return self.flows * self.seeds * BYTES_PER_FLOW

    @property
    def total(self) -> float:
        return self.series_bytes + self.flow_bytes


def run_memory(sc: Any) -> Need:
    """The estimate of what running every seed of `sc` keeps: its series
    (one value per bin of the declared duration: an upper bound, the engine
    grows them with the time a run reaches) and its transport flows
    (the workload's expected count). One place to adapt when the
    engine's memory changes (e.g. series that grow with the time reached)."""
    bins = int(sc.duration_ms * 1000 / sc.model.bin_us) + 1
    flows = 0.0
    if sc.model.workload is not None:
        from .workloads import scenario_plan

        flows = scenario_plan(sc.model).flows
    return Need(bins, series_count(sc), flows, len(sc.seeds))


def check_run_memory(sc: Any, what: str = "the run") -> None:
    """Refuses `sc` when its results would not fit the memory cap."""
    need = run_memory(sc)
    cap, source = memory_cap()
    if need.total <= cap:
        return
    # A run with more bins than any run may have is refused by the engine's
    # rule (sections::top: duration_ms / bin_us), which names the cause
    # better than the memory it would take.
    sc.engine_config_checked()
    seeds = need.seeds
    per = f"x {seeds} seed{'s' if seeds != 1 else ''}"
    if need.flow_bytes > need.series_bytes:
        raise ScenarioError(
            f"workload: {what} would keep about {human(need.total)} ({need.flows:,.0f} flows {per}), above "
            f"the memory cap of {human(cap)} ({source}); lower workload.load or workload.end_ms, or run fewer seeds"
        )
    raise ScenarioError(
        f"bin_us: {what} would keep about {human(need.total)} of time series ({need.bins:,} bins x "
        f"{need.series} series {per}), above the memory cap of {human(cap)} ({source}); "
        "raise bin_us, shorten duration_ms or run fewer seeds"
    )


def check_grid_size(points: int) -> None:
    if points > MAX_GRID_POINTS:
        raise ScenarioError(
            f"--grid: {points:,} points is not allowed; at most {MAX_GRID_POINTS:,} (split the sweep)"
        )


def available_memory() -> int | None:
    """Bytes this process may still take before the machine, its cgroup or
    an address-space limit runs out: the least of MemAvailable
    (/proc/meminfo), the cgroup's memory.max less its memory.current, and
    what RLIMIT_AS leaves (or CNSIM_MEMORY_CAP when set); None when none
    of them is known (not Linux)."""
    env = os.environ.get("CNSIM_MEMORY_CAP")
    found: list[int] = [_size(env)] if env else []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current") as f:
                found.append(max(0, int(limit) - int(f.read().strip())))
    except (OSError, ValueError):
        pass
    left = address_space_left()
    if left is not None:
        found.append(left)
    return min(found) if found else None

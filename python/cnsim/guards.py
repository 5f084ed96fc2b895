"""Resource guards: what a run will need, estimated before it starts, so
that a run that cannot fit is refused with one line naming the parameter to
change instead of ending in an allocation abort or a MemoryError.

The cap is a fraction of this machine's memory (half), or the value of the
environment variable CNSIM_MEMORY_CAP (bytes, or with a unit: 500M, 8G)."""

from __future__ import annotations

import os
import re
from typing import Any

from .errors import ScenarioError

#: Bytes a binned value costs by the time a run is saved: the engine's f64,
#: the copy handed to Python, and its row in the long timeseries table.
BYTES_PER_VALUE = 48
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
        return _size(env), "CNSIM_MEMORY_CAP"
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        total = 8 * 2**30
    return total // 2, "half this machine's memory; CNSIM_MEMORY_CAP changes it"


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
    from .scenario.resolve import traced_ports

    traced = len(traced_ports(m))
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


def run_memory(sc: Any) -> tuple[int, int, int]:
    """(estimated bytes, bins per series, series) of running every seed of `sc`."""
    bins = int(sc.duration_ms * 1000 / sc.model.bin_us) + 1
    series = series_count(sc)
    return bins * series * len(sc.seeds) * BYTES_PER_VALUE, bins, series


def check_run_memory(sc: Any, what: str = "the run") -> None:
    """Refuses `sc` when its results would not fit the memory cap."""
    need, bins, series = run_memory(sc)
    cap, source = memory_cap()
    if need > cap:
        seeds = len(sc.seeds)
        raise ScenarioError(
            f"bin_us: {what} would keep about {human(need)} of time series ({bins:,} bins x {series} series "
            f"x {seeds} seed{'s' if seeds != 1 else ''}), above the memory cap of {human(cap)} ({source}); "
            "raise bin_us, shorten duration_ms or run fewer seeds"
        )


def check_grid_size(points: int) -> None:
    if points > MAX_GRID_POINTS:
        raise ScenarioError(
            f"--grid: {points:,} points is not allowed; at most {MAX_GRID_POINTS:,} (split the sweep)"
        )

"""`cnsim bench --workload scale`: the engine on fabrics of 64 to 4096 hosts.

Each size is a k-ary n-tree with the bridges, stations and links of
`fattree_hotspot` (scenarios.md section 7), every host at 85% load to
uniform destinations, QCN-2pt without PAUSE, 10 simulated ms, seed 0, no
hotspot and no traced ports. Each size runs in a process of its own, so the
peak memory reported is that of a whole cnsim process: the scenario, the
engine, the results (tables, series, metrics) as `cnsim.run` returns them.

    python -m cnsim.benchscale HOSTS DURATION_MS [SCHEME] [PAUSE]   # one size, one JSON line
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
import tomllib
from importlib import resources
from typing import Any

from .errors import ScenarioError

#: Hosts -> (k, n) of the fat tree.
SIZES: dict[int, tuple[int, int]] = {64: (4, 3), 512: (8, 3), 1000: (10, 3), 1024: (32, 2), 4096: (16, 3)}
DEFAULT_HOSTS = (64, 512, 1024, 4096)
LOAD = 0.85


def check_sizes(hosts: list[int]) -> None:
    """Refuses a fabric size the scale workload does not have."""
    for h in hosts:
        if h not in SIZES:
            raise ScenarioError(f"--hosts: {h} is not allowed; expected one of {', '.join(map(str, SIZES))}")


def scale_scenario(
    hosts: int, duration_ms: float = 10.0, scheme: str | None = None, pause: bool | None = None
) -> Any:
    """The scale workload's scenario for a fabric of `hosts` hosts."""
    from .scenario import Scenario

    check_sizes([hosts])
    k, n = SIZES[hosts]
    raw = tomllib.loads((resources.files("cnsim") / "scenarios" / "fattree_hotspot.toml").read_text())
    raw.pop("hotspot")
    raw.pop("trace")
    raw.update(name=f"scale_{hosts}", duration_ms=duration_ms, bin_us=1000.0, seeds=[0])
    raw["measure"] = {"start_ms": 0.0, "end_ms": duration_ms}
    raw["topology"].update(k=k, n=n, load=LOAD, dest="uniform")
    if scheme is not None:
        raw["scheme"] = scheme
    if pause is not None:
        raw.setdefault("pause", {})["enabled"] = pause
    return Scenario(raw, source=f"<scale {hosts}>")


def measure(
    hosts: int, duration_ms: float, scheme: str | None = None, pause: bool | None = None
) -> dict[str, Any]:
    """Runs one size in this process; its figures (peak memory: this process so far)."""
    from .runner import run

    t0 = time.perf_counter()
    sc = scale_scenario(hosts, duration_ms, scheme, pause)
    res = run(sc, progress=False, jobs=1)
    res.summary_dict()  # every metric, as a saved run has them
    res.timeseries()  # and the long series table it writes
    wall_total = time.perf_counter() - t0
    r = res.runs[0]
    wall = max(r.engine["wall_s"], 1e-9)
    return {
        "hosts": hosts,
        "k": SIZES[hosts][0],
        "n": SIZES[hosts][1],
        "scheme": sc.scheme + (" + PAUSE" if sc.pause else ""),
        "simulated_ms": duration_ms,
        "events": r.engine["events"],
        "events_per_s": r.engine["events"] / wall,
        "frames_delivered": r.frames["delivered"],
        "frames_delivered_per_s": r.frames["delivered"] / wall,
        "engine_wall_s": r.engine["wall_s"],
        "wall_s_with_results": wall_total,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_sizes(
    hosts: list[int], duration_ms: float, scheme: str | None = None, pause: bool | None = None
) -> list[dict[str, Any]]:
    """Each size in a fresh process (so each peak memory is its own)."""
    for h in hosts:
        scale_scenario(h, duration_ms, scheme, pause)  # bad input is refused before anything runs
    out = []
    for h in hosts:
        args = [sys.executable, "-m", "cnsim.benchscale", str(h), repr(duration_ms)]
        args += [scheme or "-", "-" if pause is None else str(pause).lower()]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _CHILDREN.add(p)
        try:
            stdout, stderr = p.communicate()
        finally:
            _stop(p)
        if p.returncode != 0:
            lines = (stderr or stdout).strip().splitlines() or [f"exit status {p.returncode}"]
            raise ScenarioError(f"--workload scale: the {h}-host run failed: {lines[-1]}")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


#: The size running now, in its own process: `stop_children` ends it when
#: this process is interrupted (SIGINT, SIGTERM), and a child whose parent
#: is gone stops by itself (`_exit_with_parent`).
_CHILDREN: set[subprocess.Popen[str]] = set()


def _stop(p: subprocess.Popen[str]) -> None:
    _CHILDREN.discard(p)
    if p.poll() is None:
        with contextlib.suppress(OSError):
            p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(5)


def stop_children() -> None:
    """Ends every size still running (the parent is exiting)."""
    for p in list(_CHILDREN):
        _stop(p)


def _exit_with_parent(parent: int) -> None:
    """A thread of the child: exits when its parent is gone (killed, even by
    SIGKILL, before it could stop its children)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="cnsim-parent-watch").start()


def best_of(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per size, the round with the most events per second (its figures), the
    largest peak memory of all rounds, and events per second relative to the
    smallest fabric's (`events_per_s_vs_smallest`)."""
    rows = []
    for runs in zip(*rounds, strict=True):
        best = dict(max(runs, key=lambda r: r["events_per_s"]))
        best["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
        rows.append(best)
    rows.sort(key=lambda r: r["hosts"])
    for r in rows:
        r["events_per_s_vs_smallest"] = r["events_per_s"] / rows[0]["events_per_s"]
    return rows


def main(argv: list[str]) -> int:
    _exit_with_parent(os.getppid())
    hosts, ms = int(argv[0]), float(argv[1])
    scheme = argv[2] if len(argv) > 2 and argv[2] != "-" else None
    pause = {"true": True, "false": False}.get(argv[3]) if len(argv) > 3 else None
    print(json.dumps(measure(hosts, ms, scheme, pause)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

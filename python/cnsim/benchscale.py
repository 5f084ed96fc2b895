"""`cnsim bench --workload scale`: the engine on fabrics of 64 to 65,536 hosts.

Two families of fabrics, chosen by the sizes asked for:

- fat trees of 64, 512, 1,000, 1,024 and 4,096 hosts (the default): k-ary
  n-trees with the bridges, stations and links of `fattree_hotspot`
  (scenarios.md section 7), every host at 85% load to uniform
  destinations, QCN-2pt without PAUSE, 10 simulated ms;
- leaf-spines of 128, 1,536, 6,144, 16,384 and 65,536 hosts with the
  web-search workload of `flows_websearch` (DCTCP with PFC, Poisson flow
  arrivals at 50% of each host link, the DCTCP paper's flow sizes), 2
  simulated ms: the 128-host fabric is the built-in scenario's.

Seed 0, no hotspot and no traced ports. Each size runs in a process of its
own, so the peak memory reported is that of a whole cnsim process: the
scenario, the engine, the results (tables, series, metrics) as `cnsim.run`
returns them. Each size reports the time from its scenario to the first
event (`build_s`: the network built and checked by the engine), events per
second, events per delivered frame and peak memory.

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
#: Hosts -> (leaves, spines, hosts per leaf) of the web-search leaf-spine.
LEAFSPINES: dict[int, tuple[int, int, int]] = {
    128: (8, 4, 16),
    1536: (96, 16, 16),
    6144: (384, 48, 16),
    16384: (512, 16, 32),
    65536: (1024, 64, 64),
}
DEFAULT_HOSTS = (64, 512, 1024, 4096)
LOAD = 0.85
#: Simulated ms of each family when --duration is not given.
DEFAULT_MS = {"fattree": 10.0, "leafspine": 2.0}


def family(hosts: list[int]) -> str:
    """The fabric family of `hosts` (fattree or leafspine), refusing a size
    the scale workload does not have or sizes of both families together."""
    for h in hosts:
        if h not in SIZES and h not in LEAFSPINES:
            raise ScenarioError(
                f"--hosts: {h} is not allowed; expected fat-tree sizes ({', '.join(map(str, SIZES))}) "
                f"or web-search leaf-spine sizes ({', '.join(map(str, LEAFSPINES))})"
            )
    kinds = {"fattree" if h in SIZES else "leafspine" for h in hosts}
    if len(kinds) > 1:
        raise ScenarioError(
            "--hosts: give sizes of one family: fat trees "
            f"({', '.join(map(str, SIZES))}) or web-search leaf-spines ({', '.join(map(str, LEAFSPINES))})"
        )
    return kinds.pop() if kinds else "fattree"


def check_sizes(hosts: list[int]) -> None:
    """Refuses a fabric size the scale workload does not have."""
    family(hosts)


def shape(hosts: int) -> str:
    """How the fabric of `hosts` is built, for the table: "k, n" or leaves x hosts / spines."""
    if hosts in SIZES:
        k, n = SIZES[hosts]
        return f"fat tree k={k}, n={n}"
    leaves, spines, per_leaf = LEAFSPINES[hosts]
    return f"{leaves} x {per_leaf} / {spines} spines"


def scale_scenario(
    hosts: int, duration_ms: float = 10.0, scheme: str | None = None, pause: bool | None = None
) -> Any:
    """The scale workload's scenario for a fabric of `hosts` hosts."""
    from .scenario import Scenario

    if family([hosts]) == "leafspine":
        return _websearch_scenario(hosts, duration_ms, scheme, pause)
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


def _websearch_scenario(hosts: int, duration_ms: float, scheme: str | None, pause: bool | None) -> Any:
    from .scenario import Scenario

    leaves, spines, per_leaf = LEAFSPINES[hosts]
    raw = tomllib.loads((resources.files("cnsim") / "scenarios" / "flows_websearch.toml").read_text())
    raw.update(name=f"scale_websearch_{hosts}", duration_ms=duration_ms, seeds=[0], scheme=scheme or "dctcp")
    raw["topology"].update(leaves=leaves, spines=spines, hosts_per_leaf=per_leaf)
    if pause is not None:
        raw.setdefault("pause", {})["enabled"] = pause
    return Scenario(raw, source=f"<scale websearch {hosts}>")


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
        "fabric": shape(hosts),
        "scheme": sc.scheme + (" + PAUSE" if sc.pause else ""),
        "simulated_ms": duration_ms,
        "events": r.engine["events"],
        "events_per_s": r.engine["events"] / wall,
        "frames_delivered": r.frames["delivered"],
        "frames_delivered_per_s": r.frames["delivered"] / wall,
        "events_per_frame": r.engine["events"] / max(r.frames["delivered"], 1),
        "build_s": r.engine["build_s"],
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

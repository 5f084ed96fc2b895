"""The multi-class checks' scenarios (`cnsim validate --only multiclass`,
docs/calibration.md section 8), as scenario tables: two classes through one
port, the same under PFC, and the worst arrival pattern for one port's
headroom (docs/classes.md, "Headroom"), and a web-search load with incasts
under DCQCN with and without a window, and HPCC."""

from __future__ import annotations

import copy
from typing import Any


def _two_classes(**bridge: Any) -> dict[str, Any]:
    """Two stations at line rate into one sink through one bridge, S1 at
    priority 0 and S2 at priority 3; the bridge's buffer unbounded, so that
    both classes stay backlogged and the scheduler alone shares the port."""
    return {
        "name": "two_classes",
        "duration_ms": 5.0,
        "measure": {"start_ms": 1.0, "end_ms": 5.0},
        "bridge": {"buffer_mode": "infinite", **bridge},
        "nodes": [
            {"name": "S1", "kind": "station", "load": 1.0, "dest": "D", "priority": 0},
            {"name": "S2", "kind": "station", "load": 1.0, "dest": "D", "priority": 3},
            {"name": "D", "kind": "station"},
            {"name": "B", "kind": "bridge"},
        ],
        "links": [{"a": "S1", "b": "B"}, {"a": "S2", "b": "B"}, {"a": "B", "b": "D"}],
    }


def _pfc_two_classes() -> dict[str, Any]:
    """The same with per-input buffers, PFC for priority 3 (XOFF / XON 50 /
    40 KB), both stopping at 3 ms and drained by 5 ms."""
    doc = _two_classes()
    doc["bridge"] = {"buffer_mode": "per_input"}
    for n in doc["nodes"][:2]:
        n["stop_ms"] = 3.0
    doc["measure"] = {"start_ms": 0.5, "end_ms": 2.5}
    doc["stats"] = {"per_flow": True}
    doc["pause"] = {
        "enabled": True,
        "mode": "pfc",
        "lossless": [3],
        "xoff_bytes": 50_000,
        "xon_bytes": 40_000,
    }
    return doc


def headroom_case(gbps: float, cable_m: float, mtu: int, headroom: int | None = None) -> dict[str, Any]:
    """The worst arrival pattern for one port's headroom (docs/classes.md,
    "Headroom"; crates/cnsim-core/tests/mmu.rs builds the same): S sends
    lossless priority 3 at line rate over `cable_m` metres into an mmu
    bridge B whose port to D runs at a fiftieth of the rate, so that B
    pauses S again and again and hardly drains while the headroom fills; R
    keeps B's port towards S busy with full lossy frames; B's latency makes
    each XOFF wait behind a frame just begun and land on S just after S
    began one. Frames of `mtu` bytes; `headroom` bytes per port (None:
    auto)."""
    from . import _core

    rate_bps = gbps * 1e9
    frame_ps = -(-mtu * 8 * 10**12 // int(rate_bps))
    delay_ps = round(cable_m * 5_000)
    latency_ps = (2 * frame_ps - (2 * delay_ps) % frame_ps + 1_000) % frame_ps
    auto = _core.pause_headroom_bytes(gbps, delay_ps / 1e6, latency_ps / 1e6, mtu, 64, 1)
    held = auto if headroom is None else headroom
    cycle_ms = (auto + 3072) * 8 * 50 / rate_bps * 1e3
    return {
        "name": f"headroom_{gbps:g}g_{cable_m:g}m_{mtu}",
        "duration_ms": 40 * cycle_ms,
        "defaults": {"frame_bytes": mtu, "link_rate_gbps": gbps, "link_delay_us": 0.001},
        "bridge": {
            "buffer_mode": "mmu",
            "buffer_bytes": 6 * 4096 + 3 * held + 40 * mtu,
            "latency_us": latency_ps / 1e6,
            "headroom_bytes": "auto" if headroom is None else headroom,
        },
        "pause": {"enabled": True, "mode": "pfc", "lossless": [3]},
        "nodes": [
            {"name": "S", "kind": "station", "load": 1.0, "dest": "D", "priority": 3},
            {"name": "R", "kind": "station", "load": 1.0, "dest": "S", "priority": 0},
            {"name": "D", "kind": "station", "priority": 3},
            {"name": "B", "kind": "bridge"},
        ],
        "links": [
            {"a": "S", "b": "B", "cable_m": cable_m},
            {"a": "R", "b": "B"},
            {"a": "B", "b": "D", "rate_gbps": gbps / 50},
        ],
    }


#: The headroom checks' points: (Gbit/s, cable m, MTU B).
HEADROOM_POINTS = [(10, 1.0, 1500), (100, 100.0, 1500), (400, 300.0, 9000)]


def websearch_incast(scheme: str, window: bool = False) -> Any:
    """The HPCC maintainers' observation (issue 14 of their ns-3 fork;
    ../shared/spec/fabrics.md section 1): flows_websearch's 128-host
    leaf-spine at 30% web-search load, beside it a 32-to-1 incast of 64 KB
    flows every 2 ms into H0 (`[[workloads]]`), arrivals for 5 ms, in 4 MB
    shared-buffer switches (mmu) with PFC on priority 3, seeds 0-2. DCQCN
    starts every flow at line rate and triggers PFC; with a window of one
    BDP (`dcqcn.window`), or HPCC, it does not."""
    from .scenario import load

    sc = load("flows_websearch").replace(
        scheme=scheme,
        seeds=3,
        **{"workload.end_ms": 5.0, "duration_ms": 40.0, "workload.load": 0.3},
    )
    doc = copy.deepcopy(sc.raw)
    doc["bridge"] = {"buffer_mode": "mmu", "buffer_bytes": 4_000_000, "latency_us": 1.0}
    doc["pause"] = {"enabled": True, "mode": "pfc", "lossless": [3]}
    doc["workloads"] = [
        {
            "kind": "incast",
            "fan_in": 32,
            "receiver": "H0",
            "size_bytes": 64_000,
            "start_ms": 0.5,
            "period_us": 2000.0,
        }
    ]
    if window:
        doc.setdefault("dcqcn", {})["window"] = True
    return type(sc)(doc)

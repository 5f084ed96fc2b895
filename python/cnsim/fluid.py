"""Fluid models of BCN and QCN beside the packet simulator (schemes.md,
"Fluid models"; equations in docs/fluid.md).

`fluid_config(scenario)` reads one congestion point out of a scenario: the
flows into one destination (the only one of every source, the hotspot node,
or `dest`) and the port that feeds it.
`run_fluid(scenario)` integrates the model (Rust, GIL released) and
`compare(scenario)` runs the packet simulator on the same scenario and
draws both on the same axes."""

from __future__ import annotations

import json
import math
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import cnsim._core as _core

from .scenario import PS_PER_US, Scenario, ScenarioError

DEFAULT_STEP_US = 0.1


@dataclass
class FluidRun:
    """Bin means of one integration."""

    config: dict[str, Any]
    bin_ms: float
    queue_bytes: np.ndarray
    sent_gbps: dict[str, np.ndarray]
    rl_gbps: dict[str, np.ndarray]
    dropped_bytes: float
    wall_s: float

    @property
    def time_ms(self) -> np.ndarray:
        return np.arange(len(self.queue_bytes)) * self.bin_ms

    def stability(self, lo_ms: float, hi_ms: float) -> dict[str, Any]:
        """Whether the trajectories have settled by the last fifth of [lo, hi):
        the queue's swing (max - min) there at most one frame, every flow's
        rate swing at most 1% of the bottleneck capacity."""
        t = self.time_ms
        tail = (t >= hi_ms - (hi_ms - lo_ms) / 5) & (t < hi_ms)
        q = self.queue_bytes[tail]
        q_swing = float(q.max() - q.min()) if q.size else 0.0
        r_swing = max(
            (float(v[tail].max() - v[tail].min()) for v in self.sent_gbps.values() if v[tail].size),
            default=0.0,
        )
        cap = self.config["capacity_bps"] / 1e9
        return {
            "queue_swing_kb": q_swing / 1e3,
            "rate_swing_gbps": r_swing,
            "settled": q_swing <= self.config["frame_bytes"] and r_swing <= 0.01 * cap,
        }

    def timeseries(self) -> pl.DataFrame:
        """Long format like a run's timeseries: time_ms, series, key, value."""
        t = self.time_ms
        frames = [_long(t, "queue_bytes", self.config["cp_port"], self.queue_bytes)]
        frames += [_long(t, "sent_gbps", k, v) for k, v in self.sent_gbps.items()]
        frames += [_long(t, "rl_rate_gbps", k, v) for k, v in self.rl_gbps.items()]
        return pl.concat(frames)


def _long(t: np.ndarray, series: str, key: str, v: np.ndarray) -> pl.DataFrame:
    n = len(v)
    return pl.DataFrame({"time_ms": t, "series": [series] * n, "key": [key] * n, "value": v})


def _path(adj: dict[str, list[str]], src: str, dst: str) -> list[str] | None:
    prev: dict[str, str | None] = {src: None}
    todo = deque([src])
    while todo:
        u = todo.popleft()
        if u == dst:
            break
        for v in adj.get(u, []):
            if v not in prev:
                prev[v] = u
                todo.append(v)
    if dst not in prev:
        return None
    out = [dst]
    while prev[out[-1]] is not None:
        out.append(prev[out[-1]])  # type: ignore[arg-type]
    return out[::-1]


def _share(station: dict[str, Any], dst: str, names: list[str]) -> float:
    """The fraction of `station`'s traffic that goes to `dst`."""
    d = station["dest"]
    if d["kind"] == "fixed":
        return 1.0 if d["node"] == dst else 0.0
    if d["kind"] == "uniform":
        return 1.0 / (len(names) - 1) if station["name"] != dst else 0.0
    weights = {name: w for name, w in d["weights"]}
    return weights.get(dst, 0.0) / sum(weights.values())


def fluid_config(sc: Scenario, step_us: float = DEFAULT_STEP_US, dest: str | None = None) -> dict[str, Any]:
    """The fluid model's configuration for scenario `sc` (engine units): the
    flows into destination `dest` (default: the only destination of every
    loaded station, else the hotspot node) and the queue of the port that
    feeds it."""
    cfg = sc.engine_config()
    if cfg["pause"]["enabled"]:
        raise ScenarioError("fluid: the fluid model has no PAUSE; run it with --no-pause")
    loaded = [s for s in cfg["stations"] if s["load"] > 0]
    names = [s["name"] for s in cfg["stations"]]
    transport = (cfg.get("transport") or {}).get("flows") or []
    if not loaded and transport:
        # Transport flows (a [workload] of flows given one by one): each
        # sender is a fluid flow at up to its line rate from its first flow on.
        by_name = {s["name"]: s for s in cfg["stations"]}
        first: dict[str, dict[str, Any]] = {}
        for f in transport:
            first.setdefault(f["src"], f)
        loaded = [
            {**by_name[src], "load": 1.0, "dest": {"kind": "fixed", "node": f["dst"]}}
            for src, f in first.items()
        ]
        cfg["events"] = cfg["events"] + [
            {"at_ps": f["start_ps"], "action": "start", "node": src} for src, f in first.items()
        ]
    if dest is None:
        fixed = {s["dest"].get("node") if s["dest"]["kind"] == "fixed" else None for s in loaded}
        if loaded and len(fixed) == 1 and None not in fixed:
            dest = fixed.pop()
        elif sc.model.hotspot is not None:
            dest = sc.model.hotspot.node
        else:
            raise ScenarioError(
                f"fluid: scenario '{sc.name}' is not one bottleneck; the fluid model needs every "
                "loaded station to send to one fixed destination (e.g. baseline, calibration), "
                "a hotspot node, or --dest NODE"
            )
    elif dest not in names:
        raise ScenarioError(f"--dest: '{dest}' is not allowed; expected a station of the scenario")
    dst = dest
    shares = {s["name"]: _share(s, dst, names) for s in loaded}
    loaded = [s for s in loaded if shares[s["name"]] > 0]
    if not loaded:
        raise ScenarioError(f"fluid: no loaded station sends to '{dst}'")
    if not 0 < step_us <= sc.duration_ms * 1000:  # also NaN and inf
        raise ScenarioError(
            f"--step-us: {step_us} is not allowed; expected a number > 0 and at most the run's length "
            f"({sc.duration_ms * 1000:g} us)"
        )
    links = {(lk["a"], lk["b"]): lk for lk in cfg["links"]}
    adj: dict[str, list[str]] = {}
    for a, b in links:
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, []).append(a)
    bridges = {b["name"]: b for b in cfg["bridges"]}
    frame_bits = 8 * cfg["frame_bytes"]
    ctrl_bits = 8 * cfg["control_frame_bytes"]

    def link(a: str, b: str) -> dict[str, Any]:
        return links.get((a, b)) or links[(b, a)]

    flows = []
    cp_bridge = None
    events = cfg["events"]
    for s in loaded:
        p = _path(adj, s["name"], dst)
        if p is None or len(p) < 3:
            raise ScenarioError(f"fluid: no bridge between '{s['name']}' and '{dst}'")
        if cp_bridge is None:
            cp_bridge = p[-2]
        elif p[-2] != cp_bridge:
            raise ScenarioError(f"fluid: '{dst}' is reached through more than one bridge")
        hops = list(zip(p[:-2], p[1:-1], strict=True))  # the links up to the CP bridge
        fwd = sum(link(a, b)["delay_ps"] + round(frame_bits / link(a, b)["rate_bps"] * 1e12) for a, b in hops)
        fwd += sum(bridges[n]["latency_ps"] for n in p[1:-1])
        back = sum(link(a, b)["delay_ps"] + round(ctrl_bits / link(a, b)["rate_bps"] * 1e12) for a, b in hops)
        back += sum(bridges[n]["latency_ps"] for n in p[1:-2]) + s["processing_ps"]
        rate = link(p[0], p[1])["rate_bps"]
        start = [e["at_ps"] for e in events if e["action"] == "start" and e["node"] == s["name"]]
        stop = [e["at_ps"] for e in events if e["action"] == "stop" and e["node"] == s["name"]]
        flows.append(
            {
                "name": s["name"],
                "offered_bps": s["load"] * rate * shares[s["name"]],
                "share": shares[s["name"]],
                "line_rate_bps": rate,
                "start_ps": min(start) if start else 0,
                "stop_ps": min(stop) if stop else 2**64 - 1,
                "forward_delay_ps": fwd,
                "feedback_delay_ps": back,
            }
        )
    assert cp_bridge is not None
    bottleneck = link(cp_bridge, dst)
    br = bridges[cp_bridge]
    mode = br["buffer_mode"]
    if mode == "per_input":
        buffer = br["buffer_bytes"] * len(flows)
    elif mode == "infinite":
        buffer = 1e15
    else:
        buffer = br["buffer_bytes"]
    changes = [
        [e["at_ps"], e["rate_bps"]]
        for e in events
        if e["action"] == "link_rate" and (e["from"], e["to"]) == (cp_bridge, dst)
    ]
    return {
        "capacity_bps": bottleneck["rate_bps"],
        "capacity_changes": changes,
        "buffer_bytes": float(buffer),
        "duration_ps": cfg["duration_ps"],
        "bin_ps": cfg["bin_ps"],
        "step_ps": max(1, round(step_us * PS_PER_US)),
        "frame_bytes": float(cfg["frame_bytes"]),
        "flows": flows,
        "scheme": cfg["scheme"],
        "cp_port": f"{cp_bridge}->{dst}",
        "dest": dst,
    }


def run_fluid(sc: Scenario, step_us: float = DEFAULT_STEP_US, dest: str | None = None) -> FluidRun:
    """Integrates the fluid model of scenario `sc` (see `fluid_config`)."""
    cfg = fluid_config(sc, step_us, dest)
    engine = {k: v for k, v in cfg.items() if k not in ("cp_port", "dest")}
    engine["flows"] = [{k: v for k, v in f.items() if k != "share"} for f in cfg["flows"]]
    t0 = time.perf_counter()
    try:
        out = json.loads(_core.fluid_json(json.dumps(engine)))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    wall = time.perf_counter() - t0
    names = [f["name"] for f in cfg["flows"]]
    return FluidRun(
        config=cfg,
        bin_ms=out["bin_ps"] / 1e9,
        queue_bytes=np.asarray(out["queue_bytes"]),
        sent_gbps={n: np.asarray(v) / 1e9 for n, v in zip(names, out["sent_bps"], strict=True)},
        rl_gbps={n: np.asarray(v) / 1e9 for n, v in zip(names, out["rl_bps"], strict=True)},
        dropped_bytes=out["dropped_bytes"],
        wall_s=wall,
    )


def comparison_window(engine: dict[str, Any]) -> tuple[float, float]:
    """The fairness window, else the hotspot window, else the measurement
    window (ms) of a resolved scenario."""
    windows = {w["name"]: w for w in engine["windows"]}
    w = windows.get("fairness") or windows.get("hotspot") or engine["windows"][0]
    return w["start_ps"] / 1e9, w["end_ps"] / 1e9


@dataclass
class Comparison:
    fluid: FluidRun
    packet: Any  # Results
    window_ms: tuple[float, float]
    #: rows: figure, fluid, packet (mean over seeds)
    rows: list[tuple[str, float, float | None]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "window_ms": list(self.window_ms),
            "fluid_stability": self.fluid.stability(*self.window_ms),
            "fluid_wall_s": self.fluid.wall_s,
            "fluid_dropped_bytes": self.fluid.dropped_bytes,
            "rows": [{"figure": f, "fluid": a, "packet": b} for f, a, b in self.rows],
        }


def _packet_series(res: Any, series: str, key: str) -> np.ndarray | None:
    vals = [v for r in res.runs for (s, k, v) in r.series if s == series and k == key]
    return np.mean(vals, axis=0) if vals else None


def compare(
    sc: Scenario, step_us: float = DEFAULT_STEP_US, jobs: int | None = None, dest: str | None = None
) -> Comparison:
    """Fluid model and packet simulator (every seed of `sc`) on the same scenario."""
    from .runner import run

    fl = run_fluid(sc, step_us, dest)
    res = run(sc, jobs=jobs, progress=False)
    engine = sc.engine_config()
    lo, hi = comparison_window(engine)
    t = fl.time_ms
    sel = (t >= lo) & (t < hi)
    rows: list[tuple[str, float, float | None]] = []
    q = _packet_series(res, "queue_bytes", fl.config["cp_port"])
    rows.append(
        (
            "mean CP queue (KB)",
            float(fl.queue_bytes[sel].mean()) / 1e3,
            None if q is None else float(q[sel].mean()) / 1e3,
        )
    )
    flows = fl.config["flows"]
    if all(f["share"] >= 1.0 for f in flows):
        for f in flows:
            p = _packet_flow(res, engine, f)
            a = float(fl.sent_gbps[f["name"]][sel].mean())
            rows.append((f"{f['name']} rate (Gbit/s)", a, None if p is None else float(p[sel].mean())))
    else:
        # Sources that also send elsewhere: no packet series of one flow; the
        # mean-field flows are alike (up to their offered share).
        a = float(np.mean([v[sel].mean() for v in fl.sent_gbps.values()]))
        rows.append((f"mean of the {len(flows)} flows into {fl.config['dest']} (Gbit/s)", a, None))
    total_f = float(sum(fl.sent_gbps.values())[sel].mean())
    into = _packet_series(res, "delivered_throughput", fl.config["dest"])
    rows.append(
        (
            f"total into {fl.config['dest']} (Gbit/s)",
            total_f,
            None if into is None else float(into[sel].mean()),
        )
    )
    return Comparison(fl, res, (lo, hi), rows)


def _packet_flow(res: Any, engine: dict[str, Any], flow: dict[str, Any]) -> np.ndarray | None:
    """A flow's packet rate: its source's uplink, when the source sends nowhere else."""
    if flow["share"] < 1.0:
        return None
    up = _uplink(engine, flow["name"])
    return _packet_series(res, "link_throughput", up) if up else None


def _uplink(engine: dict[str, Any], station: str) -> str | None:
    for lk in engine["links"]:
        if lk["a"] == station:
            return f"{station}->{lk['b']}"
        if lk["b"] == station:
            return f"{station}->{lk['a']}"
    return None


def plot_comparison(c: Comparison, path: str | Path) -> Path:
    """Queue and per-flow rates, packet (thin, mean over seeds) and fluid (dashed), same axes."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    from .report.figures import _smooth

    fl, res = c.fluid, c.packet
    t = fl.time_ms
    fig = Figure(figsize=(9, 7))
    ax_q, ax_r = fig.subplots(2, 1, sharex=True)
    q = _packet_series(res, "queue_bytes", fl.config["cp_port"])
    if q is not None:
        ax_q.plot(t[: len(q)], q / 1e3, lw=0.7, color="tab:blue", alpha=0.7, label="packet (mean over seeds)")
    ax_q.plot(t, fl.queue_bytes / 1e3, lw=2, ls="--", color="black", label="fluid")
    ax_q.set_ylabel(f"queue at {fl.config['cp_port']} (KB)")
    ax_q.legend(loc="upper right")
    colors = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    bin_ms = fl.bin_ms
    flows = fl.config["flows"]
    if all(f["share"] >= 1.0 for f in flows):
        engine = res.scenario.engine_config()
        for i, f in enumerate(flows):
            name, col = f["name"], colors[i % len(colors)]
            p = _packet_flow(res, engine, f)
            if p is not None:
                ax_r.plot(
                    t[: len(p)], _smooth(p, bin_ms), lw=0.8, color=col, alpha=0.7, label=f"{name} packet"
                )
            ax_r.plot(t, fl.sent_gbps[name], lw=2, ls="--", color=col, label=f"{name} fluid")
    else:
        # Sources that also send elsewhere: the total into the destination.
        dst = fl.config["dest"]
        into = _packet_series(res, "delivered_throughput", dst)
        if into is not None:
            ax_r.plot(
                t[: len(into)],
                _smooth(into, bin_ms),
                lw=0.8,
                color=colors[0],
                alpha=0.8,
                label=f"into {dst}, packet",
            )
        ax_r.plot(t, sum(fl.sent_gbps.values()), lw=2, ls="--", color="black", label=f"into {dst}, fluid")
        ax_r.plot(
            t, next(iter(fl.sent_gbps.values())), lw=1.2, ls=":", color=colors[1], label="one flow, fluid"
        )
    ax_r.set_ylabel("rate (Gbit/s)")
    ax_r.set_xlabel("time (ms)")
    ax_r.legend(loc="upper right", fontsize=7, ncol=2)
    scheme = res.scenario.scheme
    fig.suptitle(f"{res.scenario.name}, {scheme}: packet simulator and fluid model")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path


def _clean_runs(x: float, p: float, n: float) -> float:
    """Runs of `n` unmarked packets per second among `x` packets per second
    marked with probability `p` (the Rust model's `clean_runs`)."""
    if p <= 0.0:
        return x / n if n > 0 else 0.0
    e_arg = -n * math.log1p(-p) if p < 1.0 else math.inf
    e = math.expm1(e_arg) if e_arg < 700 else math.inf
    return x * p / e if math.isfinite(e) and e > 0 else 0.0


def dcqcn_fixed_point(params: dict[str, Any], rate_bps: float, frame_bytes: float) -> dict[str, float]:
    """The fixed point of the DCQCN fluid model (Zhu et al., CoNEXT 2016,
    eqs. 1-3; the same terms as the integrator in crates/cnsim-core/src/fluid.rs)
    for flows at `rate_bps` each: dR_C/dt = dR_T/dt = dalpha/dt = 0 give
    alpha = 1 - (1 - p)^(T R), R_T - R_C = tau R_AI ai(p) / a(p) and
    R_C alpha a = tau^2 R_AI ai cycles / a, one equation in the marking
    probability p, solved by bisection. The queue is where the RED ramp
    marks with p (Kmax when p > Pmax: the queue then sits on the ramp's step).
    Returns p, queue_bytes, alpha and R_T (bit/s)."""
    pps = rate_bps / (8.0 * frame_bytes)
    tau = params["cnp_interval_us"] * 1e-6
    t = params["timer_us"] * 1e-6
    b = params["bc_bytes"] / frame_bytes
    f = float(params["fr_thr"])
    r_ai = params["r_ai_mbps"] * 1e6

    def terms(p: float) -> tuple[float, float, float, float]:
        def marked(window: float) -> float:
            return 1.0 if p >= 1.0 else -math.expm1(window * pps * math.log1p(-p))

        cycles = _clean_runs(pps, p, b) + _clean_runs(pps, p, t * pps)
        ai = _clean_runs(pps, p, f * b) + _clean_runs(pps, p, f * t * pps)
        return marked(tau), marked(t), cycles, ai

    def excess(p: float) -> float:
        a, a_timer, cycles, ai = terms(p)
        return rate_bps * a_timer * a * a - tau * tau * r_ai * ai * cycles

    lo, hi = 1e-12, 1.0 - 1e-12
    for _ in range(200):  # bisection in log p: the root spans decades
        mid = math.sqrt(lo * hi)
        if excess(mid) > 0:
            hi = mid
        else:
            lo = mid
    p = math.sqrt(lo * hi)
    a, a_timer, _, ai = terms(p)
    kmin, kmax, pmax = params["kmin_bytes"], params["kmax_bytes"], params["pmax"]
    queue = kmax if p > pmax else kmin + p / pmax * (kmax - kmin)
    return {"p": p, "queue_bytes": queue, "alpha": a_timer, "rt_bps": rate_bps + tau * r_ai * ai / a}

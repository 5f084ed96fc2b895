"""A validated scenario resolved into the engine config
(docs/engine-interface.md): integer picoseconds, bit/s, bytes, explicit
events, routes and the scheme's full parameter table."""

from __future__ import annotations

from typing import Any

from ..schemes import engine_scheme
from ..topologies import routing_for
from ..workloads import transport_of as flows_transport
from .model import PER_FLOW_AUTO_STATIONS, PS_PER_MS, PS_PER_US, HotspotDest


def _ps(ms: float) -> int:
    return round(ms * PS_PER_MS)


def _bps(gbps: float) -> int:
    return round(gbps * 1e9)


def traced_ports(m: Any) -> list[str]:
    """The ports whose queues are traced: `trace.ports`, else `cp_ports`, else
    every output port of a cp = true bridge while there are at most
    `stats.max_series_keys` of them (a large fabric names its own)."""
    if m.trace.ports is not None:
        return list(m.trace.ports)
    if m.cp_ports:
        return list(m.cp_ports)
    cp_bridges = {n.name for n in m.nodes if n.kind == "bridge" and n.cp}
    trace = [
        f"{x}->{y}" for link in m.links for (x, y) in ((link.a, link.b), (link.b, link.a)) if x in cp_bridges
    ]
    return trace if len(trace) <= m.stats.max_series_keys else []


def per_flow(m: Any) -> bool:
    """Whether the run keeps per-flow counters (`stats.per_flow`; auto: on
    up to PER_FLOW_AUTO_STATIONS stations)."""
    if m.stats.per_flow == "auto":
        return sum(1 for n in m.nodes if n.kind == "station") <= PER_FLOW_AUTO_STATIONS
    return bool(m.stats.per_flow)


def pause_headroom_bytes(m: Any, ingress_ports: int) -> int:
    """Bytes a bridge buffer needs above XOFF so that PAUSE loses no data
    frame, for a queue fed by `ingress_ports` ports over the scenario's
    default links and bridge latency (`m`: a ScenarioModel): the engine's
    formula (`_core.pause_headroom_bytes`, docs/schemes.md "PAUSE")."""
    import cnsim._core as _core

    d = m.defaults
    return _core.pause_headroom_bytes(
        _bps(d.link_rate_gbps),
        round(d.link_delay_us * PS_PER_US),
        round(m.bridge.latency_us * PS_PER_US),
        d.frame_bytes,
        d.control_frame_bytes,
        ingress_ports,
    )


def resolve(scenario: Any, scheme: str | None = None, pause: bool | None = None) -> dict[str, Any]:
    """The engine config (docs/engine-interface.md) of `scenario` (a
    validated cnsim.Scenario), optionally with another scheme or PAUSE
    setting: integer picoseconds, bit/s, bytes. A free function below the
    Scenario (which it never imports): `Scenario.engine_config()` calls it."""
    if scheme is not None or pause is not None:
        scenario = scenario.replace(
            **{k: v for k, v in (("scheme", scheme), ("pause", pause)) if v is not None}
        )
    m = scenario.model
    d = m.defaults
    end = m.measure.end_ms if m.measure.end_ms is not None else m.duration_ms
    windows = [{"name": "measure", "start_ps": _ps(m.measure.start_ms), "end_ps": _ps(end)}]
    for wn, w in m.windows.items():
        windows.append({"name": wn, "start_ps": _ps(w.start_ms), "end_ps": _ps(w.end_ms)})
    if m.hotspot and "hotspot" not in m.windows and m.hotspot.start_ms < m.duration_ms:
        h = m.hotspot
        windows.append(
            {
                "name": "hotspot",
                "start_ps": _ps(min(h.start_ms, m.duration_ms)),
                "end_ps": _ps(min(h.end_ms, m.duration_ms)),
            }
        )
    stations: list[dict[str, Any]] = []
    bridges: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    st, br = m.station, m.bridge
    for n in m.nodes:
        if n.kind == "station":
            if isinstance(n.dest, HotspotDest):
                dest: dict[str, Any] = {
                    "kind": "hotspot",
                    "node": n.dest.hotspot,
                    "fraction": n.dest.fraction,
                }
            elif isinstance(n.dest, dict):
                dest = {"kind": "weighted", "weights": list(n.dest.items())}
            elif n.dest == "uniform":
                dest = {"kind": "uniform"}
            else:
                dest = {"kind": "fixed", "node": n.dest}
            processing = n.processing_us if n.processing_us is not None else st.processing_us
            stations.append(
                {
                    "name": n.name,
                    "load": n.load,
                    "dest": dest,
                    "nic_buffer_bytes": _or(n.nic_buffer_bytes, st.nic_buffer_bytes),
                    "rlq_bytes": _or(n.rlq_bytes, st.rlq_bytes),
                    "processing_ps": round(processing * PS_PER_US),
                    "rl_scope": st.rl_scope,
                    "nic_full": st.nic_full,
                    "rl_order": st.rl_order,
                }
            )
            if n.load > 0:
                events.append({"at_ps": _ps(n.start_ms), "action": "start", "node": n.name})
                if n.stop_ms is not None:
                    events.append({"at_ps": _ps(n.stop_ms), "action": "stop", "node": n.name})
        else:
            latency = n.latency_us if n.latency_us is not None else br.latency_us
            bridge: dict[str, Any] = {
                "name": n.name,
                "buffer_mode": n.buffer_mode or br.buffer_mode,
                "buffer_bytes": _or(n.buffer_bytes, br.buffer_bytes),
                "latency_ps": round(latency * PS_PER_US),
                "cp": n.cp,
                "ports": n.ports,
            }
            if bridge["buffer_mode"] == "dynamic":
                bridge["dt_alpha"] = br.dt_alpha
            bridges.append(bridge)
    links = []
    rate_of: dict[tuple[str, str], float] = {}
    for link in m.links:
        rate = link.rate_gbps if link.rate_gbps is not None else d.link_rate_gbps
        delay = link.delay_us if link.delay_us is not None else d.link_delay_us
        rate_of[(link.a, link.b)] = rate_of[(link.b, link.a)] = rate
        links.append({"a": link.a, "b": link.b, "rate_bps": _bps(rate), "delay_ps": round(delay * PS_PER_US)})
    if m.hotspot:
        h = m.hotspot
        (up,) = [x for (x, y) in rate_of if y == h.node]
        for at, rate in ((h.start_ms, h.rate_gbps), (h.end_ms, rate_of[(up, h.node)])):
            events.append(
                {
                    "at_ps": _ps(at),
                    "action": "link_rate",
                    "from": up,
                    "to": h.node,
                    "rate_bps": _bps(rate),
                }
            )
    for ev in m.events:
        if ev.action == "link_rate":
            events.append(
                {
                    "at_ps": _ps(ev.at_ms),
                    "action": "link_rate",
                    "from": ev.from_,
                    "to": ev.to,
                    "rate_bps": _bps(ev.rate_gbps or 0.0),
                }
            )
        else:
            events.append({"at_ps": _ps(ev.at_ms), "action": ev.action, "node": ev.node})
    trace = traced_ports(m)
    transport: dict[str, Any] | None = None
    if m.workload is not None:
        transport = flows_transport(m)
    cfg = {
        "duration_ps": _ps(m.duration_ms),
        "bin_ps": round(m.bin_us * PS_PER_US),
        "windows": windows,
        "frame_bytes": d.frame_bytes,
        "control_frame_bytes": d.control_frame_bytes,
        "max_traced_flows": 64,
        "per_flow": per_flow(m),
        "max_series_keys": m.stats.max_series_keys,
        "stations": stations,
        "bridges": bridges,
        "links": links,
        "events": events,
        "pause": {
            "enabled": m.pause.enabled,
            "trigger": m.pause.trigger,
            "xoff_bytes": m.pause.xoff_bytes,
            "xon_bytes": m.pause.xon_bytes,
            "quanta": m.pause.quanta,
        },
        "trace_ports": trace,
        "trace_rls": m.trace.rate_limiters,
        "cp_ports": list(m.cp_ports),
        "routing": routing_for(m.routing, m.topology),
        "routes": [r.dump() for r in m.routes],
        "scheme": engine_scheme(scenario.scheme, scenario.table),
    }
    if transport is not None:
        cfg["transport"] = transport
    if m.fidelity != "packet":  # a packet run's config stays as it was
        cfg["fidelity"] = m.fidelity
    events = trace_config(m)
    if events is not None:
        cfg["trace"] = events
    return cfg


def trace_config(m: Any) -> dict[str, Any] | None:
    """The engine's `trace` (events.parquet and the captures), or None when
    the scenario records neither (the config then has no `trace` at all)."""
    t = m.trace
    if not t.events and not t.pcap:
        return None
    out: dict[str, Any] = {
        "events": list(t.events),
        "event_nodes": list(t.event_nodes),
        "event_ports": list(t.event_ports),
        "event_flows": list(t.event_flows),
        "from_ps": _ps(t.from_ms),
        "max_rows": t.max_rows,
        "pcap": list(t.pcap),
        "snaplen": t.snaplen,
    }
    if t.to_ms is not None:
        out["to_ps"] = _ps(t.to_ms)
    return out


def _or(v: Any, default: Any) -> Any:
    return v if v is not None else default

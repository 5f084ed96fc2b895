"""A validated scenario as the engine compiles it: what Python hands the
engine (`compile_input`: the scenario as read, in the user's units, its
topology generated and its workload's flows planned) and the engine
config it resolves to (`resolve`: integer picoseconds, bit/s, bytes,
explicit events and windows; docs/engine-interface.md). The units, the
defaults a node takes from its section, the traced ports and per-flow
counters are the engine's (crates/cnsim-core/src/compile.rs): no unit
arithmetic here."""

from __future__ import annotations

from typing import Any

from ..schemes import engine_scheme
from ..topologies import routing_for
from ..workloads import transport_of as flows_transport


def compile_input(scenario: Any) -> dict[str, Any]:
    """What the engine compiles `scenario` (a validated cnsim.Scenario)
    from: its sections as read (`scenario`), the routing function, the
    scheme's table and the workload's flows."""
    m = scenario.model
    return {
        "scenario": m.dump(),
        "routing": routing_for(m.routing, m.topology),
        "scheme": engine_scheme(scenario.scheme, scenario.table),
        "transport": flows_transport(m) if m.workload is not None else None,
    }


def resolve(scenario: Any, scheme: str | None = None, pause: bool | None = None) -> dict[str, Any]:
    """The engine config (docs/engine-interface.md) of `scenario` (a
    validated cnsim.Scenario), optionally with another scheme or PAUSE
    setting, as the engine resolves it (not checked: `Scenario.compiled`
    checks). A free function below the Scenario (which it never imports):
    `Scenario.engine_config()` calls it."""
    if scheme is not None or pause is not None:
        scenario = scenario.replace(
            **{k: v for k, v in (("scheme", scheme), ("pause", pause)) if v is not None}
        )
    return scenario.engine_config()


def pause_headroom_bytes(m: Any, ingress_ports: int) -> int:
    """Bytes a bridge buffer needs above XOFF so that PAUSE loses no data
    frame, for a queue fed by `ingress_ports` ports over the scenario's
    default links and bridge latency (`m`: a ScenarioModel): the engine's
    formula (`_core.pause_headroom_bytes`, docs/schemes.md "PAUSE"), in
    the scenario's units."""
    import cnsim._core as _core

    d = m.defaults
    return _core.pause_headroom_bytes(
        d.link_rate_gbps,
        d.link_delay_us,
        m.bridge.latency_us,
        d.frame_bytes,
        d.control_frame_bytes,
        ingress_ports,
    )

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
    transport = flows_transport(m) if m.workload is not None else None
    if m.jobs:  # collective jobs: the engine turns them into flows (collective.rs)
        transport = transport or {"flows": [], "arrivals": []}
        transport["jobs"] = [j.dump(exclude_none=True) for j in m.jobs]
    return {
        "scenario": m.dump(),
        "routing": routing_for(m.routing, m.topology),
        "scheme": engine_scheme(scenario.scheme, scenario.table),
        "class_scheme": class_scheme(m, scenario.scheme),
        "transport": transport,
    }


def class_scheme(m: Any, scheme: str) -> dict[str, Any] | None:
    """The second scheme of scenario model `m` run under `scheme`: that of
    its `[[workloads]]` naming another scheme, for their priorities (the
    engine's `class_scheme`), or None. Raises ScenarioError naming the
    workload for a third scheme, a missing priority, or a priority that
    the run's scheme's workloads use too."""
    from ..errors import ScenarioError
    from ..schemes import SCHEMES

    own: dict[int, str] = {}  # priority -> the workload of `scheme` using it
    if m.workload is not None:
        own[m.workload.priority if m.workload.priority is not None else m.station.priority] = "workload"
    other: tuple[str, list[int]] | None = None
    for i, w in enumerate(m.workloads or []):
        at = f"workloads[{i}]"
        name = w.scheme if w.scheme is not None else scheme
        if name not in SCHEMES:
            raise ScenarioError.at(f"{at}.scheme", f"'{name}' is not a scheme; known: {', '.join(SCHEMES)}")
        prio = w.priority if w.priority is not None else m.station.priority
        if name == scheme:
            own.setdefault(prio, at)
            continue
        if w.priority is None:
            raise ScenarioError.at(
                f"{at}.priority",
                f"a workload under a scheme of its own ({name}, the run's is {scheme}) needs a priority of its own: "
                "switches tell its frames apart by it",
            )
        if other is not None and other[0] != name:
            raise ScenarioError.at(
                f"{at}.scheme",
                f"'{name}' would be a third scheme beside {scheme} and {other[0]}; a run holds two",
            )
        other = (name, sorted({*(other[1] if other else []), prio}))
    if other is None:
        return None
    for prio in other[1]:
        if prio in own:
            i = next(j for j, w in enumerate(m.workloads) if w.priority == prio and w.scheme == other[0])
            raise ScenarioError.at(
                f"workloads[{i}].priority",
                f"{prio} is also the priority of {own[prio]}, under {scheme}; each scheme needs priorities of its own",
            )
    table_name = SCHEMES[other[0]][0]
    return {
        "priorities": other[1],
        "scheme": engine_scheme(other[0], getattr(m, table_name) if table_name else None),
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

"""The scenario file's parameters, each declared once (name, unit in the
name, type, default, allowed range, help) and read without pydantic: every
section is checked against its declaration (`cnsim.parameters`) and held as a
record, in the order and with the messages of the scenario's other checks.
Every section the engine sees is declared by the engine (the top level,
`[measure]`, `[windows.NAME]`, `[defaults]`, `[bridge]`, `[station]`,
`[pause]`, `[hotspot]`, `[trace]`, `[stats]`, `[workload]`, `[[links]]`,
`[[events]]`, `[[routes]]`, `[[nodes]]` and the schemes' tables; the topology
generators' in `cnsim.topologies`) and comes from its declarations
(`declarations.json`); the analysis sections from `analysis_sections`. `cnsim show`'s
comments and the tables of docs/scenario-format.md (`cnsim.docs`) are derived
from the same tables. Rules that tie parameters together are the engine's
(`Scenario.engine_config_checked`); rules against the rest of the scenario
are `core.Scenario._check`'s."""

from __future__ import annotations

import math
from typing import Any

from ..declarations import declarations
from ..parameters import READERS, Record, TableError, param, read_value, record, shown, table
from . import analysis_sections

PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000

#: Most replications of one scenario.
MAX_SEEDS = 1_000_000


def _section(name: str) -> dict[str, Any]:
    return next(t for t in declarations()["sections"] if t["name"] == name)


p = param


#: `[hotspot]` and `[trace]`: declared in the engine (crates/cnsim-core/src/sections.rs),
#: which checks their rules as written (`Scenario.engine_config_checked`).
HOTSPOT = _section("hotspot")
HOTSPOT_DEST = table(
    "dest",
    "A station's destinations with a hotspot: `fraction` of its frames go\nto `hotspot`, the others uniformly to every other station.",
    p("hotspot", "str", "the hot station", required=True, nonempty=True),
    p("fraction", "float", "share of frames sent to the hot station", ge=0, le=1, required=True),
)
#: A node's own keys (`[[nodes]]`): declared in the engine (sections.rs),
#: which checks them in its config (a station's load, a bridge's cp and
#: ports) and, as written, the rule start_ms < stop_ms; `dest` is a kind
#: only Python reads (`_dest`, HotspotDest above). Which kind owns which key
#: (_STATION_ONLY / _BRIDGE_ONLY) and every name a node refers to are rules
#: against the rest of the scenario: `core.Scenario._check`.
NODE = _section("nodes")
NODE_DEST_HELP = next(q for q in NODE["params"] if q["name"] == "dest")["help"]
#: `[[links]]` and `[[routes]]`: declared in the engine (sections.rs), which
#: checks every link and route of the engine config against them.
LINK = _section("links")
ROUTE = _section("routes")
#: `[[ports]]`: a bridge port's own scheduler, declared in the engine, which
#: checks it (its bridge, its rules) in its config.
PORT = _section("ports")
#: `[[events]]`: declared in the engine (sections.rs), which checks every
#: event as written (its rate, and that its action names its node or its
#: link direction and rate: declared rules) and every event of the engine
#: config (`Scenario.engine_config_checked`).
EVENT = _section("events")
TRACE = _section("trace")
#: `[workload]`: declared in the engine (sections.rs), which checks it as
#: written (`Scenario.engine_config_checked`: ranges, start_ms < end_ms) and
#: the transport it resolves to; `cdf` is a kind only Python reads (`_cdf`).
WORKLOAD = _section("workload")
#: `[[workloads]]`: more workloads beside `[workload]`, declared in the
#: engine (sections.rs) with the same keys and a scheme of their own.
WORKLOADS = _section("workloads")
#: `[[jobs]]` and their `phases`: collective jobs, declared in the engine
#: (crates/cnsim-core/src/collective/section.rs), which checks them again
#: and turns them into flows (collective.rs).
JOBS = _section("jobs")
PHASES = _section("phases")
CDF_HELP = next(q for q in WORKLOAD["params"] if q["name"] == "cdf")["help"]
SEEDS_HELP = "replications: a count N (seeds 0..N-1) or a list of seeds"
#: The top-level keys: declared in the engine (sections.rs, the table named
#: ""), which checks the run's length and bins; `routing` is read after the
#: sections it depends on ([topology]), so it is kept apart.
TOP = {**_section(""), "params": [q for q in _section("")["params"] if q["name"] != "routing"]}
TOPOLOGY_HELP = (
    "a generated topology (fattree, leafspine, innocent or pods), see the [topology] tables; the generated nodes and "
    "links come first, the file's [[nodes]] and [[links]] add to them, and a [[nodes]] entry with a generated "
    "node's name changes that node"
)
ROUTING = next(q for q in _section("")["params"] if q["name"] == "routing")


# ---------------------------------------------------------------- records
# Engine-declared sections (crates/cnsim-core/src/sections.rs).
Measure = record(_section("measure"), "Measure")
Window = record(_section("windows"), "Window")
Defaults = record(_section("defaults"), "Defaults")
BridgeDefaults = record(_section("bridge"), "BridgeDefaults")
StationDefaults = record(_section("station"), "StationDefaults")
Pause = record(_section("pause"), "Pause")
Stats = record(_section("stats"), "Stats")
# Read by Python alone, declared in `analysis_sections` (the engine's format).
Fairness = record(analysis_sections.SECTIONS["fairness"], "Fairness")
Utilization = record(analysis_sections.SECTIONS["utilization"], "Utilization")
Stability = record(analysis_sections.SECTIONS["stability"], "Stability")
Innocent = record(analysis_sections.SECTIONS["innocent"], "Innocent")
Transient = record(analysis_sections.SECTIONS["transient"], "Transient")
# Declared above.
Hotspot = record(HOTSPOT, "Hotspot")
HotspotDest = record(HOTSPOT_DEST, "HotspotDest")
Link = record(LINK, "Link")
Route = record(ROUTE, "Route")
PortEntry = record(PORT, "PortEntry")
Event = record(EVENT, "Event")
Trace = record(TRACE, "Trace")
Workload = record(WORKLOAD, "Workload")
MoreWorkload = record(WORKLOADS, "MoreWorkload")
Job = record(JOBS, "Job")
Phase = record(PHASES, "Phase")
NocmTable = record(table("nocm", "No congestion management: no parameters."), "NocmTable")

#: A node's own keys, and those of `[station]` and `[bridge]` a node may set
#: for itself (declared once, in the engine's sections), unset meaning the
#: section's value.
_PER_NODE = {
    s: [
        {**q, "help": f"{q['help']} (none: [{s}])", "unset": f"[{s}]"}
        for q in _section(s)["params"]
        if q["name"] in _section(s)["per_node"]
    ]
    for s in ("station", "bridge")
}
_STATION_FIELDS = tuple(q["name"] for q in _PER_NODE["station"])
_BRIDGE_FIELDS = tuple(q["name"] for q in _PER_NODE["bridge"])
#: The keys of a node of each kind: its own (the declaration's `kinds`), then
#: those of its section it may set for itself.
_STATION_ONLY = (*NODE["kinds"]["station"], *_STATION_FIELDS)
_BRIDGE_ONLY = (*NODE["kinds"]["bridge"], *_BRIDGE_FIELDS)
NODE_TABLE = {**NODE, "params": [*NODE["params"], *_PER_NODE["station"], *_PER_NODE["bridge"]]}
Node = record(NODE_TABLE, "Node", optional=frozenset((*_STATION_FIELDS, *_BRIDGE_FIELDS)))

#: The scenario's sections, in the order they are read (and errors found):
#: name -> (record class, present when the file leaves it out).
SECTION_RECORDS: dict[str, tuple[type[Record], bool]] = {
    "measure": (Measure, True),
    "fairness": (Fairness, False),
    "utilization": (Utilization, False),
    "defaults": (Defaults, True),
    "bridge": (BridgeDefaults, True),
    "station": (StationDefaults, True),
    "pause": (Pause, True),
    "hotspot": (Hotspot, False),
    "trace": (Trace, True),
    "stats": (Stats, True),
    "stability": (Stability, False),
    "innocent": (Innocent, False),
    "transient": (Transient, False),
    "workload": (Workload, False),
}


def _scheme_tables() -> dict[str, type[Record]]:
    from ..schemes import TABLES

    return {"nocm": NocmTable, **TABLES}


#: Every top-level key, in the order they are read.
TOP_KEYS: tuple[str, ...] = (
    *(q["name"] for q in TOP["params"]),
    "measure",
    "windows",
    "fairness",
    "utilization",
    "defaults",
    "bridge",
    "station",
    "pause",
    "hotspot",
    "trace",
    "topology",
    "routing",
    "stats",
    "stability",
    "innocent",
    "transient",
    "workload",
    "workloads",
    "jobs",
    "nodes",
    "links",
    "events",
    "routes",
    "ports",
    "nocm",
    *(t["name"] for t in declarations()["tables"]),
)
#: What each array of tables and the other composite keys hold (docs, show).
ARRAYS: dict[str, type[Record]] = {
    "nodes": Node,
    "links": Link,
    "events": Event,
    "routes": Route,
    "ports": PortEntry,
    "workloads": MoreWorkload,
    "jobs": Job,
}
COMPOSITE_HELP = {
    "windows": "named windows ([windows.NAME]): start_ms, end_ms",
    "topology": TOPOLOGY_HELP,
    "nodes": "stations and bridges ([[nodes]])",
    "links": "full-duplex links ([[links]])",
    "events": "timed events ([[events]])",
    "routes": "explicit next hops over the routing function ([[routes]])",
    "ports": "bridge ports with settings of their own ([[ports]]: port, strict_priorities, ets_weights, headroom_bytes, ecn_kmin_bytes, ecn_kmax_bytes, ecn_pmax)",
    "workloads": "more workloads beside [workload] ([[workloads]]: its keys, a priority and a scheme of their own)",
    "jobs": "collective jobs ([[jobs]]: ranks on hosts, phases of compute then a collective, iterations)",
}


def help_of(key: str) -> str:
    """What top-level key `key` means (its declaration's help)."""
    q = TopKeys._params.get(key) or ({"help": ROUTING["help"]} if key == "routing" else None)
    return q["help"] if q else COMPOSITE_HELP.get(key, "")


def section_record(key: str) -> type[Record] | None:
    """The record class of top-level table `key` ([windows.NAME]: Window;
    [topology], read by its generator: None)."""
    if key in SECTION_RECORDS:
        return SECTION_RECORDS[key][0]
    if key == "windows":
        return Window
    if key in ARRAYS:
        return ARRAYS[key]
    return _scheme_tables().get(key)


class ScenarioModel(Record):
    """The scenario's own keys; the tables below are its sections."""

    __slots__ = TOP_KEYS
    declaration = TOP
    names = TOP_KEYS


# ---------------------------------------------------------------- reading
def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _seeds(v: Any, at: str) -> int | list[int]:
    if isinstance(v, bool):
        raise TableError(at, f"{shown(v)} is not allowed; expected a number, not true or false")
    if isinstance(v, str):
        raise TableError(at, f"{shown(v)} is not allowed; expected a number, not a string")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list) and all(_number(x) and float(x).is_integer() for x in v):
        return [int(x) for x in v]
    raise TableError(at, f"{shown(v)} is not allowed; expected {SEEDS_HELP}")


def _dest(v: Any, at: str) -> Any:
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        if "hotspot" in v and "fraction" in v and isinstance(v["hotspot"], str):
            try:
                return HotspotDest.read(v, at)
            except TableError:
                pass
        elif all(isinstance(k, str) for k in v) and all(_number(w) for w in v.values()):
            return {k: float(w) for k, w in v.items()}
    raise TableError(at, f"{shown(v)} is not allowed; expected {NODE_DEST_HELP}")


def _cdf(v: Any, at: str) -> Any:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(pt, list) and all(_number(x) for x in pt) for pt in v):
        return [[float(x) for x in pt] for pt in v]
    raise TableError(at, f"{shown(v)} is not allowed; expected {CDF_HELP}")


def _phases(v: Any, at: str) -> Any:
    if not isinstance(v, list) or not v:
        raise TableError(
            at, f"{shown(v)} is not allowed; expected an array of one or more tables ([[jobs.phases]])"
        )
    return [Phase.read(e, f"{at}[{i}]").dump(exclude_none=True) for i, e in enumerate(v)]


READERS.update(seeds=_seeds, count_or_list=_seeds, dest=_dest, cdf=_cdf, phases=_phases)


#: The keys that tell apart entries otherwise alike (a generated fabric's
#: thousands of hosts differ by name, its links by their ends).
_IDENTITY = frozenset(("name", "a", "b"))
_HASHABLE = (str, int, float, bool)


def _entries(cls: type[Record], given: Any, name: str, label: Any) -> list[Any]:
    """The entries of array `name`, each checked. Entries alike but for
    their identity keys (`_IDENTITY`) are checked once: the others' values
    copied from the first, their identity keys checked each (the same
    result and the same errors as checking every entry whole)."""
    if not isinstance(given, list):
        raise TableError(name, f"{shown(given)} is not allowed; expected an array")
    out = []
    seen: dict[Any, dict[str, Any]] = {}
    for i, e in enumerate(given):
        shape = None
        if isinstance(e, dict) and all(type(v) in _HASHABLE for v in e.values()):
            # In the entry's key order: a generated fabric writes every entry alike.
            alike = tuple((k, type(v), v) for k, v in e.items() if k not in _IDENTITY)
            shape = (alike, frozenset(_IDENTITY.intersection(e)))
        values = seen.get(shape) if shape is not None else None
        if values is None:
            rec = cls.read(e, label(i, e))
            if shape is not None:
                seen[shape] = {n: getattr(rec, "from_" if n == "from" else n) for n in cls.names}
            out.append(rec)
            continue
        own = dict(values)
        for k in _IDENTITY.intersection(e):
            at = label(i, e)
            own[k] = read_value(cls._params[k], e[k], f"{at}.{k}", optional=k in cls.optional)
        out.append(cls.made(own, frozenset(e)))
    return out


def _node_label(i: int, e: Any) -> str:
    return f"nodes.{e['name']}" if isinstance(e, dict) and "name" in e else f"nodes[{i}]"


def _link_label(i: int, e: Any) -> str:
    return f"links.{e.get('a')}-{e.get('b')}" if isinstance(e, dict) else f"links[{i}]"


def read(raw: dict[str, Any]) -> ScenarioModel:
    """The scenario `raw` (a TOML table, its [topology] expanded), every value
    checked against its declaration, in the order of TOP_KEYS; raises
    TableError naming the first one at fault."""
    out = TopKeys.check({k: raw[k] for k in TopKeys.names if k in raw}, "")
    for name in TOP_KEYS[len(TopKeys.names) :]:
        v = raw.get(name)
        if name in SECTION_RECORDS:
            cls, always = SECTION_RECORDS[name]
            out[name] = cls.read(v, name) if v is not None else cls.read({}, name) if always else None
        elif name == "windows":
            w = raw.get("windows", {})
            if not isinstance(w, dict):
                raise TableError("windows", f"{shown(w)} is not allowed; expected a table")
            out["windows"] = {k: Window.read(x, f"windows.{k}") for k, x in w.items()}
        elif name == "topology":
            if v is not None and not isinstance(v, dict):
                raise TableError("topology", f"{shown(v)} is not allowed; expected a table")
            out["topology"] = v
        elif name == "routing":
            out["routing"] = read_value(ROUTING, v, "routing") if "routing" in raw else ROUTING["default"]
        elif name in ("nodes", "links"):
            if name not in raw:
                raise TableError(name, f"required parameter is missing ({COMPOSITE_HELP[name]})")
            out[name] = _entries(ARRAYS[name], v, name, _node_label if name == "nodes" else _link_label)
        elif name == "events":
            out["events"] = _entries(Event, raw.get("events", []), "events", lambda i, e: f"events[{i}]")
        elif name == "routes":
            out["routes"] = _entries(Route, raw.get("routes", []), "routes", lambda i, e: f"routes[{i}]")
        elif name == "ports":
            out["ports"] = _entries(PortEntry, raw.get("ports", []), "ports", lambda i, e: f"ports[{i}]")
        elif name == "workloads":
            out["workloads"] = _entries(
                MoreWorkload, raw.get("workloads", []), "workloads", lambda i, e: f"workloads[{i}]"
            )
        elif name == "jobs":
            out["jobs"] = _entries(Job, raw.get("jobs", []), "jobs", lambda i, e: f"jobs[{i}]")
        else:  # a scheme's table
            out[name] = _scheme_tables()[name].read(v if v is not None else {}, name)
    for k in raw:
        if k not in TOP_KEYS:
            raise TableError(str(k), f"unknown parameter; known: {', '.join(TOP_KEYS)}")
    return ScenarioModel.made(out, frozenset(raw))  # type: ignore[return-value]


#: The scenario's own scalar keys (the `TOP` table), read first.
TopKeys = record(TOP, "TopKeys")

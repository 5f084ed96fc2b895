"""The scenario file's parameters, each declared once: name (the unit is in
the name), type, default, allowed range and help. Scenario validation,
`cnsim show`'s comments and the tables of docs/scenario-format.md
(`cnsim.docs`) are derived from these declarations. The sections the engine
declares (`[measure]`, `[windows.NAME]`, `[defaults]`, `[bridge]`, `[station]`, `[pause]`, `[stats]`, a node's own
station / bridge keys, and the schemes' tables) are built from its
declarations (`cnsim.declared`); the others are still declared here as
pydantic fields. Rules that tie parameters together are the engine's
(`Scenario.engine_config_checked`) or, for the sections declared here,
`core.Scenario._check`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from .. import declared
from ..schemes import TABLES
from ..values import refuse_bool_as_number
from ..workloads import DEFAULT_MAX_FLOWS, ENGINE_MAX_FLOWS
from . import analysis

PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000

#: Limits set by the engine's integer units, not by the models: times fit
#: its picosecond clock (u64, 1.8e19 ps) with room for sums (1e9 ms is 11.6
#: simulated days), rates its bit/s and sizes its byte counters.
MAX_MS = 1e9
MAX_US = 1e12
MAX_GBPS = 1e6
MAX_BYTES = 2**40
#: The schemes' whole numbers are u32.
MAX_U32 = 2**32 - 1
ENGINE_LIMITS = (MAX_MS, MAX_US, MAX_GBPS, MAX_BYTES, MAX_U32)
#: The slowest link: 1 bit/s (the engine counts whole bits per second).
MIN_GBPS = 1e-9


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_as_number(cls, v: Any, info: ValidationInfo) -> Any:
        return refuse_bool_as_number(cls, v, info)


#: `[measure]` and `[windows.NAME]`: declared in the engine
#: (crates/cnsim-core/src/sections.rs), which also checks that a window lies
#: inside the run.
Measure = declared.model(declared.section("measure"), _Model, "Measure")
Window = declared.model(declared.section("windows"), _Model, "Window")


#: `[fairness]` and `[utilization]`: read by Python alone, declared in
#: `analysis` (the engine's format).
Fairness = declared.model(analysis.SECTIONS["fairness"], _Model, "Fairness")


Utilization = declared.model(analysis.SECTIONS["utilization"], _Model, "Utilization")


BufferMode = Literal["per_output", "per_input", "shared", "dynamic", "infinite"]

#: `[defaults]`, `[bridge]`, `[station]` and `[pause]`: declared in the
#: engine (crates/cnsim-core/src/sections.rs), built from its declarations.
Defaults = declared.model(declared.section("defaults"), _Model, "Defaults")
BridgeDefaults = declared.model(declared.section("bridge"), _Model, "BridgeDefaults")
StationDefaults = declared.model(declared.section("station"), _Model, "StationDefaults")
Pause = declared.model(declared.section("pause"), _Model, "Pause")


#: `[hotspot]`: declared in the engine (crates/cnsim-core/src/sections.rs),
#: which checks its rules as written (`Scenario.engine_config_checked`).
Hotspot = declared.model(declared.section("hotspot"), _Model, "Hotspot")


class HotspotDest(_Model):
    """A station's destinations with a hotspot: `fraction` of its frames go
    to `hotspot`, the others uniformly to every other station."""

    hotspot: str = Field(..., min_length=1, description="the hot station")
    fraction: float = Field(..., ge=0, le=1, description="share of frames sent to the hot station")


_STATION_FIELDS = declared.per_node_fields("station")
_BRIDGE_FIELDS = declared.per_node_fields("bridge")
_STATION_ONLY = ("load", "dest", "start_ms", "stop_ms", *_STATION_FIELDS)
_BRIDGE_ONLY = ("cp", "ports", *_BRIDGE_FIELDS)


class _NodeFields(_Model):
    """A station (an end node with a NIC and a Bernoulli source) or a bridge.
    Keys marked station: or bridge: belong to that kind only; a station's
    unset keys take `[station]`'s values, a bridge's `[bridge]`'s."""

    name: str = Field(..., min_length=1, description="unique node name")
    kind: Literal["station", "bridge"] = Field(..., description="station | bridge")
    # station
    load: float = Field(
        0.0,
        ge=0,
        le=1,
        description="offered load: Bernoulli p per frame slot (one frame time at its link rate)",
    )
    dest: str | HotspotDest | dict[str, float] = Field(
        "uniform",
        description="a station name, 'uniform' (all other stations, equally likely), a table of "
        'weights { A = 1.0, B = 3.0 }, or a hotspot { hotspot = "H0", fraction = 0.2 } (that share '
        "to the hot station, the rest uniform)",
    )
    start_ms: float = Field(0.0, ge=0, le=MAX_MS, description="source on at")
    stop_ms: float | None = Field(None, ge=0, le=MAX_MS, description="source off at (none: never)")
    # bridge
    cp: bool = Field(False, description="congestion-point detection on its output ports")
    ports: int | None = Field(
        None, ge=1, description="number of ports; more links is an error (none: unlimited)"
    )


#: A node: its own keys, and those of `[station]` and `[bridge]` a node may
#: set for itself (declared once, in the engine's sections).
Node: type[_NodeFields] = create_model(  # type: ignore[call-overload]
    "Node", __base__=_NodeFields, __doc__=_NodeFields.__doc__, **_STATION_FIELDS, **_BRIDGE_FIELDS
)


#: `[[routes]]`: declared in the engine (crates/cnsim-core/src/sections.rs),
#: which checks every route against it and against the built network.
Route = declared.model(declared.section("routes"), _Model, "Route")


#: `[[links]]`: declared in the engine (crates/cnsim-core/src/sections.rs),
#: which checks every link of the engine config against it; that its ends
#: are two different nodes and the link is not repeated is `core.Scenario._check`'s.
Link = declared.model(declared.section("links"), _Model, "Link")


class Event(_Model):
    """A timed event: a source starts or stops, or a link direction changes
    rate. Applied in time order; events at the same time in file order (after
    the sources' start / stop events and the hotspot's events)."""

    at_ms: float = Field(..., ge=0, le=MAX_MS, description="when")
    action: Literal["start", "stop", "link_rate"] = Field(
        ..., description="start / stop (a station's source) or link_rate (one link direction's rate)"
    )
    node: str | None = Field(None, description="the station (start / stop)")
    from_: str | None = Field(None, alias="from", description="link_rate: sending node")
    to: str | None = Field(None, description="link_rate: receiving node")
    rate_gbps: float | None = Field(
        None, ge=0, le=MAX_GBPS, description="link_rate: new rate (0 = stopped, else >= 1 bit/s)"
    )

    @model_validator(mode="after")
    def _fields_for_action(self) -> Event:
        if self.action in ("start", "stop") and not self.node:
            raise ValueError(f"a '{self.action}' event needs 'node'")
        if self.action == "link_rate" and (not self.from_ or not self.to or self.rate_gbps is None):
            raise ValueError("a 'link_rate' event needs 'from', 'to' and 'rate_gbps'")
        return self


#: `[trace]`: declared in the engine (crates/cnsim-core/src/sections.rs; its
#: event kinds are the engine's trace kinds), which checks it as written
#: (`Scenario.engine_config_checked`); that its names exist in the topology
#: is `core.Scenario._check`'s.
Trace = declared.model(declared.section("trace"), _Model, "Trace")


#: `[stats]`: declared in the engine (crates/cnsim-core/src/sections.rs).
Stats = declared.model(declared.section("stats"), _Model, "Stats")


#: Stations up to which per-flow counters are on by default.
PER_FLOW_AUTO_STATIONS = 256


#: `[stability]`, `[innocent]`, `[transient]`: read by Python alone,
#: declared in `analysis` (the engine's format).
Stability = declared.model(analysis.SECTIONS["stability"], _Model, "Stability")
Innocent = declared.model(analysis.SECTIONS["innocent"], _Model, "Innocent")
Transient = declared.model(analysis.SECTIONS["transient"], _Model, "Transient")


class Workload(_Model):
    """Transport flows with sizes (docs/scenario-format.md "Flows"): the
    stations' transports send them, acknowledge them and recover losses;
    results give each flow's completion time (FCT) and slowdown."""

    kind: Literal["poisson", "incast", "permutation", "long_lived"] = Field(
        ...,
        description="poisson (arrivals at every host, sizes from `cdf`, to uniform destinations), incast "
        "(`fan_in` senders to one receiver), permutation (host i to host i + n/2), long_lived (`fan_in` "
        "senders to one receiver, flows longer than the run by default)",
    )
    hosts: list[str] | None = Field(None, description="the stations taking part (none: every station)")
    cdf: str | list[list[Annotated[float, Strict()]]] = Field(
        "websearch",
        description="poisson: flow-size CDF: websearch, hadoop, a file of 'size_bytes probability' lines, or the "
        "points inline [[size_bytes, probability], ...] (a saved scenario holds a file's points inline)",
    )
    cdf_source: str | None = Field(
        None,
        description="where inline cdf points were read from: the file and the SHA-256 of its bytes (written "
        "by cnsim when it saves a scenario; informational)",
    )
    load: float = Field(
        0.5, gt=0, le=1, description="poisson: mean offered load of each host, as a fraction of its link rate"
    )
    fan_in: int = Field(16, ge=1, le=65535, description="incast / long_lived: number of senders")
    receiver: str | None = Field(None, description="incast / long_lived: the receiver (none: the first host)")
    size_bytes: int | None = Field(
        None,
        ge=1,
        le=MAX_BYTES,
        description="incast / permutation / long_lived: bytes per flow (none: 500,000; long_lived 2^40)",
    )
    period_us: float | None = Field(
        None,
        ge=1e-6,
        le=MAX_MS * 1000,
        description="incast: repeated every period (none: once; at least 1 ps)",
    )
    start_ms: float = Field(0.0, ge=0, le=MAX_MS, description="first flows (poisson: arrivals from)")
    end_ms: float | None = Field(
        None, ge=0, le=MAX_MS, description="no flow starts after (none: the run end)"
    )
    ack_every: int = Field(1, ge=1, le=65535, description="the receiver acknowledges every N frames in order")
    rto_us: float = Field(
        4000.0,
        ge=1.0,  # 1 us: below a data-center RTT every frame would time out and be resent
        le=MAX_US,
        description="retransmission timeout: go back N when nothing was acknowledged for this long (RDMA NICs: "
        "'4.096 us x 2^k', milliseconds; at least 1 us: below a data-center RTT every frame would time out and "
        "be sent again, 1 ns meant minutes of retransmissions)",
    )
    end_when_done: bool = Field(True, description="the run ends when the last flow has finished")
    max_flows: int = Field(
        DEFAULT_MAX_FLOWS,
        ge=1,
        le=ENGINE_MAX_FLOWS,
        description="most flows a run may start: a workload expected to start more (poisson: load x hosts x "
        "link rate x arrival window / mean size; incast: fan_in x incasts) is refused before anything runs",
    )


class NocmTable(_Model):
    """No congestion management: no parameters."""


#: The scenario's own keys (the top level): declared in the engine
#: (crates/cnsim-core/src/sections.rs, the table named ""), which checks the
#: run's length and bins; the scheme's name is checked against the registry
#: and seeds' distinctness by `core.Scenario` (the engine never sees seeds).
_TopKeys = declared.model(declared.section(""), _Model, "_TopKeys")
#: Most replications of one scenario (the declared count's upper bound).
MAX_SEEDS = int(next(p for p in declared.section("")["params"] if p["name"] == "seeds")["max"]["value"])


class _ScenarioFields(_TopKeys):  # type: ignore[valid-type,misc]
    """The scenario's own keys; the tables below are its sections."""

    measure: Measure = Measure()
    windows: dict[str, Window] = {}
    fairness: Fairness | None = None
    utilization: Utilization | None = None
    defaults: Defaults = Defaults()
    bridge: BridgeDefaults = BridgeDefaults()
    station: StationDefaults = StationDefaults()
    pause: Pause = Pause()
    hotspot: Hotspot | None = None
    trace: Trace = Trace()
    topology: dict[str, Any] | None = Field(
        None,
        description="a generated topology (fattree, leafspine or innocent), see the [topology] tables; the "
        "generated nodes and links come first, the file's [[nodes]] and [[links]] add to them, and a "
        "[[nodes]] entry with a generated node's name changes that node",
    )
    stats: Stats = Stats()
    stability: Stability | None = None
    innocent: Innocent | None = None
    transient: Transient | None = None
    workload: Workload | None = None
    nodes: list[Node] = Field(..., description="stations and bridges ([[nodes]])")
    links: list[Link] = Field(..., description="full-duplex links ([[links]])")
    events: list[Event] = Field([], description="timed events ([[events]])")
    routes: list[Route] = Field([], description="explicit next hops over the routing function ([[routes]])")


#: A scenario file: its own sections and one table per scheme parameter
#: table, each declared by its scheme (cnsim.schemes).
ScenarioModel: type[_ScenarioFields] = create_model(  # type: ignore[call-overload]
    "ScenarioModel",
    __base__=_ScenarioFields,
    __doc__=_ScenarioFields.__doc__,
    nocm=(NocmTable, NocmTable()),
    **{name: (table, table()) for name, table in TABLES.items()},
)

"""Scenario files: loading (TOML), validation with one-line errors,
`--set` overrides by dotted name, and resolution into the engine config
(docs/engine-interface.md). The full format is documented in
docs/scenario-format.md.

    sc = load("baseline")                                # or a path to a .toml file
    sc = sc.replace(scheme="nocm", pause=True, seeds=3, **{"pause.xoff_bytes": 120_000})
    cfg = resolve(sc)                                    # the engine config (a dict)
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
import types
import typing
from collections import deque
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from .errors import ScenarioError
from .schemes import SCHEMES, BcnTable, DcqcnTable, EcmTable, Qcn2007Table, QcnTable, engine_scheme
from .topologies import expand as expand_topology
from .topologies import routes_for

PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Measure(_Model):
    """The measurement window: throughput, time paused and overhead are averaged over it."""

    start_ms: float = Field(0.0, ge=0, description="window start (ms)")
    end_ms: float | None = Field(None, gt=0, description="window end (ms; default: the run end)")


class Window(_Model):
    """An extra named measurement window (`[windows.NAME]`)."""

    start_ms: float = Field(..., ge=0, description="window start (ms)")
    end_ms: float = Field(..., gt=0, description="window end (ms)")


class Fairness(_Model):
    """Fairness metrics (dev_max, dev_min, dev_mean, dev_rms, jain) of the loaded flows."""

    window: str = Field("fairness", description="the named window fairness is measured over")
    target_gbps: float = Field(..., gt=0, description="fair-share target rate T (Gbit/s)")


class Utilization(_Model):
    """`link_utilization`: throughput of one link direction / its rate, over a named window."""

    link: str = Field(..., description="link direction FROM->TO whose utilisation is reported")
    window: str = Field("utilization", description="the named window it is measured over")


class Defaults(_Model):
    """Frame sizes, and link rate / delay for links that do not set their own."""

    frame_bytes: int = Field(1500, ge=64, le=65535, description="data frame size on the wire (B)")
    control_frame_bytes: int = Field(64, ge=1, le=65535, description="PAUSE / CNM size (B)")
    link_rate_gbps: float = Field(10.0, gt=0, description="link rate (Gbit/s)")
    link_delay_us: float = Field(0.5, ge=0, description="propagation delay, each way (us)")


BufferMode = Literal["per_output", "per_input", "shared", "infinite"]


class BridgeDefaults(_Model):
    """Defaults for every bridge; a bridge node may override each key."""

    buffer_mode: BufferMode = Field(
        "per_output", description="buffer accounting: per_output | per_input | shared | infinite"
    )
    buffer_bytes: int = Field(150_000, ge=0, description="per output port / per input / per switch (B)")
    latency_us: float = Field(1.0, ge=0, description="store-and-forward latency (us)")


class StationDefaults(_Model):
    """Defaults for every station; a station node may override each key."""

    nic_buffer_bytes: int = Field(150_000, ge=1, description="NIC transmit buffer (B)")
    rlq_bytes: int = Field(150_000, ge=1, description="capacity of each rate-limiter queue (B)")
    processing_us: float = Field(2.0, ge=0, description="reaction time to a notification (us)")
    rl_scope: Literal["flow", "cp"] = Field(
        "flow",
        description="[derived] which rate limiter a notification acts on: flow (one RL per flow, "
        "slowed by every CP on its path) | cp (one RL per CPID, the flow follows the newest CP)",
    )
    nic_full: Literal["defer", "drop"] = Field(
        "defer",
        description="[derived] a frame for a full NIC FIFO (PAUSE holds the link): defer (not "
        "generated, counted in frames_deferred) | drop (dropped_rp, as dropped_nic)",
    )


class Pause(_Model):
    """IEEE 802.3x PAUSE (on with `--pause`, `--scheme pause` or `enabled = true`)."""

    enabled: bool = Field(False, description="PAUSE on (CLI: --pause / --no-pause)")
    xoff_bytes: int = Field(140_000, ge=0, description="XOFF threshold (B)")
    xon_bytes: int = Field(130_000, ge=0, description="XON threshold (B), <= xoff_bytes")
    trigger: Literal["auto", "output_queue", "ingress", "partition"] = Field(
        "auto",
        description="what the thresholds watch: auto (by buffer mode) | output_queue | ingress | partition",
    )
    quanta: int = Field(65535, ge=1, le=65535, description="pause_time of an XOFF (quanta of 512 bit times)")


class Hotspot(_Model):
    """Output-generated hotspot: the link into `node` runs at `rate_gbps` from start to end."""

    node: str = Field(..., description="the hot station")
    rate_gbps: float = Field(..., ge=0, description="its service rate during the hotspot (Gbit/s)")
    start_ms: float = Field(..., ge=0, description="hotspot start (ms)")
    end_ms: float = Field(..., gt=0, description="hotspot end (ms); the link's rate is restored")


_STATION_ONLY = ("load", "dest", "start_ms", "stop_ms", "nic_buffer_bytes", "rlq_bytes")
_STATION_ONLY += ("processing_us",)
_BRIDGE_ONLY = ("cp", "buffer_mode", "buffer_bytes", "latency_us", "ports")


class Node(_Model):
    """A station (end node with a NIC and a Bernoulli source) or a bridge."""

    name: str = Field(..., min_length=1, description="unique node name")
    kind: Literal["station", "bridge"] = Field(..., description="station | bridge")
    # station
    load: float = Field(0.0, ge=0, le=1, description="offered load: Bernoulli p per frame slot")
    dest: str | dict[str, float] = Field(
        "uniform",
        description="a station name, 'uniform' (all other stations), or a table of weights",
    )
    start_ms: float = Field(0.0, ge=0, description="source on at (ms)")
    stop_ms: float | None = Field(None, ge=0, description="source off at (ms; default: never)")
    nic_buffer_bytes: int | None = Field(None, ge=1, description="NIC transmit buffer (B)")
    rlq_bytes: int | None = Field(None, ge=1, description="capacity of each RLQ (B)")
    processing_us: float | None = Field(None, ge=0, description="reaction time (us)")
    # bridge
    cp: bool = Field(False, description="congestion-point detection on its output ports")
    buffer_mode: BufferMode | None = Field(None, description="buffer accounting")
    buffer_bytes: int | None = Field(None, ge=0, description="buffer size (B)")
    latency_us: float | None = Field(None, ge=0, description="store-and-forward latency (us)")
    ports: int | None = Field(None, ge=1, description="number of ports; more links is an error")


class Link(_Model):
    """A full-duplex link between two nodes."""

    a: str = Field(..., description="one end (node name)")
    b: str = Field(..., description="the other end (node name)")
    rate_gbps: float | None = Field(None, gt=0, description="link rate (Gbit/s)")
    delay_us: float | None = Field(None, ge=0, description="propagation delay, each way (us)")


class Event(_Model):
    """A timed event: a source starts or stops, or a link direction changes rate."""

    at_ms: float = Field(..., ge=0, description="when (ms)")
    action: Literal["start", "stop", "link_rate"] = Field(..., description="start | stop | link_rate")
    node: str | None = Field(None, description="the station (start / stop)")
    from_: str | None = Field(None, alias="from", description="link_rate: sending node")
    to: str | None = Field(None, description="link_rate: receiving node")
    rate_gbps: float | None = Field(None, ge=0, description="link_rate: new rate (Gbit/s)")

    @model_validator(mode="after")
    def _fields_for_action(self) -> Event:
        if self.action in ("start", "stop") and not self.node:
            raise ValueError(f"a '{self.action}' event needs 'node'")
        if self.action == "link_rate" and (not self.from_ or not self.to or self.rate_gbps is None):
            raise ValueError("a 'link_rate' event needs 'from', 'to' and 'rate_gbps'")
        return self


class Trace(_Model):
    """Ports whose queue_bytes time series, and rate limiters whose rate and
    RLQ series, are recorded."""

    ports: list[str] | None = Field(
        None, description="ports FROM->TO (default: every output port of a cp = true bridge)"
    )
    rate_limiters: list[str] | None = Field(
        None,
        description="rate limiters STATION|DEST (per-flow RLs) or STATION|FROM->TO (per-CP RLs); "
        "default: all, at most 256",
    )


class Stability(_Model):
    """Time to stability (metrics.md): onset when the CP queue reaches
    `factor` x Qeq, stability when it falls back below it."""

    port: str = Field(..., description="the CP port FROM->TO whose queue is watched")
    factor: float = Field(2.0, gt=0, description="threshold in units of the scheme's Qeq")


class Innocent(_Model):
    """Innocent-flow throughput: flows to `sink` against their offered load."""

    sink: str = Field(..., description="the station the innocent flows go to")


class Transient(_Model):
    """Transient duration by initial data deletion (metrics.md, Jain 1991)."""

    onset_ms: float = Field(..., ge=0, description="congestion onset: the series starts here (ms)")
    end_ms: float | None = Field(None, gt=0, description="end of the analysed series (ms; default: run end)")
    bin_ms: float = Field(1.0, gt=0, description="bin width of the analysed series (ms)")
    epsilon: float = Field(0.01, gt=0, description="knee rule: largest |rc(l') - rc(l)| after the knee")
    rtt_ms: float = Field(..., gt=0, description="the RTT the transient is expressed in (ms)")
    settle_band: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="settling time: the band around the steady mean, as a fraction of it",
    )
    settle_smooth_ms: float = Field(
        10.0, gt=0, description="settling time: width of the centred moving average (ms)"
    )


class NocmTable(_Model):
    """No congestion management: no parameters."""


class ScenarioModel(_Model):
    """A scenario file (docs/scenario-format.md)."""

    name: str = Field("scenario", description="scenario name (results directory, reports)")
    description: str = Field("", description="one line shown by `cnsim list`")
    duration_ms: float = Field(..., gt=0, description="run length (ms)")
    seeds: int | list[int] = Field(1, description="replications: a count N (seeds 0..N-1) or a list of seeds")
    bin_us: float = Field(100.0, gt=0, description="time-series bin width (us)")
    scheme: str = Field("nocm", description="congestion-management scheme (cnsim list)")
    cp_ports: list[str] = Field(
        [], description="CP detection on exactly these ports FROM->TO (default: cp = true bridges)"
    )
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
    nocm: NocmTable = NocmTable()
    bcn: BcnTable = BcnTable()
    ecm: EcmTable = EcmTable()
    qcn: QcnTable = QcnTable()
    qcn2pt: Qcn2007Table = Qcn2007Table()
    qcn3pt: Qcn2007Table = Qcn2007Table()
    dcqcn: DcqcnTable = DcqcnTable()
    topology: dict[str, Any] | None = Field(
        None, description="a generated topology: generator = fattree (k, n) | innocent (variant, degree)"
    )
    routing: Literal["shortest_path", "fattree"] = Field(
        "shortest_path", description="routing function (fattree: the up-port rule of scenarios.md)"
    )
    stability: Stability | None = None
    innocent: Innocent | None = None
    transient: Transient | None = None
    nodes: list[Node] = Field(..., description="stations and bridges ([[nodes]])")
    links: list[Link] = Field(..., description="full-duplex links ([[links]])")
    events: list[Event] = Field([], description="timed events ([[events]])")


# ---------------------------------------------------------------- errors


def _unwrap(ann: Any) -> tuple[Any, bool]:
    """(inner type, container?) of an annotation: Optional stripped, list[X] / dict[str, X] -> X."""
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
        return ann, False
    if origin in (list, dict):
        return typing.get_args(ann)[-1], True
    return ann, False


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _is_union(ann: Any) -> bool:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        return len([a for a in typing.get_args(ann) if a is not type(None)]) > 1
    return False


def _field_name(cls: type[BaseModel], key: str) -> str | None:
    if key in cls.model_fields:
        return key
    for name, f in cls.model_fields.items():
        if f.alias == key:
            return name
    return None


def _walk(loc: tuple[Any, ...]) -> tuple[int, FieldInfo | None, type[BaseModel] | None]:
    """Follows a pydantic error location through the scenario models. Returns how
    many parts name a parameter (the rest are pydantic's union tags), the field
    reached, and the model that holds it."""
    cls: Any = ScenarioModel
    field: FieldInfo | None = None
    parent: type[BaseModel] | None = None
    skip = False
    for i, p in enumerate(loc):
        if skip:  # a list index or a dict key
            skip = False
            continue
        if not _is_model(cls):
            return (i if field is not None and _is_union(field.annotation) else len(loc)), field, parent
        name = _field_name(cls, str(p))
        if name is None:
            return len(loc), None, cls
        parent, field = cls, cls.model_fields[name]
        inner, container = _unwrap(field.annotation)
        cls, skip = inner, container
    return len(loc), field, parent


def _where(loc: tuple[Any, ...], raw: dict[str, Any]) -> str:
    """A pydantic error location as a dotted name (nodes by name, links by ends)."""
    parts: list[str] = []
    cur: Any = raw
    for i, p in enumerate(loc):
        if isinstance(p, int) and i > 0 and loc[i - 1] in ("nodes", "links", "events"):
            item = cur[p] if isinstance(cur, list) and p < len(cur) else None
            if loc[i - 1] == "nodes" and isinstance(item, dict) and "name" in item:
                parts[-1] = f"nodes.{item['name']}"
            elif loc[i - 1] == "links" and isinstance(item, dict):
                parts[-1] = f"links.{item.get('a')}-{item.get('b')}"
            else:
                parts[-1] = f"{loc[i - 1]}[{p}]"
            cur = item
            continue
        parts.append("from" if p == "from_" else str(p))
        cur = cur.get(p) if isinstance(cur, dict) else None
    return ".".join(parts) or "scenario"


def _kind(field: FieldInfo | None) -> str:
    inner, _ = _unwrap(field.annotation) if field is not None else (None, False)
    return "an integer" if inner is int else "a number"


def _expected(err: Any, field: FieldInfo | None) -> str:
    """What is allowed, in words, for a pydantic error."""
    t, ctx = err["type"], err.get("ctx") or {}
    bounds = {
        "greater_than_equal": (">=", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("<=", "le"),
        "less_than": ("<", "lt"),
    }
    if t in bounds:
        found: list[str] = []
        for m in field.metadata if field is not None else []:
            for key, op in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                v = getattr(m, key, None)
                if v is not None:
                    found.append(f"{op} {_num(v)}")
        if not found:
            op, key = bounds[t]
            found = [f"{op} {_num(ctx.get(key))}"]
        return f"expected {_kind(field)} " + " and ".join(found)
    if t in ("int_type", "int_parsing", "int_from_float"):
        return "expected an integer"
    if t in ("float_type", "float_parsing", "finite_number"):
        return "expected a number"
    if t in ("bool_type", "bool_parsing"):
        return "expected true or false"
    if t == "string_type":
        return "expected a string"
    if t == "string_too_short":
        return "expected a non-empty string"
    if t == "literal_error":
        return f"expected one of {ctx.get('expected')}"
    if t in ("list_type", "dict_type", "model_type", "model_attributes_type"):
        return {
            "list_type": "expected an array",
            "dict_type": "expected a table",
        }.get(t, "expected a table")
    if field is not None and field.description:
        return f"expected {field.description}"
    return err["msg"][0].lower() + err["msg"][1:]


def _num(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _known(cls: type[BaseModel] | None) -> str:
    if cls is None:
        return ""
    keys = [f.alias or n for n, f in cls.model_fields.items()]
    return f"; known: {', '.join(keys)}" if keys else "; this table takes no parameters"


def _one_line(e: ValidationError, raw: dict[str, Any]) -> str:
    """The first error of a ValidationError as one line naming the parameter."""
    err = e.errors()[0]
    loc = tuple(x for x in err["loc"] if not str(x).startswith("function-"))
    n, field, parent = _walk(loc)
    where = _where(loc[:n], raw)
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown parameter{_known(parent)}"
    if kind == "missing":
        desc = f" ({field.description})" if field is not None and field.description else ""
        return f"{where}: required parameter is missing{desc}"
    value = err.get("input")
    if n < len(loc):  # a union (e.g. a node's dest): name the field, not pydantic's tag
        desc = field.description if field is not None and field.description else "another type"
        return f"{where}: {_show(value)} is not allowed; expected {desc}"
    if kind == "value_error":
        msg = err["msg"].removeprefix("Value error, ")
        return f"{where}: {msg}"
    if isinstance(value, dict) and kind not in ("model_type", "model_attributes_type", "list_type"):
        return f"{where}: {err['msg']}"
    return f"{where}: {_show(value)} is not allowed; {_expected(err, field)}"


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return _toml_value(value)
    return str(value)


# ---------------------------------------------------------------- scenario


class Scenario:
    """A validated scenario: the scenario file's parameters plus the run
    choices (scheme, PAUSE on/off, seeds), which also live in the file."""

    def __init__(
        self,
        raw: dict[str, Any],
        *,
        scheme: str | None = None,
        pause: bool | None = None,
        seeds: int | Iterable[int] | None = None,
        source: str = "<dict>",
    ) -> None:
        if not isinstance(raw, dict):
            raise ScenarioError("scenario: expected a table of parameters")
        raw = copy.deepcopy(raw)
        if scheme is not None:
            raw["scheme"] = scheme
        if pause is not None:
            _table(raw, "pause")["enabled"] = pause
        if seeds is not None:
            raw["seeds"] = _seeds_value(seeds)
        if raw.get("scheme") == "pause":  # `--scheme pause` = nocm with PAUSE on
            raw["scheme"] = "nocm"
            _table(raw, "pause")["enabled"] = True
        self.raw = raw
        self.source = source
        self._engine_json: str | None = None
        expanded = expand_topology(raw)
        try:
            self.model = ScenarioModel.model_validate(expanded)
        except ValidationError as e:
            raise ScenarioError(_one_line(e, expanded)) from None
        if self.model.scheme not in SCHEMES:
            raise ScenarioError(
                f"scheme: {self.model.scheme!r} is not a known scheme; known: {', '.join(SCHEMES)}"
            )
        s = self.model.seeds
        self.seeds: list[int] = list(range(s)) if isinstance(s, int) else list(s)
        if not self.seeds:
            raise ScenarioError(f"seeds: {s} is not allowed; at least one seed is needed")
        if any(x < 0 for x in self.seeds) or len(set(self.seeds)) != len(self.seeds):
            raise ScenarioError(f"seeds: {s} is not allowed; expected a count >= 1 or distinct integers >= 0")
        self._check()

    # ------------------------------------------------------------ derived
    @property
    def name(self) -> str:
        return self.model.name

    @property
    def scheme(self) -> str:
        return self.model.scheme

    @property
    def pause(self) -> bool:
        return self.model.pause.enabled

    @property
    def duration_ms(self) -> float:
        return self.model.duration_ms

    @property
    def table(self) -> Any:
        """The parameter table of the scheme (None for nocm)."""
        t = SCHEMES[self.scheme][0]
        return getattr(self.model, t) if t else None

    def __repr__(self) -> str:
        pause = " + PAUSE" if self.pause else ""
        return f"<Scenario {self.name}: {self.scheme}{pause}, seeds {self.seeds}>"

    def replace(self, **changes: Any) -> Scenario:
        """A copy with `scheme`, `pause`, `seeds` (a count or seeds) and dotted
        parameters changed, e.g.
        `sc.replace(scheme="qcn2pt", seeds=range(10), **{"hotspot.rate_gbps": 0.5})`.
        Changing `duration_ms` clips the measurement windows to the new run."""
        raw = copy.deepcopy(self.raw)
        scheme = changes.pop("scheme", None)
        pause = changes.pop("pause", None)
        seeds = changes.pop("seeds", None)
        for key, value in changes.items():
            set_dotted(raw, key, value)
        if "duration_ms" in changes:
            _fit_windows(raw)
        return Scenario(raw, scheme=scheme, pause=pause, seeds=seeds, source=self.source)

    def resolved_raw(self) -> dict[str, Any]:
        """The full scenario with every default filled in (re-runnable). With a
        generated topology only the file's own nodes and links are listed."""
        d = self.model.model_dump(by_alias=True, exclude_none=True)
        d["seeds"] = _seeds_value(self.seeds)
        nodes, links = self.model.nodes, self.model.links
        if self.model.topology is not None:
            own = {nd.get("name") for nd in self.raw.get("nodes") or [] if isinstance(nd, dict)}
            own_links = {
                frozenset((lk.get("a"), lk.get("b")))
                for lk in self.raw.get("links") or []
                if isinstance(lk, dict)
            }
            nodes = [n for n in nodes if n.name in own]
            links = [lk for lk in links if frozenset((lk.a, lk.b)) in own_links]
        d["nodes"] = [_node_dump(n) for n in nodes]
        d["links"] = [lk.model_dump(by_alias=True, exclude_none=True) for lk in links]
        d["events"] = [e.model_dump(by_alias=True, exclude_none=True) for e in self.model.events]
        return d

    def to_toml(self, comments: bool = True) -> str:
        """The resolved scenario as TOML; with `comments`, every parameter has
        its unit and meaning beside it (`cnsim show`)."""
        if not comments:
            return tomli_w.dumps(self.resolved_raw())
        return _commented_toml(self.resolved_raw(), self)

    # ------------------------------------------------------------ checks
    def _check(self) -> None:
        m = self.model
        names: dict[str, Node] = {}
        for n in m.nodes:
            if n.name in names:
                raise ScenarioError(f"nodes.{n.name}: duplicate node name")
            if "->" in n.name or "|" in n.name:
                raise ScenarioError(f"nodes.{n.name}: names cannot contain '->' or '|'")
            names[n.name] = n
            other = _BRIDGE_ONLY if n.kind == "station" else _STATION_ONLY
            wrong = sorted(set(other) & n.model_fields_set)
            if wrong:
                raise ScenarioError(
                    f"nodes.{n.name}.{wrong[0]}: not a parameter of a {n.kind}; "
                    f"a {n.kind} takes: name, kind, "
                    + ", ".join(_STATION_ONLY if n.kind == "station" else _BRIDGE_ONLY)
                )
            if n.kind == "station" and n.stop_ms is not None and n.stop_ms <= n.start_ms:
                raise ScenarioError(
                    f"nodes.{n.name}.stop_ms: {n.stop_ms} is not allowed; expected a time "
                    f"after start_ms = {n.start_ms}"
                )
        stations = [n for n in m.nodes if n.kind == "station"]
        if not stations:
            raise ScenarioError("nodes: a scenario needs at least one station")
        adj: dict[str, list[str]] = {n: [] for n in names}
        seen: set[frozenset[str]] = set()
        for link in m.links:
            for end in (link.a, link.b):
                if end not in names:
                    raise ScenarioError(
                        f"links.{link.a}-{link.b}: unknown node '{end}'; nodes: " + ", ".join(names)
                    )
            if link.a == link.b:
                raise ScenarioError(f"links.{link.a}-{link.b}: a link needs two different nodes")
            key = frozenset((link.a, link.b))
            if key in seen:
                raise ScenarioError(f"links.{link.a}-{link.b}: duplicate link")
            seen.add(key)
            adj[link.a].append(link.b)
            adj[link.b].append(link.a)
        for n in m.nodes:
            if n.kind == "bridge" and n.ports is not None and len(adj[n.name]) > n.ports:
                raise ScenarioError(f"nodes.{n.name}: {len(adj[n.name])} links exceed its {n.ports} ports")
        for s in stations:
            if len(adj[s.name]) != 1:
                raise ScenarioError(
                    f"nodes.{s.name}: a station needs exactly one link, it has {len(adj[s.name])}"
                )
            if isinstance(s.dest, str) and s.dest != "uniform":
                d = names.get(s.dest)
                if d is None:
                    raise ScenarioError(
                        f"nodes.{s.name}.dest: unknown node '{s.dest}'; expected another "
                        "station, 'uniform' or a table of weights"
                    )
                if d.kind != "station" or d.name == s.name:
                    raise ScenarioError(
                        f"nodes.{s.name}.dest: '{s.dest}' is not another station; expected another "
                        "station, 'uniform' or a table of weights"
                    )
            elif isinstance(s.dest, dict):
                if not s.dest or sum(s.dest.values()) <= 0:
                    raise ScenarioError(f"nodes.{s.name}.dest: expected at least one positive weight")
                for dn, w in s.dest.items():
                    if dn not in names or names[dn].kind != "station" or dn == s.name:
                        raise ScenarioError(f"nodes.{s.name}.dest.{dn}: not another station of the scenario")
                    if w < 0:
                        raise ScenarioError(
                            f"nodes.{s.name}.dest.{dn}: {w} is not allowed; expected a weight >= 0"
                        )
            elif len(stations) < 2 and s.load > 0:
                raise ScenarioError(f"nodes.{s.name}.dest: 'uniform' needs at least one other station")
        # Reachability through bridges (stations do not forward).
        for s in stations:
            if s.load <= 0:
                continue
            if isinstance(s.dest, str) and s.dest != "uniform":
                dests = [s.dest]
            elif isinstance(s.dest, dict):
                dests = [k for k, w in s.dest.items() if w > 0]
            else:
                dests = [t.name for t in stations if t.name != s.name]
            reach = _reachable(s.name, adj, names)
            for d in dests:
                if d not in reach:
                    raise ScenarioError(
                        f"nodes.{s.name}.dest: {d} is not reachable from {s.name} (disconnected topology)"
                    )
        dur = m.duration_ms
        end = m.measure.end_ms if m.measure.end_ms is not None else dur
        if not (m.measure.start_ms < end <= dur):
            raise ScenarioError(
                f"measure: [{m.measure.start_ms}, {end}] ms is not allowed; expected "
                f"start < end inside the run [0, {dur}] ms"
            )
        for wn, w in m.windows.items():
            if wn == "measure":
                raise ScenarioError("windows.measure: reserved name; use [measure]")
            if not (w.start_ms < w.end_ms <= dur):
                raise ScenarioError(
                    f"windows.{wn}: [{w.start_ms}, {w.end_ms}] ms is not allowed; expected "
                    f"start < end inside the run [0, {dur}] ms"
                )
        if m.fairness and m.fairness.window not in m.windows:
            raise ScenarioError(
                f"fairness.window: no window named '{m.fairness.window}'; windows: "
                + (", ".join(m.windows) or "none")
            )
        if m.utilization:
            if m.utilization.window not in m.windows:
                raise ScenarioError(
                    f"utilization.window: no window named '{m.utilization.window}'; windows: "
                    + (", ".join(m.windows) or "none")
                )
            _port(m.utilization.link, "utilization.link", adj)
        if m.pause.xon_bytes > m.pause.xoff_bytes:
            raise ScenarioError(
                f"pause.xon_bytes: {m.pause.xon_bytes} is above pause.xoff_bytes "
                f"{m.pause.xoff_bytes}; expected xon_bytes <= xoff_bytes"
            )
        if m.hotspot:
            h = m.hotspot
            if h.node not in names or names[h.node].kind != "station":
                raise ScenarioError(
                    f"hotspot.node: '{h.node}' is not allowed; expected a station of the scenario"
                )
            if not (h.start_ms < h.end_ms):
                raise ScenarioError(
                    f"hotspot.end_ms: {h.end_ms} is not allowed; expected a time after "
                    f"hotspot.start_ms = {h.start_ms}"
                )
        for i, ev in enumerate(m.events):
            if ev.action in ("start", "stop"):
                if ev.node not in names or names[ev.node].kind != "station":
                    raise ScenarioError(f"events[{i}].node: '{ev.node}' is not allowed; expected a station")
            else:
                _port(f"{ev.from_}->{ev.to}", f"events[{i}]", adj)
        for p in m.trace.ports or []:
            _port(p, "trace.ports", adj)
        for p in m.cp_ports:
            _port(p, "cp_ports", adj)
            if names[p.partition("->")[0]].kind != "bridge":
                raise ScenarioError(f"cp_ports: '{p}' is not allowed; expected a bridge port")

    # ------------------------------------------------------------ engine
    def engine_config(self) -> dict[str, Any]:
        """The engine config (docs/engine-interface.md) of this scenario."""
        return resolve(self)

    def engine_json(self) -> str:
        """The engine config as the JSON text the engine reads, checked by the
        engine (every cross-parameter rule of the scheme, the topology) so
        that a bad scenario or sweep point fails before anything runs or is
        written, naming the parameter as the user wrote it."""
        if self._engine_json is None:
            text = json.dumps(self.engine_config(), sort_keys=True)
            from . import _core

            try:
                _core.check_config(text)
            except ValueError as e:
                raise ScenarioError(str(e)) from None
            self._engine_json = text
        return self._engine_json


def _port(name: str, where: str, adj: dict[str, list[str]]) -> None:
    a, sep, b = name.partition("->")
    if not sep or a not in adj or b not in adj[a]:
        raise ScenarioError(f"{where}: '{name}' is not a link direction FROM->TO of the topology")


def _ps(ms: float) -> int:
    return round(ms * PS_PER_MS)


def _bps(gbps: float) -> int:
    return round(gbps * 1e9)


def resolve(scenario: Scenario, scheme: str | None = None, pause: bool | None = None) -> dict[str, Any]:
    """The engine config (docs/engine-interface.md) of `scenario`, optionally
    with another scheme or PAUSE setting: integer picoseconds, bit/s, bytes."""
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
            if isinstance(n.dest, dict):
                dest: dict[str, Any] = {"kind": "weighted", "weights": list(n.dest.items())}
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
                }
            )
            if n.load > 0:
                events.append({"at_ps": _ps(n.start_ms), "action": "start", "node": n.name})
                if n.stop_ms is not None:
                    events.append({"at_ps": _ps(n.stop_ms), "action": "stop", "node": n.name})
        else:
            latency = n.latency_us if n.latency_us is not None else br.latency_us
            bridges.append(
                {
                    "name": n.name,
                    "buffer_mode": n.buffer_mode or br.buffer_mode,
                    "buffer_bytes": _or(n.buffer_bytes, br.buffer_bytes),
                    "latency_ps": round(latency * PS_PER_US),
                    "cp": n.cp,
                    "ports": n.ports,
                }
            )
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
    cp_bridges = {n.name for n in m.nodes if n.kind == "bridge" and n.cp}
    if m.trace.ports is not None:
        trace = list(m.trace.ports)
    elif m.cp_ports:
        trace = list(m.cp_ports)
    else:
        trace = [
            f"{x}->{y}"
            for link in m.links
            for (x, y) in ((link.a, link.b), (link.b, link.a))
            if x in cp_bridges
        ]
    return {
        "duration_ps": _ps(m.duration_ms),
        "bin_ps": round(m.bin_us * PS_PER_US),
        "windows": windows,
        "frame_bytes": d.frame_bytes,
        "control_frame_bytes": d.control_frame_bytes,
        "max_traced_flows": 64,
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
        "routes": routes_for(m.routing, m.topology),
        "scheme": engine_scheme(scenario.scheme, scenario.table),
    }


def _or(v: Any, default: Any) -> Any:
    return v if v is not None else default


def _table(raw: dict[str, Any], name: str) -> dict[str, Any]:
    t = raw.get(name)
    if not isinstance(t, dict):
        t = raw[name] = {}
    return t


def _seeds_value(seeds: int | Iterable[int]) -> int | list[int]:
    """A seeds choice as the file writes it: a count N for 0..N-1, else the list."""
    if isinstance(seeds, bool):
        raise ScenarioError(f"seeds: {seeds} is not allowed; expected a count or a list of seeds")
    if isinstance(seeds, int):
        return seeds
    try:
        lst = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise ScenarioError(f"seeds: {seeds!r} is not allowed; expected a count or a list of seeds") from None
    return len(lst) if lst and lst == list(range(len(lst))) else lst


def _node_dump(n: Node) -> dict[str, Any]:
    """A node with the keys of its kind (per-node overrides only when set)."""
    d: dict[str, Any] = {"name": n.name, "kind": n.kind}
    if n.kind == "station":
        d.update(load=n.load, dest=n.dest, start_ms=n.start_ms)
        keys: tuple[str, ...] = ("stop_ms", "nic_buffer_bytes", "rlq_bytes", "processing_us")
    else:
        d["cp"] = n.cp
        keys = ("buffer_mode", "buffer_bytes", "latency_us", "ports")
    for k in keys:
        v = getattr(n, k)
        if v is not None:
            d[k] = v
    return d


def _fit_windows(raw: dict[str, Any]) -> None:
    """After a duration change: clip windows to the run, drop those past its end."""
    dur = raw.get("duration_ms")
    if not isinstance(dur, int | float) or dur <= 0:
        return
    m = raw.get("measure") or {}
    if isinstance(m.get("end_ms"), int | float) and m["end_ms"] > dur:
        m["end_ms"] = dur
    if isinstance(m.get("start_ms"), int | float) and m["start_ms"] >= dur:
        m["start_ms"] = 0.0
    for name, w in list((raw.get("windows") or {}).items()):
        if not isinstance(w, dict):
            continue
        if w.get("start_ms", 0) >= dur:
            del raw["windows"][name]
            for section in ("fairness", "utilization"):
                if (raw.get(section) or {}).get("window", section) == name:
                    raw.pop(section, None)
        elif w.get("end_ms", 0) > dur:
            w["end_ms"] = dur


def _reachable(src: str, adj: dict[str, list[str]], nodes: dict[str, Node]) -> set[str]:
    """Nodes reachable from `src` (a plain BFS; stations do not forward)."""
    seen = {src}
    todo = deque(adj[src])
    while todo:
        v = todo.popleft()
        if v in seen:
            continue
        seen.add(v)
        if nodes[v].kind == "bridge":
            todo.extend(adj[v])
    return seen


# ---------------------------------------------------------------- TOML out

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return tomli_w.dumps({"v": v})[4:].rstrip("\n")


def _described(cls: Any, key: str) -> str:
    if not _is_model(cls):
        return ""
    name = _field_name(cls, key)
    if name is None:
        return ""
    return cls.model_fields[name].description or ""


def _emit(lines: list[str], key: str, value: Any, cls: Any) -> None:
    text = f"{_toml_key(key)} = {_toml_value(value)}"
    desc = _described(cls, key)
    lines.append(f"{text:<40} # {desc}" if desc else text)


def _emit_table(lines: list[str], header: str, table: dict[str, Any], cls: Any) -> None:
    lines.append("")
    doc = (cls.__doc__ or "").strip().splitlines() if _is_model(cls) else []
    if doc:
        lines.append(f"# {doc[0]}")
    lines.append(header)
    for k, v in table.items():
        _emit(lines, k, v, cls)
    if _is_model(cls):  # optional parameters left unset, with their meaning
        for name, f in cls.model_fields.items():
            key = f.alias or name
            if key not in table:
                lines.append(f"{'# ' + key + ' = (not set)':<40} # {f.description or ''}")


def _commented_toml(d: dict[str, Any], sc: Scenario) -> str:
    lines = [
        f"# Scenario '{sc.name}', resolved: every parameter with its value; units in the",
        "# names and comments (docs/scenario-format.md). Re-run it with `cnsim run FILE`.",
    ]
    fields = ScenarioModel.model_fields
    tables = {k: v for k, v in d.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in d.items() if isinstance(v, list) and k in ("nodes", "links", "events")}
    for k, v in d.items():
        if k not in tables and k not in arrays:
            _emit(lines, k, v, ScenarioModel)
    for k, v in tables.items():
        inner, container = _unwrap(fields[k].annotation)
        if container and _is_model(inner):  # [windows.NAME]
            for wn, w in v.items():
                _emit_table(lines, f"[{k}.{_toml_key(wn)}]", w, inner)
        else:
            if k == SCHEMES[sc.scheme][0]:
                lines.append("")
                lines.append(f"# ---- parameters of the scheme in use ({sc.scheme})")
            _emit_table(lines, f"[{k}]", v, inner)
    for k, items in arrays.items():
        inner, _ = _unwrap(fields[k].annotation)
        seen: set[str] = set()
        for item in items:
            lines.append("")
            lines.append(f"[[{k}]]")
            for ik, iv in item.items():  # each key's meaning once per array
                _emit(lines, ik, iv, inner if ik not in seen else None)
                seen.add(ik)
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # what we write must read back
    return text


# ---------------------------------------------------------------- files


def builtin_names() -> list[str]:
    """Names of the built-in scenarios (python/cnsim/scenarios/*.toml)."""
    root = resources.files("cnsim") / "scenarios"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def _read_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{source}: malformed TOML: {e}") from None


def load(name_or_path: str | Path, **changes: Any) -> Scenario:
    """A built-in scenario by name, or a scenario file by path; `changes` as
    in `Scenario.replace`."""
    text, source = _scenario_text(str(name_or_path))
    sc = Scenario(_read_toml(text, source), source=source)
    return sc.replace(**changes) if changes else sc


def _scenario_text(name: str) -> tuple[str, str]:
    p = Path(name)
    if p.suffix == ".toml" or p.exists() or "/" in name:
        if not p.is_file():
            raise ScenarioError(f"scenario file '{name}' does not exist")
        try:
            return p.read_text(), str(p)
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(f"scenario file '{name}' cannot be read: {e}") from None
    if name in builtin_names():
        return (resources.files("cnsim") / "scenarios" / f"{name}.toml").read_text(), name
    raise ScenarioError(
        f"unknown scenario '{name}'; built-in scenarios: {', '.join(builtin_names())} "
        "(or give a path to a .toml file)"
    )


def parse_value(text: str) -> Any:
    """A `--set` value: a TOML literal (number, bool, string, array, inline
    table), or else the text itself as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Sets `key` (dotted) in a raw scenario; `nodes.NAME.field` addresses a
    node by name and `links.A-B.field` a link by its ends."""
    parts = key.split(".")
    if not all(p.strip() for p in parts):
        raise ScenarioError(f"--set {key}: not a dotted parameter name")
    top = [f.alias or n for n, f in ScenarioModel.model_fields.items()]
    if parts[0] not in top:
        raise ScenarioError(
            f"--set {key}: unknown parameter '{parts[0]}'; known top-level names: {', '.join(sorted(top))}"
        )
    cur: Any = raw
    i = 0
    while i < len(parts) - 1:
        p = parts[i]
        if p in ("nodes", "links") and i == 0:
            items = cur.get(p, [])
            want = parts[i + 1]
            match = [it for it in items if it.get("name") == want or f"{it.get('a')}-{it.get('b')}" == want]
            if not match:
                known = [it.get("name") or f"{it.get('a')}-{it.get('b')}" for it in items]
                raise ScenarioError(
                    f"--set {key}: no {p[:-1]} named '{want}'; {p}: {', '.join(map(str, known))}"
                )
            cur = match[0]
            i += 2
            continue
        nxt = cur.get(p)
        if nxt is None:
            nxt = cur[p] = {}
        if not isinstance(nxt, dict):
            raise ScenarioError(f"--set {key}: '{'.'.join(parts[: i + 1])}' is not a table")
        cur = nxt
        i += 1
    if i != len(parts) - 1:
        raise ScenarioError(f"--set {key}: expected nodes.NAME.PARAMETER or links.A-B.PARAMETER")
    cur[parts[-1]] = value


def apply_sets(sc: Scenario, sets: Iterable[str]) -> Scenario:
    """Applies `KEY=VALUE` overrides (CLI `--set`), values as TOML literals."""
    changes: dict[str, Any] = {}
    for s in sets:
        key, sep, val = s.partition("=")
        if not sep or not key.strip():
            raise ScenarioError(f"--set {s}: expected KEY=VALUE")
        changes[key.strip()] = parse_value(val.strip())
    if not changes:
        return sc
    raw = copy.deepcopy(sc.raw)
    try:
        for key, value in changes.items():
            set_dotted(raw, key, value)
        if "duration_ms" in changes:
            _fit_windows(raw)
        return Scenario(raw, source=sc.source)
    except ScenarioError as e:
        msg = str(e)
        if msg.startswith("--set"):
            raise
        # Name what was set; and the parameter at fault when it is another one.
        if not any(msg.startswith(k) for k in changes):
            msg = f"{', '.join(changes)}: {msg}"
        raise ScenarioError(f"--set {msg}") from None

"""Scenario files: loading (TOML), validation with one-line errors,
`--set` overrides by dotted name, and resolution into the engine config
(docs/engine-interface.md). The full format is documented in
docs/scenario-format.md.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections import deque
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ScenarioError
from .schemes import SCHEMES, TABLES, engine_scheme

PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Measure(_Model):
    start_ms: float = Field(0.0, ge=0, description="start of the measurement window (ms)")
    end_ms: float | None = Field(None, gt=0, description="end of the window (ms; default: run end)")


class Window(_Model):
    start_ms: float = Field(..., ge=0, description="window start (ms)")
    end_ms: float = Field(..., gt=0, description="window end (ms)")


class Fairness(_Model):
    window: str = Field("fairness", description="the named window fairness is measured over")
    target_gbps: float = Field(..., gt=0, description="fair-share target rate T (Gbit/s)")


class Utilization(_Model):
    link: str = Field(..., description="link direction FROM->TO whose utilisation is reported")
    window: str = Field("utilization", description="the named window it is measured over")


class Defaults(_Model):
    frame_bytes: int = Field(1500, ge=64, le=65535, description="data frame size on the wire (B)")
    control_frame_bytes: int = Field(64, ge=1, le=65535, description="PAUSE / CNM size (B)")
    link_rate_gbps: float = Field(10.0, gt=0, description="default link rate (Gbit/s)")
    link_delay_us: float = Field(0.5, ge=0, description="default propagation delay (us)")


BufferMode = Literal["per_output", "per_input", "shared", "infinite"]


class BridgeDefaults(_Model):
    buffer_mode: BufferMode = Field("per_output", description="buffer accounting")
    buffer_bytes: int = Field(150_000, ge=0, description="per output / per input / per switch (B)")
    latency_us: float = Field(1.0, ge=0, description="store-and-forward latency (us)")


class StationDefaults(_Model):
    nic_buffer_bytes: int = Field(150_000, ge=1, description="NIC transmit buffer (B)")
    rlq_bytes: int = Field(150_000, ge=1, description="capacity of each rate-limiter queue (B)")
    processing_us: float = Field(2.0, ge=0, description="reaction time to a notification (us)")


class Pause(_Model):
    enabled: bool = Field(False, description="IEEE 802.3x PAUSE on (CLI: --pause)")
    xoff_bytes: int = Field(140_000, ge=0, description="XOFF threshold (B)")
    xon_bytes: int = Field(130_000, ge=0, description="XON threshold (B)")
    trigger: Literal["auto", "output_queue", "ingress", "partition"] = Field(
        "auto", description="what the thresholds watch (auto: by buffer mode)"
    )
    quanta: int = Field(65535, ge=1, le=65535, description="pause_time of an XOFF (512 bit times)")


class Hotspot(_Model):
    node: str = Field(..., description="the hot station: the link into it slows down")
    rate_gbps: float = Field(..., ge=0, description="its service rate during the hotspot (Gbit/s)")
    start_ms: float = Field(..., ge=0, description="hotspot start (ms)")
    end_ms: float = Field(..., gt=0, description="hotspot end (ms)")


class Node(_Model):
    name: str = Field(..., min_length=1)
    kind: Literal["station", "bridge"]
    # station
    load: float = Field(0.0, ge=0, le=1, description="Bernoulli p per frame slot")
    dest: str | dict[str, float] = Field(
        "uniform", description="a station name, 'uniform', or a table of weights"
    )
    start_ms: float = Field(0.0, ge=0, description="source on at (ms)")
    stop_ms: float | None = Field(None, ge=0, description="source off at (ms)")
    nic_buffer_bytes: int | None = Field(None, ge=1)
    rlq_bytes: int | None = Field(None, ge=1)
    processing_us: float | None = Field(None, ge=0)
    # bridge
    cp: bool = Field(False, description="congestion-point detection on its output ports")
    buffer_mode: BufferMode | None = None
    buffer_bytes: int | None = Field(None, ge=0)
    latency_us: float | None = Field(None, ge=0)


class Link(_Model):
    a: str
    b: str
    rate_gbps: float | None = Field(None, gt=0, description="link rate (Gbit/s)")
    delay_us: float | None = Field(None, ge=0, description="propagation delay (us)")


class Event(_Model):
    at_ms: float = Field(..., ge=0)
    action: Literal["start", "stop", "link_rate"]
    node: str | None = None
    from_: str | None = Field(None, alias="from")
    to: str | None = None
    rate_gbps: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _fields_for_action(self) -> Event:
        if self.action in ("start", "stop") and not self.node:
            raise ValueError(f"a '{self.action}' event needs 'node'")
        if self.action == "link_rate" and (not self.from_ or not self.to or self.rate_gbps is None):
            raise ValueError("a 'link_rate' event needs 'from', 'to' and 'rate_gbps'")
        return self


class Trace(_Model):
    ports: list[str] | None = Field(
        None, description="ports FROM->TO with queue time series (default: every CP port)"
    )


class ScenarioModel(_Model):
    name: str = "scenario"
    description: str = ""
    duration_ms: float = Field(..., gt=0, description="run length (ms)")
    seeds: int = Field(1, ge=1, description="default number of replications")
    bin_us: float = Field(100.0, gt=0, description="time-series bin width (us)")
    scheme: str = Field("nocm", description="default scheme (cnsim list)")
    measure: Measure = Measure()
    windows: dict[str, Window] = {}
    fairness: Fairness | None = None
    utilization: Utilization | None = None
    defaults: Defaults = Defaults()
    bridge: BridgeDefaults = BridgeDefaults()
    station: StationDefaults = StationDefaults()
    pause: Pause = Pause()
    hotspot: Hotspot | None = None
    nodes: list[Node]
    links: list[Link]
    events: list[Event] = []
    trace: Trace = Trace()
    cp_ports: list[str] = Field(
        [], description="CP detection on exactly these ports (default: bridges with cp = true)"
    )
    nocm: dict[str, Any] = {}
    bcn: TABLES[bcn] = TABLES["bcn"]()  # type: ignore[valid-type]
    ecm: TABLES[ecm] = TABLES["ecm"]()  # type: ignore[valid-type]
    qcn: TABLES[qcn] = TABLES["qcn"]()  # type: ignore[valid-type]
    qcn2pt: TABLES[qcn2pt] = TABLES["qcn2pt"]()  # type: ignore[valid-type]
    qcn3pt: TABLES[qcn3pt] = TABLES["qcn3pt"]()  # type: ignore[valid-type]


def _loc(loc: tuple[Any, ...], raw: dict[str, Any]) -> str:
    """A pydantic error location as a dotted name (nodes by name)."""
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
        if p == "from_":
            p = "from"
        parts.append(str(p))
        cur = cur.get(p) if isinstance(cur, dict) else None
    return ".".join(parts)


def _one_line(e: ValidationError, raw: dict[str, Any]) -> str:
    err = e.errors()[0]
    where = _loc(tuple(x for x in err["loc"] if not str(x).startswith("function-")), raw)
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown parameter"
    if kind == "missing":
        return f"{where}: required parameter is missing"
    value = err.get("input")
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if isinstance(value, dict | list):
        return f"{where}: {msg}"
    return f"{where}: {value!r} is not allowed; {msg[0].lower()}{msg[1:]}"


class Scenario:
    """A validated scenario plus the run choices (scheme, PAUSE, seeds)."""

    def __init__(
        self,
        raw: dict[str, Any],
        *,
        scheme: str | None = None,
        pause: bool | None = None,
        seeds: list[int] | None = None,
        source: str = "<dict>",
    ) -> None:
        self.raw = raw
        self.source = source
        try:
            self.model = ScenarioModel.model_validate(raw)
        except ValidationError as e:
            raise ScenarioError(_one_line(e, raw)) from None
        scheme = scheme if scheme is not None else self.model.scheme
        if scheme not in SCHEMES:
            raise ScenarioError(f"scheme: {scheme!r} is not a known scheme; known: {', '.join(SCHEMES)}")
        self.scheme = scheme
        self.pause = bool(pause) if pause is not None else (self.model.pause.enabled or scheme == "pause")
        if scheme == "pause":
            self.pause = True
        self.seeds = list(seeds) if seeds is not None else list(range(self.model.seeds))
        if not self.seeds:
            raise ScenarioError("seeds: at least one seed is needed")
        if any(s < 0 for s in self.seeds):
            raise ScenarioError(f"seeds: {self.seeds} is not allowed; seeds are integers >= 0")
        self._check()

    # ------------------------------------------------------------ derived
    @property
    def name(self) -> str:
        return self.model.name

    @property
    def duration_ms(self) -> float:
        return self.model.duration_ms

    @property
    def table(self) -> Any:
        t = SCHEMES[self.scheme][0]
        return getattr(self.model, t) if t else None

    def replace(self, **changes: Any) -> Scenario:
        """A copy with `scheme`, `pause`, `seeds` and dotted parameters changed,
        e.g. `sc.replace(scheme="qcn2pt", seeds=range(10), **{"hotspot.rate_gbps": 0.5})`."""
        raw = copy.deepcopy(self.raw)
        scheme = changes.pop("scheme", self.scheme)
        pause = changes.pop("pause", self.pause if scheme == self.scheme else None)
        seeds = changes.pop("seeds", self.seeds)
        for key, value in changes.items():
            set_dotted(raw, key, value)
        if "duration_ms" in changes:
            _fit_windows(raw)
        return Scenario(raw, scheme=scheme, pause=pause, seeds=list(seeds), source=self.source)

    def resolved_raw(self) -> dict[str, Any]:
        """The full scenario with every default filled in (re-runnable TOML)."""
        d = self.model.model_dump(by_alias=True, exclude_none=True)
        d["scheme"] = self.scheme
        d["pause"]["enabled"] = self.pause
        d["seeds"] = len(self.seeds)
        return d

    def to_toml(self) -> str:
        return tomli_w.dumps(self.resolved_raw())

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
        stations = [n for n in m.nodes if n.kind == "station"]
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
        for s in stations:
            if len(adj[s.name]) != 1:
                raise ScenarioError(
                    f"nodes.{s.name}: a station needs exactly one link, it has {len(adj[s.name])}"
                )
            if isinstance(s.dest, str) and s.dest != "uniform":
                d = names.get(s.dest)
                if d is None:
                    raise ScenarioError(f"nodes.{s.name}.dest: unknown node '{s.dest}'")
                if d.kind != "station" or d.name == s.name:
                    raise ScenarioError(f"nodes.{s.name}.dest: '{s.dest}' is not another station")
            elif isinstance(s.dest, dict):
                for dn, w in s.dest.items():
                    if dn not in names or names[dn].kind != "station" or dn == s.name:
                        raise ScenarioError(f"nodes.{s.name}.dest.{dn}: not another station of the scenario")
                    if w < 0:
                        raise ScenarioError(f"nodes.{s.name}.dest.{dn}: weight {w} is negative")
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
                    raise ScenarioError(f"nodes.{s.name}.dest: {d} is not reachable (disconnected topology)")
        dur = m.duration_ms
        end = m.measure.end_ms if m.measure.end_ms is not None else dur
        if not (m.measure.start_ms < end <= dur):
            raise ScenarioError(
                f"measure: [{m.measure.start_ms}, {end}] ms must lie inside the run (0, {dur}] ms"
            )
        for wn, w in m.windows.items():
            if not (w.start_ms < w.end_ms <= dur):
                raise ScenarioError(
                    f"windows.{wn}: [{w.start_ms}, {w.end_ms}] ms must lie inside (0, {dur}] ms"
                )
        if m.fairness and m.fairness.window not in m.windows:
            raise ScenarioError(f"fairness.window: no window named '{m.fairness.window}'")
        if m.utilization:
            if m.utilization.window not in m.windows:
                raise ScenarioError(f"utilization.window: no window named '{m.utilization.window}'")
            self._port(m.utilization.link, "utilization.link", adj)
        if m.pause.xon_bytes > m.pause.xoff_bytes:
            raise ScenarioError(
                f"pause.xon_bytes: {m.pause.xon_bytes} is above pause.xoff_bytes "
                f"{m.pause.xoff_bytes}; XON must not exceed XOFF"
            )
        if m.hotspot:
            h = m.hotspot
            if h.node not in names or names[h.node].kind != "station":
                raise ScenarioError(f"hotspot.node: '{h.node}' is not a station of the scenario")
            if not (h.start_ms < h.end_ms):
                raise ScenarioError(f"hotspot.end_ms: {h.end_ms} must be after hotspot.start_ms {h.start_ms}")
        for i, ev in enumerate(m.events):
            if ev.action in ("start", "stop"):
                if ev.node not in names or names[ev.node].kind != "station":
                    raise ScenarioError(f"events[{i}].node: '{ev.node}' is not a station")
            else:
                self._port(f"{ev.from_}->{ev.to}", f"events[{i}]", adj)
        for p in (m.trace.ports or []) + m.cp_ports:
            self._port(p, "trace.ports" if p in (m.trace.ports or []) else "cp_ports", adj)

    def _port(self, name: str, where: str, adj: dict[str, list[str]]) -> None:
        a, sep, b = name.partition("->")
        if not sep or a not in adj or b not in adj[a]:
            raise ScenarioError(f"{where}: '{name}' is not a link direction FROM->TO")

    # ------------------------------------------------------------ engine
    def engine_config(self) -> dict[str, Any]:
        """The engine config (docs/engine-interface.md) of this scenario."""
        m = self.model
        d = m.defaults
        ps = lambda ms: round(ms * PS_PER_MS)  # noqa: E731
        end = m.measure.end_ms if m.measure.end_ms is not None else m.duration_ms
        windows = [{"name": "measure", "start_ps": ps(m.measure.start_ms), "end_ps": ps(end)}]
        for wn, w in m.windows.items():
            windows.append({"name": wn, "start_ps": ps(w.start_ms), "end_ps": ps(w.end_ms)})
        if m.hotspot and "hotspot" not in m.windows:
            h = m.hotspot
            windows.append(
                {"name": "hotspot", "start_ps": ps(h.start_ms), "end_ps": ps(min(h.end_ms, m.duration_ms))}
            )
        stations, bridges, events = [], [], []
        for n in m.nodes:
            if n.kind == "station":
                if isinstance(n.dest, dict):
                    dest: dict[str, Any] = {"kind": "weighted", "weights": list(n.dest.items())}
                elif n.dest == "uniform":
                    dest = {"kind": "uniform"}
                else:
                    dest = {"kind": "fixed", "node": n.dest}
                stations.append(
                    {
                        "name": n.name,
                        "load": n.load,
                        "dest": dest,
                        "nic_buffer_bytes": n.nic_buffer_bytes or m.station.nic_buffer_bytes,
                        "rlq_bytes": n.rlq_bytes or m.station.rlq_bytes,
                        "processing_ps": round(
                            (n.processing_us if n.processing_us is not None else m.station.processing_us)
                            * PS_PER_US
                        ),
                    }
                )
                if n.load > 0:
                    events.append({"at_ps": ps(n.start_ms), "action": "start", "node": n.name})
                    if n.stop_ms is not None:
                        events.append({"at_ps": ps(n.stop_ms), "action": "stop", "node": n.name})
            else:
                bridges.append(
                    {
                        "name": n.name,
                        "buffer_mode": n.buffer_mode or m.bridge.buffer_mode,
                        "buffer_bytes": n.buffer_bytes
                        if n.buffer_bytes is not None
                        else m.bridge.buffer_bytes,
                        "latency_ps": round(
                            (n.latency_us if n.latency_us is not None else m.bridge.latency_us) * PS_PER_US
                        ),
                        "cp": n.cp,
                    }
                )
        links = []
        rate_of: dict[tuple[str, str], float] = {}
        for link in m.links:
            rate = link.rate_gbps if link.rate_gbps is not None else d.link_rate_gbps
            delay = link.delay_us if link.delay_us is not None else d.link_delay_us
            rate_of[(link.a, link.b)] = rate_of[(link.b, link.a)] = rate
            links.append(
                {
                    "a": link.a,
                    "b": link.b,
                    "rate_bps": round(rate * 1e9),
                    "delay_ps": round(delay * PS_PER_US),
                }
            )
        if m.hotspot:
            h = m.hotspot
            (up,) = [x for (x, y) in rate_of if y == h.node]
            for at, rate in ((h.start_ms, h.rate_gbps), (h.end_ms, rate_of[(up, h.node)])):
                events.append(
                    {
                        "at_ps": ps(at),
                        "action": "link_rate",
                        "from": up,
                        "to": h.node,
                        "rate_bps": round(rate * 1e9),
                    }
                )
        for ev in m.events:
            if ev.action == "link_rate":
                events.append(
                    {
                        "at_ps": ps(ev.at_ms),
                        "action": "link_rate",
                        "from": ev.from_,
                        "to": ev.to,
                        "rate_bps": round((ev.rate_gbps or 0.0) * 1e9),
                    }
                )
            else:
                events.append({"at_ps": ps(ev.at_ms), "action": ev.action, "node": ev.node})
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
            "duration_ps": ps(m.duration_ms),
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
                "enabled": self.pause,
                "trigger": m.pause.trigger,
                "xoff_bytes": m.pause.xoff_bytes,
                "xon_bytes": m.pause.xon_bytes,
                "quanta": m.pause.quanta,
            },
            "trace_ports": trace,
            "cp_ports": list(m.cp_ports),
            "scheme": engine_scheme(self.scheme, self.table),
        }

    def engine_json(self) -> str:
        return json.dumps(self.engine_config(), sort_keys=True)


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
        if w.get("start_ms", 0) >= dur:
            del raw["windows"][name]
            for section in ("fairness", "utilization"):
                if (raw.get(section) or {}).get("window", section) == name:
                    raw.pop(section, None)
        elif w.get("end_ms", 0) > dur:
            w["end_ms"] = dur


def _reachable(src: str, adj: dict[str, list[str]], nodes: dict[str, Node]) -> set[str]:
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


# ---------------------------------------------------------------- files


def builtin_names() -> list[str]:
    root = resources.files("cnsim") / "scenarios"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def _read_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{source}: malformed TOML: {e}") from None


def load(name_or_path: str | Path, **changes: Any) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    text, source = _scenario_text(str(name_or_path))
    sc = Scenario(_read_toml(text, source), source=source)
    return sc.replace(**changes) if changes else sc


def _scenario_text(name: str) -> tuple[str, str]:
    p = Path(name)
    if p.suffix == ".toml" or p.exists():
        if not p.is_file():
            raise ScenarioError(f"scenario file '{name}' does not exist")
        return p.read_text(), str(p)
    if name in builtin_names():
        return (resources.files("cnsim") / "scenarios" / f"{name}.toml").read_text(), name
    raise ScenarioError(
        f"unknown scenario '{name}'; built-in scenarios: {', '.join(builtin_names())} "
        "(or give a path to a .toml file)"
    )


def parse_value(text: str) -> Any:
    """A `--set` value: a TOML literal (number, bool, string, array), or a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Sets `key` (dotted; `nodes.NAME.field` addresses a node by name)."""
    parts = key.split(".")
    if not all(parts):
        raise ScenarioError(f"--set {key}: not a dotted parameter name")
    top = set(ScenarioModel.model_fields)
    if parts[0] not in top:
        raise ScenarioError(f"--set {key}: unknown parameter '{parts[0]}'; known: {', '.join(sorted(top))}")
    cur: Any = raw
    i = 0
    while i < len(parts) - 1:
        p = parts[i]
        if p in ("nodes", "links") and i == 0:
            items = cur.get(p, [])
            want = parts[i + 1]
            match = [it for it in items if it.get("name") == want or f"{it.get('a')}-{it.get('b')}" == want]
            if not match:
                raise ScenarioError(f"--set {key}: no {p[:-1]} named '{want}'")
            cur = match[0]
            i += 2
            continue
        nxt = cur.get(p)
        if nxt is None:
            nxt = cur[p] = {}
        if not isinstance(nxt, dict):
            raise ScenarioError(f"--set {key}: '{p}' is not a table")
        cur = nxt
        i += 1
    cur[parts[-1]] = value


def apply_sets(sc: Scenario, sets: list[str]) -> Scenario:
    """Applies `KEY=VALUE` overrides (CLI `--set`)."""
    changes: dict[str, Any] = {}
    for s in sets:
        key, sep, val = s.partition("=")
        if not sep or not key.strip():
            raise ScenarioError(f"--set {s}: expected KEY=VALUE")
        changes[key.strip()] = parse_value(val.strip())
    return sc.replace(**changes) if changes else sc

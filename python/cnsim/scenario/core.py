"""The Scenario: a scenario file's parameters, validated (types and ranges by
the declarations of `model`, then the rules between them: topology, windows,
thresholds), plus the run choices (scheme, PAUSE on/off, seeds)."""

from __future__ import annotations

import copy
import json
from collections import deque
from collections.abc import Iterable
from typing import Any

from ..errors import ScenarioError, param_of
from ..parameters import TableError
from ..schemes import SCHEMES, TABLES
from ..topologies import expand as expand_topology
from ..topologies import routing_for, topology_params
from .engine_config import class_scheme, compile_input
from .model import _BRIDGE_ONLY, _STATION_ONLY, MAX_SEEDS, NODE, HotspotDest, Node, read
from .overrides import _fit_windows, _seeds_value, _table, name_sets, set_dotted

#: A node's own keys, as the engine declares them (`sections::node`).
NODE_KEYS = tuple(q["name"] for q in NODE["params"])
#: The node's own keys that always have a value (a default, not "none").
NODE_DEFAULTS = frozenset(q["name"] for q in NODE["params"] if q["unset"] is None and not q["required"])


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


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
        _owned: bool = False,
    ) -> None:
        if not isinstance(raw, dict):
            raise ScenarioError("scenario: expected a table of parameters")
        _check_depth(raw)
        if not _owned:  # the caller's dict is never changed; one made for us need not be copied
            raw = copy.deepcopy(raw)
        if scheme is not None:
            raw["scheme"] = scheme
        # A [pause] that is not a table is left for validation to name, not replaced.
        pause_table = raw.get("pause") is None or isinstance(raw.get("pause"), dict)
        if pause is not None and pause_table:
            _table(raw, "pause")["enabled"] = pause
        if seeds is not None:
            raw["seeds"] = _seeds_value(seeds)
        if raw.get("scheme") == "pause":  # `--scheme pause` = nocm with PAUSE on
            # PAUSE asked off beside it: by the caller (--no-pause), or by the file that names the scheme.
            table = raw.get("pause")
            file_off = scheme is None and isinstance(table, dict) and table.get("enabled") is False
            if pause is False or (pause is None and file_off):
                raise ScenarioError.at(
                    "scheme / pause",
                    "scheme 'pause' is nocm with PAUSE on, and PAUSE is asked off "
                    "(--no-pause or pause.enabled = false); give scheme nocm without PAUSE, or PAUSE on",
                )
            raw["scheme"] = "nocm"
            if pause_table:
                _table(raw, "pause")["enabled"] = True
        self.raw = raw
        self.source = source
        self._engine_config: dict[str, Any] | None = None
        self._compiled: Any = None  # the engine's checked configuration (`compiled`), made once
        #: The `--set` keys this scenario was made with (`apply_sets`): an
        #: engine rule's error names them as every `--set` error does.
        self._sets: tuple[str, ...] = ()
        self._toml: dict[bool, str] = {}  # to_toml's text, made once (a Scenario never changes)
        expanded = expand_topology(raw)
        try:
            self.model = read(expanded)
        except TableError as e:
            raise ScenarioError(str(e), param=e.where) from None
        if self.model.scheme not in SCHEMES:
            raise ScenarioError.at(
                "scheme", f"{self.model.scheme!r} is not a known scheme; known: {', '.join(SCHEMES)}"
            )
        # Seeds are declared in the engine (sections::top) but never reach
        # it: their range and distinctness are checked here.
        s = self.model.seeds
        if isinstance(s, int) and s > MAX_SEEDS:
            raise ScenarioError.at(
                "seeds", f"{s} is not allowed; expected at most {MAX_SEEDS:,} replications"
            )
        self.seeds: list[int] = list(range(s)) if isinstance(s, int) else list(s)
        if not self.seeds:
            raise ScenarioError.at("seeds", f"{s} is not allowed; at least one seed is needed")
        if any(not 0 <= x < 2**63 for x in self.seeds) or len(set(self.seeds)) != len(self.seeds):
            raise ScenarioError.at(
                "seeds", f"{s} is not allowed; expected a count >= 1 or distinct integers >= 0 and < 2**63"
            )
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
        Changing `duration_ms` clips the measurement windows to the new run.
        A parameter of a scheme that does not run (`hpcc.eta` while dcqcn
        runs) is refused: it would be ignored."""
        return self._replace(changes)

    def _replace(self, changes: dict[str, Any], schemes: Iterable[str] = (), label: str = "") -> Scenario:
        """`replace`; a scheme parameter may also belong to one of `schemes`
        (a sweep whose grid sweeps the scheme)."""
        changes = dict(changes)
        raw = copy.deepcopy(self.raw)
        scheme = changes.pop("scheme", None)
        pause = changes.pop("pause", None)
        seeds = changes.pop("seeds", None)
        for key, value in changes.items():
            set_dotted(raw, key, value)
        running = scheme if scheme is not None else raw.get("scheme")
        if isinstance(running, str) and running in SCHEMES:  # else the model names what is wrong
            check_scheme_keys(changes, running, [*schemes, *workload_schemes(raw)], label)
        if "duration_ms" in changes:
            _fit_windows(raw)
        out = Scenario(raw, scheme=scheme, pause=pause, seeds=seeds, source=self.source, _owned=True)
        if not changes:  # only the run choices changed: the --set keys still made it
            out._sets = self._sets
        return out

    def resolved_raw(self) -> dict[str, Any]:
        """The full scenario with every default filled in (re-runnable). With a
        generated topology only the file's own nodes and links are listed."""
        # Nodes, links and events are dumped below, a generated fabric's own
        # ones only: not all of its tens of thousands of records first.
        d = self.model.dump(exclude_none=True, exclude=frozenset(("nodes", "links", "events")))
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
        d["links"] = [lk.dump(exclude_none=True) for lk in links]
        d["events"] = [e.dump(exclude_none=True) for e in self.model.events]
        order = {name: i for i, name in enumerate(self.model.names)}  # the declared order, as dump's
        return dict(sorted(d.items(), key=lambda kv: order.get(kv[0], len(order))))

    def to_toml(self, comments: bool = True) -> str:
        """The resolved scenario as TOML; with `comments`, every parameter has
        its unit and meaning beside it (`cnsim show`). Made once: `cnsim run`
        renders it while the engine runs, and the results write it."""
        text = self._toml.get(comments)
        if text is None:
            if comments:
                from .show import commented_toml  # its TOML writer: only for a text

                text = commented_toml(self.resolved_raw(), self)
            else:
                import tomli_w

                text = tomli_w.dumps(self.resolved_raw())
            self._toml[comments] = text
        return text

    # ------------------------------------------------------------ checks
    def _check(self) -> None:
        m = self.model
        names: dict[str, Node] = {}
        for n in m.nodes:
            if n.name in names:
                raise ScenarioError.at(f"nodes.{n.name}", "duplicate node name")
            if "->" in n.name or "|" in n.name:
                raise ScenarioError.at(f"nodes.{n.name}", "names cannot contain '->' or '|'")
            names[n.name] = n
            other = _BRIDGE_ONLY if n.kind == "station" else _STATION_ONLY
            wrong = sorted(set(other) & n.fields_set)
            if wrong:
                raise ScenarioError.at(
                    f"nodes.{n.name}.{wrong[0]}",
                    f"not a parameter of a {n.kind}; "
                    f"a {n.kind} takes: name, kind, "
                    + ", ".join(_STATION_ONLY if n.kind == "station" else _BRIDGE_ONLY),
                )
            # start_ms < stop_ms is the engine's declared rule (sections::node),
            # asked with the nodes that set stop_ms (`_written_sections`).
        for n in m.nodes:
            if n.kind != "bridge" or (n.buffer_mode or m.bridge.buffer_mode) == "infinite":
                continue
            own = n.buffer_bytes is not None
            size = n.buffer_bytes if own else m.bridge.buffer_bytes
            if size < m.defaults.frame_bytes:
                where = f"nodes.{n.name}.buffer_bytes" if own else "bridge.buffer_bytes"
                raise ScenarioError.at(
                    f"{where}",
                    f"{size} is not allowed; a bridge buffer must hold one "
                    f"{m.defaults.frame_bytes}-byte frame (defaults.frame_bytes)",
                )
        stations = [n for n in m.nodes if n.kind == "station"]
        if not stations:
            raise ScenarioError.at("nodes", "a scenario needs at least one station")
        adj: dict[str, list[str]] = {n: [] for n in names}
        seen: set[frozenset[str]] = set()
        for link in m.links:
            for end in (link.a, link.b):
                if end not in names:
                    raise ScenarioError.at(
                        f"links.{link.a}-{link.b}", f"unknown node '{end}'; nodes: " + ", ".join(names)
                    )
            if link.a == link.b:
                raise ScenarioError.at(f"links.{link.a}-{link.b}", "a link needs two different nodes")
            key = frozenset((link.a, link.b))
            if key in seen:
                raise ScenarioError.at(f"links.{link.a}-{link.b}", "duplicate link")
            seen.add(key)
            adj[link.a].append(link.b)
            adj[link.b].append(link.a)
        for n in m.nodes:
            if n.kind == "bridge" and n.ports is not None and len(adj[n.name]) > n.ports:
                raise ScenarioError.at(
                    f"nodes.{n.name}", f"{len(adj[n.name])} links exceed its {n.ports} ports"
                )
        for s in stations:
            if len(adj[s.name]) != 1:
                raise ScenarioError.at(
                    f"nodes.{s.name}", f"a station needs exactly one link, it has {len(adj[s.name])}"
                )
            if isinstance(s.dest, str) and s.dest != "uniform":
                d = names.get(s.dest)
                if d is None:
                    raise ScenarioError.at(
                        f"nodes.{s.name}.dest",
                        f"unknown node '{s.dest}'; expected another station, 'uniform' or a table of weights",
                    )
                if d.kind != "station" or d.name == s.name:
                    raise ScenarioError.at(
                        f"nodes.{s.name}.dest",
                        f"'{s.dest}' is not another station; expected another "
                        "station, 'uniform' or a table of weights",
                    )
            elif isinstance(s.dest, HotspotDest):
                d = names.get(s.dest.hotspot)
                if d is None or d.kind != "station":
                    raise ScenarioError.at(
                        f"nodes.{s.name}.dest.hotspot", f"'{s.dest.hotspot}' is not a station of the scenario"
                    )
                if len(stations) < 2 and s.load > 0:
                    raise ScenarioError.at(
                        f"nodes.{s.name}.dest", "a hotspot needs at least one other station"
                    )
            elif isinstance(s.dest, dict):
                if not s.dest or sum(s.dest.values()) <= 0:
                    raise ScenarioError.at(f"nodes.{s.name}.dest", "expected at least one positive weight")
                for dn, w in s.dest.items():
                    if dn not in names or names[dn].kind != "station" or dn == s.name:
                        raise ScenarioError.at(
                            f"nodes.{s.name}.dest.{dn}", "not another station of the scenario"
                        )
                    if w < 0:
                        raise ScenarioError.at(
                            f"nodes.{s.name}.dest.{dn}", f"{w} is not allowed; expected a weight >= 0"
                        )
            elif len(stations) < 2 and s.load > 0:
                raise ScenarioError.at(f"nodes.{s.name}.dest", "'uniform' needs at least one other station")
        # Reachability through bridges (stations do not forward): one
        # component label per node, so that thousands of hosts cost no more
        # than one pass over the links.
        comp = _components(adj, names)
        members: dict[int, int] = {}
        for t in stations:
            members[comp[t.name]] = members.get(comp[t.name], 0) + 1
        for s in stations:
            if s.load <= 0:
                continue
            if isinstance(s.dest, str) and s.dest != "uniform":
                dests = [s.dest]
            elif isinstance(s.dest, HotspotDest):
                dests = [s.dest.hotspot] if s.dest.hotspot != s.name else []
            elif isinstance(s.dest, dict):
                dests = [k for k, w in s.dest.items() if w > 0]
            else:
                dests = []
                if members[comp[s.name]] < len(stations):
                    dests = [t.name for t in stations if t.name != s.name]
            if isinstance(s.dest, HotspotDest) and members[comp[s.name]] < len(stations):
                dests += [t.name for t in stations if t.name != s.name]
            for d in dests:
                if comp[d] != comp[s.name]:
                    raise ScenarioError.at(
                        f"nodes.{s.name}.dest", f"{d} is not reachable from {s.name} (disconnected topology)"
                    )
        routing_for(m.routing, m.topology)  # fattree routing needs a fat tree
        # duration_ms / bin_us (at most MAX_BINS bins) is the engine's rule
        # (sections::top).
        # The windows' ranges and their place inside the run are the engine's
        # rules (crates/cnsim-core/src/sections.rs, config.rs); the reserved
        # name is the file's own.
        if "measure" in m.windows:
            raise ScenarioError.at("windows.measure", "reserved name; use [measure]")
        if m.fairness and m.fairness.window not in m.windows:
            raise ScenarioError.at(
                "fairness.window",
                f"no window named '{m.fairness.window}'; windows: " + (", ".join(m.windows) or "none"),
            )
        if m.utilization:
            if m.utilization.window not in m.windows:
                raise ScenarioError.at(
                    "utilization.window",
                    f"no window named '{m.utilization.window}'; windows: " + (", ".join(m.windows) or "none"),
                )
            _port(m.utilization.link, "utilization.link", adj)
        # [hotspot]'s and [[events]]' own rules (start_ms < end_ms, a rate of
        # 0 or >= 1 bit/s, an event's action naming its node or its link
        # direction and rate) are the engine's (sections.rs,
        # `engine_config_checked`); that the names are a station or a link
        # direction of the scenario is checked here, against the nodes (an
        # event missing them is left to the engine's rule).
        if m.hotspot:
            h = m.hotspot
            if h.node not in names or names[h.node].kind != "station":
                raise ScenarioError.at(
                    "hotspot.node", f"'{h.node}' is not allowed; expected a station of the scenario"
                )
        for i, ev in enumerate(m.events):
            if ev.action in ("start", "stop", "pfc_storm"):
                if ev.node is not None and (ev.node not in names or names[ev.node].kind != "station"):
                    raise ScenarioError.at(
                        f"events[{i}].node", f"'{ev.node}' is not allowed; expected a station"
                    )
            elif ev.from_ is not None and ev.to is not None:
                _port(f"{ev.from_}->{ev.to}", f"events[{i}]", adj)
        for p in m.trace.ports or []:
            _port(p, "trace.ports", adj)
        for n in m.trace.event_nodes:
            if n not in names:
                raise ScenarioError.at(
                    "trace.event_nodes", f"'{n}' is not allowed; expected a node of the scenario"
                )
        for p in m.trace.event_ports:
            _port(p, "trace.event_ports", adj)
        for p in m.trace.pcap:
            _port(p, "trace.pcap", adj)
        for f in m.trace.event_flows:
            src, sep, dst = f.partition("|")
            if not sep or any(x not in names or names[x].kind != "station" for x in (src, dst)):
                raise ScenarioError.at(
                    "trace.event_flows",
                    f"'{f}' is not allowed; expected SRC|DST, two stations of the scenario",
                )
        if m.stability is not None:
            _port(m.stability.port, "stability.port", adj)
            if names[m.stability.port.partition("->")[0]].kind != "bridge":
                raise ScenarioError.at(
                    "stability.port", f"'{m.stability.port}' is not allowed; expected a bridge port"
                )
        if m.innocent is not None and (
            m.innocent.sink not in names or names[m.innocent.sink].kind != "station"
        ):
            raise ScenarioError.at(
                "innocent.sink", f"'{m.innocent.sink}' is not allowed; expected a station of the scenario"
            )
        for rl in m.trace.rate_limiters or []:
            station, sep, what = rl.partition("|")
            if not sep or station not in names or names[station].kind != "station":
                raise ScenarioError.at(
                    "trace.rate_limiters",
                    f"'{rl}' is not allowed; expected STATION|DEST or STATION|FROM->TO "
                    "with a station of the scenario",
                )
            if "->" in what:
                _port(what, "trace.rate_limiters", adj)
            elif what not in names or names[what].kind != "station" or what == station:
                raise ScenarioError.at(
                    "trace.rate_limiters", f"'{rl}' is not allowed; '{what}' is not another station"
                )
        for p in m.cp_ports:
            _port(p, "cp_ports", adj)
            if names[p.partition("->")[0]].kind != "bridge":
                raise ScenarioError.at("cp_ports", f"'{p}' is not allowed; expected a bridge port")
        for i, e in enumerate(m.ports):
            _port(e.port, f"ports[{i}].port", adj)
            if names[e.port.partition("->")[0]].kind != "bridge":
                raise ScenarioError.at(
                    f"ports[{i}].port", f"'{e.port}' is not allowed; expected a bridge's output port"
                )
        if m.workloads and m.workload is None:
            raise ScenarioError.at(
                "workloads", "more workloads need a first one, [workload] (whose transport they share)"
            )
        if m.workload is not None:
            from ..workloads import each_workload, embed_file_cdf, named, scenario_plans

            for at, w in each_workload(m):
                with named(at):
                    embed_file_cdf(w)  # read once: what runs is what is saved
            scenario_plans(m)  # the workloads' rules, and their flows counted (max_flows)
            class_scheme(m, self.scheme)  # a second scheme's rules

    # ------------------------------------------------------------ engine
    def engine_config(self) -> dict[str, Any]:
        """The engine config (docs/engine-interface.md) of this scenario, as
        the engine resolves it (`compiled`'s when it was compiled; else
        resolved, not checked), made once."""
        if self._engine_config is None:
            if self._compiled is not None:
                self._engine_config = self._compiled.data()
            else:
                import cnsim._core as _core

                try:
                    self._engine_config = _core.resolve(compile_input(self))
                except ValueError as e:
                    raise ScenarioError(str(e), param=param_of(e)) from None
        return self._engine_config

    def engine_part(self, name: str) -> Any:
        """One top-level part of the engine config (`stations`, `bridges`
        or `scheme`), without making the rest into Python data: a compiled
        scenario of millions of flows would take gigabytes."""
        if self._engine_config is None and self._compiled is not None:
            return self._compiled.part(name)
        return self.engine_config()[name]

    def paths(self, flows: Iterable[tuple[str, str]], seed: int | None = None) -> list[list[str]]:
        """The nodes each flow (source, destination) visits, both included,
        as the engine routes it in run `seed` (default: the first seed; ECMP
        draws depend on it); [] for a flow that never arrives."""
        import cnsim._core as _core

        pairs = [(str(a), str(b)) for a, b in flows]
        try:
            return _core.paths(self.compiled(), self.seeds[0] if seed is None else seed, pairs)
        except ValueError as e:
            raise ScenarioError(str(e), param=param_of(e)) from None

    def engine_json(self) -> str:
        """The engine config as JSON text (`engine_config_checked`, for a
        file or a hand-written engine run)."""
        return json.dumps(self.engine_config_checked(), sort_keys=True)

    def engine_config_checked(self) -> dict[str, Any]:
        """The engine config as the engine reads it (a dict), checked by the
        engine (`compiled`) so that a bad scenario or sweep point fails
        before anything runs or is written, naming the parameter as the
        user wrote it."""
        self.compiled()
        return self.engine_config()

    def compiled(self) -> Any:
        """The scenario compiled by the engine (`_core.Compiled`): its config
        and the sections it holds only resolved, as written, checked in one
        call (every value, every rule between parameters, the topology and
        its routes), once per Scenario. Every seed of a run is built from
        it without another check; it pickles for worker processes."""
        if self._compiled is None:
            import cnsim._core as _core

            try:
                # With the sections the engine config holds only resolved, as written.
                self._compiled = _core.compile(compile_input(self), self._written_sections() or None)
            except ValueError as e:
                raise (
                    name_sets(e, self._sets) if self._sets else ScenarioError(str(e), param=param_of(e))
                ) from None
        return self._compiled

    def _written_sections(self) -> dict[str, Any]:
        """The sections the engine checks as the user wrote them
        (`sections::check_written`): they reach the engine config resolved."""
        m = self.model
        out: dict[str, Any] = {}
        if m.hotspot is not None:
            out["hotspot"] = m.hotspot.dump()
        out["trace"] = m.trace.dump()
        # A source's stop is an event in the engine config: the stations that
        # set one, as written (only those: no work for the others).
        stopping = [n for n in m.nodes if n.stop_ms is not None]
        if stopping:
            out["nodes"] = [{k: d[k] for k in NODE_KEYS} for d in (n.dump() for n in stopping)]
        if m.topology is not None:  # the engine config holds the nodes and links it generated
            out["topology"] = topology_params(m.topology).dump()  # as read (k = 4.0 is 4)
        if m.workload is not None:  # the engine config holds its flows or arrivals
            out["workload"] = m.workload.dump()
        if m.workloads:
            out["workloads"] = [w.dump() for w in m.workloads]
        if m.events:  # the engine config holds them rounded, behind the sources' events
            out["events"] = [e.dump() for e in m.events]
        return out

    def per_flow(self) -> bool:
        """Whether a run keeps per-flow counters (`stats.per_flow`, "auto"
        decided by the engine)."""
        if self._compiled is not None:
            return bool(self._compiled.per_flow)
        return bool(self.engine_config()["per_flow"])

    def engine_warnings(self) -> list[str]:
        """What the engine's check of the built network warned about (legal
        but almost certainly unintended parameters), one line each."""
        return list(self.compiled().warnings)


def workload_schemes(raw: dict[str, Any]) -> list[str]:
    """The schemes `raw`'s `[[workloads]]` name (they run too)."""
    ws = raw.get("workloads")
    return (
        [w["scheme"] for w in ws if isinstance(w, dict) and isinstance(w.get("scheme"), str)]
        if isinstance(ws, list)
        else []
    )


def check_scheme_keys(keys: Iterable[str], scheme: str, schemes: Iterable[str] = (), label: str = "") -> None:
    """Refuses a changed parameter of a scheme's table (`hpcc.eta`) that the
    running `scheme` (nor any of `schemes`, those a sweep's grid runs) does
    not read: it would be accepted and silently ignored."""
    running = list(dict.fromkeys([scheme, *schemes]))
    read = {SCHEMES[s][0] for s in running if s in SCHEMES}
    for key in keys:
        table = key.partition(".")[0]
        if table in TABLES and table not in read:
            users = [n for n, (t, _) in SCHEMES.items() if t == table]
            runs = " / ".join(running)
            choose = (
                f"--scheme {users[0]}, or sweep it: --grid scheme={','.join(running)},{users[0]}"
                if label
                else f"scheme={users[0]!r}"
            )
            raise ScenarioError(
                f"{key}: a parameter of {', '.join(users)}, but the scheme that runs is {runs}, "
                f"so it would be ignored; choose that scheme too ({choose})",
                param=key,
                option=label.strip() or None,
            )


#: Deepest nesting of tables and arrays a scenario may have (its own go 4 deep).
MAX_DEPTH = 32


def _check_depth(raw: dict[str, Any]) -> None:
    """Refuses tables or arrays nested deeper than MAX_DEPTH (a 1000-part
    dotted header is 1000 tables deep: copying or validating it would
    overflow Python's stack), naming where, without recursing."""
    todo: list[tuple[Any, int, str]] = [(raw, 0, "")]
    while todo:
        v, depth, where = todo.pop()
        if depth > MAX_DEPTH:
            head = ".".join(where.split(".")[:3])
            raise ScenarioError(
                f"{head}...: tables nested {depth} deep or more; a scenario's tables and arrays are at most "
                f"{MAX_DEPTH} deep",
                param=head,
            )
        if isinstance(v, dict):
            todo.extend((x, depth + 1, f"{where}.{k}" if where else str(k)) for k, x in v.items())
        elif isinstance(v, list):
            todo.extend((x, depth + 1, f"{where}[{i}]") for i, x in enumerate(v))


def _port(name: str, where: str, adj: dict[str, list[str]]) -> None:
    a, sep, b = name.partition("->")
    if not sep or a not in adj or b not in adj[a]:
        raise ScenarioError.at(where, f"'{name}' is not a link direction FROM->TO of the topology")


def _node_dump(n: Node) -> dict[str, Any]:
    """A node with the keys of its kind, as declared (`sections::node`'s
    kinds, then the per-node keys of [station] / [bridge]): the keys with a
    value always, those unset (none: the section's value, or never) left
    out. A key added to the declaration is saved without a change here."""
    d: dict[str, Any] = {"name": n.name, "kind": n.kind}
    keys = _STATION_ONLY if n.kind == "station" else _BRIDGE_ONLY
    always = [k for k in keys if k in NODE_DEFAULTS]
    for k in (*always, *(k for k in keys if k not in always)):
        v = getattr(n, k)
        if v is not None:
            d[k] = v.dump() if isinstance(v, HotspotDest) else v
    return d


def _components(adj: dict[str, list[str]], nodes: dict[str, Node]) -> dict[str, int]:
    """A label per node: two stations share one when frames can travel
    between them through bridges (stations do not forward; two stations
    linked to each other share the link's label)."""
    comp: dict[str, int] = {}
    label = 0
    for start in nodes:
        if start in comp:
            continue
        if nodes[start].kind == "station":
            peers = adj[start]
            if peers and nodes[peers[0]].kind == "station" and peers[0] in comp:
                comp[start] = comp[peers[0]]
                continue
            if peers and nodes[peers[0]].kind == "bridge":
                continue  # labelled with its bridge
            comp[start] = label
            label += 1
            continue
        comp[start] = label
        todo = deque([start])
        while todo:
            v = todo.popleft()
            for u in adj[v]:
                if u not in comp:
                    comp[u] = label
                    if nodes[u].kind == "bridge":
                        todo.append(u)
        label += 1
    return comp

"""Generators for parametric topology families, so that nobody hand-writes
48 switches, and the routing functions that go with them.

A scenario asks for one with a `[topology]` table (docs/scenario-format.md):

    [topology]
    generator = "fattree"      # k-ary n-tree: k**n hosts H0.., n levels of k**(n-1) switches
    k = 4
    n = 3
    load = 0.85                # every host's offered load
    dest = "uniform"           # every host's destinations
    cp = true                  # CP detection on every switch port

    [topology]
    generator = "innocent"     # innocent-flows study, topology A / B / C
    variant = "A"
    degree = 6

The generated nodes and links come first; `[[nodes]]` and `[[links]]` of the
file add to them, and a `[[nodes]]` entry with a generated node's name
changes that node (e.g. `load` of one host).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ScenarioError

#: Most explicit routing entries (switches x hosts) a generated fat tree may need.
MAX_ROUTES = 5_000_000

# As in cnsim.scenario.model (the engine's integer units).
MAX_MS = 1e9
MAX_GBPS = 1e6


class FatTreeTopology(BaseModel):
    """`generator = "fattree"`: a k-ary n-tree. k**n hosts `H0..` and n levels
    of k**(n-1) switches with 2k ports (the roots use k); for n = 3 the
    switches are `Lab`, `Mac`, `Rxc` as in scenarios.md section 7. Routing
    defaults to `fattree` (the up-port rule)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    generator: Literal["fattree"] = Field(description="the generator")
    k: int = Field(4, ge=2, le=64, description="arity: each switch has k ports down and k up")
    n: int = Field(3, ge=2, le=12, description="levels of switches; k**n hosts, at most 4096")
    load: float = Field(0.0, ge=0, le=1, description="every host's offered load (Bernoulli p per frame slot)")
    dest: str | dict[str, float] = Field(
        "uniform", description="every host's destinations, as a node's `dest`"
    )
    cp: bool = Field(True, description="CP detection on every switch")


class InnocentTopology(BaseModel):
    """`generator = "innocent"`: the innocent-flows study of scenarios.md
    section 3. A core switch `C` (infinite buffer, CP) with the hot sink `H`
    and the cold sink `R`; E = degree / k edge switches `E0..`, each with k
    contending sources `X<e>_<j>` (to `H`) and k innocent ones `Y<e>_<j>`
    (to `R`); k = 1, 5, 10 for topologies A, B, C."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    generator: Literal["innocent"] = Field(description="the generator")
    variant: Literal["A", "B", "C"] = Field("A", description="topology A (k = 1), B (k = 5) or C (k = 10)")
    degree: int = Field(3, ge=1, le=1000, description="hotspot degree d: contending sources, a multiple of k")
    congesting_gbps: float = Field(
        20.0, ge=0, le=MAX_GBPS, description="total load of the contending sources (Gbit/s)"
    )
    innocent_gbps: float = Field(
        5.0, ge=0, le=MAX_GBPS, description="total load of the innocent sources (Gbit/s)"
    )
    start_ms: float = Field(0.0, ge=0, le=MAX_MS, description="when every source starts (ms)")


#: The topology generators by name.
GENERATORS: dict[str, type[BaseModel]] = {"fattree": FatTreeTopology, "innocent": InnocentTopology}


def topology_params(topo: dict[str, Any]) -> FatTreeTopology | InnocentTopology:
    """A `[topology]` table validated against its generator's declaration."""
    gen = topo.get("generator")
    model = GENERATORS.get(gen) if isinstance(gen, str) else None
    if model is None:
        raise ScenarioError(f"topology.generator: {gen!r} is not allowed; expected fattree or innocent")
    try:
        return model.model_validate(topo)  # type: ignore[return-value]
    except ValidationError as e:
        from .scenario.messages import one_line

        raise ScenarioError(one_line(e, topo, root=model, prefix="topology")) from None


# ------------------------------------------------------------------ fat tree


def _digits(x: int, k: int, n: int) -> tuple[int, ...]:
    """x in base k, most significant digit first, n digits."""
    out = []
    for _ in range(n):
        out.append(x % k)
        x //= k
    return tuple(reversed(out))


def fattree_switch(level: int, w: tuple[int, ...], n: int, k: int) -> str:
    """Switch names: L, M, R + digits for the 3-level tree of scenarios.md
    (L(a, b), M(a, c), R(x, c)); S<level>_<digits> for other depths. With
    k > 10 a digit can be 10 or more, so digits are separated (`L1_10`):
    names never collide."""
    digits = ("_" if k > 10 else "").join(str(d) for d in w)
    if n == 3:
        return "LMR"[level] + digits
    return f"S{level}_{digits}"


def fattree(k: int, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A k-ary n-tree: k**n hosts H0..; n levels of k**(n-1) switches with 2k
    ports (the roots use k). Host d = (d0 .. d_{n-1}) in base k sits on leaf
    (d0 .. d_{n-2}); a switch (w, l) connects to (w', l + 1) when w and w'
    differ at most in digit n - 2 - l."""
    if k < 2 or n < 2:
        raise ScenarioError(f"topology: a fat tree needs k >= 2 and n >= 2 (got k = {k}, n = {n})")
    if k**n > 4096:
        raise ScenarioError(f"topology.k / topology.n: k = {k}, n = {n} gives {k**n} hosts; at most 4096")
    routes = n * k ** (n - 1) * k**n
    if routes > MAX_ROUTES:
        raise ScenarioError(
            f"topology.k / topology.n: k = {k}, n = {n} needs {routes:,} routing entries "
            f"({n * k ** (n - 1):,} switches x {k**n:,} hosts); at most {MAX_ROUTES:,}"
        )
    words = list(itertools.product(range(k), repeat=n - 1))
    nodes: list[dict[str, Any]] = [{"name": f"H{d}", "kind": "station"} for d in range(k**n)]
    for level in range(n):
        for w in words:
            nodes.append({"name": fattree_switch(level, w, n, k), "kind": "bridge", "ports": 2 * k})
    links: list[dict[str, Any]] = []
    for d in range(k**n):
        dig = _digits(d, k, n)
        links.append({"a": f"H{d}", "b": fattree_switch(0, dig[:-1], n, k)})
    for level in range(n - 1):
        pos = n - 2 - level
        for w in words:
            for c in range(k):
                up = w[:pos] + (c,) + w[pos + 1 :]
                links.append({"a": fattree_switch(level, w, n, k), "b": fattree_switch(level + 1, up, n, k)})
    return nodes, links


def fattree_routes(k: int, n: int) -> list[dict[str, str]]:
    """The up-port rule of scenarios.md: go up only as far as the nearest
    common ancestor, choosing the up-port by the destination (at level l set
    digit n - 2 - l to the destination's digit n - 1 - l: leaf -> M(s0, d2),
    middle -> R(d1, d2)), then down. Every down link then carries the
    traffic of exactly one destination."""
    words = list(itertools.product(range(k), repeat=n - 1))
    routes = []
    for level in range(n):
        for w in words:
            here = fattree_switch(level, w, n, k)
            for d in range(k**n):
                dig = _digits(d, k, n)
                prefix = n - 1 - level  # an ancestor of d matches d's first n-1-level digits
                if w[:prefix] == dig[:prefix]:
                    if level == 0:
                        via = f"H{d}"
                    else:  # down: set digit n-1-level to the destination's
                        pos = n - 1 - level
                        child = w[:pos] + (dig[pos],) + w[pos + 1 :]
                        via = fattree_switch(level - 1, child, n, k)
                else:  # up
                    pos = n - 2 - level
                    parent = w[:pos] + (dig[n - 1 - level],) + w[pos + 1 :]
                    via = fattree_switch(level + 1, parent, n, k)
                routes.append({"bridge": here, "dst": f"H{d}", "via": via})
    return routes


# ------------------------------------------------------------ innocent flows

#: Contending (and innocent) sources per edge switch, by topology.
INNOCENT_K = {"A": 1, "B": 5, "C": 10}


def innocent(
    variant: str, degree: int, congesting_gbps: float, innocent_gbps: float, rate_gbps: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """scenarios.md section 3: a core switch C with the hot sink H and the
    cold sink R; E = degree / k edge switches E0.., each with one uplink to C,
    k contending sources X<e>_<j> (to H) and k innocent sources Y<e>_<j> (to R).
    Severity is constant: the contending sources share `congesting_gbps`,
    the innocent ones `innocent_gbps`."""
    if variant not in INNOCENT_K:
        raise ScenarioError(f"topology.variant: {variant!r} is not allowed; expected one of A, B, C")
    k = INNOCENT_K[variant]
    edges = degree // k
    if degree % k or edges * rate_gbps < congesting_gbps + innocent_gbps or edges < 1:
        need = max(k, math.ceil((congesting_gbps + innocent_gbps) / rate_gbps) * k)
        raise ScenarioError(
            f"topology.degree: {degree} is not allowed; topology {variant} needs a multiple of {k}, "
            f"at least {need} (each uplink carries {congesting_gbps + innocent_gbps:g} / E Gbit/s)"
        )
    hot = congesting_gbps / degree / rate_gbps
    cold = innocent_gbps / degree / rate_gbps
    nodes: list[dict[str, Any]] = [
        {"name": "H", "kind": "station"},
        {"name": "R", "kind": "station"},
        {"name": "C", "kind": "bridge", "buffer_mode": "infinite", "cp": True},
    ]
    links: list[dict[str, Any]] = [{"a": "C", "b": "H"}, {"a": "C", "b": "R"}]
    for e in range(edges):
        nodes.append({"name": f"E{e}", "kind": "bridge"})
        links.append({"a": f"E{e}", "b": "C"})
        for j in range(k):
            nodes.append({"name": f"X{e}_{j}", "kind": "station", "load": hot, "dest": "H"})
            nodes.append({"name": f"Y{e}_{j}", "kind": "station", "load": cold, "dest": "R"})
            links.append({"a": f"X{e}_{j}", "b": f"E{e}"})
            links.append({"a": f"Y{e}_{j}", "b": f"E{e}"})
    return nodes, links


# ------------------------------------------------------------------ expand


def expand(raw: dict[str, Any]) -> dict[str, Any]:
    """The scenario with its `[topology]` generated into nodes and links
    (merged with the file's own); `raw` itself is left as it is."""
    topo = raw.get("topology")
    if not isinstance(topo, dict):
        return raw
    t = topology_params(topo)
    if isinstance(t, FatTreeTopology):
        nodes, links = fattree(t.k, t.n)
        for nd in nodes:
            if nd["kind"] == "station":
                nd["load"] = t.load
                nd["dest"] = t.dest
            else:
                nd["cp"] = t.cp
    else:
        defaults = raw.get("defaults")
        rate = defaults.get("link_rate_gbps", 10.0) if isinstance(defaults, dict) else 10.0
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < float("inf"):
            rate = 10.0  # validation names the bad value; the generator needs a number
        nodes, links = innocent(t.variant, t.degree, t.congesting_gbps, t.innocent_gbps, rate)
        for nd in nodes:
            if nd["kind"] == "station" and nd.get("load"):
                nd["start_ms"] = t.start_ms
    out = dict(raw)
    for key in ("nodes", "links"):
        if not isinstance(raw.get(key) or [], list):
            raise ScenarioError(
                f"{key}: {raw[key]!r} is not allowed; expected an array of tables ([[{key}]])"
            )
    by_name = {nd["name"]: dict(nd) for nd in nodes}
    extra_nodes = []
    for nd in raw.get("nodes") or []:
        if isinstance(nd, dict) and isinstance(nd.get("name"), str) and nd["name"] in by_name:
            by_name[nd["name"]].update(nd)
        else:
            extra_nodes.append(nd)
    out["nodes"] = list(by_name.values()) + extra_nodes
    pairs = {frozenset((lk["a"], lk["b"])): dict(lk) for lk in links}
    extra_links = []
    for lk in raw.get("links") or []:
        ends_ok = isinstance(lk, dict) and isinstance(lk.get("a"), str) and isinstance(lk.get("b"), str)
        key = frozenset((lk["a"], lk["b"])) if ends_ok else None
        if key in pairs:
            pairs[key].update(lk)
        else:
            extra_links.append(lk)
    out["links"] = list(pairs.values()) + extra_links
    if isinstance(t, FatTreeTopology) and "routing" not in raw:
        out["routing"] = "fattree"
    return out


def routes_for(routing: str, topology: dict[str, Any] | None) -> list[dict[str, str]]:
    """Explicit routes of a named routing function ([] for shortest paths)."""
    if routing == "shortest_path":
        return []
    if routing == "fattree":
        t = topology_params(topology) if topology else None
        if not isinstance(t, FatTreeTopology):
            raise ScenarioError("routing: 'fattree' needs a [topology] with generator = \"fattree\"")
        return fattree_routes(t.k, t.n)
    raise ScenarioError(f"routing: {routing!r} is not allowed; expected shortest_path or fattree")

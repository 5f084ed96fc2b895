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
    generator = "leafspine"    # two tiers: leaves x hosts_per_leaf hosts H0.., every leaf to every spine
    leaves = 8
    spines = 4
    hosts_per_leaf = 16
    oversubscription = 2.0     # host capacity of a leaf / its uplink capacity
    load = 0.5
    pattern = "permutation"    # uniform, permutation, incast (fan_in), hotspot (hot_host, hot_fraction)

    [topology]
    generator = "pods"         # three tiers: pods x racks_per_pod racks x hosts_per_rack hosts,
    pods = 8                   # fabric_per_pod fabric switches per pod, spine planes of spines_per_plane
    racks_per_pod = 48

    [topology]
    generator = "kary_fattree" # the K-ary fat tree of K^3 / 4 hosts (the Ultra Ethernet reference's)
    hosts = 1024

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
import random
from typing import Any

from .declarations import declarations, limits
from .errors import ScenarioError
from .parameters import READERS, Record, TableError, record, shown

# The engine's limits (`params::limits`, declared once there): stations and
# link directions it indexes (a fabric beyond them is refused before it is
# generated), and a rate's (its integer bit/s).
MAX_HOSTS = int(limits()["max_stations"])
MAX_DIRECTIONS = int(limits()["max_ports"])
MAX_GBPS = limits()["max_gbps"]
MIN_GBPS = limits()["min_gbps"]


def _declared(name: str) -> dict[str, Any]:
    return next(t for t in declarations()["sections"] if t["name"] == f"topology_{name}")


def _weights_or_name(v: Any, at: str) -> Any:
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w)
        for k, w in v.items()
    ):
        return {k: float(w) for k, w in v.items()}
    raise TableError(at, f"{shown(v)} is not allowed; expected {_DEST_HELP}")


READERS["weights_or_name"] = _weights_or_name

#: Each generator's table: declared in the engine (crates/cnsim-core/src/sections.rs,
#: `topology_NAME`), which checks the table as written
#: (`Scenario.engine_config_checked`). The rules that tie a generator's keys
#: together (host counts, spine_gbps or oversubscription) are checked here,
#: when generating: the nodes are made at load, before the engine is asked.
FatTreeTopology = record(_declared("fattree"), "FatTreeTopology")
LeafSpineTopology = record(_declared("leafspine"), "LeafSpineTopology")
InnocentTopology = record(_declared("innocent"), "InnocentTopology")
PodsTopology = record(_declared("pods"), "PodsTopology")
KaryFatTreeTopology = record(_declared("kary_fattree"), "KaryFatTreeTopology")
_DEST_HELP = FatTreeTopology._params["dest"]["help"]


#: The topology generators by name.
GENERATORS: dict[str, type[Record]] = {
    "fattree": FatTreeTopology,
    "leafspine": LeafSpineTopology,
    "innocent": InnocentTopology,
    "pods": PodsTopology,
    "kary_fattree": KaryFatTreeTopology,
}


def topology_params(topo: dict[str, Any]) -> Any:
    """A `[topology]` table checked against its generator's declaration."""
    gen = topo.get("generator")
    model = GENERATORS.get(gen) if isinstance(gen, str) else None
    if model is None:
        raise ScenarioError.at(
            "topology.generator", f"{gen!r} is not allowed; expected one of " + ", ".join(GENERATORS)
        )
    try:
        return model.read(topo, "topology")
    except TableError as e:
        raise ScenarioError(str(e), param=e.where) from None


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
        raise ScenarioError.at("topology", f"a fat tree needs k >= 2 and n >= 2 (got k = {k}, n = {n})")
    if k**n > MAX_HOSTS:
        raise ScenarioError.at(
            "topology.k / topology.n", f"k = {k}, n = {n} gives {k**n:,} hosts; at most {MAX_HOSTS:,}"
        )
    directions = 2 * (k**n + (n - 1) * k ** (n - 1) * k)
    if directions > MAX_DIRECTIONS:
        raise ScenarioError.at(
            "topology.k / topology.n",
            f"k = {k}, n = {n} gives {directions:,} link directions; at most {MAX_DIRECTIONS:,}",
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


def leafspine(t: Any, default_gbps: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hosts H0.. (host h on leaf L<h // hosts_per_leaf>), leaves L0..,
    spines S0.., every leaf linked to every spine."""
    hosts = t.leaves * t.hosts_per_leaf
    if hosts > MAX_HOSTS:
        raise ScenarioError.at(
            "topology.leaves / topology.hosts_per_leaf",
            f"{t.leaves} x {t.hosts_per_leaf} = {hosts:,} hosts; at most {MAX_HOSTS:,}",
        )
    if t.spine_gbps is not None and t.oversubscription is not None:
        raise ScenarioError.at(
            "topology.oversubscription",
            "give spine_gbps or oversubscription, not both (oversubscription sets spine_gbps)",
        )
    directions = 2 * (hosts + t.leaves * t.spines)
    if directions > MAX_DIRECTIONS:
        raise ScenarioError.at(
            "topology.leaves / topology.spines", f"{directions:,} link directions; at most {MAX_DIRECTIONS:,}"
        )
    host = t.host_gbps if t.host_gbps is not None else default_gbps
    if t.oversubscription is not None:
        spine = t.hosts_per_leaf * host / (t.spines * t.oversubscription)
        if not MIN_GBPS <= spine <= MAX_GBPS:
            raise ScenarioError.at(
                "topology.oversubscription",
                f"{t.oversubscription:g} gives {spine:g} Gbit/s leaf-spine links; "
                f"expected {MIN_GBPS:g} to {MAX_GBPS:g}",
            )
    else:
        spine = t.spine_gbps if t.spine_gbps is not None else host
    nodes: list[dict[str, Any]] = [{"name": f"H{h}", "kind": "station"} for h in range(hosts)]
    nodes += [{"name": f"L{i}", "kind": "bridge"} for i in range(t.leaves)]
    nodes += [{"name": f"S{i}", "kind": "bridge"} for i in range(t.spines)]
    links: list[dict[str, Any]] = [
        {"a": f"H{h}", "b": f"L{h // t.hosts_per_leaf}", "rate_gbps": host} for h in range(hosts)
    ]
    links += [
        {"a": f"L{i}", "b": f"S{j}", "rate_gbps": spine} for i in range(t.leaves) for j in range(t.spines)
    ]
    return nodes, links


def pods(t: Any, default_gbps: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hosts H0.. in racks T0.. (host h in rack h // hosts_per_rack, rack r
    in pod r // racks_per_pod); fabric switches F<pod>_<i>, each rack linked
    to every fabric switch of its pod; spines S<i>_<j>, fabric switch i of
    every pod linked to every spine of plane i."""
    racks = t.pods * t.racks_per_pod
    hosts = racks * t.hosts_per_rack
    if hosts > MAX_HOSTS:
        raise ScenarioError.at(
            "topology.pods / topology.racks_per_pod / topology.hosts_per_rack",
            f"{t.pods} x {t.racks_per_pod} x {t.hosts_per_rack} = {hosts} hosts; at most {MAX_HOSTS}",
        )
    f, sp = t.fabric_per_pod, t.spines_per_plane
    directions = 2 * (hosts + racks * f + t.pods * f * sp)
    if directions > MAX_DIRECTIONS:
        raise ScenarioError.at("topology", f"{directions:,} link directions; at most {MAX_DIRECTIONS:,}")
    host = t.host_gbps if t.host_gbps is not None else default_gbps
    fabric = t.fabric_gbps if t.fabric_gbps is not None else host
    nodes: list[dict[str, Any]] = [{"name": f"H{h}", "kind": "station"} for h in range(hosts)]
    nodes += [{"name": f"T{r}", "kind": "bridge"} for r in range(racks)]
    nodes += [{"name": f"F{p}_{i}", "kind": "bridge"} for p in range(t.pods) for i in range(f)]
    nodes += [{"name": f"S{i}_{j}", "kind": "bridge"} for i in range(f) for j in range(sp)]
    links: list[dict[str, Any]] = [
        {"a": f"H{h}", "b": f"T{h // t.hosts_per_rack}", "rate_gbps": host} for h in range(hosts)
    ]
    links += [
        {"a": f"T{r}", "b": f"F{r // t.racks_per_pod}_{i}", "rate_gbps": fabric}
        for r in range(racks)
        for i in range(f)
    ]
    links += [
        {"a": f"F{p}_{i}", "b": f"S{i}_{j}", "rate_gbps": fabric}
        for p in range(t.pods)
        for i in range(f)
        for j in range(sp)
    ]
    return nodes, links


def kary_fattree(t: Any, default_gbps: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The K-ary fat tree of `hosts` = K^3 / 4 hosts (K even): the `pods`
    fabric of K pods of K / 2 racks of K / 2 hosts, K / 2 aggregation
    switches per pod and planes of K / 2 cores, every link at one rate."""
    k = round((4 * t.hosts) ** (1 / 3))
    k = next((c for c in (k - 1, k, k + 1) if c > 0 and c % 2 == 0 and c**3 // 4 == t.hosts), None)
    if k is None:
        sizes = ", ".join(f"{c**3 // 4:,}" for c in range(4, 34, 2))
        raise ScenarioError.at(
            "topology.hosts",
            f"{t.hosts:,} is not allowed; a K-ary fat tree has K^3 / 4 hosts for an even K: {sizes}, ...",
        )
    half = k // 2
    pod = PodsTopology.read(
        {
            "generator": "pods",
            "pods": k,
            "racks_per_pod": half,
            "hosts_per_rack": half,
            "fabric_per_pod": half,
            "spines_per_plane": half,
            **({"host_gbps": t.host_gbps} if t.host_gbps is not None else {}),
        },
        "topology",
    )
    return pods(pod, default_gbps)


def apply_traffic(hosts: list[dict[str, Any]], t: Any) -> None:
    """Sets every generated host's `load` and `dest` from the topology's
    traffic keys (pattern, or load and dest)."""
    names = [h["name"] for h in hosts]
    for h in hosts:
        h["load"] = t.load
        h["dest"] = t.dest
    if t.pattern is None or t.pattern == "uniform":
        if t.pattern == "uniform":
            for h in hosts:
                h["dest"] = "uniform"
        return
    if len(hosts) < 2:
        raise ScenarioError.at("topology.pattern", f"{t.pattern} needs at least two hosts")
    rng = random.Random(t.pattern_seed)
    if t.pattern == "permutation":
        # Sattolo's shuffle: one cycle through every host, so nobody sends to itself.
        perm = list(range(len(names)))
        for i in range(len(perm) - 1, 0, -1):
            j = rng.randrange(i)
            perm[i], perm[j] = perm[j], perm[i]
        for i, h in enumerate(hosts):
            h["dest"] = names[perm[i]]
    elif t.pattern == "incast":
        if t.fan_in + 1 > len(hosts):
            raise ScenarioError.at(
                "topology.fan_in",
                f"{t.fan_in} is not allowed; an incast group of {t.fan_in} senders and a "
                f"receiver needs {t.fan_in + 1} hosts, the fabric has {len(hosts)}",
            )
        order = list(range(len(hosts)))
        rng.shuffle(order)
        size = t.fan_in + 1
        for g in range(len(order) // size):
            group = order[g * size : (g + 1) * size]
            receiver = names[group[0]]
            hosts[group[0]]["load"] = 0.0
            hosts[group[0]]["dest"] = "uniform"
            for i in group[1:]:
                hosts[i]["dest"] = receiver
        for i in order[len(order) // size * size :]:
            hosts[i]["load"] = 0.0  # left over: in no group
    else:  # hotspot
        if t.hot_host not in names:
            raise ScenarioError.at(
                "topology.hot_host", f"{t.hot_host!r} is not a host of the fabric (H0..H{len(names) - 1})"
            )
        for h in hosts:
            h["dest"] = {"hotspot": t.hot_host, "fraction": t.hot_fraction}


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
        raise ScenarioError.at("topology.variant", f"{variant!r} is not allowed; expected one of A, B, C")
    k = INNOCENT_K[variant]
    edges = degree // k
    if degree % k or edges * rate_gbps < congesting_gbps + innocent_gbps or edges < 1:
        need = max(k, math.ceil((congesting_gbps + innocent_gbps) / rate_gbps) * k)
        raise ScenarioError.at(
            "topology.degree",
            f"{degree} is not allowed; topology {variant} needs a multiple of {k}, "
            f"at least {need} (each uplink carries {congesting_gbps + innocent_gbps:g} / E Gbit/s)",
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
    defaults = raw.get("defaults")
    rate = defaults.get("link_rate_gbps", 10.0) if isinstance(defaults, dict) else 10.0
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < float("inf"):
        rate = 10.0  # validation names the bad value; the generator needs a number
    if isinstance(t, FatTreeTopology | LeafSpineTopology | PodsTopology | KaryFatTreeTopology):
        if isinstance(t, FatTreeTopology):
            nodes, links = fattree(t.k, t.n)
        elif isinstance(t, LeafSpineTopology):
            nodes, links = leafspine(t, rate)
        elif isinstance(t, KaryFatTreeTopology):
            nodes, links = kary_fattree(t, rate)
        else:
            nodes, links = pods(t, rate)
        apply_traffic([nd for nd in nodes if nd["kind"] == "station"], t)
        for nd in nodes:
            if nd["kind"] == "bridge":
                nd["cp"] = t.cp
    else:
        nodes, links = innocent(t.variant, t.degree, t.congesting_gbps, t.innocent_gbps, rate)
        for nd in nodes:
            if nd["kind"] == "station" and nd.get("load"):
                nd["start_ms"] = t.start_ms
    out = dict(raw)
    for key in ("nodes", "links"):
        if not isinstance(raw.get(key) or [], list):
            raise ScenarioError.at(
                f"{key}", f"{raw[key]!r} is not allowed; expected an array of tables ([[{key}]])"
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
    if "routing" not in raw:
        if isinstance(t, FatTreeTopology):
            out["routing"] = "fattree"
        elif isinstance(t, LeafSpineTopology | PodsTopology):
            out["routing"] = "ecmp"
    return out


def routing_for(routing: str, topology: dict[str, Any] | None) -> dict[str, Any]:
    """The engine's routing function (engine-interface.md) for the scenario's
    `routing` name."""
    if routing in ("shortest_path", "ecmp"):
        return {"kind": routing}
    if routing == "fattree":
        t = topology_params(topology) if topology else None
        if not isinstance(t, FatTreeTopology):
            raise ScenarioError.at("routing", "'fattree' needs a [topology] with generator = \"fattree\"")
        return {"kind": "fattree", "k": t.k}
    raise ScenarioError.at("routing", f"{routing!r} is not allowed; expected shortest_path, ecmp or fattree")

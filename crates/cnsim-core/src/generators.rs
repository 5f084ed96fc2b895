//! The `[topology]` generators' tables: the Python layer generates the
//! nodes and links from them (cnsim/topologies.py); the engine checks the
//! table as written (`sections::check_written`).

use crate::params::{Range, Table, MAX_GBPS, MIN_GBPS};

/// Most hosts a generated fabric may have: as many stations as the engine
/// indexes (`params::MAX_STATIONS`).
pub const MAX_HOSTS: f64 = crate::params::MAX_STATIONS as f64;

/// The traffic of a generated fabric's hosts (fattree, leafspine).
fn traffic(t: Table) -> Table {
    t.float(
        "load",
        0.0,
        Range::ge(0.0).le(1.0),
        "every host's offered load (Bernoulli p per frame slot)",
    )
    .opaque(
        "dest",
        "weights_or_name",
        "uniform",
        "every host's destinations, as a node's `dest` (when no pattern is set)",
    )
    .choice(
        "pattern",
        &["uniform", "permutation", "incast", "hotspot"],
        "uniform",
        "traffic pattern of the hosts: uniform (every other host), permutation (each host to one other, a random derangement), incast (random groups of fan_in senders and one receiver, which sends nothing), hotspot (hot_fraction of every host's frames to hot_host, the rest uniform); none: `dest`",
    )
    .optional("pattern", "`dest`")
    .int("fan_in", 16, Range::ge(1.0).le(MAX_HOSTS), "incast: senders per receiver")
    .string("hot_host", "H0", "hotspot: the hot host")
    .float(
        "hot_fraction",
        0.1,
        Range::ge(0.0).le(1.0),
        "hotspot: share of each host's frames to hot_host",
    )
    .int(
        "pattern_seed",
        0,
        // Below 2^63 (an i64 seed): exactly representable, unlike 2^63 - 1.
        Range::ge(0.0).lt(9_223_372_036_854_775_808.0),
        "seed of the permutation and incast groups",
    )
    .flag("cp", true, "CP detection on every switch")
}

/// A `[topology]` generator's table (`topology_NAME`, named `topology.key`
/// in errors): the Python layer generates the nodes and links from it
/// (cnsim/topologies.py), so the engine sees only what it generated and the
/// table as written ([`check_written`]). Its rules that tie a generator's
/// keys together (a fat tree's host count, leafspine's spine_gbps or
/// oversubscription) are needed to generate, at load, before the engine is
/// asked: they stay with the generators.
fn generator(name: &'static str, generators: &'static [&'static str], doc: &'static str, with_traffic: bool) -> Table {
    let t = Table::new(name, doc);
    let t = if with_traffic { traffic(t) } else { t };
    t.choice("generator", generators, generators[0], "the generator")
        .required("generator")
}

/// `[topology] generator = "fattree"`.
pub fn topology_fattree() -> Table {
    generator(
        "topology_fattree",
        &["fattree"],
        "`generator = \"fattree\"`: a k-ary n-tree. k**n hosts `H0..` and n levels\nof k**(n-1) switches with 2k ports (the roots use k); for n = 3 the\nswitches are `Lab`, `Mac`, `Rxc` as in scenarios.md section 7. Routing\ndefaults to `fattree` (the up-port rule).",
        true,
    )
    .int("k", 4, Range::ge(2.0).le(64.0), "arity: each switch has k ports down and k up")
    .int("n", 3, Range::ge(2.0).le(12.0), "levels of switches; k**n hosts (at most as many stations as the engine indexes)")
}

/// `[topology] generator = "leafspine"`.
pub fn topology_leafspine() -> Table {
    generator(
        "topology_leafspine",
        &["leafspine"],
        "`generator = \"leafspine\"`: two tiers. `leaves` leaf switches `L0..`\nwith `hosts_per_leaf` hosts each (`H0..`, host h on leaf h //\nhosts_per_leaf) and a link from every leaf to every one of `spines`\nspine switches `S0..`. Routing defaults to `ecmp`.",
        true,
    )
    .int("leaves", 8, Range::ge(1.0).le(MAX_HOSTS), "leaf (top-of-rack) switches")
    .int("spines", 4, Range::ge(1.0).le(1024.0), "spine switches")
    .int("hosts_per_leaf", 16, Range::ge(1.0).le(MAX_HOSTS), "hosts on each leaf")
    .float(
        "host_gbps",
        0.0,
        Range::ge(MIN_GBPS).le(MAX_GBPS),
        "host-leaf link rate (none: [defaults] link_rate_gbps)",
    )
    .optional("host_gbps", "[defaults] link_rate_gbps")
    .float(
        "spine_gbps",
        0.0,
        Range::ge(MIN_GBPS).le(MAX_GBPS),
        "leaf-spine link rate (none: from oversubscription, else host_gbps)",
    )
    .optional("spine_gbps", "from oversubscription, else host_gbps")
    .float(
        "oversubscription",
        0.0,
        Range::gt(0.0).le(1e6),
        "a leaf's host capacity over its uplink capacity, hosts_per_leaf x host_gbps / (spines x spine_gbps); sets spine_gbps (give one of the two)",
    )
    .optional("oversubscription", "host_gbps")
}

/// `[topology] generator = "pods"`: a three-tier fabric of pods.
pub fn topology_pods() -> Table {
    generator(
        "topology_pods",
        &["pods"],
        "`generator = \"pods\"`: three tiers, as a data-center fabric of pods\n(Meta's, as Parsimon simulates it). `pods` pods of `racks_per_pod` racks\n`T0..` with `hosts_per_rack` hosts `H0..` each (host h in rack h //\nhosts_per_rack); each pod has `fabric_per_pod` fabric switches `F<pod>_<i>`,\neach rack one link to every fabric switch of its pod; fabric switch i of\nevery pod links to each of the `spines_per_plane` spines `S<i>_<j>` of\nspine plane i. Routing defaults to `ecmp`.",
        true,
    )
    .int("pods", 8, Range::ge(1.0).le(MAX_HOSTS), "pods")
    .int("racks_per_pod", 48, Range::ge(1.0).le(MAX_HOSTS), "racks (top-of-rack switches) per pod")
    .int("hosts_per_rack", 16, Range::ge(1.0).le(MAX_HOSTS), "hosts per rack")
    .int("fabric_per_pod", 4, Range::ge(1.0).le(1024.0), "fabric switches per pod (and spine planes)")
    .int("spines_per_plane", 48, Range::ge(1.0).le(1024.0), "spine switches per plane")
    .float(
        "host_gbps",
        0.0,
        Range::ge(MIN_GBPS).le(MAX_GBPS),
        "host-rack link rate (none: [defaults] link_rate_gbps)",
    )
    .optional("host_gbps", "[defaults] link_rate_gbps")
    .float(
        "fabric_gbps",
        0.0,
        Range::ge(MIN_GBPS).le(MAX_GBPS),
        "rack-fabric and fabric-spine link rate (none: host_gbps)",
    )
    .optional("fabric_gbps", "host_gbps")
}

/// `[topology] generator = "kary_fattree"`: the K-ary fat tree the Ultra
/// Ethernet reference simulator builds (`-tiers 3`), as a fabric of pods.
pub fn topology_kary_fattree() -> Table {
    generator(
        "topology_kary_fattree",
        &["kary_fattree"],
        "`generator = \"kary_fattree\"`: the three-tier K-ary fat tree of Al-Fares\net al. (SIGCOMM 2008), as the Ultra Ethernet reference simulator builds\nit: `hosts` = K^3 / 4 hosts `H0..` in K pods; each pod K / 2 racks `T0..`\nof K / 2 hosts (host h in rack h // (K / 2)) and K / 2 aggregation\nswitches `F<pod>_<i>`, every rack linked to each; (K / 2)^2 core switches\n`S<i>_<j>`, aggregation switch i of every pod linked to the K / 2 cores of\nplane i (the `pods` generator with pods = K, racks_per_pod =\nhosts_per_rack = fabric_per_pod = spines_per_plane = K / 2): full\nbisection. Routing defaults to `ecmp`.",
        true,
    )
    .int(
        "hosts",
        1024,
        Range::ge(2.0).le(MAX_HOSTS),
        "hosts: K^3 / 4 for an even K (16, 128, 432, 1024, 2000, 3456, 8192, ...)",
    )
    .float(
        "host_gbps",
        0.0,
        Range::ge(MIN_GBPS).le(MAX_GBPS),
        "every link's rate (none: [defaults] link_rate_gbps)",
    )
    .optional("host_gbps", "[defaults] link_rate_gbps")
}

/// `[topology] generator = "innocent"`.
pub fn topology_innocent() -> Table {
    generator(
        "topology_innocent",
        &["innocent"],
        "`generator = \"innocent\"`: the innocent-flows study of scenarios.md\nsection 3. A core switch `C` (infinite buffer, CP) with the hot sink `H`\nand the cold sink `R`; E = degree / k edge switches `E0..`, each with k\ncontending sources `X<e>_<j>` (to `H`) and k innocent ones `Y<e>_<j>`\n(to `R`); k = 1, 5, 10 for topologies A, B, C.",
        false,
    )
    .choice("variant", &["A", "B", "C"], "A", "topology A (k = 1), B (k = 5) or C (k = 10)")
    .int("degree", 3, Range::ge(1.0).le(1000.0), "hotspot degree d: contending sources, a multiple of k")
    .float(
        "congesting_gbps",
        20.0,
        Range::ge(0.0).le(MAX_GBPS),
        "total load of the contending sources (Gbit/s)",
    )
    .float(
        "innocent_gbps",
        5.0,
        Range::ge(0.0).le(MAX_GBPS),
        "total load of the innocent sources (Gbit/s)",
    )
    .float("start_ms", 0.0, Range::ge(0.0), "when every source starts (ms)")
}

/// The generators of `[topology]`, by the name of `generator`.
pub fn topology(generator: &str) -> Option<Table> {
    match generator {
        "fattree" => Some(topology_fattree()),
        "leafspine" => Some(topology_leafspine()),
        "innocent" => Some(topology_innocent()),
        "pods" => Some(topology_pods()),
        "kary_fattree" => Some(topology_kary_fattree()),
        _ => None,
    }
}

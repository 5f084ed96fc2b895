//! Forwarding: the egress port a bridge sends a frame on, for its destination
//! station. Nothing here is dense in hosts x hosts or bridges x hosts: a
//! bridge keeps, per *edge bridge* (a bridge with stations attached), the
//! group of its equal-cost next hops towards it, interned so that a group
//! shared by many edge bridges (a leaf's up-ports) is stored once; a station
//! is reached through its edge bridge's port to it. A fabric of 4096 hosts
//! on 256 leaves then needs 768 x 256 group references instead of 768 x 4096
//! routes, and a lookup touches three small arrays.
//!
//! The routing function picks one hop of the group:
//! - `shortest_path`: the bridge's lowest-numbered port (link order), so
//!   routes depend on nothing but the configuration;
//! - `ecmp`: a hash of (run seed, bridge, source, destination), so a flow
//!   keeps one path for the whole run (its frames are never reordered) and
//!   flows spread over the group;
//! - `fattree`: destination-mod-k, the up-port rule of the k-ary n-tree
//!   (scenarios.md section 7): a level-l bridge going up takes up-port
//!   `(dst / k^l) mod k`, so every down link carries one destination.
//!
//! Explicit routes (`SimConfig::routes`) override any of them, per (bridge,
//! destination).

use super::node::{Node, NodeKind};
use super::port::{Port, PortId};
use crate::config::{fail, ConfigError, RoutingConfig};
use crate::engine::rng::{splitmix64, stream};
use rand::RngCore;
use std::collections::{BTreeMap, VecDeque};

pub const NO_ROUTE: PortId = u32::MAX;
const NONE: u32 = u32::MAX;
const SINGLE: u32 = 1 << 31;
const LEN_BITS: u32 = 10;
/// Largest bridges x stations table kept dense (256 KB).
const DENSE_MAX: usize = 1 << 16;
/// Most equal-cost next hops in one group.
const MAX_GROUP: usize = (1 << LEN_BITS) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    Lowest,
    Ecmp,
    DestModK(u64),
}

/// A station as routing sees it: its edge bridge (bridge index, or NONE),
/// that bridge's edge slot, and the bridge's port down to the station.
/// Sixteen bytes, aligned: never split across two cache lines.
#[derive(Clone, Copy, Debug)]
#[repr(align(16))]
struct StationRoute {
    home: u32,
    edge_slot: u32,
    down: PortId,
}

impl StationRoute {
    const UNCONNECTED: Self = StationRoute {
        home: NONE,
        edge_slot: NONE,
        down: NO_ROUTE,
    };
}

pub struct Router {
    pick: Pick,
    /// ECMP hash key of this run.
    salt: u64,
    n_edges: usize,
    /// Station -> its edge bridge (bridge index) or NONE, the edge slot of
    /// that bridge, and the bridge's port down to the station.
    /// Kept together per station: a lookup reads one record (one cache
    /// line), not three arrays (on a 6,144-host fabric these missed L2 on
    /// most hops).
    at: Vec<StationRoute>,
    /// (bridge, edge slot) -> its group, packed in 32 bits: `NO_ROUTE`
    /// (unreachable), `SINGLE | port` (one next hop, the common case: no
    /// second lookup), or `start << LEN_BITS | len` into `hops`.
    groups: Vec<u32>,
    hops: Vec<PortId>,
    /// `fattree`: each bridge's level (0: next to stations), and per (level,
    /// destination) the destination's digit at that level, (dst / k^level)
    /// mod k: the up-port index, found without a division.
    level: Vec<u8>,
    digit: Vec<u16>,
    /// Small networks routed without ECMP: `dense[bridge * stations + dst]`,
    /// the whole table (at most `DENSE_MAX` entries), one lookup per hop.
    dense: Vec<PortId>,
    n_stations: usize,
    /// Explicit routes per bridge, sorted by destination.
    overrides: Vec<Vec<(u32, PortId)>>,
    any_override: bool,
}

impl Router {
    /// Routes of the network `nodes` / `ports` (stations first, then bridges
    /// in order; `bridge_node[b]` is bridge b's node).
    pub fn build<E>(
        cfg: &RoutingConfig,
        seed: u64,
        nodes: &[Node],
        ports: &[Port<E>],
        n_stations: usize,
        bridge_node: &[u32],
    ) -> Result<Router, ConfigError> {
        let pick = match cfg {
            RoutingConfig::ShortestPath => Pick::Lowest,
            RoutingConfig::Ecmp => Pick::Ecmp,
            RoutingConfig::Fattree { k } => {
                if *k < 2 {
                    return fail("routing", format!("fattree needs k >= 2 (got {k})"));
                }
                Pick::DestModK(*k as u64)
            }
        };
        let n_br = bridge_node.len();
        let bridge_of = |node: u32| match nodes[node as usize].kind {
            NodeKind::Bridge(b) => Some(b),
            NodeKind::Station(_) => None,
        };

        // Stations' edge bridges, numbered in order of first appearance.
        let mut at = vec![StationRoute::UNCONNECTED; n_stations];
        let mut slot_of_bridge = vec![NONE; n_br];
        let mut edges: Vec<u32> = Vec::new();
        for s in 0..n_stations {
            let Some(&p) = nodes[s].ports.first() else { continue };
            if let Some(b) = bridge_of(ports[p as usize].peer) {
                at[s].home = b;
                at[s].down = ports[p as usize].reverse;
                if slot_of_bridge[b as usize] == NONE {
                    slot_of_bridge[b as usize] = edges.len() as u32;
                    edges.push(b);
                }
                at[s].edge_slot = slot_of_bridge[b as usize];
            }
        }
        let n_edges = edges.len();
        if n_br.saturating_mul(n_edges) > 200_000_000 {
            return fail(
                "nodes",
                format!("{n_br} bridges x {n_edges} edge bridges is more routing state than the engine keeps"),
            );
        }

        // Each bridge's ports to other bridges, with the bridge at the far
        // end, in port order: the walks below never look at the ports down to
        // stations (a leaf of 64 hosts and 64 uplinks walks 64 ports, not 128).
        let links: Vec<Vec<(PortId, u32)>> = bridge_node
            .iter()
            .map(|&n| {
                nodes[n as usize]
                    .ports
                    .iter()
                    .filter(|&&p| !ports[p as usize].down)
                    .filter_map(|&p| bridge_of(ports[p as usize].peer).map(|u| (p, u)))
                    .collect()
            })
            .collect();
        // Per edge bridge: hop distances over bridges, then each bridge's
        // equal-cost next hops towards it, interned per bridge.
        let mut groups = vec![NO_ROUTE; n_br * n_edges];
        let mut hops: Vec<PortId> = Vec::new();
        let mut interned: Vec<BTreeMap<Vec<PortId>, u32>> = vec![BTreeMap::new(); n_br];
        let mut dist = vec![u32::MAX; n_br];
        let mut queue = VecDeque::new();
        let mut group = Vec::new();
        for (e, &a) in edges.iter().enumerate() {
            bridge_hops(&[a], &links, &mut dist, &mut queue);
            for v in 0..n_br {
                if dist[v] == u32::MAX || dist[v] == 0 {
                    continue;
                }
                group.clear();
                group.extend(links[v].iter().filter(|&&(_, u)| dist[u as usize] + 1 == dist[v]).map(|&(p, _)| p));
                groups[v * n_edges + e] = match group.len() {
                    0 => NO_ROUTE,
                    1 => SINGLE | group[0],
                    len => {
                        if len > MAX_GROUP {
                            return fail("nodes", format!("a bridge with {len} equal-cost next hops; at most {MAX_GROUP}"));
                        }
                        let start = match interned[v].get(&group) {
                            Some(&s) => s,
                            None => {
                                let s = hops.len() as u32;
                                hops.extend_from_slice(&group);
                                interned[v].insert(group.clone(), s);
                                s
                            }
                        };
                        if start >= 1 << (31 - LEN_BITS) {
                            return fail("nodes", "more equal-cost groups than the routing tables hold");
                        }
                        (start << LEN_BITS) | len as u32
                    }
                };
            }
        }

        // Levels (fattree): hops from the nearest station, minus one.
        let (level, digit) = match pick {
            Pick::DestModK(k) => {
                let mut level = vec![u32::MAX; n_br];
                bridge_hops(&edges, &links, &mut level, &mut queue);
                // Unreachable bridges route nothing: any level will do.
                let levels = level.iter().filter(|&&l| l != u32::MAX).max().map_or(1, |&l| l as usize + 1);
                if levels > 255 || levels * n_stations > 50_000_000 {
                    return fail("routing", format!("fattree on a network {levels} bridge levels deep; at most 255"));
                }
                let level: Vec<u8> = level.iter().map(|&l| l.min(levels as u32 - 1) as u8).collect();
                let mut digit = vec![0u16; levels * n_stations];
                for l in 0..levels {
                    let div = k.checked_pow(l as u32).unwrap_or(u64::MAX);
                    for d in 0..n_stations {
                        digit[l * n_stations + d] = ((d as u64 / div) % k).min(u16::MAX as u64) as u16;
                    }
                }
                (level, digit)
            }
            _ => (Vec::new(), Vec::new()),
        };

        Ok(Router {
            pick,
            salt: stream(seed, "ecmp").next_u64(),
            n_edges,
            at,
            groups,
            hops,
            level,
            digit,
            dense: Vec::new(),
            n_stations,
            overrides: vec![Vec::new(); n_br],
            any_override: false,
        })
    }

    /// Fills the dense table of a small network without ECMP (after the
    /// explicit routes are set): the same next hops, looked up once.
    pub fn densify(&mut self) {
        let (n_br, n_st) = (self.overrides.len(), self.n_stations);
        if self.pick == Pick::Ecmp || n_br * n_st > DENSE_MAX {
            return;
        }
        let dense = (0..n_br * n_st)
            .map(|i| self.next_hop((i / n_st) as u32, 0, (i % n_st) as u32))
            .collect();
        self.dense = dense;
    }

    /// At bridge `b`, frames for `dst` leave through `port`.
    pub fn set_override(&mut self, b: u32, dst: u32, port: PortId) {
        let o = &mut self.overrides[b as usize];
        match o.binary_search_by_key(&dst, |e| e.0) {
            Ok(i) => o[i].1 = port,
            Err(i) => o.insert(i, (dst, port)),
        }
        self.any_override = true;
    }

    /// The port bridge `b` forwards a frame of flow (`src`, `dst`) on, or `NO_ROUTE`.
    #[inline(always)]
    pub fn next_hop(&self, b: u32, src: u32, dst: u32) -> PortId {
        self.next_hop_sprayed(b, src, dst, 0)
    }

    /// The port bridge `b` forwards a frame of flow (`src`, `dst`) with
    /// entropy value `entropy` on (ECMP hashes it too; 0: the flow's one
    /// path, as [`Router::next_hop`]), or `NO_ROUTE`.
    #[inline(always)]
    pub fn next_hop_sprayed(&self, b: u32, src: u32, dst: u32, entropy: u16) -> PortId {
        if !self.dense.is_empty() {
            return self.dense[b as usize * self.n_stations + dst as usize];
        }
        self.lookup(b, src, dst, entropy)
    }

    #[inline(never)]
    fn lookup(&self, b: u32, src: u32, dst: u32, entropy: u16) -> PortId {
        if self.any_override {
            let o = &self.overrides[b as usize];
            if let Ok(i) = o.binary_search_by_key(&dst, |e| e.0) {
                return o[i].1;
            }
        }
        let at = self.at[dst as usize];
        if at.home == b {
            return at.down;
        }
        let e = at.edge_slot;
        if e == NONE {
            return NO_ROUTE;
        }
        let g = self.groups[b as usize * self.n_edges + e as usize];
        if g == NO_ROUTE {
            return NO_ROUTE;
        }
        if g & SINGLE != 0 {
            return g & !SINGLE;
        }
        let (start, len) = (g >> LEN_BITS, g & MAX_GROUP as u32);
        let i = match (len, self.pick) {
            (_, Pick::Lowest) => 0,
            (_, Pick::Ecmp) => {
                let mut key = self.salt ^ ((b as u64) << 32) ^ ((src as u64) << 16) ^ dst as u64;
                if (src | dst) >> 16 != 0 {
                    // Stations past 65,535: their high bits mixed in apart
                    // (the key above is the 16-bit fabrics' own, unchanged).
                    key ^= splitmix64(((src as u64) << 32) | dst as u64);
                }
                if entropy != 0 {
                    // A sprayed frame's entropy: mixed in apart, so that 0
                    // leaves every unsprayed route as it was.
                    key ^= splitmix64(0x5eed_0000_0000_0000 | entropy as u64);
                }
                // Multiply-shift onto [0, len): unbiased enough and no division.
                (((splitmix64(key) >> 32) * len as u64) >> 32) as u32
            }
            (_, Pick::DestModK(k)) => {
                let l = self.level[b as usize];
                if len as u64 == k {
                    self.digit[l as usize * self.n_stations + dst as usize] as u32
                } else {
                    // A group of another size (an edited tree): the rule as written.
                    let div = k.checked_pow(l as u32).unwrap_or(u64::MAX);
                    ((dst as u64 / div) % len as u64) as u32
                }
            }
        };
        self.hops[(start + i) as usize]
    }

    /// Whether frames for `dst` at bridge `b` reach it, when that follows
    /// from the tables alone (every hop of a group is one hop closer); None
    /// with explicit routes, which may lead anywhere.
    pub fn reaches(&self, b: u32, dst: u32) -> Option<bool> {
        if self.any_override || !self.dense.is_empty() {
            return None;
        }
        let at = self.at[dst as usize];
        if at.home == b {
            return Some(true);
        }
        let e = at.edge_slot;
        Some(e != NONE && self.groups[b as usize * self.n_edges + e as usize] != NO_ROUTE)
    }

    /// Whether a frame's path to a destination depends on the destination
    /// and the bridge only, not on its flow's source: no explicit routes
    /// (equal-cost groups all reach the same stations), or one next hop per
    /// destination (the dense table).
    pub fn source_free(&self) -> bool {
        !self.any_override || !self.dense.is_empty()
    }

    /// Bytes of routing state (for the scale benchmark and its tests).
    pub fn state_bytes(&self) -> usize {
        self.groups.len() * 4
            + self.hops.len() * 4
            + self.at.len() * std::mem::size_of::<StationRoute>()
            + self.level.len()
            + self.digit.len() * 2
            + self.dense.len() * 4
            + self.overrides.iter().map(|o| o.len() * 8).sum::<usize>()
    }
}

/// Hop counts over bridges only (stations do not forward) from the bridges
/// `from` (bridge indices) into `dist`, walking `links` (each bridge's ports
/// to bridges); unreached bridges keep `u32::MAX`.
fn bridge_hops(from: &[u32], links: &[Vec<(PortId, u32)>], dist: &mut [u32], queue: &mut VecDeque<u32>) {
    dist.iter_mut().for_each(|x| *x = u32::MAX);
    queue.clear();
    for &b in from {
        dist[b as usize] = 0;
        queue.push_back(b);
    }
    while let Some(v) = queue.pop_front() {
        for &(_, u) in &links[v as usize] {
            if dist[u as usize] == u32::MAX {
                dist[u as usize] = dist[v as usize] + 1;
                queue.push_back(u);
            }
        }
    }
}
/// What routing is rebuilt from when a link goes down or comes back
/// (`net::link_state`).
pub struct Reroute {
    pub routing: crate::config::RoutingConfig,
    pub seed: u64,
    /// The explicit routes: (bridge index, destination station, port).
    pub overrides: Vec<(u32, u32, PortId)>,
}

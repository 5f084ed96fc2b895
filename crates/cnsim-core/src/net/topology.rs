//! Building the network from the configuration: nodes, one port per link
//! direction, and static shortest-path routes with deterministic tie-breaking.

use super::bridge::Bridge;
use super::classes::ClassQueues;
pub use super::node::{Node, NodeKind};
use super::pause::OutputHolds;
use super::port::{Port, PortId, WIRE_DATA, WIRE_MAC, WIRE_NOTE};
use super::routing::Router;
use super::station::{gap_table, Dest, Station};
use crate::config::{fail, BufferMode, ConfigError, DestConfig, PauseMode, PauseTrigger, SimConfig};
use crate::engine::rng::stream;
use crate::engine::time::serialization_ps;
use crate::engine::Time;
use crate::params::{MAX_PORTS, MAX_STATIONS};
use std::collections::{BTreeMap, BTreeSet};

pub struct Network<E> {
    pub nodes: Vec<Node>,
    pub stations: Vec<Station>,
    pub bridges: Vec<Bridge>,
    pub ports: Vec<Port<E>>,
    /// Forwarding (net/routing.rs).
    pub router: Router,
    pub node_by_name: BTreeMap<String, u32>,
}

pub use super::routing::NO_ROUTE;

impl<E: Copy + Default> Network<E> {
    pub fn n_stations(&self) -> usize {
        self.stations.len()
    }

    pub fn port_by_name(&self, from: &str, to: &str) -> Option<PortId> {
        let a = *self.node_by_name.get(from)?;
        let b = *self.node_by_name.get(to)?;
        self.nodes[a as usize]
            .ports
            .iter()
            .copied()
            .find(|&p| self.ports[p as usize].peer == b)
    }

    pub fn station_name(&self, s: usize) -> &str {
        &self.nodes[self.stations[s].node as usize].name
    }

    pub fn build(cfg: &SimConfig, seed: u64) -> Result<Network<E>, ConfigError> {
        cfg.validate_scalars()?;
        let mut nodes = Vec::new();
        let mut node_by_name = BTreeMap::new();
        for s in &cfg.stations {
            if node_by_name.insert(s.name.clone(), nodes.len() as u32).is_some() {
                return fail(format!("nodes.{}", s.name), "duplicate node name");
            }
            let idx = nodes.len() as u32;
            nodes.push(Node {
                name: s.name.clone(),
                kind: NodeKind::Station(idx),
                ports: vec![],
            });
        }
        if cfg.stations.len() as u64 > MAX_STATIONS {
            // Stations name events (their sources') by index.
            return fail(
                "nodes",
                format!("{} stations is too many (at most {MAX_STATIONS})", cfg.stations.len()),
            );
        }
        for (i, b) in cfg.bridges.iter().enumerate() {
            if b.name.is_empty() {
                return fail("nodes", "a bridge has an empty name");
            }
            if node_by_name.insert(b.name.clone(), nodes.len() as u32).is_some() {
                return fail(format!("nodes.{}", b.name), "duplicate node name");
            }
            nodes.push(Node {
                name: b.name.clone(),
                kind: NodeKind::Bridge(i as u32),
                ports: vec![],
            });
            if b.buffer_mode != BufferMode::Infinite && b.buffer_bytes < cfg.frame_bytes as u64 {
                return fail(
                    format!("nodes.{}.buffer_bytes", b.name),
                    format!("{} cannot hold one {}-byte frame", b.buffer_bytes, cfg.frame_bytes),
                );
            }
        }
        // Station indices equal their node indices (stations come first).
        let n_st = cfg.stations.len();

        // Ports: two per link.
        let mut ports: Vec<Port<E>> = Vec::with_capacity(cfg.links.len() * 2);
        let mut seen = BTreeSet::new();
        for l in &cfg.links {
            let a = *node_by_name
                .get(&l.a)
                .ok_or_else(|| ConfigError::new("links", format!("unknown node '{}' in link {}-{}", l.a, l.a, l.b)))?;
            let b = *node_by_name
                .get(&l.b)
                .ok_or_else(|| ConfigError::new("links", format!("unknown node '{}' in link {}-{}", l.b, l.a, l.b)))?;
            if a == b {
                return fail("links", format!("link {}-{} connects a node to itself", l.a, l.b));
            }
            if !seen.insert((a.min(b), a.max(b))) {
                return fail("links", format!("duplicate link {}-{}", l.a, l.b));
            }
            if l.rate_bps == 0 {
                return fail(
                    format!("links.{}-{}.rate_gbps", l.a, l.b),
                    "must be > 0 (stop a link with a timed link_rate event)",
                );
            }
            let pa = ports.len() as PortId;
            let pb = pa + 1;
            let (na, nb) = (nodes[a as usize].ports.len(), nodes[b as usize].ports.len());
            if na.max(nb) >= u16::MAX as usize {
                let n = if na >= nb { &l.a } else { &l.b };
                return fail(format!("nodes.{n}"), format!("more than {} links at one node", u16::MAX - 1));
            }
            let (la, lb) = (na as u16, nb as u16);
            let mut p_ab = Port::new(format!("{}->{}", l.a, l.b), a, b, la, l.rate_bps, l.delay_ps, cfg.frame_bytes);
            let mut p_ba = Port::new(format!("{}->{}", l.b, l.a), b, a, lb, l.rate_bps, l.delay_ps, cfg.frame_bytes);
            p_ab.reverse = pb;
            p_ba.reverse = pa;
            p_ab.reverse_local = lb;
            p_ba.reverse_local = la;
            ports.push(p_ab);
            ports.push(p_ba);
            nodes[a as usize].ports.push(pa);
            nodes[b as usize].ports.push(pb);
        }
        if ports.len() as u64 > MAX_PORTS {
            return fail(
                "links",
                format!("{} link directions is too many (at most {MAX_PORTS})", ports.len()),
            );
        }

        // Receiver-side extra delays, and per-ingress state on bridge ports;
        // with more than one data priority in use, eight class queues there.
        let first = cfg.stations.first().map_or(0, |s| s.priority);
        let multiclass = cfg.stations.iter().any(|s| s.priority != first);
        // Ports with their own scheduler (`[[ports]]`), by name.
        let mut own: BTreeMap<&str, &crate::config::SchedulerConfig> = BTreeMap::new();
        for (i, ps) in cfg.port_overrides.iter().enumerate() {
            let known = ports
                .iter()
                .any(|p| p.name == ps.port && matches!(nodes[p.owner as usize].kind, NodeKind::Bridge(_)));
            if !known {
                return fail(
                    format!("ports[{i}].port"),
                    format!("'{}' is not an output port FROM->TO of a bridge", ps.port),
                );
            }
            own.insert(ps.port.as_str(), &ps.scheduler);
        }
        for p in 0..ports.len() {
            let peer = ports[p].peer as usize;
            let extra = match nodes[peer].kind {
                NodeKind::Bridge(b) => {
                    let lat = cfg.bridges[b as usize].latency_ps;
                    [0, lat, lat]
                }
                NodeKind::Station(s) => [0, 0, cfg.stations[s as usize].processing_ps],
            };
            debug_assert_eq!(WIRE_MAC, 0);
            ports[p].rx_extra_ps = extra;
            ports[p].rx_extra_data_ps = extra[WIRE_DATA];
            let _ = (WIRE_DATA, WIRE_NOTE);
            ports[p].data_prio = match nodes[ports[p].owner as usize].kind {
                NodeKind::Station(s) => cfg.stations[s as usize].priority,
                NodeKind::Bridge(_) => first,
            };
            if let NodeKind::Bridge(b) = nodes[ports[p].owner as usize].kind {
                if cfg.pause.enabled && cfg.pause.mode == PauseMode::Pfc {
                    ports[p].pfc_in = Some(Box::default());
                }
                let k = nodes[ports[p].owner as usize].ports.len();
                ports[p].bytes_by_ingress = vec![0; k];
                ports[p].holds = OutputHolds::new(k);
                if multiclass {
                    let sched = own
                        .get(ports[p].name.as_str())
                        .copied()
                        .unwrap_or(&cfg.bridges[b as usize].scheduler);
                    ports[p].classes = Some(Box::new(ClassQueues::new(sched, cfg.frame_bytes)));
                    ports[p].multiclass = true;
                }
            }
        }

        // Stations.
        let mut stations = Vec::with_capacity(n_st);
        for (i, s) in cfg.stations.iter().enumerate() {
            let node = &nodes[i];
            if node.ports.len() != 1 {
                return fail(
                    format!("nodes.{}", s.name),
                    format!("a station needs exactly one link, it has {}", node.ports.len()),
                );
            }
            let port = node.ports[0];
            let dest = match &s.dest {
                DestConfig::Uniform => {
                    if n_st < 2 && s.load > 0.0 {
                        return fail(format!("nodes.{}.dest", s.name), "'uniform' needs at least one other station");
                    }
                    Dest::Uniform
                }
                DestConfig::Fixed { node } => Dest::Fixed(station_index(&node_by_name, &nodes, node, &s.name)?),
                DestConfig::Hotspot { node, fraction } => {
                    if !(0.0..=1.0).contains(fraction) {
                        return fail(
                            format!("nodes.{}.dest.fraction", s.name),
                            format!("{fraction} is not allowed; expected 0..=1"),
                        );
                    }
                    if n_st < 2 && s.load > 0.0 {
                        return fail(format!("nodes.{}.dest", s.name), "a hotspot needs at least one other station");
                    }
                    let hot = match node_by_name.get(node).map(|&i| nodes[i as usize].kind) {
                        Some(NodeKind::Station(h)) => h,
                        _ => return fail(format!("nodes.{}.dest.hotspot", s.name), format!("'{node}' is not a station")),
                    };
                    Dest::Hotspot { hot, fraction: *fraction }
                }
                DestConfig::Weighted { weights } => {
                    let mut st = Vec::new();
                    let mut cum = Vec::new();
                    let mut acc = 0.0;
                    for (name, w) in weights {
                        let d = station_index(&node_by_name, &nodes, name, &s.name)?;
                        acc += w;
                        st.push(d);
                        cum.push(acc);
                    }
                    Dest::Weighted {
                        stations: st,
                        cumulative: cum,
                    }
                }
            };
            let rate = ports[port as usize].nominal_rate_bps;
            let (inv_ln_q, q_pow) = gap_table(s.load);
            stations.push(Station {
                node: i as u32,
                port,
                load: s.load,
                inv_ln_q,
                q_pow,
                slot_ps: serialization_ps(cfg.frame_bytes as u64, rate),
                dest,
                nic_buffer_bytes: s.nic_buffer_bytes,
                rlq_bytes: s.rlq_bytes,
                processing_ps: s.processing_ps,
                active: false,
                next_gen: Time::MAX,
                rng: stream(seed, &s.name),
                generated: 0,
                dropped_rl: 0,
                dropped_nic: 0,
                deferred: 0,
                rl_scope: s.rl_scope,
                nic_full: s.nic_full,
                rl_order: s.rl_order,
                priority: s.priority,
            });
        }

        let bridges: Vec<Bridge> = cfg
            .bridges
            .iter()
            .enumerate()
            .map(|(i, b)| Bridge {
                node: (n_st + i) as u32,
                buffer_mode: b.buffer_mode,
                buffer_bytes: b.buffer_bytes,
                dt_alpha: b.dt_alpha,
                latency_ps: b.latency_ps,
                cp: b.cp,
                trigger: match cfg.pause.trigger {
                    PauseTrigger::Auto => match b.buffer_mode {
                        BufferMode::PerOutput | BufferMode::Infinite => PauseTrigger::OutputQueue,
                        BufferMode::PerInput => PauseTrigger::Partition,
                        BufferMode::Shared | BufferMode::Dynamic | BufferMode::Mmu => PauseTrigger::Ingress,
                    },
                    t => t,
                },
                total_bytes: 0,
                dropped_cp: 0,
                mmu: None,
                port_caps: false,
            })
            .collect();
        let mut bridges = bridges;
        for (i, b) in cfg.bridges.iter().enumerate() {
            if b.buffer_mode == BufferMode::Mmu {
                bridges[i].mmu = Some(Box::new(mmu_of(cfg, b, &nodes[n_st + i], &ports)?));
            }
        }

        for b in &cfg.bridges {
            let n = node_by_name.get(&b.name).map(|&i| nodes[i as usize].ports.len()).unwrap_or(0);
            if let Some(max) = b.ports {
                if n > max as usize {
                    return fail(format!("nodes.{}", b.name), format!("{n} links exceed its {max} ports"));
                }
            }
        }
        let bridge_node: Vec<u32> = bridges.iter().map(|b| b.node).collect();
        let router = Router::build(&cfg.routing, seed, &nodes, &ports, n_st, &bridge_node)?;
        let mut net = Network {
            nodes,
            stations,
            bridges,
            ports,
            router,
            node_by_name,
        };
        for (i, r) in cfg.routes.iter().enumerate() {
            let bad = |what: &str| {
                ConfigError::new(
                    format!("routes[{i}]"),
                    format!("{what} (bridge {}, dst {}, via {})", r.bridge, r.dst, r.via),
                )
            };
            let b = *net.node_by_name.get(&r.bridge).ok_or_else(|| bad("unknown bridge"))?;
            let NodeKind::Bridge(bi) = net.nodes[b as usize].kind else {
                return Err(bad("not a bridge"));
            };
            let d = *net.node_by_name.get(&r.dst).ok_or_else(|| bad("unknown destination"))?;
            let NodeKind::Station(di) = net.nodes[d as usize].kind else {
                return Err(bad("the destination is not a station"));
            };
            let p = net
                .port_by_name(&r.bridge, &r.via)
                .ok_or_else(|| bad("no link from the bridge to 'via'"))?;
            // A station forwards nothing: a next hop that is a station other
            // than the destination would strand the frames there.
            let v = net.ports[p as usize].peer;
            if v != d && matches!(net.nodes[v as usize].kind, NodeKind::Station(_)) {
                return Err(bad(&format!(
                    "'via' is the station {}, which forwards nothing; a route goes via a bridge, or to its destination itself",
                    r.via
                )));
            }
            net.router.set_override(bi, di, p);
        }
        net.router.densify();

        // Every destination a loaded source can pick must be reachable. A
        // source that may pick every other station asks every station; where
        // paths do not depend on the source (Router::source_free) the answer
        // is found once per first hop (a 10,000-station fabric: its 240 edge
        // bridges, not 10^8 pairs). Only the source's own station is left out,
        // and it is reached from its first hop unless that hop is the one
        // other station of a two-station link, whose answer serves one source.
        let unreachable = |net: &Network<E>, s: usize, d: usize| {
            ConfigError::new(
                format!("nodes.{}.dest", net.station_name(s)),
                format!("destination {} is not reachable (disconnected topology)", net.station_name(d)),
            )
        };
        let by_first_hop = net.router.source_free();
        let mut first_unreached: BTreeMap<u32, Option<usize>> = BTreeMap::new();
        for s in 0..n_st {
            if net.stations[s].load <= 0.0 {
                continue;
            }
            let one = |d: usize| {
                if net.reachable(s, d) {
                    Ok(())
                } else {
                    Err(unreachable(&net, s, d))
                }
            };
            match &net.stations[s].dest {
                Dest::Fixed(d) => one(*d as usize)?,
                Dest::Weighted { stations, .. } => stations.iter().try_for_each(|&d| one(d as usize))?,
                Dest::Uniform | Dest::Hotspot { .. } if by_first_hop => {
                    let hop = net.ports[net.stations[s].port as usize].peer;
                    let found = *first_unreached
                        .entry(hop)
                        .or_insert_with(|| (0..n_st).find(|&d| d != s && !net.reachable(s, d)));
                    if let Some(d) = found {
                        return Err(unreachable(&net, s, d));
                    }
                }
                Dest::Uniform | Dest::Hotspot { .. } => (0..n_st).filter(|&d| d != s).try_for_each(one)?,
            }
        }
        Ok(net)
    }

    /// The nodes a data frame from station `s` to station `d` visits, both
    /// included; None if it never arrives.
    pub fn path(&self, s: usize, d: usize) -> Option<Vec<u32>> {
        let mut out = vec![self.stations[s].node];
        let mut node = self.ports[self.stations[s].port as usize].peer as usize;
        for _ in 0..=self.nodes.len() {
            out.push(node as u32);
            if node == d {
                return Some(out);
            }
            match self.nodes[node].kind {
                NodeKind::Station(_) => return None,
                NodeKind::Bridge(b) => {
                    let p = self.router.next_hop(b, s as u32, d as u32);
                    if p == NO_ROUTE {
                        return None;
                    }
                    node = self.ports[p as usize].peer as usize;
                }
            }
        }
        None
    }

    /// Whether frames from station `s` reach station `d`.
    pub fn reachable(&self, s: usize, d: usize) -> bool {
        let mut node = self.ports[self.stations[s].port as usize].peer as usize;
        if let NodeKind::Bridge(b) = self.nodes[node].kind {
            if let Some(r) = self.router.reaches(b, d as u32) {
                return r;
            }
        }
        for _ in 0..=self.nodes.len() {
            if node == d {
                return true;
            }
            match self.nodes[node].kind {
                NodeKind::Station(_) => return false,
                NodeKind::Bridge(b) => {
                    let p = self.router.next_hop(b, s as u32, d as u32);
                    if p == NO_ROUTE {
                        return false;
                    }
                    node = self.ports[p as usize].peer as usize;
                }
            }
        }
        false
    }
}

/// The paths (node names) of flows (source, destination) in the network of
/// `cfg` for run `seed` (ECMP draws depend on it); an empty path for a flow
/// that never arrives.
pub fn paths(cfg: &SimConfig, seed: u64, flows: &[(String, String)]) -> Result<Vec<Vec<String>>, ConfigError> {
    let net = Network::<()>::build(cfg, seed)?;
    let station = |name: &str| -> Result<usize, ConfigError> {
        match net.node_by_name.get(name).map(|&i| net.nodes[i as usize].kind) {
            Some(NodeKind::Station(s)) => Ok(s as usize),
            _ => fail("paths", format!("'{name}' is not a station")),
        }
    };
    flows
        .iter()
        .map(|(a, b)| {
            let (s, d) = (station(a)?, station(b)?);
            Ok(net
                .path(s, d)
                .map(|p| p.into_iter().map(|n| net.nodes[n as usize].name.clone()).collect())
                .unwrap_or_default())
        })
        .collect()
}

/// The shared-buffer switch of bridge `b` (node `node`): its headroom per
/// port (given, or `auto` from the port's link: `pause::headroom_bytes`
/// for one upstream), a reserve for every priority the stations use.
fn mmu_of<E>(cfg: &SimConfig, b: &crate::config::BridgeConfig, node: &Node, ports: &[Port<E>]) -> Result<super::mmu::Mmu, ConfigError> {
    use crate::config::Headroom;
    let pfc = cfg.pause.enabled && cfg.pause.mode == PauseMode::Pfc;
    if cfg.pause.enabled && !pfc {
        return fail(
            "pause.mode",
            format!(
                "'pause' (802.3x) with bridge {}'s buffer_mode = \"mmu\": a shared-buffer switch pauses per priority; set pause.mode = \"pfc\" (or pause.enabled = false: every priority lossy)",
                b.name
            ),
        );
    }
    let headroom = node
        .ports
        .iter()
        .map(|&p| {
            let own = cfg
                .port_overrides
                .iter()
                .find(|o| o.port == ports[p as usize].name)
                .and_then(|o| o.headroom);
            (p, own.unwrap_or(b.mmu.headroom))
        })
        .map(|(p, headroom)| match headroom {
            Headroom::Bytes(h) => h,
            Headroom::Auto(_) => {
                let port = &ports[p as usize];
                super::pause::headroom_bytes(
                    port.nominal_rate_bps,
                    port.delay_ps,
                    b.latency_ps,
                    cfg.frame_bytes as u64,
                    cfg.control_frame_bytes as u64,
                    1,
                )
            }
        })
        .collect();
    let in_use = cfg.stations.iter().fold(0u8, |m, s| m | 1 << (s.priority & 7));
    let lossless = if pfc { cfg.pause.lossless_mask() } else { 0 };
    let alpha = node
        .ports
        .iter()
        .map(|&p| b.mmu.ingress_alpha_at(ports[p as usize].nominal_rate_bps as f64))
        .collect();
    super::mmu::Mmu::new(&b.mmu, b.buffer_bytes, headroom, alpha, in_use, lossless).map_err(|e| {
        ConfigError::new(
            "bridge.reserve_bytes / bridge.headroom_bytes",
            format!(
                "bridge {}: reserves of {} B and headroom of {} B leave no shared pool in its buffer_bytes = {}",
                b.name, e.reserves, e.headrooms, b.buffer_bytes
            ),
        )
    })
}

fn station_index(by_name: &BTreeMap<String, u32>, nodes: &[Node], name: &str, src: &str) -> Result<u32, ConfigError> {
    match by_name.get(name) {
        None => fail(format!("nodes.{src}.dest"), format!("unknown node '{name}'")),
        Some(&i) => match nodes[i as usize].kind {
            NodeKind::Station(s) if s as usize == by_name[src] as usize => {
                fail(format!("nodes.{src}.dest"), "a station cannot send to itself")
            }
            NodeKind::Station(s) => Ok(s),
            NodeKind::Bridge(_) => fail(format!("nodes.{src}.dest"), format!("'{name}' is a bridge, not a station")),
        },
    }
}

/// The router's choices, seen through the networks it routes (here, not in
/// routing.rs: the router sits below the topology that builds it).
#[cfg(test)]
mod routing_tests {
    use super::{paths, Network};
    use crate::bench::leafspine_config;
    use crate::config::RoutingConfig;
    use crate::engine::PS_PER_MS;

    fn spine_of(cfg: &crate::config::SimConfig, seed: u64, flows: &[(String, String)]) -> Vec<String> {
        paths(cfg, seed, flows).unwrap().into_iter().map(|p| p[2].clone()).collect()
    }

    fn inter_leaf_flows(leaves: usize, per_leaf: usize) -> Vec<(String, String)> {
        let n = leaves * per_leaf;
        (0..n)
            .flat_map(|s| {
                (0..n)
                    .filter(move |d| d / per_leaf != s / per_leaf)
                    .map(move |d| (format!("H{s}"), format!("H{d}")))
            })
            .collect()
    }

    #[test]
    fn ecmp_spreads_flows_evenly_over_the_spines_and_keeps_each_flows_path() {
        let cfg = leafspine_config(8, 4, 8, 0.5, PS_PER_MS);
        let flows = inter_leaf_flows(8, 8); // 64 x 56 = 3584 flows
        let spines = spine_of(&cfg, 1, &flows);
        for s in 0..4 {
            let n = spines.iter().filter(|x| **x == format!("S{s}")).count() as f64;
            // 896 expected; a binomial spread of about 26.
            assert!((n - 896.0).abs() < 0.1 * 896.0, "spine S{s} carries {n} flows");
        }
        assert_eq!(spines, spine_of(&cfg, 1, &flows), "a flow's path depends only on (seed, flow)");
        let other = spine_of(&cfg, 2, &flows);
        let moved = spines.iter().zip(&other).filter(|(a, b)| a != b).count();
        assert!(moved > flows.len() / 2, "another seed draws other paths ({moved} moved)");
    }

    #[test]
    fn shortest_path_takes_the_lowest_numbered_port() {
        let cfg = crate::config::SimConfig {
            routing: RoutingConfig::ShortestPath,
            ..leafspine_config(4, 3, 2, 0.5, PS_PER_MS)
        };
        assert!(spine_of(&cfg, 0, &inter_leaf_flows(4, 2)).iter().all(|s| s == "S0"));
    }

    #[test]
    fn routing_state_grows_with_edge_bridges_not_hosts() {
        // 4096 hosts on 128 leaves: a bridges x hosts table would take 136 x 4096 x 4 bytes (2.2 MB).
        let cfg = leafspine_config(128, 8, 32, 0.5, PS_PER_MS);
        let net = Network::<()>::build(&cfg, 0).unwrap();
        assert!(net.router.state_bytes() < 300_000, "{} bytes", net.router.state_bytes());
        assert!(net.reachable(0, 4095) && net.reachable(4095, 31));
    }
}

//! One link direction as a network of its own (Parsimon's link-level
//! topology), for the packet engine and for the fluid model.
//!
//! The link keeps its two ends (bridges with their own buffers, latency,
//! congestion point; or the station at a host link's end). Each source of
//! its flows sends over an *edge link* of the source's own line rate into
//! the upstream end; each destination hangs off the downstream end by a
//! *fast link* (ten times the fastest hop after the link: no queue there).
//! Their delays are set so that every flow's base RTT is the one its whole
//! path has (half the rest of the round trip each way), so a window scheme
//! sees the same feedback loop. What the rest of the fabric does to a flow
//! is left out: that is the decomposition's assumption.

use super::fabric::Fabric;
use super::flows::Flows;
use crate::config::{BridgeConfig, FlowConfig, LinkConfig, SimConfig, StationConfig, TransportConfig};
use crate::engine::time::serialization_ps;
use crate::engine::Time;
use crate::net::port::{PortId, WIRE_DATA, WIRE_NOTE};
use crate::net::topology::NodeKind;
use std::collections::BTreeMap;

/// How much faster the links behind the simulated link are than the
/// fastest real hop they stand for.
const FAST: u64 = 10;

/// The per-hop round-trip parts of hop `p`: a full frame there and a
/// control frame back, each with its propagation and receiving latency.
fn hop_rtt(fabric: &Fabric, p: PortId) -> (Time, Time) {
    let there = &fabric.net.ports[p as usize];
    let back = &fabric.net.ports[there.reverse as usize];
    let data = serialization_ps(fabric.frame_bytes as u64, there.nominal_rate_bps) + there.delay_ps + there.rx_extra_ps[WIRE_DATA];
    let ack = serialization_ps(fabric.ctrl_bytes as u64, back.nominal_rate_bps) + back.delay_ps + back.rx_extra_ps[WIRE_NOTE];
    (data, ack)
}

/// A link direction's own network: the packet engine's config and, for
/// the fluid model, each flow's edge link (its source's, an index into
/// `edge_rate_bps`).
pub struct LinkNet {
    pub config: SimConfig,
    /// Per flow of the link (in its order): the index of its edge link, or
    /// None when the link is its source's own first hop.
    pub edge_of: Vec<Option<u32>>,
    pub edge_rate_bps: Vec<u64>,
}

/// The network of link `p` with `flows` (ids into `all`, in start order).
pub fn link_net(cfg: &SimConfig, fabric: &Fabric, all: &Flows, p: PortId, flows: &[u32]) -> LinkNet {
    let (u, d) = fabric.ends(p);
    let u_name = fabric.node_name(u).to_string();
    let d_name = fabric.node_name(d).to_string();
    let u_is_station = matches!(fabric.node_kind(u), NodeKind::Station(_));
    let d_is_station = matches!(fabric.node_kind(d), NodeKind::Station(_));
    let fb = fabric.frame_bytes as u64;
    let cb = fabric.ctrl_bytes as u64;
    // Sources (their edge links) and destinations (their fast links), in
    // order of first appearance.
    let mut sources: BTreeMap<u32, u32> = BTreeMap::new();
    let mut source_list: Vec<(u32, u64, Time)> = Vec::new();
    let mut dests: BTreeMap<u32, ()> = BTreeMap::new();
    let mut dest_list: Vec<(u32, u64, Time)> = Vec::new();
    let mut edge_of = Vec::with_capacity(flows.len());
    for &f in flows {
        let path = all.path(f);
        let k = path.iter().position(|&q| q == p).expect("the flow crosses the link");
        let (src, dst) = (all.src[f as usize], all.dst[f as usize]);
        if k == 0 {
            edge_of.push(None);
        } else {
            let next = source_list.len() as u32;
            let e = *sources.entry(src).or_insert_with(|| {
                let r0 = fabric.rate_bps(path[0]);
                let real: Time = path[..k]
                    .iter()
                    .map(|&q| {
                        let (a, b) = hop_rtt(fabric, q);
                        a + b
                    })
                    .sum();
                let x_u = fabric.net.ports[path[k - 1] as usize].rx_extra_ps[WIRE_DATA];
                let first_back = fabric.reverse(path[0]);
                let xn_src = fabric.net.ports[first_back as usize].rx_extra_ps[WIRE_NOTE];
                let own = serialization_ps(fb, r0) + serialization_ps(cb, r0) + x_u + xn_src;
                source_list.push((src, r0, real.saturating_sub(own) / 2));
                next
            });
            edge_of.push(Some(e));
        }
        if k + 1 < path.len() && !dests.contains_key(&dst) {
            dests.insert(dst, ());
            let rate = path[k + 1..]
                .iter()
                .map(|&q| fabric.rate_bps(q))
                .max()
                .unwrap_or(1)
                .saturating_mul(FAST);
            let real: Time = path[k + 1..]
                .iter()
                .map(|&q| {
                    let (a, b) = hop_rtt(fabric, q);
                    a + b
                })
                .sum();
            let x_dst = fabric.net.ports[*path.last().expect("non-empty") as usize].rx_extra_ps[WIRE_DATA];
            let xn_d = fabric.net.ports[fabric.reverse(path[k + 1]) as usize].rx_extra_ps[WIRE_NOTE];
            let own = serialization_ps(fb, rate) + serialization_ps(cb, rate) + x_dst + xn_d;
            dest_list.push((dst, rate, real.saturating_sub(own) / 2));
        }
    }
    let station_cfg = |s: u32| StationConfig {
        load: 0.0,
        dest: Default::default(),
        ..cfg.stations[s as usize].clone()
    };
    let bridge_cfg = |n: u32| match fabric.node_kind(n) {
        NodeKind::Bridge(b) => Some(BridgeConfig {
            ports: None,
            ..cfg.bridges[b as usize].clone()
        }),
        NodeKind::Station(_) => None,
    };
    // A station both sending and receiving on this link (routes that are
    // not up-down) takes its receiving role under another name.
    let dest_name = |s: u32| {
        let name = fabric.station_name(s);
        if sources.contains_key(&s) || (u_is_station && name == u_name) {
            format!("{name}'")
        } else {
            name.to_string()
        }
    };
    let mut stations: Vec<StationConfig> = Vec::new();
    let mut bridges: Vec<BridgeConfig> = Vec::new();
    let mut links: Vec<LinkConfig> = Vec::new();
    match fabric.node_kind(u) {
        NodeKind::Station(s) => stations.push(station_cfg(s)),
        NodeKind::Bridge(_) => bridges.extend(bridge_cfg(u)),
    }
    match fabric.node_kind(d) {
        NodeKind::Station(s) => stations.push(StationConfig {
            name: dest_name(s),
            ..station_cfg(s)
        }),
        NodeKind::Bridge(_) => bridges.extend(bridge_cfg(d)),
    }
    let port = &fabric.net.ports[p as usize];
    let d_in_cfg = if d_is_station {
        stations.last().expect("pushed").name.clone()
    } else {
        d_name.clone()
    };
    links.push(LinkConfig {
        a: u_name.clone(),
        b: d_in_cfg.clone(),
        rate_bps: port.nominal_rate_bps,
        delay_ps: port.delay_ps,
    });
    for &(s, rate, delay) in &source_list {
        stations.push(station_cfg(s));
        links.push(LinkConfig {
            a: fabric.station_name(s).to_string(),
            b: u_name.clone(),
            rate_bps: rate,
            delay_ps: delay,
        });
    }
    for &(s, rate, delay) in &dest_list {
        let name = dest_name(s);
        stations.push(StationConfig {
            name: name.clone(),
            ..station_cfg(s)
        });
        links.push(LinkConfig {
            a: d_name.clone(),
            b: name,
            rate_bps: rate,
            delay_ps: delay,
        });
    }
    let transport_flows: Vec<FlowConfig> = flows
        .iter()
        .map(|&f| {
            let (src, dst) = (all.src[f as usize], all.dst[f as usize]);
            FlowConfig {
                src: fabric.station_name(src).into(),
                dst: if d_is_station { d_in_cfg.clone() } else { dest_name(dst) }.into(),
                size_bytes: all.size[f as usize],
                start_ps: all.start[f as usize],
                priority: None,
                after: vec![],
                after_delay_ps: 0,
                tag: None,
            }
        })
        .collect();
    let mut c = SimConfig::new(cfg.duration_ps, stations, bridges, links, vec![]);
    c.bin_ps = cfg.duration_ps;
    c.frame_bytes = cfg.frame_bytes;
    c.control_frame_bytes = cfg.control_frame_bytes;
    c.pause = cfg.pause.clone();
    c.trace_rls = Some(vec![]);
    c.per_flow = false;
    c.max_series_keys = 0;
    c.scheme = cfg.scheme.clone();
    if !cfg.cp_ports.is_empty() {
        // Congestion points on exactly the listed ports: this link's, if listed.
        let name = format!("{u_name}->{d_in_cfg}");
        if cfg.cp_ports.iter().any(|q| q == &port.name) {
            c.cp_ports = vec![name];
        } else {
            c.bridges.iter_mut().for_each(|b| b.cp = false);
        }
    }
    c.transport = TransportConfig {
        flows: transport_flows,
        arrivals: vec![],
        matrix: None,
        jobs: vec![],
        gates: vec![],
        plan: None,
        header_bytes: cfg.transport.header_bytes,
        ack_every: cfg.transport.ack_every,
        rto_ps: cfg.transport.rto_ps,
        end_when_done: true,
    };
    LinkNet {
        config: c,
        edge_of,
        edge_rate_bps: source_list.iter().map(|s| s.1).collect(),
    }
}

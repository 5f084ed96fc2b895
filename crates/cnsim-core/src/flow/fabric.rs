//! The network as the flow-level model sees it: link directions (the
//! packet engine's ports) with their rates and delays, each flow's path by
//! the packet engine's own routing (`net/routing.rs`, the same ECMP hash of
//! the same seed), and a flow's FCT alone on the idle network (the packet
//! engine's `ideal_fct`: store and forward at each hop's nominal rate).

use crate::config::{fail, ConfigError, SimConfig};
use crate::engine::time::serialization_ps;
use crate::engine::Time;
use crate::net::port::{PortId, WIRE_DATA, WIRE_NOTE};
use crate::net::topology::{Network, NodeKind, NO_ROUTE};
use crate::net::transport::pipeline_ps;

/// The built network (no frame extension: nothing is queued in it).
pub struct Fabric {
    pub net: Network<()>,
    pub frame_bytes: u32,
    pub ctrl_bytes: u32,
}

impl Fabric {
    /// The network of `cfg` for run `seed`: the same checks, nodes, ports
    /// and routes as the packet engine builds.
    pub fn build(cfg: &SimConfig, seed: u64) -> Result<Fabric, ConfigError> {
        Ok(Fabric {
            net: Network::build(cfg, seed)?,
            frame_bytes: cfg.frame_bytes,
            ctrl_bytes: cfg.control_frame_bytes,
        })
    }

    pub fn n_stations(&self) -> usize {
        self.net.stations.len()
    }

    pub fn n_ports(&self) -> usize {
        self.net.ports.len()
    }

    pub fn station_name(&self, s: u32) -> &str {
        self.net.station_name(s as usize)
    }

    pub fn port_name(&self, p: PortId) -> &str {
        &self.net.ports[p as usize].name
    }

    /// Station `name`'s index; `what` names the parameter in an error.
    pub fn station(&self, what: &str, name: &str) -> Result<u32, ConfigError> {
        let n = *self
            .net
            .node_by_name
            .get(name)
            .ok_or_else(|| ConfigError::new(what, format!("unknown node '{name}'")))?;
        match self.net.nodes[n as usize].kind {
            NodeKind::Station(s) => Ok(s),
            NodeKind::Bridge(_) => fail(what, format!("'{name}' is a bridge; flows run between stations")),
        }
    }

    /// The ports a frame from `src` to `dst` leaves by, in order, appended
    /// to `out` (cleared first); false if it never arrives.
    pub fn path(&self, src: u32, dst: u32, out: &mut Vec<PortId>) -> bool {
        out.clear();
        out.push(self.net.stations[src as usize].port);
        loop {
            let last = &self.net.ports[*out.last().expect("non-empty") as usize];
            match self.net.nodes[last.peer as usize].kind {
                NodeKind::Station(s) => return s == dst,
                NodeKind::Bridge(b) => {
                    let next = self.net.router.next_hop(b, src, dst);
                    if next == NO_ROUTE || out.len() > self.net.ports.len() {
                        return false;
                    }
                    out.push(next);
                }
            }
        }
    }

    /// A hop as the idle-network FCT counts it: its nominal rate, and the
    /// propagation delay plus the receiving node's latency for data.
    pub fn hop(&self, p: PortId) -> (u64, Time) {
        let port = &self.net.ports[p as usize];
        (port.nominal_rate_bps, port.delay_ps + port.rx_extra_ps[WIRE_DATA])
    }

    pub fn rate_bps(&self, p: PortId) -> u64 {
        self.net.ports[p as usize].nominal_rate_bps
    }

    /// The reverse direction of port `p`.
    pub fn reverse(&self, p: PortId) -> PortId {
        self.net.ports[p as usize].reverse
    }

    /// The sending and receiving node of `p`.
    pub fn ends(&self, p: PortId) -> (u32, u32) {
        let port = &self.net.ports[p as usize];
        (port.owner, port.peer)
    }

    pub fn node_name(&self, n: u32) -> &str {
        &self.net.nodes[n as usize].name
    }

    pub fn node_kind(&self, n: u32) -> NodeKind {
        self.net.nodes[n as usize].kind
    }

    /// The flow of `size` bytes alone on the idle network along `path`:
    /// when its last frame arrives (the packet engine's `ideal_fct`).
    pub fn ideal_fct(&self, path: &[PortId], size: u64) -> Time {
        let hops: Vec<(u64, Time)> = path.iter().map(|&p| self.hop(p)).collect();
        let fb = self.frame_bytes as u64;
        let n = size.div_ceil(fb).max(1);
        let last = size - (n - 1) * fb;
        pipeline_ps(&hops, n as u32, fb, last)
    }

    /// The base RTT along `path`: a full frame there and its ACK back
    /// (the packet engine's `path_info`).
    pub fn base_rtt(&self, path: &[PortId]) -> Time {
        let mut rtt = 0;
        for &p in path {
            let there = &self.net.ports[p as usize];
            let back = &self.net.ports[there.reverse as usize];
            rtt += serialization_ps(self.frame_bytes as u64, there.nominal_rate_bps) + there.delay_ps + there.rx_extra_ps[WIRE_DATA];
            rtt += serialization_ps(self.ctrl_bytes as u64, back.nominal_rate_bps) + back.delay_ps + back.rx_extra_ps[WIRE_NOTE];
        }
        rtt
    }
}

//! A flow's path through the fabric and what follows from it on the empty
//! network: hops, base RTT, the ideal FCT.

use super::fabric::Fabric;
use super::node::NodeKind;
use super::port::{PortId, WIRE_DATA, WIRE_NOTE};
use super::routing::NO_ROUTE;
use super::transport::{pipeline_ps, Flow};
use crate::config::{fail, ConfigError};
use crate::engine::time::serialization_ps;
use crate::engine::Time;
use crate::scheme::Scheme;

impl<S: Scheme> Fabric<S> {
    /// Walks the ports a frame from station `src` to station `dst` leaves
    /// by, in order, handing each to `hop`; an error if it never arrives.
    fn walk(&self, src: u32, dst: u32, mut hop: impl FnMut(PortId)) -> Result<(), ConfigError> {
        let mut port = self.nodes[src as usize].ports[0];
        for _ in 0..=self.ports.len() {
            hop(port);
            match self.nodes[self.ports[port as usize].peer as usize].kind {
                NodeKind::Station(s) if s == dst => return Ok(()),
                NodeKind::Station(_) => break,
                NodeKind::Bridge(b) => {
                    port = self.router.next_hop(b, src, dst);
                    if port == NO_ROUTE {
                        break;
                    }
                }
            }
        }
        fail(
            "flows",
            format!(
                "no route from '{}' to '{}'",
                self.nodes[src as usize].name, self.nodes[dst as usize].name
            ),
        )
    }

    /// The ports a frame from station `src` to station `dst` leaves by, in order.
    pub(crate) fn path_of(&self, src: u32, dst: u32) -> Result<Vec<PortId>, ConfigError> {
        let mut path = Vec::new();
        self.walk(src, dst, |p| path.push(p))?;
        Ok(path)
    }

    /// Links from `src` to `dst`, and the base RTT: a full data frame
    /// there (`frame_bytes`) and a control frame (its ACK, `ctrl_bytes`)
    /// back, each hop's serialisation, propagation and receiving-node latency.
    pub(crate) fn path_info(&self, src: u32, dst: u32, frame_bytes: u32, ctrl_bytes: u16) -> Result<(u32, Time), ConfigError> {
        let (mut hops, mut rtt) = (0, 0);
        self.walk(src, dst, |p| {
            let there = &self.ports[p as usize];
            let back = &self.ports[there.reverse as usize];
            rtt += serialization_ps(frame_bytes as u64, there.nominal_rate_bps) + there.delay_ps + there.rx_extra_ps[WIRE_DATA];
            rtt += serialization_ps(ctrl_bytes as u64, back.nominal_rate_bps) + back.delay_ps + back.rx_extra_ps[WIRE_NOTE];
            hops += 1;
        })?;
        Ok((hops, rtt))
    }

    /// The flow alone on the empty network: store and forward of its frames
    /// at each hop's nominal rate, plus each hop's propagation delay and the
    /// receiving node's latency; the time its last frame arrives.
    pub(crate) fn ideal_fct(&self, f: &Flow, frame_bytes: u32, sprayed: bool) -> Time {
        let path = self.path_of(f.src, f.dst).expect("checked at start");
        let hops: Vec<(u64, Time)> = path
            .iter()
            .map(|&p| {
                let p = &self.ports[p as usize];
                (p.nominal_rate_bps, p.delay_ps + p.rx_extra_ps[WIRE_DATA])
            })
            .collect();
        if sprayed {
            super::transport::sprayed_pipeline_ps(&hops, f.n_frames, frame_bytes as u64, f.last_len as u64)
        } else {
            pipeline_ps(&hops, f.n_frames, frame_bytes as u64, f.last_len as u64)
        }
    }
}

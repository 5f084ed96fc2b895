//! The PFC deadlock detector (`pause.deadlock_detector`): a cyclic buffer
//! dependency (Guo et al., SIGCOMM 2016; Hu et al., HotNets 2016) pauses
//! every port on a cycle for good: each port's queue of a lossless priority
//! is paused by the next bridge, whose buffer is full of frames that came
//! through it and wait at a port that is paused in turn.
//!
//! The wait-for graph, every `deadlock_poll_ms`: a node per bridge port
//! whose peer is a bridge and whose queue of lossless priority P is paused
//! with frames waiting; an edge from port A->B to port B->C (same P) when
//! B->C holds frames that came through A->B. A cycle is a deadlock: no port
//! on it can send until another on it does. The first cycle found is named
//! in the run's counters and, one row per port, in the event trace; a new
//! cycle (another set of ports) counts again. Only reads the network: the
//! poll never changes a run.

use super::ctx::{Ctx, EV_WATCHDOG, POLL_DEADLOCK};
use super::fabric::Fabric;
use super::port::{PortId, NO_PEER_BRIDGE};
use crate::engine::time::ms_to_ps;
use crate::engine::Time;
use crate::scheme::Scheme;
use crate::trace::Tracer;
use std::collections::BTreeMap;

impl<S: Scheme> Fabric<S> {
    /// The detector's poll: a deadlock looked for; the next poll scheduled.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_deadlock_poll<T: Tracer<S>>(&mut self, ctx: &mut Ctx<S, T>) {
        let now = ctx.now;
        match self.find_deadlock(now) {
            Some((prio, cycle)) => {
                let mut key = cycle.clone();
                key.sort_unstable();
                if key != self.deadlock.last {
                    let d = &mut self.deadlock;
                    d.count += 1;
                    if d.first_at.is_none() {
                        d.first_at = Some(now);
                        let names: Vec<&str> = cycle.iter().map(|&p| self.ports[p as usize].name.as_str()).collect();
                        d.first_cycle = format!("priority {prio}: {}", names.join(", "));
                    }
                    d.last = key;
                    if T::ON {
                        for &p in &cycle {
                            let site = self.ports[p as usize].site(p, now);
                            ctx.tracer.deadlock(site, prio);
                        }
                    }
                }
            }
            None => self.deadlock.last.clear(),
        }
        let next = now + ms_to_ps(self.pause.deadlock_poll_ms).max(1);
        if next < ctx.run.duration {
            ctx.schedule(next, EV_WATCHDOG, POLL_DEADLOCK);
        }
    }

    /// A cycle of the wait-for graph (module docs), its priority and its
    /// ports in order, if there is one.
    fn find_deadlock(&self, now: Time) -> Option<(u8, Vec<PortId>)> {
        let lossless = self.pause.lossless_mask();
        // The graph's nodes: (port, priority), stalled, between bridges.
        let mut index: BTreeMap<(PortId, u8), usize> = BTreeMap::new();
        let mut nodes: Vec<(PortId, u8)> = Vec::new();
        for port in 0..self.ports.len() as PortId {
            let p = &self.ports[port as usize];
            if p.peer_bridge == NO_PEER_BRIDGE || p.pfc_in.is_none() {
                continue;
            }
            let stalled = self.stalled(port, now) & lossless;
            for prio in (0..8u8).filter(|&q| stalled & (1 << q) != 0) {
                index.insert((port, prio), nodes.len());
                nodes.push((port, prio));
            }
        }
        if nodes.len() < 2 {
            return None;
        }
        // Port A->B waits on B->C when B->C holds frames that came through A->B.
        let next = |(port, prio): (PortId, u8)| -> Vec<usize> {
            let p = &self.ports[port as usize];
            let arrived_as = self.ports[p.reverse as usize].local as usize;
            self.nodes[p.peer as usize]
                .ports
                .iter()
                .filter(|&&q| q != p.reverse && self.ports[q as usize].bytes_by_ingress.get(arrived_as).is_some_and(|&b| b > 0))
                .filter_map(|&q| index.get(&(q, prio)).copied())
                .collect()
        };
        // Depth-first search with colours (0 new, 1 on the path, 2 done).
        let mut colour = vec![0u8; nodes.len()];
        for start in 0..nodes.len() {
            if colour[start] != 0 {
                continue;
            }
            let mut path: Vec<(usize, Vec<usize>)> = vec![(start, next(nodes[start]))];
            colour[start] = 1;
            while let Some((_, todo)) = path.last_mut() {
                match todo.pop() {
                    Some(n) if colour[n] == 1 => {
                        let from = path.iter().position(|(m, _)| *m == n).expect("on the path");
                        let cycle = path[from..].iter().map(|(m, _)| nodes[*m].0).collect();
                        return Some((nodes[n].1, cycle));
                    }
                    Some(n) if colour[n] == 0 => {
                        colour[n] = 1;
                        path.push((n, next(nodes[n])));
                    }
                    Some(_) => {}
                    None => {
                        let (m, _) = path.pop().expect("not empty");
                        colour[m] = 2;
                    }
                }
            }
        }
        None
    }
}

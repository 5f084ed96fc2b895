//! Flows that wait for flows (`FlowConfig::after`): a flow starts when every
//! flow it names has been received whole (its last byte at its receiver),
//! `after_delay_ps` later (a compute time), and not before its own
//! `start_ps`. Any DAG over the given flows; a cycle is refused, named.
//! A pure state machine: tested below without a network.

use crate::engine::Time;

/// The dependencies of one run's given flows and gates. A gate is a point
/// with no traffic (a collective's rank being done with one phase): it
/// passes when everything it waits for is done, its delay later, and
/// releases what waits for it; nodes `0..flows` are the flows, then the
/// gates. Kept flat (one offset array and one target array), for the
/// millions of edges of a large collective.
#[derive(Debug)]
pub struct Deps {
    flows: usize,
    /// Per node: how many of the nodes it waits for are not yet done.
    waiting: Vec<u32>,
    /// Per node: the nodes that wait for it, `dependents[first[i]..first[i + 1]]`.
    first: Vec<u32>,
    dependents: Vec<u32>,
    /// Per node: its delay after the last it waits for is done.
    delay_ps: Vec<Time>,
    /// Per node: when the latest of those done so far was done.
    ready_ps: Vec<Time>,
}

/// Why the dependencies cannot run: a node named that does not exist, a
/// gate that waits for nothing, or a cycle (node indices, the first
/// repeated at the end).
#[derive(Debug, PartialEq, Eq)]
pub enum DepsError {
    NoSuchFlow { flow: usize, after: u32 },
    IdleGate { gate: usize },
    Cycle(Vec<usize>),
}

impl Deps {
    /// The dependencies of flows and then gates, given as (after, delay)
    /// each, or None when no flow waits for another.
    pub fn new(flows: &[(&[u32], Time)], gates: &[(&[u32], Time)]) -> Result<Option<Deps>, DepsError> {
        if gates.is_empty() && flows.iter().all(|(after, _)| after.is_empty()) {
            return Ok(None);
        }
        let nodes: Vec<(&[u32], Time)> = flows.iter().chain(gates).copied().collect();
        let n = nodes.len();
        let mut waiting = vec![0u32; n];
        let mut count = vec![0u32; n + 1];
        for (i, (after, _)) in nodes.iter().enumerate() {
            if i >= flows.len() && after.is_empty() {
                return Err(DepsError::IdleGate { gate: i - flows.len() });
            }
            for &a in after.iter() {
                if a as usize >= n {
                    return Err(DepsError::NoSuchFlow { flow: i, after: a });
                }
                count[a as usize + 1] += 1;
                waiting[i] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let first = count;
        let mut fill = first.clone();
        let mut dependents = vec![0u32; first[n] as usize];
        for (i, (after, _)) in nodes.iter().enumerate() {
            for &a in after.iter() {
                dependents[fill[a as usize] as usize] = i as u32;
                fill[a as usize] += 1;
            }
        }
        let d = Deps {
            flows: flows.len(),
            waiting,
            first,
            dependents,
            delay_ps: nodes.iter().map(|&(_, d)| d).collect(),
            ready_ps: vec![0; n],
        };
        d.check_acyclic(&nodes)?;
        Ok(Some(d))
    }

    fn dependents_of(&self, i: usize) -> &[u32] {
        &self.dependents[self.first[i] as usize..self.first[i + 1] as usize]
    }

    /// Whether flow `i` waits for others before it may start.
    pub fn waits(&self, i: usize) -> bool {
        self.waiting[i] > 0
    }

    /// Flow `done` was received whole at `now`: the flows this releases, each
    /// with the time it may start (its delay after the latest it waited
    /// for, gates passed on the way). A flow beyond the given ones (an
    /// arrival process's) releases none.
    pub fn received(&mut self, done: usize, now: Time) -> Vec<(u32, Time)> {
        let mut ready = Vec::new();
        if done >= self.flows {
            return ready;
        }
        let mut done_at = vec![(done as u32, now)];
        while let Some((i, at)) = done_at.pop() {
            for k in self.first[i as usize]..self.first[i as usize + 1] {
                let j = self.dependents[k as usize] as usize;
                self.ready_ps[j] = self.ready_ps[j].max(at);
                self.waiting[j] -= 1;
                if self.waiting[j] == 0 {
                    let start = self.ready_ps[j].saturating_add(self.delay_ps[j]);
                    if j < self.flows {
                        ready.push((j as u32, start));
                    } else {
                        done_at.push((j as u32, start)); // a gate passes
                    }
                }
            }
        }
        ready
    }

    /// Kahn's order over the nodes; if some are left, a cycle among them,
    /// found by following `after` from one of them until a node repeats.
    fn check_acyclic(&self, nodes: &[(&[u32], Time)]) -> Result<(), DepsError> {
        let mut left = self.waiting.clone();
        let mut ready: Vec<usize> = (0..nodes.len()).filter(|&i| left[i] == 0).collect();
        let mut seen = 0;
        while let Some(i) = ready.pop() {
            seen += 1;
            for &j in self.dependents_of(i) {
                left[j as usize] -= 1;
                if left[j as usize] == 0 {
                    ready.push(j as usize);
                }
            }
        }
        if seen == nodes.len() {
            return Ok(());
        }
        let mut at = (0..nodes.len()).find(|&i| left[i] > 0).expect("a node is left");
        let mut path = vec![at];
        loop {
            // Some node it waits for is itself left: on or leading to the cycle.
            at = nodes[at]
                .0
                .iter()
                .map(|&a| a as usize)
                .find(|&a| left[a] > 0)
                .expect("a left node waits for a left node");
            if let Some(k) = path.iter().position(|&p| p == at) {
                let mut cycle = path[k..].to_vec();
                cycle.push(at);
                return Err(DepsError::Cycle(cycle));
            }
            path.push(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_dependency_needs_no_state() {
        assert!(Deps::new(&[(&[], 0), (&[], 5)], &[]).unwrap().is_none());
    }

    /// A diamond: 0 -> {1, 2} -> 3. Flow 3 waits for both, and starts its
    /// delay after the later.
    #[test]
    fn a_flow_starts_after_the_last_it_waits_for_plus_its_delay() {
        let mut d = Deps::new(&[(&[], 0), (&[0], 10), (&[0], 0), (&[1, 2], 7)], &[]).unwrap().unwrap();
        assert!(!d.waits(0) && d.waits(1) && d.waits(3));
        assert_eq!(d.received(0, 100), vec![(1, 110), (2, 100)]);
        assert_eq!(d.received(2, 150), vec![]);
        assert!(d.waits(3));
        assert_eq!(d.received(1, 200), vec![(3, 207)]);
        assert!(!d.waits(3));
        // Flows of arrival processes come after the given ones: none waits for them.
        assert_eq!(d.received(4, 300), vec![]);
    }

    #[test]
    fn a_cycle_is_named_and_a_missing_flow_refused() {
        // 0 waits for 2, 2 for 1, 1 for 2: the cycle is 1 <-> 2.
        assert_eq!(
            Deps::new(&[(&[2], 0), (&[2], 0), (&[1], 0)], &[]).unwrap_err(),
            DepsError::Cycle(vec![2, 1, 2])
        );
        assert_eq!(Deps::new(&[(&[0], 0)], &[]).unwrap_err(), DepsError::Cycle(vec![0, 0]));
        assert_eq!(
            Deps::new(&[(&[], 0), (&[5], 0)], &[]).unwrap_err(),
            DepsError::NoSuchFlow { flow: 1, after: 5 }
        );
    }

    /// Gates: flows 0 and 1 feed gate 4 (delay 50), which flows 2 and 3
    /// wait for; flow 3 waits for flow 1 too. A gate passes at the latest
    /// of what it waits for plus its delay, and a flow freed by a gate
    /// starts then, even when its last dependency was done earlier.
    #[test]
    fn a_gate_passes_after_the_last_it_waits_for_and_frees_its_flows() {
        let mut d = Deps::new(&[(&[], 0), (&[], 0), (&[4], 0), (&[4, 1], 5)], &[(&[0, 1], 50)])
            .unwrap()
            .unwrap();
        assert!(d.waits(2) && d.waits(3));
        assert_eq!(d.received(1, 100), vec![]);
        assert_eq!(d.received(0, 120), vec![(2, 170), (3, 175)]);
        // A gate that waits for nothing would never pass: refused.
        assert_eq!(Deps::new(&[(&[1], 0)], &[(&[], 0)]).unwrap_err(), DepsError::IdleGate { gate: 0 });
        // A cycle through a gate is named with the gate's node index.
        assert_eq!(Deps::new(&[(&[1], 0)], &[(&[0], 0)]).unwrap_err(), DepsError::Cycle(vec![0, 1, 0]));
    }
}

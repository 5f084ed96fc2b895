//! Flows that wait for flows (`FlowConfig::after`): a flow starts when every
//! flow it names has been received whole (its last byte at its receiver),
//! `after_delay_ps` later (a compute time), and not before its own
//! `start_ps`. Any DAG over the given flows; a cycle is refused, named.
//! A pure state machine: tested below without a network.

use crate::engine::Time;

/// The dependencies of one run's given flows.
#[derive(Debug)]
pub struct Deps {
    /// Per flow: how many of the flows it waits for are not yet received.
    waiting: Vec<u32>,
    /// Per flow: the flows that wait for it.
    dependents: Vec<Vec<u32>>,
    /// Per flow: its delay after its last dependency is received.
    delay_ps: Vec<Time>,
}

/// Why the dependencies cannot run: a flow named that does not exist, or a
/// cycle (flow indices, the first repeated at the end).
#[derive(Debug, PartialEq, Eq)]
pub enum DepsError {
    NoSuchFlow { flow: usize, after: u32 },
    Cycle(Vec<usize>),
}

impl Deps {
    /// The dependencies of flows given as (after, delay) each, or None when
    /// no flow waits for another.
    pub fn new(flows: &[(&[u32], Time)]) -> Result<Option<Deps>, DepsError> {
        if flows.iter().all(|(after, _)| after.is_empty()) {
            return Ok(None);
        }
        let n = flows.len();
        let mut dependents = vec![Vec::new(); n];
        let mut waiting = vec![0u32; n];
        for (i, (after, _)) in flows.iter().enumerate() {
            for &a in after.iter() {
                if a as usize >= n {
                    return Err(DepsError::NoSuchFlow { flow: i, after: a });
                }
                dependents[a as usize].push(i as u32);
                waiting[i] += 1;
            }
        }
        check_acyclic(flows, &dependents, &waiting)?;
        Ok(Some(Deps {
            waiting,
            dependents,
            delay_ps: flows.iter().map(|&(_, d)| d).collect(),
        }))
    }

    /// Whether flow `i` waits for others before it may start.
    pub fn waits(&self, i: usize) -> bool {
        self.waiting[i] > 0
    }

    /// Flow `done` was received whole at `now`: the flows this releases, each
    /// with the time it may start (its delay after now). A flow beyond the
    /// given ones (an arrival process's) releases none.
    pub fn received(&mut self, done: usize, now: Time) -> Vec<(u32, Time)> {
        let mut ready = Vec::new();
        let Some(dependents) = self.dependents.get(done) else {
            return ready;
        };
        for &j in dependents {
            let w = &mut self.waiting[j as usize];
            *w -= 1;
            if *w == 0 {
                ready.push((j, now.saturating_add(self.delay_ps[j as usize])));
            }
        }
        ready
    }
}

/// Kahn's order over the flows; if some flows are left, a cycle among them,
/// found by following `after` from one of them until a flow repeats.
fn check_acyclic(flows: &[(&[u32], Time)], dependents: &[Vec<u32>], waiting: &[u32]) -> Result<(), DepsError> {
    let mut left = waiting.to_vec();
    let mut ready: Vec<usize> = (0..flows.len()).filter(|&i| left[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = ready.pop() {
        seen += 1;
        for &j in &dependents[i] {
            left[j as usize] -= 1;
            if left[j as usize] == 0 {
                ready.push(j as usize);
            }
        }
    }
    if seen == flows.len() {
        return Ok(());
    }
    let mut at = (0..flows.len()).find(|&i| left[i] > 0).expect("a flow is left");
    let mut path = vec![at];
    loop {
        // Some flow it waits for is itself left: on or leading to the cycle.
        at = flows[at]
            .0
            .iter()
            .map(|&a| a as usize)
            .find(|&a| left[a] > 0)
            .expect("a left flow waits for a left flow");
        if let Some(k) = path.iter().position(|&p| p == at) {
            let mut cycle = path[k..].to_vec();
            cycle.push(at);
            return Err(DepsError::Cycle(cycle));
        }
        path.push(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_dependency_needs_no_state() {
        assert!(Deps::new(&[(&[], 0), (&[], 5)]).unwrap().is_none());
    }

    /// A diamond: 0 -> {1, 2} -> 3. Flow 3 waits for both, and starts its
    /// delay after the later.
    #[test]
    fn a_flow_starts_after_the_last_it_waits_for_plus_its_delay() {
        let mut d = Deps::new(&[(&[], 0), (&[0], 10), (&[0], 0), (&[1, 2], 7)]).unwrap().unwrap();
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
            Deps::new(&[(&[2], 0), (&[2], 0), (&[1], 0)]).unwrap_err(),
            DepsError::Cycle(vec![2, 1, 2])
        );
        assert_eq!(Deps::new(&[(&[0], 0)]).unwrap_err(), DepsError::Cycle(vec![0, 0]));
        assert_eq!(
            Deps::new(&[(&[], 0), (&[5], 0)]).unwrap_err(),
            DepsError::NoSuchFlow { flow: 1, after: 5 }
        );
    }
}

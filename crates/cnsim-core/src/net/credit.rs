//! Receiver credit (UET's RCCC, as the reference simulator runs it): each
//! receiving station has a pull pacer that grants its senders credit, in
//! quanta of 256 bytes, at just under its line rate. A sender asks for
//! credit by the pull target each data frame carries (the cumulative quanta
//! it wants); the pacer serves the flows that want more in round robin,
//! `credit_per_pull` at a time, and keeps granting a little speculative
//! credit to flows that wanted none (the "slow pulls") until a window of it
//! is out. Pure state machines, tested below without a network; the
//! stations run them in net/sel_flows.rs.

use std::collections::VecDeque;

/// Bytes in one quantum of credit.
pub const QUANTUM: u64 = crate::scheme::CREDIT_QUANTUM;

/// Quanta in `bytes`, rounded up.
pub fn quanta_ceil(bytes: u64) -> u64 {
    bytes.div_ceil(QUANTUM)
}

/// One flow's side at its receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullSink {
    /// The highest pull target a data frame carried, and the credit granted
    /// so far (both cumulative quanta).
    pub highest: u64,
    pub latest: u64,
    /// In the pacer's list of flows that want credit; in its list of flows
    /// given speculative credit.
    pub in_pull: bool,
    pub in_slow: bool,
    /// The entropy of the flow's last PULL (a counter over 128 values).
    pub entropy: u16,
}

impl PullSink {
    /// Quanta asked for and not yet granted.
    pub fn backlog(&self) -> u64 {
        self.highest.saturating_sub(self.latest)
    }

    /// Quanta granted beyond what was asked for.
    pub fn slow_credit(&self) -> u64 {
        self.latest.saturating_sub(self.highest)
    }

    /// A data frame asking for credit up to `target`: true if the flow
    /// must now join the pacer's list.
    pub fn target(&mut self, target: u64) -> bool {
        if target > self.highest {
            self.highest = target;
            if !self.in_pull {
                self.in_pull = true;
                return true;
            }
        }
        false
    }

    /// A grant: `slow` quanta regardless of the target (a slow pull), else
    /// up to `per_pull` towards the target. Returns the quanta granted.
    fn grant(&mut self, per_pull: u64, slow: u64) -> u64 {
        let prev = self.latest;
        if slow == 0 {
            self.latest += per_pull;
            if self.latest > self.highest {
                self.latest = self.highest.max(prev);
            }
        } else {
            self.latest += slow;
        }
        self.latest - prev
    }

    /// The next PULL's entropy.
    pub fn next_entropy(&mut self) -> u16 {
        self.entropy = (self.entropy + 1) & 127;
        self.entropy
    }
}

/// A receiving station's pull pacer.
#[derive(Clone, Debug, Default)]
pub struct PullPacer {
    /// Flows (ids) that want credit, round robin; flows given slow pulls.
    pub active: VecDeque<u32>,
    pub idle: VecDeque<u32>,
    /// Its next event is pending.
    pub running: bool,
}

/// What the pacer does at its event ([`PullPacer::next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pull {
    /// The flow to send a PULL to, and the cumulative credit it carries.
    pub flow: u32,
    pub latest: u64,
    /// Quanta of time until the pacer's next event.
    pub wait_quanta: u64,
}

impl PullPacer {
    /// Flow `flow` wants credit: true if the pacer must be started now.
    pub fn request(&mut self, flow: u32) -> bool {
        self.active.push_back(flow);
        let start = !self.running;
        self.running = true;
        start
    }

    /// The pacer's event: the next PULL (None: nothing to pull; the pacer
    /// stops). `per_pull`: quanta per pull; `most_slow`: the speculative
    /// credit a flow may be given in slow pulls (quanta).
    pub fn next(&mut self, sinks: &mut [PullSink], per_pull: u64, most_slow: u64) -> Option<Pull> {
        let (flow, slow) = if let Some(f) = self.active.pop_front() {
            (f, false)
        } else if let Some(f) = self.idle.pop_front() {
            (f, true)
        } else {
            self.running = false;
            return None;
        };
        let s = &mut sinks[flow as usize];
        let granted = if !slow {
            let g = s.grant(per_pull, 0);
            if s.backlog() > 0 {
                self.active.push_back(flow);
            } else {
                self.idle.push_back(flow);
                s.in_pull = false;
                s.in_slow = true;
            }
            g
        } else {
            s.in_slow = true;
            let g = s.grant(per_pull, per_pull);
            if s.backlog() == 0 && s.slow_credit() < most_slow {
                self.idle.push_back(flow);
            } else {
                s.in_pull = false;
                s.in_slow = false;
            }
            g
        };
        self.running = true;
        // Some time between pulls even when no credit went out.
        let wait_quanta = if granted == 0 { 1024 >> 8 } else { granted };
        Some(Pull {
            flow,
            latest: s.latest,
            wait_quanta,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two flows asking for credit are served in turn, 64 quanta at a time,
    /// up to their targets; then each gets slow pulls until a window of
    /// speculative credit is out; then the pacer stops.
    #[test]
    fn the_pacer_serves_the_flows_in_turn_then_slow_pulls_then_stops() {
        let mut sinks = vec![PullSink::default(); 2];
        let mut p = PullPacer::default();
        assert!(sinks[0].target(100));
        assert!(p.request(0), "the first request starts the pacer");
        assert!(sinks[1].target(64));
        assert!(!p.request(1), "already running");
        assert!(!sinks[1].target(50), "a lower target changes nothing");
        let a = p.next(&mut sinks, 64, 128).unwrap();
        assert_eq!((a.flow, a.latest, a.wait_quanta), (0, 64, 64));
        let b = p.next(&mut sinks, 64, 128).unwrap();
        assert_eq!((b.flow, b.latest), (1, 64), "flow 1 had 64 to get: now idle");
        let c = p.next(&mut sinks, 64, 128).unwrap();
        assert_eq!((c.flow, c.latest, c.wait_quanta), (0, 100, 36), "up to its target");
        // Both idle now: slow pulls of 64, beyond the targets, up to 128 over.
        let mut slow = Vec::new();
        while let Some(x) = p.next(&mut sinks, 64, 128) {
            slow.push((x.flow, x.latest));
        }
        assert_eq!(slow, vec![(1, 128), (0, 164), (1, 192), (0, 228)]);
        assert!(!p.running);
        assert!(sinks.iter().all(|s| !s.in_pull && !s.in_slow));
        // A new target restarts the pacer.
        assert!(sinks[0].target(300));
        assert!(p.request(0));
        assert_eq!(p.next(&mut sinks, 64, 128).unwrap().latest, 292);
    }

    #[test]
    fn quanta_round_up() {
        assert_eq!(quanta_ceil(0), 0);
        assert_eq!(quanta_ceil(1), 1);
        assert_eq!(quanta_ceil(256), 1);
        assert_eq!(quanta_ceil(4150), 17);
    }
}

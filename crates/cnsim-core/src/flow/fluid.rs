//! Max-min fair flow-level simulation: flows are fluids over their links;
//! at each arrival and departure the rates are recomputed by water-filling
//! (progressive filling: the link offering the smallest equal share fixes
//! the rate of its flows, which leave its capacity to the others, until
//! every flow has a rate), so no link carries more than its capacity and
//! every flow has a bottleneck link on which no flow gets more.
//!
//! A max-min allocation splits over the connected components of the graph
//! of flows and the links they share, so an arrival or a departure only
//! recomputes the component it touches (found by a search over the links),
//! and only that component's departures are rescheduled. Times are
//! picoseconds as f64 (5 s is 5e12 ps: a thousandth of a ps of resolution),
//! rates bits per picosecond.

use crate::engine::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The flows and links of one fluid simulation. Flow `f` crosses
/// `links[offsets[f]..offsets[f + 1]]`; flows are in order of `start`.
pub struct FluidInput<'a> {
    /// Capacity of each link, bits per picosecond.
    pub caps: &'a [f64],
    pub start: &'a [Time],
    pub bits: &'a [f64],
    pub offsets: &'a [u32],
    pub links: &'a [u32],
    /// Nothing is simulated past this time.
    pub end: Time,
}

impl FluidInput<'_> {
    fn links_of(&self, f: u32) -> &[u32] {
        &self.links[self.offsets[f as usize] as usize..self.offsets[f as usize + 1] as usize]
    }
}

/// What the simulation found for each flow.
pub struct FluidOutput {
    /// When the flow's last bit left (ps); `f64::INFINITY`: not by `end`.
    pub finish: Vec<f64>,
    /// Flows active on its first link when it arrived.
    pub concurrent: Vec<u32>,
    /// Rate recomputations (one per flow of each recomputed component).
    pub updates: u64,
}

/// An entry of a min-heap keyed by an f64 (ties by id: the order, and so
/// every result, never depends on the heap's layout).
#[derive(Clone, Copy)]
struct Key {
    at: f64,
    id: u32,
    version: u32,
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        other.at.total_cmp(&self.at).then(other.id.cmp(&self.id))
    }
}

/// The state of one run; reusable across runs to keep its buffers.
#[derive(Default)]
pub struct Fluid {
    // Per flow.
    rem: Vec<f64>,
    rate: Vec<f64>,
    last: Vec<f64>,
    version: Vec<u32>,
    seen: Vec<u32>,
    fixed: Vec<u32>,
    // Per link.
    on_link: Vec<Vec<u32>>,
    link_seen: Vec<u32>,
    cap_left: Vec<f64>,
    unfixed: Vec<u32>,
    link_version: Vec<u32>,
    // Scratch.
    epoch: u32,
    comp_flows: Vec<u32>,
    comp_links: Vec<u32>,
    old_rate: Vec<f64>,
    /// Beyond this many flows a recomputation stops widening: the flows on
    /// the links that changed are rated again, farther flows keep their
    /// rates (max-min changes fade with distance; 0: no limit, exact).
    limit: usize,
    shares: BinaryHeap<Key>,
    departures: BinaryHeap<Key>,
}

impl Fluid {
    /// A fluid whose recomputations rate at most about `limit` flows (see
    /// the field); `Fluid::default()` is exact.
    pub fn with_limit(limit: usize) -> Fluid {
        Fluid { limit, ..Fluid::default() }
    }

    /// Runs `input` to its end.
    pub fn run(&mut self, input: &FluidInput) -> FluidOutput {
        let n = input.start.len();
        let n_links = input.caps.len();
        self.rem.clear();
        self.rem.extend_from_slice(input.bits);
        self.rate.clear();
        self.rate.resize(n, 0.0);
        self.last.clear();
        self.last.resize(n, 0.0);
        self.version.clear();
        self.version.resize(n, 0);
        self.seen.clear();
        self.seen.resize(n, 0);
        self.fixed.clear();
        self.fixed.resize(n, 0);
        self.on_link.iter_mut().for_each(Vec::clear);
        self.on_link.resize_with(n_links, Vec::new);
        self.link_seen.clear();
        self.link_seen.resize(n_links, 0);
        self.cap_left.clear();
        self.cap_left.resize(n_links, 0.0);
        self.unfixed.clear();
        self.unfixed.resize(n_links, 0);
        self.link_version.clear();
        self.link_version.resize(n_links, 0);
        self.epoch = 0;
        self.departures.clear();
        let mut out = FluidOutput {
            finish: vec![f64::INFINITY; n],
            concurrent: vec![0; n],
            updates: 0,
        };
        let end = input.end as f64;
        let mut next = 0usize;
        let mut touched: Vec<u32> = Vec::new();
        loop {
            // The next departure still valid.
            while let Some(k) = self.departures.peek() {
                if k.version == self.version[k.id as usize] {
                    break;
                }
                self.departures.pop();
            }
            let td = self.departures.peek().map_or(f64::INFINITY, |k| k.at);
            let ta = if next < n { input.start[next] as f64 } else { f64::INFINITY };
            let t = td.min(ta);
            if t == f64::INFINITY || t > end {
                break;
            }
            touched.clear();
            if td <= ta {
                // Every departure at this instant.
                while let Some(&k) = self.departures.peek() {
                    if k.version != self.version[k.id as usize] {
                        self.departures.pop();
                        continue;
                    }
                    if k.at > t {
                        break;
                    }
                    self.departures.pop();
                    let f = k.id;
                    out.finish[f as usize] = t;
                    self.version[f as usize] = self.version[f as usize].wrapping_add(1);
                    for &l in input.links_of(f) {
                        let v = &mut self.on_link[l as usize];
                        let at = v.iter().position(|&g| g == f).expect("on its links");
                        v.swap_remove(at);
                        touched.push(l);
                    }
                }
            } else {
                // Every arrival at this instant.
                while next < n && input.start[next] as f64 <= t {
                    let f = next as u32;
                    let links = input.links_of(f);
                    out.concurrent[next] = links.first().map_or(0, |&l| self.on_link[l as usize].len() as u32);
                    if input.bits[next] <= 0.0 || links.is_empty() {
                        out.finish[next] = t;
                    } else {
                        self.last[next] = t;
                        for &l in links {
                            self.on_link[l as usize].push(f);
                            touched.push(l);
                        }
                    }
                    next += 1;
                }
            }
            out.updates += self.recompute(input, &touched, t);
        }
        out
    }

    /// The max-min fair rates of flows that are all active at once (each
    /// flow's links as in `input`; its times and sizes are not read).
    pub fn rates(&mut self, input: &FluidInput) -> Vec<f64> {
        let n = input.offsets.len() - 1;
        let bits = vec![1.0; n];
        let start = vec![0; n];
        let at_once = FluidInput {
            caps: input.caps,
            start: &start,
            bits: &bits,
            offsets: input.offsets,
            links: input.links,
            end: 0,
        };
        self.rem = bits.clone();
        self.rate = vec![0.0; n];
        self.last = vec![0.0; n];
        self.version = vec![0; n];
        self.seen = vec![0; n];
        self.fixed = vec![0; n];
        self.on_link = vec![Vec::new(); input.caps.len()];
        self.link_seen = vec![0; input.caps.len()];
        self.cap_left = vec![0.0; input.caps.len()];
        self.unfixed = vec![0; input.caps.len()];
        self.link_version = vec![0; input.caps.len()];
        self.departures.clear();
        let mut all = Vec::new();
        for f in 0..n as u32 {
            for &l in at_once.links_of(f) {
                self.on_link[l as usize].push(f);
                all.push(l);
            }
        }
        self.recompute(&at_once, &all, 0.0);
        self.rate.clone()
    }

    /// Recomputes the rates of the components holding `links` at time `t`
    /// and reschedules their departures; returns how many flows it rated.
    fn recompute(&mut self, input: &FluidInput, links: &[u32], t: f64) -> u64 {
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        self.comp_flows.clear();
        self.comp_links.clear();
        for &l in links {
            if self.link_seen[l as usize] != epoch {
                self.link_seen[l as usize] = epoch;
                self.comp_links.push(l);
            }
        }
        // The components: every flow on a reached link, every link of a
        // reached flow; past `limit` flows, only the flows on the links that
        // changed (the rest keep their rates: see `limit`).
        let seeds = self.comp_links.len();
        let mut i = 0;
        while i < self.comp_links.len() {
            if i >= seeds && self.limit > 0 && self.comp_flows.len() >= self.limit {
                break;
            }
            let l = self.comp_links[i] as usize;
            for j in 0..self.on_link[l].len() {
                let f = self.on_link[l][j];
                if self.seen[f as usize] != epoch {
                    self.seen[f as usize] = epoch;
                    self.comp_flows.push(f);
                    for &l2 in input.links_of(f) {
                        if self.link_seen[l2 as usize] != epoch {
                            self.link_seen[l2 as usize] = epoch;
                            self.comp_links.push(l2);
                        }
                    }
                }
            }
            i += 1;
        }
        // Progress at the old rates up to now; the old rates kept to see
        // which change.
        self.old_rate.clear();
        for &f in &self.comp_flows {
            let f = f as usize;
            self.rem[f] -= self.rate[f] * (t - self.last[f]);
            self.last[f] = t;
            self.old_rate.push(self.rate[f]);
        }
        // Water-filling over the components: on each of their links, the
        // capacity the flows outside leave.
        self.shares.clear();
        for &l in &self.comp_links {
            let l = l as usize;
            let (mut k, mut outside) = (0u32, 0.0);
            for &f in &self.on_link[l] {
                if self.seen[f as usize] == epoch {
                    k += 1;
                } else {
                    outside += self.rate[f as usize];
                }
            }
            let cap = (input.caps[l] - outside).max(0.0);
            self.cap_left[l] = cap;
            self.unfixed[l] = k;
            self.link_version[l] = self.link_version[l].wrapping_add(1);
            if k > 0 {
                self.shares.push(Key {
                    at: cap / k as f64,
                    id: l as u32,
                    version: self.link_version[l],
                });
            }
        }
        while let Some(Key {
            at: share,
            id: link,
            version,
        }) = self.shares.pop()
        {
            let l = link as usize;
            if version != self.link_version[l] || self.unfixed[l] == 0 {
                continue;
            }
            let share = share.max(0.0);
            for j in 0..self.on_link[l].len() {
                let f = self.on_link[l][j];
                if self.fixed[f as usize] == epoch || self.seen[f as usize] != epoch {
                    continue;
                }
                self.fixed[f as usize] = epoch;
                self.rate[f as usize] = share;
                for &l2 in input.links_of(f) {
                    let l2 = l2 as usize;
                    self.cap_left[l2] -= share;
                    self.unfixed[l2] -= 1;
                    if l2 != l && self.unfixed[l2] > 0 {
                        self.link_version[l2] = self.link_version[l2].wrapping_add(1);
                        self.shares.push(Key {
                            at: self.cap_left[l2] / self.unfixed[l2] as f64,
                            id: l2 as u32,
                            version: self.link_version[l2],
                        });
                    }
                }
            }
            self.unfixed[l] = 0;
        }
        // New departures, for the flows whose rate changed (or that just
        // arrived): the others' pending departure still holds.
        for (i, &f) in self.comp_flows.iter().enumerate() {
            let fu = f as usize;
            if self.rate[fu] == self.old_rate[i] && self.rate[fu] > 0.0 {
                continue;
            }
            self.version[fu] = self.version[fu].wrapping_add(1);
            let at = if self.rate[fu] > 0.0 {
                t + self.rem[fu].max(0.0) / self.rate[fu]
            } else {
                f64::INFINITY
            };
            if at.is_finite() {
                self.departures.push(Key {
                    at,
                    id: f,
                    version: self.version[fu],
                });
            }
        }
        self.comp_flows.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fluid run of flows (start ps, bits, links) over links of `caps` (bits/ps).
    fn run(caps: &[f64], flows: &[(Time, f64, &[u32])], end: Time) -> FluidOutput {
        let mut offsets = vec![0u32];
        let mut links = Vec::new();
        for f in flows {
            links.extend_from_slice(f.2);
            offsets.push(links.len() as u32);
        }
        let start: Vec<Time> = flows.iter().map(|f| f.0).collect();
        let bits: Vec<f64> = flows.iter().map(|f| f.1).collect();
        Fluid::default().run(&FluidInput {
            caps,
            start: &start,
            bits: &bits,
            offsets: &offsets,
            links: &links,
            end,
        })
    }

    #[test]
    fn a_lone_flow_runs_at_its_slowest_link() {
        let out = run(&[10.0, 2.0], &[(100, 1000.0, &[0, 1])], u64::MAX);
        assert!((out.finish[0] - 600.0).abs() < 1e-9, "{}", out.finish[0]);
    }

    #[test]
    fn flows_sharing_a_link_share_it_equally_and_the_freed_share_goes_to_the_rest() {
        // Two flows on one link of 1 bit/ps: 100 and 300 bits from 0. Each
        // gets 0.5 until the first ends at 200; the other then runs alone.
        let out = run(&[1.0], &[(0, 100.0, &[0]), (0, 300.0, &[0])], u64::MAX);
        assert!((out.finish[0] - 200.0).abs() < 1e-9);
        assert!((out.finish[1] - 400.0).abs() < 1e-9);
        assert_eq!(out.concurrent, vec![0, 1]);
    }

    #[test]
    fn max_min_gives_a_flow_limited_elsewhere_no_more_than_it_can_use() {
        // The classic: A on links 0 and 1, B on 0, C on 1; link 0 has 1
        // bit/ps, link 1 has 3. Max-min: A and B share link 0 (0.5 each),
        // C takes what A leaves of link 1 (2.5).
        let out = run(&[1.0, 3.0], &[(0, 50.0, &[0, 1]), (0, 50.0, &[0]), (0, 250.0, &[1])], u64::MAX);
        assert!((out.finish[0] - 100.0).abs() < 1e-9, "{:?}", out.finish);
        assert!((out.finish[1] - 100.0).abs() < 1e-9);
        assert!((out.finish[2] - 100.0).abs() < 1e-9);
    }

    proptest::proptest! {
        /// On random links and flows: no link carries more than its
        /// capacity, and every flow has a bottleneck, a full link on which
        /// no flow has a higher rate (the definition of max-min fairness).
        #[test]
        fn water_filling_is_feasible_and_max_min_fair(
            caps in proptest::collection::vec(0.1f64..10.0, 1..8),
            flows in proptest::collection::vec(proptest::collection::vec(0usize..8, 1..4), 1..20),
        ) {
            let nl = caps.len();
            let mut offsets = vec![0u32];
            let mut links = Vec::new();
            for f in &flows {
                let mut ls: Vec<u32> = f.iter().map(|&l| (l % nl) as u32).collect();
                ls.sort_unstable();
                ls.dedup();
                links.extend(ls);
                offsets.push(links.len() as u32);
            }
            let input = FluidInput { caps: &caps, start: &[], bits: &[], offsets: &offsets, links: &links, end: 0 };
            let rates = Fluid::default().rates(&input);
            let mut load = vec![0.0; nl];
            for (f, &rate) in rates.iter().enumerate() {
                for &l in input.links_of(f as u32) {
                    load[l as usize] += rate;
                }
            }
            for (l, (&load, &cap)) in load.iter().zip(&caps).enumerate() {
                proptest::prop_assert!(load <= cap * (1.0 + 1e-9), "link {} carries {} > {}", l, load, cap);
            }
            for (f, &rate) in rates.iter().enumerate() {
                proptest::prop_assert!(rate > 0.0);
                let bottleneck = input.links_of(f as u32).iter().any(|&l| {
                    let full = load[l as usize] >= caps[l as usize] * (1.0 - 1e-9);
                    let highest = (0..flows.len())
                        .filter(|&g| input.links_of(g as u32).contains(&l))
                        .all(|g| rates[g] <= rate * (1.0 + 1e-9));
                    full && highest
                });
                proptest::prop_assert!(bottleneck, "flow {} (rate {}) has no bottleneck", f, rate);
            }
        }
    }

    #[test]
    fn a_flow_not_finished_by_the_end_has_no_finish() {
        let out = run(&[1.0], &[(0, 1000.0, &[0])], 500);
        assert_eq!(out.finish[0], f64::INFINITY);
    }
}

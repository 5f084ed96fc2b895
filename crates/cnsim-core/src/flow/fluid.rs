//! Max-min fair flow-level simulation: flows are fluids over their links;
//! at each arrival and departure every active flow's rate is recomputed
//! by water-filling (progressive filling: the link offering the smallest
//! equal share fixes the rate of its flows, which leave its capacity to the
//! others, until every flow has a rate), so no link carries more than its
//! capacity and every flow has a bottleneck link on which no flow gets more.
//! Times are picoseconds as f64 (5 s is 5e12 ps: a thousandth of a ps of
//! resolution), rates bits per picosecond.

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

/// What the simulation found for each flow.
pub struct FluidOutput {
    /// When the flow's last bit left (ps); `f64::INFINITY`: not by `end`.
    pub finish: Vec<f64>,
    /// Flows active (on any link of this simulation) when it arrived.
    pub concurrent: Vec<u32>,
}

/// A link's equal share in the water-filling heap (smallest first).
#[derive(Clone, Copy)]
struct Share {
    share: f64,
    link: u32,
    version: u32,
}

impl PartialEq for Share {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Share {}
impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Share {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap. Ties by link, so that the
        // order (and the rates' last bits) never depends on the heap's layout.
        other.share.total_cmp(&self.share).then(other.link.cmp(&self.link))
    }
}

/// The state of one run; reusable across runs to keep its buffers.
#[derive(Default)]
pub struct Fluid {
    /// Active flows: id, remaining bits, rate.
    act: Vec<u32>,
    rem: Vec<f64>,
    rate: Vec<f64>,
    /// Per link: the active slots on it, capacity left, unfixed flows, version.
    on_link: Vec<Vec<u32>>,
    cap_left: Vec<f64>,
    unfixed: Vec<u32>,
    version: Vec<u32>,
    touched: Vec<u32>,
    fixed: Vec<bool>,
    heap: BinaryHeap<Share>,
}

impl Fluid {
    /// Runs `input` to its end.
    pub fn run(&mut self, input: &FluidInput) -> FluidOutput {
        let n = input.start.len();
        let n_links = input.caps.len();
        self.act.clear();
        self.rem.clear();
        self.rate.clear();
        self.on_link.iter_mut().for_each(Vec::clear);
        self.on_link.resize_with(n_links, Vec::new);
        self.cap_left.clear();
        self.cap_left.resize(n_links, 0.0);
        self.unfixed.clear();
        self.unfixed.resize(n_links, 0);
        self.version.clear();
        self.version.resize(n_links, 0);
        let mut out = FluidOutput {
            finish: vec![f64::INFINITY; n],
            concurrent: vec![0; n],
        };
        let end = input.end as f64;
        let links_of = |f: u32| &input.links[input.offsets[f as usize] as usize..input.offsets[f as usize + 1] as usize];
        let mut t = 0.0f64;
        let mut next = 0usize;
        loop {
            // The next departure: the active flow whose remaining bits run out first.
            let mut td = f64::INFINITY;
            for i in 0..self.act.len() {
                if self.rate[i] > 0.0 {
                    td = td.min(t + self.rem[i] / self.rate[i]);
                }
            }
            let ta = if next < n { input.start[next] as f64 } else { f64::INFINITY };
            let tn = td.min(ta);
            if tn == f64::INFINITY || tn > end {
                break;
            }
            let dt = tn - t;
            if dt > 0.0 {
                for i in 0..self.act.len() {
                    self.rem[i] -= self.rate[i] * dt;
                }
            }
            t = tn;
            // Departures: flows with (to rounding) nothing left.
            let mut i = 0;
            while i < self.act.len() {
                let f = self.act[i];
                if self.rem[i] <= input.bits[f as usize] * 1e-12 + 1e-9 {
                    out.finish[f as usize] = t;
                    self.remove(i, input);
                } else {
                    i += 1;
                }
            }
            // Arrivals at this instant.
            while next < n && input.start[next] as f64 <= t {
                let f = next as u32;
                out.concurrent[next] = self.act.len() as u32;
                if input.bits[next] <= 0.0 {
                    out.finish[next] = t;
                } else {
                    let slot = self.act.len() as u32;
                    self.act.push(f);
                    self.rem.push(input.bits[next]);
                    self.rate.push(0.0);
                    for &l in links_of(f) {
                        self.on_link[l as usize].push(slot);
                    }
                }
                next += 1;
            }
            self.water_fill(input);
        }
        out
    }

    /// Removes active slot `i` (the last slot moves into it).
    fn remove(&mut self, i: usize, input: &FluidInput) {
        let links_of = |f: u32| &input.links[input.offsets[f as usize] as usize..input.offsets[f as usize + 1] as usize];
        let last = (self.act.len() - 1) as u32;
        for &l in links_of(self.act[i]) {
            let v = &mut self.on_link[l as usize];
            let at = v.iter().position(|&s| s == i as u32).expect("on its links");
            v.swap_remove(at);
        }
        if i as u32 != last {
            // The moved flow's slot changes on its links.
            for &l in links_of(self.act[last as usize]) {
                for s in self.on_link[l as usize].iter_mut() {
                    if *s == last {
                        *s = i as u32;
                    }
                }
            }
        }
        self.act.swap_remove(i);
        self.rem.swap_remove(i);
        self.rate.swap_remove(i);
    }

    /// Max-min fair rates of the active flows (progressive filling).
    fn water_fill(&mut self, input: &FluidInput) {
        self.touched.clear();
        self.heap.clear();
        for l in 0..self.on_link.len() {
            let k = self.on_link[l].len() as u32;
            if k > 0 {
                self.touched.push(l as u32);
                self.cap_left[l] = input.caps[l];
                self.unfixed[l] = k;
                self.version[l] = self.version[l].wrapping_add(1);
                self.heap.push(Share {
                    share: input.caps[l] / k as f64,
                    link: l as u32,
                    version: self.version[l],
                });
            }
        }
        self.fixed.clear();
        self.fixed.resize(self.act.len(), false);
        while let Some(Share { share, link, version }) = self.heap.pop() {
            let l = link as usize;
            if version != self.version[l] || self.unfixed[l] == 0 {
                continue;
            }
            let share = share.max(0.0);
            let slots = std::mem::take(&mut self.on_link[l]);
            for &s in &slots {
                if self.fixed[s as usize] {
                    continue;
                }
                self.fixed[s as usize] = true;
                self.rate[s as usize] = share;
                let f = self.act[s as usize] as usize;
                for &l2 in &input.links[input.offsets[f] as usize..input.offsets[f + 1] as usize] {
                    let l2 = l2 as usize;
                    self.cap_left[l2] -= share;
                    self.unfixed[l2] -= 1;
                    if l2 != l && self.unfixed[l2] > 0 {
                        self.version[l2] = self.version[l2].wrapping_add(1);
                        self.heap.push(Share {
                            share: self.cap_left[l2] / self.unfixed[l2] as f64,
                            link: l2 as u32,
                            version: self.version[l2],
                        });
                    }
                }
            }
            self.on_link[l] = slots;
        }
    }
}

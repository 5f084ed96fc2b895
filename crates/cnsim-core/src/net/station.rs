//! A station's open-loop source: a Bernoulli process over the link's frame
//! slots (one event per generated frame: the gap to the next success is
//! drawn at once) with a destination drawn per frame, its NIC FIFO's limits
//! and its counters. The station's reaction point is in rl.rs / rp.rs, its
//! transport flows in transport.rs / flows.rs; [`Hosts`](super::hosts::Hosts)
//! holds them all and puts the frames on the station's link.

use super::port::PortId;
use crate::config::{NicFull, RlOrder, RlScope};
use crate::engine::rng::Stream;
use crate::engine::Time;
use rand::Rng;

/// How a source draws destinations (station indices).
pub enum Dest {
    Fixed(u32),
    /// Uniform over all stations but the source itself.
    Uniform,
    /// Cumulative weights over station indices.
    Weighted {
        stations: Vec<u32>,
        cumulative: Vec<f64>,
    },
    /// `fraction` of the frames to `hot`, the others uniform.
    Hotspot {
        hot: u32,
        fraction: f64,
    },
}

pub struct Station {
    pub node: u32,
    pub port: PortId,
    pub load: f64,
    /// 1 / ln(1 - p), for drawing geometric gaps between Bernoulli successes.
    pub inv_ln_q: f64,
    /// (1 - p)^1 .. (1 - p)^GAP_TABLE: the draws that give the shortest gaps
    /// ([`geometric_gap`]).
    pub q_pow: [f64; GAP_TABLE],
    /// One frame time at the station's link rate.
    pub slot_ps: Time,
    pub dest: Dest,
    pub nic_buffer_bytes: u64,
    pub rlq_bytes: u64,
    pub processing_ps: Time,
    pub active: bool,
    /// The valid pending generation event (stale ones are ignored).
    pub next_gen: Time,
    pub rng: Stream,
    pub generated: u64,
    pub dropped_rl: u64,
    pub dropped_nic: u64,
    pub deferred: u64,
    pub rl_scope: RlScope,
    pub nic_full: NicFull,
    pub rl_order: RlOrder,
    /// 802.1p priority of its data frames.
    pub priority: u8,
}

impl Station {
    /// Starts the source at `now` (if it has a load and is not running):
    /// the time of its first frame.
    pub fn start(&mut self, now: Time) -> Option<Time> {
        if self.active || self.load <= 0.0 {
            return None;
        }
        self.active = true;
        let gap = geometric_gap(self.load, self.inv_ln_q, &self.q_pow, &mut self.rng);
        self.next_gen = now.saturating_add(gap.saturating_mul(self.slot_ps));
        Some(self.next_gen)
    }

    pub fn stop(&mut self) {
        self.active = false;
        self.next_gen = Time::MAX;
    }

    /// The destination of the frame station `me` (of `n_st`) generates now.
    #[inline(always)]
    pub fn draw_dest(&mut self, me: u32, n_st: usize) -> u32 {
        let uniform = |rng: &mut Stream| {
            let r = below(rng, n_st - 1);
            if r >= me {
                r + 1
            } else {
                r
            }
        };
        match &self.dest {
            Dest::Fixed(d) => *d,
            Dest::Uniform => uniform(&mut self.rng),
            Dest::Hotspot { hot, fraction } => {
                if *hot != me && self.rng.gen::<f64>() < *fraction {
                    *hot
                } else {
                    uniform(&mut self.rng)
                }
            }
            Dest::Weighted { stations, cumulative } => {
                let x = self.rng.gen::<f64>() * cumulative[cumulative.len() - 1];
                let i = cumulative.partition_point(|&c| c <= x).min(stations.len() - 1);
                stations[i]
            }
        }
    }

    /// A frame was generated at `now`: the time of the next one (the slot
    /// after this one, plus a geometric gap of empty slots).
    #[inline]
    pub fn next_after(&mut self, now: Time) -> Time {
        let gap = geometric_gap(self.load, self.inv_ln_q, &self.q_pow, &mut self.rng);
        self.next_gen = now.saturating_add((gap + 1).saturating_mul(self.slot_ps));
        self.next_gen
    }
}

/// A uniform draw in `0..n`: a 16-bit draw where `n` fits one (the draws
/// a run of fewer than 65,536 stations has always made, bit for bit: rand
/// rejects differently for 16- and 32-bit ranges), a 32-bit one above.
#[inline(always)]
pub(crate) fn below(rng: &mut Stream, n: usize) -> u32 {
    if n <= u16::MAX as usize {
        rng.gen_range(0..n as u16) as u32
    } else {
        rng.gen_range(0..n as u32)
    }
}

/// Powers of 1 - p a station keeps for [`geometric_gap`].
pub(crate) const GAP_TABLE: usize = 4;

/// What [`geometric_gap`] needs of a load `p`: 1 / ln(1 - p) and the powers
/// (1 - p)^1 .. (1 - p)^GAP_TABLE. ln(1 - p) is taken as ln_1p(-p): through
/// 1 - p in floating point a load below about 1e-16 would vanish (1 - p
/// rounds to 1, its logarithm to 0, and the station sent at line rate), and
/// one below 1e-10 would lose digits. With nothing to read off (p = 0 or
/// p >= 1) the powers lie above any draw (u <= 1).
pub(crate) fn gap_table(p: f64) -> (f64, [f64; GAP_TABLE]) {
    if p > 0.0 && p < 1.0 {
        let ln_q = (-p).ln_1p();
        (1.0 / ln_q, std::array::from_fn(|j| (ln_q * (j + 1) as f64).exp()))
    } else {
        (0.0, [2.0; GAP_TABLE])
    }
}

/// Relative margin around each power within which the gap is computed in
/// full (see [`geometric_gap`]).
const GAP_MARGIN: f64 = 1e-9;

/// Number of failed Bernoulli(p) slots before the next success: geometric,
/// drawn by inversion (floor(ln u / ln(1 - p)), u uniform on (0, 1]) so that
/// one event per frame replaces one per slot.
///
/// The common short gaps skip the logarithm, with the same result bit for
/// bit: `q_pow[j]` = (1 - p)^(j+1), and u > q_pow[j] (1 + 1e-9) after
/// u <= q_pow[j-1] (1 - 1e-9) puts ln u / ln(1 - p) inside (j, j + 1), at
/// least 1e-9 / |ln(1 - p)| from either end; the formula's rounding (ln to
/// within an ulp, two products) moves it by about 1e-15, so the formula's
/// floor is j too. Draws within the margins, and longer gaps, take the
/// formula.
#[inline]
pub(crate) fn geometric_gap(p: f64, inv_ln_q: f64, q_pow: &[f64; GAP_TABLE], rng: &mut impl Rng) -> Time {
    if p >= 1.0 {
        return 0;
    }
    let u = 1.0 - rng.gen::<f64>(); // (0, 1]
    for (j, &t) in q_pow.iter().enumerate() {
        if u > t * (1.0 + GAP_MARGIN) {
            return j as Time;
        }
        if u > t * (1.0 - GAP_MARGIN) {
            break;
        }
    }
    // ln(u) <= 0 and inv_ln_q < 0, so x >= 0 and floor(x) is the truncation
    // that `as` does (a call to libm's floor saved per frame; the same bits).
    // A load so small that 1 / ln(1 - p) is infinite gives infinity, or NaN
    // for u = 1: no frame for the rest of the run.
    let x = u.ln() * inv_ln_q;
    if x >= 1e15 || x.is_nan() {
        Time::MAX / 4
    } else {
        x as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The gaps read off the powers of 1 - p are the formula's, draw for draw,
    /// for loads from almost nothing to almost everything, and at the edges
    /// of the margins.
    #[test]
    fn short_gaps_read_off_the_table_equal_the_formula() {
        let formula = |u: f64, inv_ln_q: f64| {
            let x = u.ln() * inv_ln_q;
            if x >= 1e15 || x.is_nan() {
                Time::MAX / 4
            } else {
                x as Time
            }
        };
        for p in [1e-12, 1e-6, 0.01, 0.1, 0.3, 0.49, 0.5, 0.85, 0.99, 0.999_999] {
            let (inv, q_pow) = gap_table(p);
            let mut a = Stream::seed_from_u64(7);
            let mut b = a.clone();
            for _ in 0..200_000 {
                let g = geometric_gap(p, inv, &q_pow, &mut a);
                let u = 1.0 - b.gen::<f64>();
                assert_eq!(g, formula(u, inv), "p {p} u {u}");
            }
            // The draws (u = 1 - m 2^-53, as the generator makes them) nearest each power.
            for &t in &q_pow {
                let m0 = ((1.0 - t) * (1u64 << 53) as f64) as i64;
                for m in (m0 - 4).max(0)..=(m0 + 4).min((1 << 53) - 1) {
                    let u = 1.0 - m as f64 / (1u64 << 53) as f64;
                    let mut one = ConstRng((m as u64) << 11);
                    assert_eq!(geometric_gap(p, inv, &q_pow, &mut one), formula(u, inv), "p {p} u {u}");
                }
            }
        }
    }

    /// A load too small for 1 - p to differ from 1 in floating point sends
    /// (almost) nothing, not at line rate; a small one keeps its mean gap.
    #[test]
    fn tiny_loads_give_long_gaps_not_line_rate() {
        let mut rng = Stream::seed_from_u64(1);
        for p in [1e-17, 1.1e-16, 1e-300, 1e-320, f64::MIN_POSITIVE] {
            let (inv, q_pow) = gap_table(p);
            for _ in 0..10_000 {
                assert!(geometric_gap(p, inv, &q_pow, &mut rng) >= 1_000_000_000, "p {p}");
            }
        }
        // The mean of a geometric gap is (1 - p) / p failures.
        for p in [1e-13, 1e-9, 1e-5] {
            let (inv, q_pow) = gap_table(p);
            let n = 200_000;
            let mean = (0..n).map(|_| geometric_gap(p, inv, &q_pow, &mut rng) as f64).sum::<f64>() / n as f64;
            let want = (1.0 - p) / p;
            assert!((mean / want - 1.0).abs() < 0.01, "p {p}: mean {mean} against {want}");
        }
    }

    fn station(load: f64, dest: Dest) -> Station {
        let (inv_ln_q, q_pow) = gap_table(load);
        Station {
            node: 0,
            port: 0,
            load,
            inv_ln_q,
            q_pow,
            slot_ps: 1_200_000,
            dest,
            nic_buffer_bytes: 0,
            rlq_bytes: 0,
            processing_ps: 0,
            active: false,
            next_gen: Time::MAX,
            rng: Stream::seed_from_u64(3),
            generated: 0,
            dropped_rl: 0,
            dropped_nic: 0,
            deferred: 0,
            rl_scope: RlScope::Flow,
            nic_full: NicFull::Defer,
            rl_order: RlOrder::RoundRobin,
            priority: crate::frame::DATA_PRIORITY,
        }
    }

    /// A source at load p sends one frame per 1 / p slots on average, on the
    /// slot grid, and starts once.
    #[test]
    fn a_source_sends_its_load_on_the_slot_grid() {
        let mut st = station(0.3, Dest::Uniform);
        let first = st.start(0).expect("starts");
        assert_eq!(st.start(5), None, "already running");
        let (mut t, n) = (first, 100_000u64);
        for _ in 0..n {
            t = st.next_after(t);
            assert_eq!(t % st.slot_ps, 0);
        }
        let per_slot = n as f64 / (t / st.slot_ps) as f64;
        assert!((per_slot - 0.3).abs() < 0.005, "{per_slot}");
        st.stop();
        assert_eq!(st.next_gen, Time::MAX);
        assert_eq!(station(0.0, Dest::Uniform).start(0), None, "no load, no source");
    }

    /// Destinations: never the source itself; a hotspot's share; weights.
    #[test]
    fn destinations_follow_the_draw_rule() {
        let mut st = station(0.5, Dest::Uniform);
        let mut seen = [0u32; 5];
        for _ in 0..50_000 {
            seen[st.draw_dest(2, 5) as usize] += 1;
        }
        assert_eq!(seen[2], 0);
        assert!(
            seen.iter()
                .enumerate()
                .all(|(d, &c)| d == 2 || (c as f64 / 12_500.0 - 1.0).abs() < 0.05),
            "{seen:?}"
        );
        let mut hot = station(0.5, Dest::Hotspot { hot: 4, fraction: 0.5 });
        let to_hot = (0..40_000).filter(|_| hot.draw_dest(0, 5) == 4).count() as f64 / 40_000.0;
        // Half directly, and a quarter of the uniform other half.
        assert!((to_hot - 0.625).abs() < 0.01, "{to_hot}");
        let mut w = station(
            0.5,
            Dest::Weighted {
                stations: vec![1, 3],
                cumulative: vec![1.0, 4.0],
            },
        );
        let to_3 = (0..40_000).filter(|_| w.draw_dest(0, 5) == 3).count() as f64 / 40_000.0;
        assert!((to_3 - 0.75).abs() < 0.01, "{to_3}");
    }

    /// A generator that returns one value (`gen::<f64>()` is `next_u64 >> 11` x 2^-53).
    struct ConstRng(u64);
    impl rand::RngCore for ConstRng {
        fn next_u32(&mut self) -> u32 {
            self.0 as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            dest.fill(0);
        }
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
            dest.fill(0);
            Ok(())
        }
    }
}

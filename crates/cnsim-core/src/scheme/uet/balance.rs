//! UET's load balancers (`uet.balancer`): which entropy each packet of a
//! flow carries, and what the feedback of its acknowledgements changes.

use super::BalancerKind;
use crate::engine::rng::Stream;
use crate::engine::Time;
use rand::Rng;
use std::collections::VecDeque;

/// A load balancer's state (one flow's).
#[derive(Debug, Clone)]
pub(super) enum Balancer {
    /// Not yet drawn (its first frame draws it, from the station's stream).
    Unset,
    Oblivious(Sweep),
    Bitmap(Sweep, Vec<u8>),
    Reps(Reps),
    Mixed(Sweep, Vec<u8>, VecDeque<u16>),
}

/// The oblivious sweep: every entropy once per round of `paths`, XORed
/// with a random value per round, over random upper bits.
#[derive(Debug, Clone)]
pub struct Sweep {
    mask: u16,
    upper: u16,
    xor: u16,
    index: u32,
    paths: u32,
}

impl Sweep {
    fn new(paths: u32, rng: &mut Stream) -> Sweep {
        let mask = (paths - 1) as u16;
        let upper = rng.gen_range(0..u16::MAX);
        Sweep {
            mask,
            upper: upper & !mask,
            xor: rng.gen_range(0..paths) as u16,
            index: 0,
            paths,
        }
    }

    fn current(&self) -> u16 {
        (self.index as u16 ^ self.xor) & self.mask
    }

    fn advance(&mut self, rng: &mut Stream) {
        self.index += 1;
        if self.index == self.paths {
            self.index = 0;
            self.xor = rng.gen::<u16>() & self.mask;
        }
    }

    fn next(&mut self, rng: &mut Stream) -> u16 {
        let e = self.current();
        self.advance(rng);
        e | self.upper
    }

    /// The bitmap balancer's sweep: skips penalised entropies, taking one
    /// point off the first it skips.
    fn next_unpenalised(&mut self, penalty: &mut [u8], rng: &mut Stream) -> u16 {
        let mut e = self.current();
        let mut first = true;
        let mut tries = 0;
        while penalty[e as usize] > 0 {
            if first {
                penalty[e as usize] -= 1;
            }
            first = false;
            tries += 1;
            if tries > self.paths {
                break;
            }
            self.advance(rng);
            e = self.current();
        }
        self.advance(rng);
        e | self.upper
    }
}

/// Penalties of the bitmap balancer for each kind of feedback.
const PENALTY_ECN: u8 = 1;
const PENALTY_NACK: u8 = 4;
const PENALTY_MAX: u8 = 15;

fn penalise(penalty: &mut [u8], mask: u16, entropy: u16, feedback: Feedback) {
    let add = match feedback {
        Feedback::Good => 0,
        Feedback::Ecn => PENALTY_ECN,
        Feedback::Nack => PENALTY_NACK,
        Feedback::Timeout => PENALTY_MAX,
    };
    let p = &mut penalty[(entropy & mask) as usize];
    *p = p.saturating_add(add).min(PENALTY_MAX);
}

/// What a path's feedback says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Feedback {
    Good,
    Ecn,
    Nack,
    Timeout,
}

/// REPS: the entropies of unmarked ACKs in a circular buffer of 8, used
/// once each; random when none is fresh; after a timeout the buffer is
/// replayed for 10 ms (frozen), then reset and 16 random explorations.
#[derive(Debug, Clone)]
pub struct Reps {
    value: [u16; REPS_SIZE],
    valid: [bool; REPS_SIZE],
    head: usize,
    count: usize,
    fresh: usize,
    head_frozen: usize,
    frozen: bool,
    thaw_at: Time,
    explore: u32,
    paths: u32,
}

const REPS_SIZE: usize = 8;
const REPS_FREEZE_PS: Time = 10_000_000_000;
const REPS_EXPLORE: u32 = 16;

impl Reps {
    fn new(paths: u32) -> Reps {
        Reps {
            value: [0; REPS_SIZE],
            valid: [false; REPS_SIZE],
            head: 0,
            count: 0,
            fresh: 0,
            head_frozen: 0,
            frozen: false,
            thaw_at: 0,
            explore: 0,
            paths,
        }
    }

    fn add(&mut self, e: u16) {
        if !self.valid[self.head] {
            self.fresh += 1;
        }
        self.value[self.head] = e;
        self.valid[self.head] = true;
        self.head = (self.head + 1) % REPS_SIZE;
        self.fresh = self.fresh.min(REPS_SIZE);
        self.count = (self.count + 1).min(REPS_SIZE);
    }

    fn feedback(&mut self, e: u16, f: Feedback, now: Time) {
        if f == Feedback::Timeout && !self.frozen && self.explore == 0 {
            self.frozen = true;
            self.thaw_at = now + REPS_FREEZE_PS;
        }
        if self.frozen && now > self.thaw_at {
            *self = Reps {
                explore: REPS_EXPLORE,
                ..Reps::new(self.paths)
            };
        }
        if f == Feedback::Good {
            self.add(e);
        }
    }

    fn next(&mut self, rng: &mut Stream) -> u16 {
        if self.explore > 0 {
            self.explore -= 1;
            return rng.gen_range(0..self.paths) as u16;
        }
        if self.frozen {
            if self.count == 0 {
                return rng.gen_range(0..self.paths) as u16;
            }
            let i = self.head_frozen;
            if self.valid[i] {
                self.fresh -= 1;
            }
            self.valid[i] = false;
            self.head_frozen = (self.head_frozen + 1) % self.count;
            return self.value[i];
        }
        if self.count == 0 || self.fresh == 0 {
            return rng.gen_range(0..self.paths) as u16;
        }
        // The earliest fresh entry: `fresh` places behind the head.
        let i = (self.head + REPS_SIZE - self.fresh) % REPS_SIZE;
        self.valid[i] = false;
        self.fresh -= 1;
        self.value[i]
    }
}

impl Balancer {
    pub(super) fn new(kind: BalancerKind, paths: u32, rng: &mut Stream) -> Balancer {
        match kind {
            BalancerKind::Oblivious => Balancer::Oblivious(Sweep::new(paths, rng)),
            BalancerKind::Bitmap => Balancer::Bitmap(Sweep::new(paths, rng), vec![0; paths as usize]),
            BalancerKind::Reps => Balancer::Reps(Reps::new(paths)),
            BalancerKind::Mixed => Balancer::Mixed(Sweep::new(paths, rng), vec![0; paths as usize], VecDeque::new()),
        }
    }

    pub(super) fn next(&mut self, rng: &mut Stream) -> u16 {
        match self {
            Balancer::Unset => 0,
            Balancer::Oblivious(s) => s.next(rng),
            Balancer::Bitmap(s, pen) => s.next_unpenalised(pen, rng),
            Balancer::Reps(r) => r.next(rng),
            Balancer::Mixed(s, pen, recycle) => match recycle.pop_front() {
                Some(e) => e,
                None => s.next_unpenalised(pen, rng),
            },
        }
    }

    pub(super) fn feedback(&mut self, e: u16, f: Feedback, now: Time) {
        match self {
            Balancer::Unset | Balancer::Oblivious(_) => {}
            Balancer::Bitmap(s, pen) => penalise(pen, s.mask, e, f),
            Balancer::Reps(r) => r.feedback(e, f, now),
            Balancer::Mixed(s, pen, recycle) => {
                penalise(pen, s.mask, e, f);
                if f == Feedback::Good {
                    recycle.push_back(e);
                }
            }
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::stream;

    #[test]
    fn the_oblivious_sweep_uses_every_entropy_once_per_round() {
        let mut rng = stream(1, "t");
        let mut s = Sweep::new(16, &mut rng);
        for _ in 0..3 {
            let mut seen: Vec<u16> = (0..16).map(|_| s.next(&mut rng) & 15).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..16).collect::<Vec<u16>>());
        }
    }

    #[test]
    fn the_bitmap_skips_penalised_entropies_and_forgives_one_point_per_skip() {
        let mut rng = stream(2, "t");
        let mut s = Sweep::new(8, &mut rng);
        let mut pen = vec![0u8; 8];
        let first = s.current();
        penalise(&mut pen, 7, first, Feedback::Nack);
        assert_eq!(pen[first as usize], 4);
        let e = s.next_unpenalised(&mut pen, &mut rng) & 7;
        assert_ne!(e, first, "the penalised entropy is skipped");
        assert_eq!(pen[first as usize], 3, "one point off the first skipped");
        penalise(&mut pen, 7, 3, Feedback::Timeout);
        penalise(&mut pen, 7, 3, Feedback::Timeout);
        assert_eq!(pen[3], PENALTY_MAX, "capped");
    }

    #[test]
    fn reps_recycles_fresh_entropies_oldest_first_then_draws() {
        let mut rng = stream(3, "t");
        let mut r = Reps::new(64);
        r.feedback(5, Feedback::Good, 0);
        r.feedback(9, Feedback::Good, 0);
        r.feedback(11, Feedback::Ecn, 0);
        assert_eq!(r.next(&mut rng), 5);
        assert_eq!(r.next(&mut rng), 9);
        let drawn = r.next(&mut rng);
        assert!(drawn < 64);
        // A timeout freezes it: entries replayed for 10 ms, then reset and explore.
        r.feedback(7, Feedback::Good, 0);
        r.feedback(0, Feedback::Timeout, 1);
        assert!(r.frozen);
        r.feedback(8, Feedback::Good, REPS_FREEZE_PS + 2);
        assert!(!r.frozen && r.explore == REPS_EXPLORE);
    }

}

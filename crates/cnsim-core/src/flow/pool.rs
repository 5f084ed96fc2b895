//! A tier's corrections: its representatives' flows' packet delays against
//! their fluid delays, drawn for the tier's other links' flows.

use crate::engine::rng::Stream;
use rand::Rng;

/// Congestion classes: 0, 1, 2, 3 or more flows active at arrival.
const BUSY_CLASSES: usize = 4;
/// Size classes: frames in [2^k, 2^(k+1)).
const SIZE_CLASSES: usize = 40;
/// A correction is drawn from the nearest size classes holding at least
/// this many samples (of the flow's congestion class if within two classes
/// of its size, else of any).
const DRAW_MIN: usize = 25;
/// From this many frames on, a correction scales with the flow's frames
/// (a long flow's loss of share lasts as long as it does); below, it is
/// the flow's wait (queueing, round trips) whatever its size.
const SCALE_FRAMES: u64 = 64;

fn size_class(frames: u64) -> usize {
    (63 - frames.max(1).leading_zeros() as usize).min(SIZE_CLASSES - 1)
}

/// A tier's corrections: its representatives' flows' packet delays against
/// their fluid delays, by size class and congestion class.
pub(super) struct Pool {
    /// [size class][congestion class] -> (frames, correction).
    cells: Vec<[Vec<(u64, f64)>; BUSY_CLASSES]>,
    len: usize,
}

impl Pool {
    pub(super) fn new() -> Pool {
        Pool {
            cells: (0..SIZE_CLASSES).map(|_| Default::default()).collect(),
            len: 0,
        }
    }

    pub(super) fn add(&mut self, frames: u64, busy: usize, c: f64) {
        self.cells[size_class(frames)][busy.min(BUSY_CLASSES - 1)].push((frames, c));
        self.len += 1;
    }

    /// Samples of size classes `lo..=hi`, of congestion class `busy` (None: any).
    fn count(&self, lo: usize, hi: usize, busy: Option<usize>) -> usize {
        self.cells[lo..=hi]
            .iter()
            .map(|c| match busy {
                Some(b) => c[b].len(),
                None => c.iter().map(Vec::len).sum(),
            })
            .sum()
    }

    fn nth(&self, lo: usize, hi: usize, busy: Option<usize>, mut i: usize) -> (u64, f64) {
        for cell in &self.cells[lo..=hi] {
            for (b, v) in cell.iter().enumerate() {
                if busy.is_some_and(|x| x != b) {
                    continue;
                }
                if i < v.len() {
                    return v[i];
                }
                i -= v.len();
            }
        }
        unreachable!("i < count")
    }

    /// A correction for a flow of `frames` frames that found `busy` flows:
    /// drawn from its size class widened until it holds `DRAW_MIN`
    /// samples, of its congestion class while that stays within two classes
    /// of its size; a long flow's scaled to its size.
    pub(super) fn draw(&self, frames: u64, busy: usize, rng: &mut Stream) -> f64 {
        if self.len == 0 {
            return 0.0;
        }
        let k = size_class(frames);
        let busy = busy.min(BUSY_CLASSES - 1);
        let mut pick = None;
        for w in 0..SIZE_CLASSES {
            let (lo, hi) = (k.saturating_sub(w), (k + w).min(SIZE_CLASSES - 1));
            let class = if w <= 2 { Some(busy) } else { None };
            let n = self.count(lo, hi, class);
            if n >= DRAW_MIN || (w + 1 >= SIZE_CLASSES && n > 0) {
                pick = Some(self.nth(lo, hi, class, rng.gen_range(0..n)));
                break;
            }
        }
        let (n, c) = pick.unwrap_or_else(|| self.nth(0, SIZE_CLASSES - 1, None, rng.gen_range(0..self.len)));
        if frames >= SCALE_FRAMES && n >= SCALE_FRAMES {
            c * frames as f64 / n as f64
        } else {
            c
        }
    }
}

//! Eight data classes at an output port and the transmission selection
//! among them (IEEE 802.1Qaz): the priorities named strict are served
//! first, the highest first; the others share what is left by enhanced
//! transmission selection, here deficit-weighted round robin (Shreedhar and
//! Varghese's DRR with a quantum of `weight x frame_bytes` per round).
//!
//! Only ports of a run whose stations use more than one priority hold
//! these queues (`Port::classes`); with one priority in use the eight
//! queues would behave as the one FIFO every other port keeps, so those
//! ports keep it and pay nothing. Control frames are not here: they wait in
//! the port's control FIFO, served ahead of every data class.
//!
//! The selection is a pure function of the queues and the counters, tested
//! below without a network.

use crate::config::SchedulerConfig;
use crate::engine::Time;
use crate::frame::Frame;
use std::collections::VecDeque;

/// 802.1p priorities (traffic classes) per port.
pub const PRIORITIES: usize = 8;

/// The data queues of a multi-class output port.
pub struct ClassQueues<E> {
    queues: [VecDeque<Frame<E>>; PRIORITIES],
    /// Bit `p`: priority `p` has frames queued.
    nonempty: u8,
    /// Bit `p`: priority `p` is served by strict priority.
    strict: u8,
    /// Bit `p`: ETS priority `p` has a weight above 0.
    weighted: u8,
    /// ETS quantum per priority, bytes per round.
    quantum: [u64; PRIORITIES],
    /// DRR deficit per priority, bytes.
    deficit: [u64; PRIORITIES],
    /// The ETS priority whose turn it is.
    turn: u8,
    /// Data bytes queued per priority.
    bytes: [u64; PRIORITIES],
    /// Data bytes sent per priority.
    pub sent_bytes: [u64; PRIORITIES],
    /// PFC: each priority is paused until this time, since `pause_start`.
    pub pause_end: [Time; PRIORITIES],
    pause_start: [Time; PRIORITIES],
    /// Time each priority was paused inside the measure window, for the
    /// intervals that are over.
    pub paused_ps_window: [Time; PRIORITIES],
}

impl<E: Copy> ClassQueues<E> {
    pub fn new(cfg: &SchedulerConfig, frame_bytes: u32) -> ClassQueues<E> {
        let strict = cfg.strict.iter().fold(0u8, |m, &p| m | 1 << p);
        let mut weighted = 0u8;
        for (p, &w) in cfg.ets_weights.iter().enumerate() {
            if w > 0 && strict & (1 << p) == 0 {
                weighted |= 1 << p;
            }
        }
        ClassQueues {
            queues: std::array::from_fn(|_| VecDeque::new()),
            nonempty: 0,
            strict,
            weighted,
            quantum: std::array::from_fn(|p| cfg.ets_weights[p] as u64 * frame_bytes as u64),
            deficit: [0; PRIORITIES],
            turn: 0,
            bytes: [0; PRIORITIES],
            sent_bytes: [0; PRIORITIES],
            pause_end: [0; PRIORITIES],
            pause_start: [0; PRIORITIES],
            paused_ps_window: [0; PRIORITIES],
        }
    }

    /// Queues a data frame in its priority's queue.
    #[inline]
    pub fn push(&mut self, f: Frame<E>) {
        let p = (f.prio & 7) as usize;
        self.bytes[p] += f.len as u64;
        self.queues[p].push_back(f);
        self.nonempty |= 1 << p;
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nonempty == 0
    }

    /// Frames queued, every class.
    pub fn len(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// The priorities with frames waiting, as a bit set.
    pub fn waiting(&self) -> u8 {
        self.nonempty
    }

    /// Takes every frame of priority `p` out of its queue (the PFC
    /// watchdog's drop), oldest first.
    pub fn take_class(&mut self, p: usize) -> Vec<Frame<E>> {
        self.bytes[p] = 0;
        self.deficit[p] = 0;
        self.nonempty &= !(1 << p);
        self.queues[p].drain(..).collect()
    }

    /// Bytes queued at priority `p`.
    pub fn bytes(&self, p: usize) -> u64 {
        self.bytes[p]
    }

    /// The frames queued, every class (in no particular order).
    pub fn iter(&self) -> impl Iterator<Item = &Frame<E>> {
        self.queues.iter().flatten()
    }

    /// The priorities PFC holds paused at `now`, as a bit set.
    #[inline]
    pub fn paused(&self, now: Time) -> u8 {
        (0..PRIORITIES).fold(0u8, |m, p| if now < self.pause_end[p] { m | 1 << p } else { m })
    }

    /// A PFC frame received at `now` pauses priority `p` until `end` (`now`:
    /// resumes it); a new one replaces the time left. Paused time inside
    /// `measure` is counted as each interval ends.
    pub fn set_pause(&mut self, p: usize, now: Time, end: Time, measure: (Time, Time)) {
        if now < self.pause_end[p] {
            self.pause_end[p] = end;
        } else if end > now {
            self.account(p, measure);
            (self.pause_start[p], self.pause_end[p]) = (now, end);
        }
    }

    fn account(&mut self, p: usize, (m0, m1): (Time, Time)) {
        if self.pause_end[p] > self.pause_start[p] {
            self.paused_ps_window[p] += crate::stats::overlap(self.pause_start[p], self.pause_end[p], m0, m1);
            self.pause_start[p] = self.pause_end[p];
        }
    }

    /// The run ends at `end`: the intervals still open are counted up to it.
    pub fn close_pauses(&mut self, end: Time, measure: (Time, Time)) {
        for p in 0..PRIORITIES {
            self.pause_end[p] = self.pause_end[p].min(end);
            self.account(p, measure);
        }
    }

    /// When the first paused priority with frames waiting resumes (None: no
    /// such priority).
    pub fn resume_at(&self, now: Time) -> Option<Time> {
        let held = self.nonempty & self.paused(now);
        (0..PRIORITIES).filter(|p| held & (1 << p) != 0).map(|p| self.pause_end[p]).min()
    }

    /// The next data frame to send at `now`, by transmission selection
    /// among the priorities that are not paused.
    #[inline]
    pub fn pop(&mut self, now: Time) -> Option<Frame<E>> {
        let ready = self.nonempty & !self.paused(now);
        let p = self.select(ready)?;
        let f = self.queues[p].pop_front().expect("selected a class with frames");
        self.bytes[p] -= f.len as u64;
        self.sent_bytes[p] += f.len as u64;
        if self.queues[p].is_empty() {
            self.nonempty &= !(1 << p);
            // DRR: a class that empties keeps no credit for later.
            self.deficit[p] = 0;
        }
        Some(f)
    }

    /// The priority among `ready` (those with frames, not paused) that
    /// sends next, its deficit charged. A paused class keeps its deficit
    /// but gets no quantum while paused (it takes no turn).
    fn select(&mut self, ready: u8) -> Option<usize> {
        let strict = ready & self.strict;
        if strict != 0 {
            return Some(7 - strict.leading_zeros() as usize);
        }
        let ets = ready & !self.strict;
        if ets == 0 {
            return None;
        }
        let weighted = ets & self.weighted;
        if weighted == 0 {
            // Only classes of weight 0 wait: they share what the others
            // leave, a frame each in turn.
            let next = (1..=PRIORITIES)
                .map(|i| (self.turn as usize + i) % PRIORITIES)
                .find(|&p| ets & (1 << p) != 0)?;
            self.turn = next as u8;
            return Some(next);
        }
        // Each pass of the loop either sends or moves the turn on, giving
        // the next waiting class its quantum: within ceil(frame / quantum)
        // rounds some class can send.
        loop {
            let p = self.turn as usize;
            if weighted & (1 << p) != 0 {
                let head = self.queues[p].front().expect("nonempty").len as u64;
                if self.deficit[p] >= head {
                    self.deficit[p] -= head;
                    return Some(p);
                }
            }
            let next = (p + 1) % PRIORITIES;
            self.turn = next as u8;
            if weighted & (1 << next) != 0 {
                self.deficit[next] += self.quantum[next];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(prio: u8, len: u16) -> Frame<()> {
        let mut f = Frame::data(0, 0, 1, len);
        f.prio = prio;
        f
    }

    fn sched(strict: &[u8], weights: [u32; 8]) -> ClassQueues<()> {
        let cfg = SchedulerConfig {
            strict: strict.to_vec(),
            ets_weights: weights,
        };
        ClassQueues::new(&cfg, 1500)
    }

    /// Keeps every class in `prios` saturated with frames of `len(p)` bytes
    /// and returns the bytes each priority sends in `n` frames.
    fn share(q: &mut ClassQueues<()>, prios: &[u8], len: impl Fn(u8) -> u16, n: usize) -> [u64; 8] {
        for &p in prios {
            for _ in 0..4 {
                q.push(frame(p, len(p)));
            }
        }
        let mut sent = [0u64; 8];
        for _ in 0..n {
            let f = q.pop(0).expect("saturated");
            sent[f.prio as usize] += f.len as u64;
            q.push(frame(f.prio, len(f.prio)));
        }
        sent
    }

    /// ETS: saturated classes share the port in proportion to their weights,
    /// in bytes, whatever their frame sizes.
    #[test]
    fn ets_shares_bytes_by_weight() {
        let mut q = sched(&[], [1, 0, 0, 3, 0, 0, 0, 0]);
        let sent = share(&mut q, &[0, 3], |_| 1500, 40_000);
        let ratio = sent[3] as f64 / sent[0] as f64;
        assert!((ratio - 3.0).abs() < 0.01, "3:1 weights, sent {sent:?}");
        // Small frames in the light class, large in the heavy one: still bytes.
        let mut q = sched(&[], [2, 1, 1, 1, 1, 1, 1, 1]);
        let sent = share(&mut q, &[0, 5], |p| if p == 0 { 1500 } else { 100 }, 100_000);
        let ratio = sent[0] as f64 / sent[5] as f64;
        assert!((ratio - 2.0).abs() < 0.02, "2:1 weights, sent {sent:?}");
    }

    /// Strict priority starves the classes below it; among strict classes
    /// the highest goes first; the ETS classes get nothing while one waits.
    #[test]
    fn strict_priority_starves_the_rest() {
        let mut q = sched(&[5, 6], [1; 8]);
        let sent = share(&mut q, &[0, 5, 6], |_| 1500, 1_000);
        assert_eq!(sent[6], 1_000 * 1500);
        assert_eq!(sent[0] + sent[5], 0);
        // Once the strict classes are empty the others are served.
        let mut q = sched(&[5], [1; 8]);
        q.push(frame(0, 1500));
        q.push(frame(5, 64));
        assert_eq!(q.pop(0).map(|f| f.prio), Some(5));
        assert_eq!(q.pop(0).map(|f| f.prio), Some(0));
        assert!(q.pop(0).is_none() && q.is_empty());
    }

    /// A class of weight 0 gets only what the weighted classes leave, and is
    /// served when it alone waits.
    #[test]
    fn weight_zero_takes_only_what_is_left() {
        let mut q = sched(&[], [0, 1, 1, 1, 1, 1, 1, 1]);
        let sent = share(&mut q, &[0, 2], |_| 1500, 1_000);
        assert_eq!(sent[0], 0);
        let mut q = sched(&[], [0, 0, 1, 1, 1, 1, 1, 1]);
        for _ in 0..3 {
            q.push(frame(0, 1500));
            q.push(frame(1, 1500));
        }
        let order: Vec<u8> = std::iter::from_fn(|| q.pop(0).map(|f| f.prio)).collect();
        assert_eq!(order, [1, 0, 1, 0, 1, 0], "weight-0 classes alone take turns");
    }

    /// PFC: a paused class is passed over, the others take the port, and the
    /// port knows when the paused one resumes; a class paused with nothing
    /// else waiting leaves the port idle. Paused time counts inside the
    /// measure window only, a refresh extending an interval, an XON ending it.
    #[test]
    fn a_paused_class_is_passed_over_until_it_resumes() {
        let mut q = sched(&[3], [1; 8]);
        let measure = (500, 10_000);
        q.set_pause(3, 0, 600, measure);
        q.set_pause(3, 300, 1_000, measure); // refreshed
        q.set_pause(4, 2_000, 9_000, measure);
        q.set_pause(4, 2_500, 2_500, measure); // XON
        q.set_pause(4, 3_000, 20_000, measure);
        for _ in 0..2 {
            q.push(frame(3, 1500));
            q.push(frame(0, 1500));
        }
        assert_eq!(q.pop(10).map(|f| f.prio), Some(0), "strict 3 is paused");
        assert_eq!(q.pop(10).map(|f| f.prio), Some(0));
        assert!(q.pop(10).is_none());
        assert_eq!(q.resume_at(10), Some(1_000));
        assert_eq!(q.pop(1_000).map(|f| f.prio), Some(3));
        assert_eq!(q.resume_at(1_000), None);
        q.close_pauses(12_000, measure);
        assert_eq!(q.paused_ps_window[3], 500, "0-1,000 inside 500-10,000");
        assert_eq!(q.paused_ps_window[4], 500 + 7_000, "2,000-2,500 and 3,000-10,000");
    }

    /// Within a class frames leave in arrival order; the byte counters follow
    /// the queues; nothing is lost or duplicated.
    #[test]
    fn fifo_within_a_class_and_counters_balance() {
        let mut q = sched(&[], [1, 2, 3, 4, 5, 6, 7, 8]);
        let mut pushed = 0u64;
        for i in 0..200u32 {
            let mut f = frame((i * 7 % 8) as u8, 64 + (i % 1400) as u16);
            f.seq = i;
            pushed += f.len as u64;
            q.push(f);
        }
        assert_eq!(q.len(), 200);
        let mut last = [None::<u32>; 8];
        let mut popped = 0u64;
        while let Some(f) = q.pop(0) {
            let p = f.prio as usize;
            assert!(last[p].is_none_or(|s| s < f.seq), "class {p} out of order");
            last[p] = Some(f.seq);
            popped += f.len as u64;
        }
        assert_eq!(popped, pushed);
        assert_eq!(q.sent_bytes.iter().sum::<u64>(), pushed);
        assert!((0..8).all(|p| q.bytes(p) == 0));
    }
}

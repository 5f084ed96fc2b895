//! The event queue: a calendar of time buckets over packed 128-bit keys.
//!
//! A key is `time (64 bits) | sequence (38 bits) | kind (4 bits) | index (22 bits)`.
//! When the sequence would overflow (after 2^38 events) the pending events
//! are renumbered in their order, so ties keep their order in any run.
//! Ordering the integers orders events by time and, at equal times, by the
//! order in which they were scheduled, so a run is deterministic without any
//! comparison callback, and an event costs 16 bytes and no allocation.
//!
//! Events within the next `BUCKETS` x 2^`SHIFT` ps (537 us) go into a ring of
//! buckets of 16.4 ns, found through a two-level bitmap; later ones wait in
//! a binary heap and move into the ring as time reaches them. The current
//! bucket is sorted once when time enters it. Keys are unique, so the pop
//! order is exactly the binary heap's (the order of the keys): results do
//! not depend on the queue. On a fabric of thousands of hosts the pending
//! events number tens of thousands, and a heap's sift touches a cache line
//! per level; here a push is an append and a pop a short sort per bucket.

use super::time::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const KIND_BITS: u32 = 4;
const INDEX_BITS: u32 = 22;
const SEQ_BITS: u32 = 64 - KIND_BITS - INDEX_BITS;

/// Largest index an event can carry (ports, stations, scenario events...).
pub const MAX_INDEX: u32 = (1 << INDEX_BITS) - 1;
/// Number of distinct event kinds.
pub const MAX_KINDS: u8 = 1 << KIND_BITS;

/// Bucket width: 2^SHIFT ps. Wide enough that the events of a busy fabric
/// (a frame's next hop a microsecond ahead on each of thousands of links)
/// fall in a few hundred buckets, not thousands of one-key ones: an insert
/// then touches a bucket already in cache (256 ps buckets made the HPCC
/// benchmark's 100/400 Gbit/s fat tree 1.4-1.7x slower). The pop order is
/// the keys' whatever the width.
const SHIFT: u32 = 14;
/// Buckets in the ring (a power of two, a multiple of 64 x 64).
const BUCKETS: usize = 1 << 15;
const WORDS: usize = BUCKETS / 64;
/// Pending events (as estimated by the model) from which the calendar is used.
pub const CALENDAR_MIN: usize = 1024;
/// Drained bucket vectors kept for reuse.
const MAX_SPARE: usize = 4096;

/// A popped event: when, what kind (interpreted by the model) and on which
/// element (a port, a station, a timer...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: Time,
    pub kind: u8,
    pub index: u32,
}

pub struct EventQueue {
    /// The calendar is used (else `far` alone: a plain binary heap, faster
    /// for the few pending events of a small network).
    calendar: bool,
    /// Absolute bucket number (time >> SHIFT) of `now`.
    cur: u64,
    /// The current bucket's keys, sorted descending (the next one is last).
    now: Vec<u128>,
    /// Buckets cur+1 .. cur+BUCKETS-1, at index (bucket mod BUCKETS).
    ring: Vec<Vec<u128>>,
    /// Bit per non-empty ring bucket, and a bit per non-zero word of it.
    bits: Vec<u64>,
    summary: Vec<u64>,
    in_ring: usize,
    /// Keys beyond the ring's horizon.
    far: BinaryHeap<Reverse<u128>>,
    /// Drained bucket vectors, reused by the next buckets that fill: an
    /// emptied ring slot holds no allocation, so memory follows the pending
    /// events, not the ring's size times the largest bucket it ever held
    /// (sources started together send on a common slot grid, so some
    /// buckets hold hundreds of keys).
    spare: Vec<Vec<u128>>,
    seq: u64,
    popped: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn time_of(key: u128) -> Time {
    (key >> 64) as u64
}

#[inline]
fn bucket_of(key: u128) -> u64 {
    time_of(key) >> SHIFT
}

impl EventQueue {
    pub fn new() -> Self {
        Self::with_capacity(1024)
    }

    /// A queue for about `n` pending events: the calendar from
    /// `CALENDAR_MIN` on, a binary heap below. Both pop in key order, so
    /// the choice never changes a result.
    pub fn with_capacity(n: usize) -> Self {
        Self::with_mode(n, n >= CALENDAR_MIN)
    }

    pub fn with_mode(n: usize, calendar: bool) -> Self {
        let (buckets, words) = if calendar { (BUCKETS, WORDS) } else { (0, 0) };
        EventQueue {
            calendar,
            cur: 0,
            now: Vec::with_capacity(64),
            ring: vec![Vec::new(); buckets],
            bits: vec![0; words],
            summary: vec![0; words / 64],
            in_ring: 0,
            far: BinaryHeap::with_capacity(n.min(1 << 16)),
            spare: Vec::new(),
            seq: 0,
            popped: 0,
        }
    }

    /// Schedule `kind` on `index` at `time`.
    #[inline(always)]
    pub fn push(&mut self, time: Time, kind: u8, index: u32) {
        debug_assert!(kind < MAX_KINDS && index <= MAX_INDEX);
        if self.seq >> SEQ_BITS != 0 {
            self.renumber();
        }
        let low = (self.seq << (KIND_BITS + INDEX_BITS)) | ((kind as u64) << INDEX_BITS) | index as u64;
        self.seq += 1;
        let key = ((time as u128) << 64) | low as u128;
        if self.calendar {
            self.insert(key);
        } else {
            self.far.push(Reverse(key));
        }
    }

    /// Gives the pending events sequence numbers 0, 1, ... in their order
    /// (times unchanged), so that the next ones number after them: the order
    /// of every event, ties included, is the same as with unbounded numbers.
    #[cold]
    fn renumber(&mut self) {
        let mut keys: Vec<u128> = self.far.drain().map(|Reverse(k)| k).collect();
        keys.append(&mut self.now);
        for (i, v) in self.ring.iter_mut().enumerate() {
            if !v.is_empty() {
                keys.append(v);
                self.bits[i >> 6] = 0;
                self.summary[i >> 12] = 0;
            }
        }
        self.in_ring = 0;
        keys.sort_unstable();
        let tag_mask = (1u128 << (KIND_BITS + INDEX_BITS)) - 1;
        self.seq = 0;
        for k in keys {
            let key = (k & !((1u128 << 64) - 1)) | ((self.seq as u128) << (KIND_BITS + INDEX_BITS)) | (k & tag_mask);
            self.seq += 1;
            if self.calendar {
                self.insert(key);
            } else {
                self.far.push(Reverse(key));
            }
        }
    }

    #[inline(never)]
    fn insert(&mut self, key: u128) {
        let b = bucket_of(key);
        if b <= self.cur {
            // The current bucket (or, never in a causal model, earlier): keep it sorted.
            let i = self.now.partition_point(|&k| k > key);
            self.now.insert(i, key);
        } else if b - self.cur < BUCKETS as u64 {
            let i = (b as usize) & (BUCKETS - 1);
            let v = &mut self.ring[i];
            if v.capacity() == 0 {
                if let Some(spare) = self.spare.pop() {
                    *v = spare;
                }
            }
            v.push(key);
            self.bits[i >> 6] |= 1 << (i & 63);
            self.summary[i >> 12] |= 1 << ((i >> 6) & 63);
            self.in_ring += 1;
        } else {
            self.far.push(Reverse(key));
        }
    }

    /// The first non-empty ring index at or after `from` (not wrapping).
    #[inline]
    fn next_set(&self, from: usize) -> Option<usize> {
        let mut w = from >> 6;
        let first = self.bits[w] & (!0u64 << (from & 63));
        if first != 0 {
            return Some((w << 6) | first.trailing_zeros() as usize);
        }
        w += 1;
        while w < WORDS {
            let s = w >> 6;
            let sw = self.summary[s] & (!0u64 << (w & 63));
            if sw != 0 {
                let w2 = (s << 6) | sw.trailing_zeros() as usize;
                return Some((w2 << 6) | self.bits[w2].trailing_zeros() as usize);
            }
            w = (s + 1) << 6;
        }
        None
    }

    /// Makes `now` hold the next bucket's keys; false when nothing is left.
    #[inline(never)]
    fn advance(&mut self) -> bool {
        debug_assert!(self.now.is_empty());
        let ring_next = if self.in_ring > 0 {
            let start = ((self.cur + 1) as usize) & (BUCKETS - 1);
            let i = self.next_set(start).or_else(|| self.next_set(0)).expect("ring holds keys");
            // Distance from cur, in (0, BUCKETS).
            let d = (i.wrapping_sub(self.cur as usize)) & (BUCKETS - 1);
            Some(self.cur + d as u64)
        } else {
            None
        };
        let far_next = self.far.peek().map(|Reverse(k)| bucket_of(*k));
        let next = match (ring_next, far_next) {
            (None, None) => return false,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        self.cur = next;
        let i = (next as usize) & (BUCKETS - 1);
        if self.bits[i >> 6] & (1 << (i & 63)) != 0 {
            let drained = std::mem::replace(&mut self.now, std::mem::take(&mut self.ring[i]));
            if self.spare.len() < MAX_SPARE {
                self.spare.push(drained);
            }
            self.in_ring -= self.now.len();
            self.bits[i >> 6] &= !(1 << (i & 63));
            if self.bits[i >> 6] == 0 {
                self.summary[i >> 12] &= !(1 << ((i >> 6) & 63));
            }
        }
        // Keys of the far heap that the ring now reaches.
        while let Some(&Reverse(k)) = self.far.peek() {
            if bucket_of(k) - self.cur >= BUCKETS as u64 {
                break;
            }
            self.far.pop();
            if bucket_of(k) == self.cur {
                self.now.push(k);
            } else {
                self.insert(k);
            }
        }
        self.now.sort_unstable_by(|a, b| b.cmp(a));
        true
    }

    /// Time of the next event, if any.
    #[inline(always)]
    pub fn peek_time(&mut self) -> Option<Time> {
        if !self.calendar {
            return self.far.peek().map(|Reverse(k)| time_of(*k));
        }
        if self.now.is_empty() && !self.advance() {
            return None;
        }
        self.now.last().map(|&k| time_of(k))
    }

    #[inline(always)]
    pub fn pop(&mut self) -> Option<Event> {
        let key = if !self.calendar {
            self.far.pop()?.0
        } else {
            if self.now.is_empty() && !self.advance() {
                return None;
            }
            self.now.pop()?
        };
        self.popped += 1;
        let low = key as u64;
        Some(Event {
            time: time_of(key),
            kind: ((low >> INDEX_BITS) & ((1 << KIND_BITS) - 1)) as u8,
            index: (low & MAX_INDEX as u64) as u32,
        })
    }

    /// The kind and index of the event `k` places after the next one, when
    /// the calendar's current bucket already holds it (for prefetching).
    #[inline(always)]
    pub fn ahead(&self, k: usize) -> Option<(u8, u32)> {
        let n = self.now.len();
        if n <= k {
            return None;
        }
        let low = self.now[n - 1 - k] as u64;
        Some((
            ((low >> INDEX_BITS) & ((1 << KIND_BITS) - 1)) as u8,
            (low & MAX_INDEX as u64) as u32,
        ))
    }

    /// Whether the calendar is in use (a large run).
    #[inline(always)]
    pub fn is_calendar(&self) -> bool {
        self.calendar
    }

    /// Events popped so far (the engine's event count).
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.now.len() + self.in_ring + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_schedule_order() {
        let mut q = EventQueue::new();
        q.push(30, 1, 7);
        q.push(10, 2, 5);
        q.push(30, 0, 9);
        q.push(10, 3, MAX_INDEX);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|e| (e.time, e.kind, e.index)).collect();
        assert_eq!(order, vec![(10, 2, 5), (10, 3, MAX_INDEX), (30, 1, 7), (30, 0, 9)]);
        assert_eq!(q.popped(), 4);
    }

    #[test]
    fn matches_a_sorted_order_on_random_input() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let mut q = EventQueue::new();
        let mut expect = Vec::new();
        let mut now = 0;
        for round in 0..2000u32 {
            for _ in 0..rng.gen_range(0..4) {
                let t = now + rng.gen_range(0..50u64);
                q.push(t, 1, round);
                expect.push((t, round));
            }
            if let Some(e) = q.pop() {
                expect.sort_by_key(|&(t, _)| t); // stable: push order among equal times
                let (t, r) = expect.remove(0);
                assert_eq!((e.time, e.index), (t, r));
                now = e.time;
            }
        }
    }

    /// The pop order is the order of the keys, whatever the spread of times:
    /// within a bucket, across the ring, beyond its horizon, and pushes into
    /// the bucket being drained.
    #[test]
    fn pops_in_key_order_across_buckets_and_the_far_heap() {
        key_order(EventQueue::with_mode(1024, true));
        key_order(EventQueue::with_mode(16, false));
    }

    fn key_order(mut q: EventQueue) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut reference: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
        let mut now = 0u64;
        let mut seq = 0u64;
        for round in 0..200_000u32 {
            for _ in 0..rng.gen_range(0..3) {
                let dt = match rng.gen_range(0..5) {
                    0 => 0,
                    1 => rng.gen_range(0..2_000),              // same or next bucket
                    2 => rng.gen_range(0..5_000_000),          // across the ring
                    3 => rng.gen_range(0..200_000_000_000u64), // beyond the horizon
                    _ => rng.gen_range(0..70_000_000),         // around the horizon
                };
                q.push(now + dt, 1, round & MAX_INDEX);
                reference.push(Reverse((now + dt, seq)));
                seq += 1;
            }
            if rng.gen_bool(0.5) {
                let got = q.pop().map(|e| e.time);
                let want = reference.pop().map(|Reverse((t, _))| t);
                assert_eq!(got, want);
                if let Some(t) = got {
                    now = t;
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(Reverse((t, _))) = reference.pop() {
            assert_eq!(q.peek_time(), Some(t));
            assert_eq!(q.pop().map(|e| e.time), Some(t));
        }
        assert!(q.pop().is_none() && q.is_empty());
    }

    #[test]
    fn large_times_survive_packing() {
        let mut q = EventQueue::new();
        q.push(u64::MAX, 15, 2);
        q.push(u64::MAX - 5, 15, MAX_INDEX);
        let e = q.pop().unwrap();
        assert_eq!((e.time, e.kind, e.index), (u64::MAX - 5, 15, MAX_INDEX));
        let e = q.pop().unwrap();
        assert_eq!((e.time, e.kind, e.index), (u64::MAX, 15, 2));
    }

    /// Near the end of the sequence numbers the pending events are
    /// renumbered: ties still pop in push order, in both modes.
    #[test]
    fn ties_keep_their_order_across_a_renumbering() {
        for calendar in [true, false] {
            let mut q = EventQueue::with_mode(16, calendar);
            q.seq = (1 << SEQ_BITS) - 5;
            for i in 0..20u32 {
                q.push(1000 + (i as u64 % 3) * 10_000_000, 1, i); // three times, far apart, many ties
            }
            assert!(q.seq < 100, "renumbered");
            let got: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.index).collect();
            let mut want: Vec<u32> = (0..20).collect();
            want.sort_by_key(|i| i % 3); // stable: push order within a time
            assert_eq!(got, want);
        }
    }
}

//! The event queue: a binary min-heap of packed 128-bit keys.
//!
//! A key is `time (64 bits) | sequence (40 bits) | kind (4 bits) | index (20 bits)`.
//! Ordering the integers orders events by time and, at equal times, by the
//! order in which they were scheduled, so a run is deterministic without any
//! comparison callback, and an event costs 16 bytes and no allocation.

use super::time::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const KIND_BITS: u32 = 4;
const INDEX_BITS: u32 = 20;
const SEQ_BITS: u32 = 64 - KIND_BITS - INDEX_BITS;

/// Largest index an event can carry (ports, stations, scenario events...).
pub const MAX_INDEX: u32 = (1 << INDEX_BITS) - 1;
/// Number of distinct event kinds.
pub const MAX_KINDS: u8 = 1 << KIND_BITS;

/// A popped event: when, what kind (interpreted by the model) and on which
/// element (a port, a station, a timer...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: Time,
    pub kind: u8,
    pub index: u32,
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<u128>>,
    seq: u64,
    popped: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::with_capacity(1024)
    }

    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(n),
            seq: 0,
            popped: 0,
        }
    }

    /// Schedule `kind` on `index` at `time`.
    #[inline]
    pub fn push(&mut self, time: Time, kind: u8, index: u32) {
        debug_assert!(kind < MAX_KINDS && index <= MAX_INDEX);
        debug_assert!(self.seq < (1u64 << SEQ_BITS), "event sequence overflow");
        let low = (self.seq << (KIND_BITS + INDEX_BITS)) | ((kind as u64) << INDEX_BITS) | index as u64;
        self.seq += 1;
        self.heap.push(Reverse(((time as u128) << 64) | low as u128));
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse(k)| (*k >> 64) as Time)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let Reverse(key) = self.heap.pop()?;
        self.popped += 1;
        let low = key as u64;
        Some(Event {
            time: (key >> 64) as Time,
            kind: ((low >> INDEX_BITS) & ((1 << KIND_BITS) - 1)) as u8,
            index: (low & MAX_INDEX as u64) as u32,
        })
    }

    /// Events popped so far (the engine's event count).
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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

    #[test]
    fn large_times_survive_packing() {
        let mut q = EventQueue::new();
        let t = u64::MAX - 5;
        q.push(t, 15, 1);
        let e = q.pop().unwrap();
        assert_eq!((e.time, e.kind, e.index), (t, 15, 1));
    }
}

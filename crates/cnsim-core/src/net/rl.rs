//! Rate limiters at the reaction point (schemes.md, "Station"). An RL holds
//! its frames in its own queue (RLQ) and releases the head frame at its
//! current rate; the station's link serves the unlimited NIC FIFO and the
//! RLQs round-robin. Frames leaving an RL carry its tag (a CPID). An RL back
//! at line rate with an empty queue is released. What moves the rate is the
//! scheme's.
//!
//! Which RL a notification acts on is the station's `rl_scope`
//! (docs/calibration.md, "Multi-hop congestion under PAUSE"):
//!
//! - `flow` (default): one RL per flow (source, destination). A notification
//!   from any CP about a flow acts on that flow's RL, so every congested
//!   point a flow crosses throttles it; the RL's tag is the CPID of the last
//!   negative notification (the CP that may raise it again, BCN rule 4).
//! - `cp`: one RL per CPID, flows mapped by destination to the RL of the CP
//!   that last sent them negative feedback (the BCN proposal's reading).
//!
//! RLs live in one slab shared by all stations; their ids index timer events.

use crate::config::{RlOrder, RlScope};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::frame::Frame;
use crate::scheme::RlCore;
use crate::stats::QueueTrace;
use std::collections::{BTreeMap, VecDeque};

/// RL id of a flow whose sender holds no RL (finished).
pub const NO_RL: u32 = u32::MAX;

/// What a flow's RL offers the link now.
pub(crate) enum FlowPick<E> {
    Frame(Frame<E>),
    /// Nothing before this time (pacing).
    At(Time),
    /// Nothing until an acknowledgement (window full, or all sent).
    Nothing,
}

/// At most this many RLs get rate / RLQ time series.
pub const MAX_RL_TRACES: usize = 256;

pub struct RateLimiter<R, E> {
    pub station: u32,
    /// What the RL is keyed by: the flow's destination (`flow` scope) or a CPID (`cp` scope).
    pub key: u32,
    /// CPID carried by the frames leaving this RL.
    pub tag: u32,
    /// The transport flow this RL sends (`NO_FLOW`: an RL of open-loop
    /// traffic, holding its frames in its RLQ).
    pub flow: u32,
    pub core: RlCore,
    pub state: R,
    pub queue: VecDeque<Frame<E>>,
    pub bytes: u64,
    /// The head frame may leave at this time (pacing).
    pub next_release: Time,
    pub last_release: Time,
    pub last_len: u16,
    /// The valid pending timer (stale timer events are ignored).
    pub timer_at: Time,
    pub trace: Option<usize>,
    /// `rl_order = in_order`: frames of this RL's flow that were in the NIC
    /// FIFO (past the shaper) when it was created; they leave first.
    pub ahead: u32,
    /// Its place in its station's round robin ([`RlRing`]).
    pub seq: u64,
}

impl<R, E> RateLimiter<R, E> {
    /// A new RL of station `station`, empty, created at `now` (no timer yet).
    #[allow(clippy::too_many_arguments)]
    pub fn new(station: usize, key: u32, tag: u32, flow: u32, core: RlCore, state: R, now: Time, trace: Option<usize>) -> Self {
        RateLimiter {
            station: station as u32,
            key,
            tag,
            flow,
            core,
            state,
            queue: VecDeque::new(),
            bytes: 0,
            next_release: 0,
            last_release: now,
            last_len: 0,
            timer_at: Time::MAX,
            trace,
            ahead: 0,
            seq: 0,
        }
    }
}

/// A small map from a 16-bit key to an RL id, sorted by key: the few RLs a
/// station has make a binary search over a flat vector the cheapest lookup.
#[derive(Default)]
pub struct RlMap(Vec<(u32, u32)>);

impl RlMap {
    #[inline]
    pub fn get(&self, key: u32) -> Option<u32> {
        self.0.binary_search_by_key(&key, |e| e.0).ok().map(|i| self.0[i].1)
    }

    pub fn insert(&mut self, key: u32, id: u32) {
        match self.0.binary_search_by_key(&key, |e| e.0) {
            Ok(i) => self.0[i].1 = id,
            Err(i) => self.0.insert(i, (key, id)),
        }
    }

    pub fn remove_id(&mut self, id: u32) {
        self.0.retain(|e| e.1 != id);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Where a station's round robin resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RrPos {
    /// At the NIC FIFO.
    Fifo,
    /// At the first live RL created at or after this number (past the
    /// newest: the FIFO, unless an RL is created before the next pick).
    From(u64),
}

/// A station's live RLs in creation order: the round-robin ring. Each RL
/// has a creation number (`RateLimiter::seq`), so that adding, removing and
/// finding the next RL cost O(log n) however many flows a station has. The
/// RLs that may have a frame to send are also kept in `ready`: a flow's RL
/// with every frame sent, or with its window full, is set aside (parked)
/// until an acknowledgement, a timeout or its scheme changes it, so a pick
/// does not walk past thousands of flows waiting for their last ACK. Parking
/// skips only RLs the pick would pass over, so the order frames leave in is
/// that of the plain ring.
#[derive(Default)]
pub struct RlRing {
    all: BTreeMap<u64, u32>,
    ready: BTreeMap<u64, u32>,
    next: u64,
}

impl RlRing {
    /// Adds RL `id` after every live one; returns its creation number.
    pub fn push(&mut self, id: u32) -> u64 {
        let q = self.next;
        self.next += 1;
        self.all.insert(q, id);
        self.ready.insert(q, id);
        q
    }

    pub fn remove(&mut self, q: u64) {
        self.all.remove(&q);
        self.ready.remove(&q);
    }

    /// Takes RL `q` out of the picks until `unpark`.
    pub fn park(&mut self, q: u64) {
        self.ready.remove(&q);
    }

    pub fn unpark(&mut self, q: u64, id: u32) {
        if self.all.contains_key(&q) {
            self.ready.insert(q, id);
        }
    }

    /// The first ready RL with a creation number in `lo..hi`.
    #[inline]
    pub fn next_ready(&self, lo: u64, hi: u64) -> Option<(u64, u32)> {
        if lo >= hi {
            return None;
        }
        self.ready.range(lo..hi).next().map(|(&q, &id)| (q, id))
    }

    /// Whether a live RL was created at or after `q`.
    #[inline]
    pub fn any_from(&self, q: u64) -> bool {
        self.all.range(q..).next().is_some()
    }

    pub fn len(&self) -> usize {
        self.all.len()
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// The ring's order from the round-robin position `rr`: two ranges of
    /// creation numbers with the NIC FIFO between them (the RLs from `rr`
    /// to the newest, the FIFO, the RLs before `rr`; the FIFO first when
    /// `rr` is the FIFO or past the newest RL).
    #[inline]
    pub fn order(&self, rr: RrPos) -> [(u64, u64); 2] {
        match rr {
            RrPos::From(q) if self.any_from(q) => [(q, u64::MAX), (0, q)],
            _ => [(0, 0), (0, u64::MAX)],
        }
    }

    /// Where the round robin resumes after serving RL `q`: the next RL, or
    /// the FIFO after the newest.
    #[inline]
    pub fn after(&self, q: u64) -> RrPos {
        if self.any_from(q + 1) {
            RrPos::From(q + 1)
        } else {
            RrPos::Fifo
        }
    }
}

/// The reaction-point side of one station.
pub struct StationRp {
    pub scope: RlScope,
    /// Live RLs (ids into the slab) in creation order: the round-robin ring.
    pub live: RlRing,
    /// RL by key (destination or CPID).
    pub by_key: RlMap,
    /// `cp` scope: destination -> RL the flow is mapped to.
    pub flow_map: RlMap,
    /// Round-robin position over the NIC FIFO and the ring.
    pub rr: RrPos,
    /// Frames waiting in this station's RLQs.
    pub queued: u64,
    /// Scheme randomness of this station's RLs.
    pub rng: Stream,
    /// Notifications received (CNMs, CNPs, reflections).
    pub notifications: u64,
    /// Transport flows of this station with frames not yet sent.
    pub flow_pending: u32,
    /// `rl_order = in_order` (flow scope): a new RL waits for the frames its
    /// flow already had in the NIC FIFO.
    pub in_order: bool,
}

impl StationRp {
    pub fn new(scope: RlScope, order: RlOrder, rng: Stream) -> Self {
        StationRp {
            scope,
            // Only a per-flow RL knows which FIFO frames are its flow's.
            in_order: order == RlOrder::InOrder && scope == RlScope::Flow,
            live: RlRing::default(),
            by_key: RlMap::default(),
            flow_map: RlMap::default(),
            rr: RrPos::Fifo,
            queued: 0,
            rng,
            notifications: 0,
            flow_pending: 0,
        }
    }

    #[inline]
    pub fn active(&self) -> bool {
        !self.live.is_empty()
    }

    #[inline]
    pub fn has_queued(&self) -> bool {
        self.queued > 0 || self.flow_pending > 0
    }

    /// The RL that limits the flow to `dst`, if any.
    #[inline]
    pub fn rl_of(&self, dst: u32) -> Option<u32> {
        if self.live.is_empty() {
            return None;
        }
        match self.scope {
            RlScope::Flow => self.by_key.get(dst),
            RlScope::Cp => self.flow_map.get(dst),
        }
    }
}

/// Time to send `len` bytes at `rate_bps` (pacing), rounded up.
#[inline]
pub(crate) fn pace_ps(len: u16, rate_bps: f64) -> Time {
    (len as f64 * 8.0e12 / rate_bps).ceil() as Time
}

/// Series recorded per RL: rate (bit/s) and RLQ bytes at bin ends.
pub struct RlTrace {
    pub key: String,
    pub rate: QueueTrace,
    pub bytes: QueueTrace,
    /// A window scheme's window (transport flows only).
    pub window: Option<QueueTrace>,
}

/// What one RL offers the link in a pick.
pub(super) enum Pick<E> {
    Frame(Frame<E>),
    At(Time),
    Nothing,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ring with parking against the plain ring it replaces (a vector
    /// in creation order and an index, every RL visited on each pick): the
    /// same frames leave in the same order whatever RLs come, go, fill and
    /// empty.
    #[test]
    fn the_ring_with_parked_rls_picks_as_the_plain_ring() {
        use proptest::prelude::*;
        #[derive(Clone, Debug)]
        enum Op {
            Push,
            Remove(usize),
            Pick(bool),
            Ready(usize, bool),
        }
        let op = prop_oneof![
            2 => Just(Op::Push),
            1 => any::<usize>().prop_map(Op::Remove),
            4 => any::<bool>().prop_map(Op::Pick),
            3 => (any::<usize>(), any::<bool>()).prop_map(|(i, r)| Op::Ready(i, r)),
        ];
        proptest!(ProptestConfig::with_cases(400), |(ops in proptest::collection::vec(op, 1..200))| {
            // Plain: ids in creation order, rr = 0 (FIFO) or 1 + index.
            let (mut plain, mut rr) = (Vec::<u32>::new(), 0usize);
            let mut ring = RlRing::default();
            let mut pos = RrPos::Fifo;
            let mut seq = std::collections::HashMap::new();
            let mut ready = std::collections::HashMap::new();
            let mut next_id = 0u32;
            for op in ops {
                match op {
                    Op::Push => {
                        plain.push(next_id);
                        seq.insert(next_id, ring.push(next_id));
                        ready.insert(next_id, true);
                        next_id += 1;
                    }
                    Op::Remove(k) if !plain.is_empty() => {
                        let at = k % plain.len();
                        let id = plain.remove(at);
                        if rr > at + 1 {
                            rr -= 1;
                        }
                        ring.remove(seq[&id]);
                    }
                    Op::Ready(k, r) if !plain.is_empty() => {
                        let id = plain[k % plain.len()];
                        if r && !ready[&id] {
                            ring.unpark(seq[&id], id);
                        }
                        ready.insert(id, r);
                    }
                    Op::Pick(fifo) => {
                        let n = plain.len() + 1;
                        let start = rr % n;
                        let mut want = None;
                        for i in 0..n {
                            let idx = (start + i) % n;
                            if idx == 0 {
                                if fifo {
                                    rr = 1;
                                    want = Some(u32::MAX);
                                    break;
                                }
                            } else if ready[&plain[idx - 1]] {
                                rr = (idx + 1) % n;
                                want = Some(plain[idx - 1]);
                                break;
                            }
                        }
                        let mut got = None;
                        'pick: for (i, &(mut lo, hi)) in ring.order(pos).iter().enumerate() {
                            if i == 1 && fifo {
                                pos = RrPos::From(0);
                                got = Some(u32::MAX);
                                break;
                            }
                            while let Some((q, id)) = ring.next_ready(lo, hi) {
                                lo = q + 1;
                                if ready[&id] {
                                    pos = ring.after(q);
                                    got = Some(id);
                                    break 'pick;
                                }
                                ring.park(q);
                            }
                        }
                        prop_assert_eq!(got, want);
                        prop_assert_eq!(ring.len(), plain.len());
                    }
                    _ => {}
                }
            }
        });
    }
}

//! Transport flows: a flow is `size` bytes from one station to another,
//! starting at a given time (given one by one, or drawn by a Poisson
//! arrival process with sizes from an empirical CDF).
//!
//! - **Sender.** Each flow has its own rate limiter from its first frame to
//!   its last acknowledgement: the scheme's RP paces it (`rate_bps`) and may
//!   bound what is in flight (`window_bytes`). Frames are made when the link
//!   takes them, so a flow costs no memory per byte waiting.
//! - **Receiver.** It acknowledges every `ack_every` frames received in
//!   order (and the last), echoing what the scheme asks ([`Scheme::ack_echo`]:
//!   an ECN mark, per-hop telemetry) and the data frame's send time (for RTT
//!   samples). ACKs and NACKs are control-class frames: served first, never
//!   paused.
//! - **Loss recovery, as RDMA RC does:** a frame beyond the next expected one
//!   is discarded and answered by one NACK per gap; the sender goes back to
//!   the first unacknowledged frame (go-back-N). A retransmission timeout
//!   (`rto`) does the same when nothing was acknowledged for that long.
//!   With PFC and enough headroom the fabric is lossless and neither fires.
//!
//! A flow's completion time (FCT) is from its start to the reception of its
//! last byte in order; its ideal FCT is the same flow alone on the empty
//! network along its path (store and forward at each hop's nominal rate).

use super::rl::NO_RL;
use crate::config::ArrivalConfig;
use crate::engine::rng::{stream, Stream};
use crate::engine::time::serialization_ps;
use crate::engine::{Time, PS_PER_S};
use crate::scheme::{AckKind, AckView};
use crate::stats::TransportCounters;
use crate::trace::FlowView;
use rand::Rng;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The distinct paths flows may take, (base RTT, hops) -> the first (source,
/// destination) found on it.
pub(crate) type FlowPaths = BTreeMap<(Time, u32), (u16, u16)>;

/// One flow: its identity, its sender's and its receiver's state.
#[derive(Clone, Debug)]
pub struct Flow {
    pub src: u16,
    pub dst: u16,
    pub size: u64,
    pub n_frames: u32,
    /// Wire length of the last frame (the others are full).
    pub last_len: u16,
    pub start: Time,
    /// When the receiver had every byte in order (`Time::MAX`: not yet).
    pub finish: Time,
    /// Sender: next frame to send, first frame not acknowledged, highest
    /// frame sent so far + 1 (frames below it sent again are retransmissions).
    pub snd_nxt: u32,
    pub snd_una: u32,
    pub snd_max: u32,
    /// The sender's RL (`NO_RL` before the start and after the last ACK).
    pub rl: u32,
    /// Receiver: next frame expected; frames in order since the last ACK;
    /// the gap a NACK was sent for (`u32::MAX`: none).
    pub rcv_nxt: u32,
    pub unacked: u32,
    pub nack_for: u32,
    /// Retransmission timeout: the deadline, and the time of the one timer
    /// event pending (re-armed lazily: progress only moves the deadline).
    pub rto_deadline: Time,
    pub rto_event: Time,
    pub retransmitted: u32,
    pub timeouts: u32,
    /// Links on the flow's path, and its base RTT: a full frame there and
    /// its ACK back on the empty network.
    pub hops: u32,
    pub base_rtt_ps: Time,
}

impl Flow {
    pub(super) fn new(src: u16, dst: u16, size: u64, start: Time, frame_bytes: u32) -> Flow {
        let fb = frame_bytes as u64;
        let n_frames = size.div_ceil(fb) as u32;
        let last_len = (size - (n_frames as u64 - 1) * fb) as u16;
        Flow {
            src,
            dst,
            size,
            n_frames,
            last_len,
            start,
            finish: Time::MAX,
            snd_nxt: 0,
            snd_una: 0,
            snd_max: 0,
            rl: NO_RL,
            rcv_nxt: 0,
            unacked: 0,
            nack_for: u32::MAX,
            rto_deadline: Time::MAX,
            rto_event: Time::MAX,
            retransmitted: 0,
            timeouts: 0,
            hops: 0,
            base_rtt_ps: 0,
        }
    }

    /// Wire length of frame `i`.
    #[inline]
    pub fn frame_len(&self, i: u32, frame_bytes: u32) -> u16 {
        if i + 1 == self.n_frames {
            self.last_len
        } else {
            frame_bytes as u16
        }
    }

    /// This flow (id `id`) as the trace shows it.
    pub(super) fn view(&self, id: u32, seq: Option<u32>) -> FlowView {
        FlowView {
            id,
            src: self.src,
            dst: self.dst,
            size: self.size,
            n_frames: self.n_frames,
            seq,
        }
    }

    /// What the flow's RL is told of a transport event.
    pub(super) fn ack_view(&self, kind: AckKind, acked_bytes: u64, rtt_ps: Time, frame_bytes: u32) -> AckView {
        AckView {
            kind,
            acked_bytes,
            rtt_ps,
            una_bytes: self.bytes(0, self.snd_una, frame_bytes),
            nxt_bytes: self.bytes(0, self.snd_nxt, frame_bytes),
            mss: frame_bytes,
            hops: self.hops,
            base_rtt_ps: self.base_rtt_ps,
        }
    }

    /// Bytes of frames `a..b`.
    #[inline]
    pub fn bytes(&self, a: u32, b: u32, frame_bytes: u32) -> u64 {
        if b <= a {
            return 0;
        }
        let full = (b - a) as u64 * frame_bytes as u64;
        if b == self.n_frames {
            full - (frame_bytes as u64 - self.last_len as u64)
        } else {
            full
        }
    }
}

/// A Poisson arrival process of flows at one station.
pub struct FlowGen {
    pub station: u16,
    /// Mean gap between arrivals (ps).
    pub mean_gap_ps: f64,
    /// Destinations, drawn uniformly (the station itself excluded).
    pub dests: Arc<[u16]>,
    /// The station's own place in `dests`, if it is one.
    pub me: Option<usize>,
    pub cdf: Arc<[(f64, f64)]>,
    /// Arrivals in [start, end).
    pub start: Time,
    pub end: Time,
    pub rng: Stream,
}

impl FlowGen {
    /// One process per member of `arrivals[i]` (`a`): `members` are the
    /// stations' indices in `a.stations`' order, `name(s)` a station's name
    /// (it names the random stream), arrivals cut at `duration`. The packet
    /// engine and the flow-level model build theirs here, so that a seed
    /// starts the same flows in both.
    pub fn for_arrivals(
        a: &ArrivalConfig,
        i: usize,
        members: &[u16],
        name: impl Fn(u16) -> String,
        seed: u64,
        duration: Time,
    ) -> Vec<FlowGen> {
        let cdf: Arc<[(f64, f64)]> = a.cdf.clone().into();
        let dests: Arc<[u16]> = members.to_vec().into();
        members
            .iter()
            .map(|&s| FlowGen {
                station: s,
                mean_gap_ps: PS_PER_S as f64 / a.rate_per_s,
                me: dests.iter().position(|&d| d == s),
                dests: dests.clone(),
                cdf: cdf.clone(),
                start: a.start_ps,
                end: a.end_ps.min(duration),
                rng: stream(seed, &format!("{}/flows/{i}", name(s))),
            })
            .collect()
    }

    /// The first arrival (the start plus one gap), None if it falls at or
    /// after the end.
    pub fn first_arrival(&mut self) -> Option<Time> {
        let first = self.start.saturating_add(exp_gap(self.mean_gap_ps, &mut self.rng));
        (first < self.end).then_some(first)
    }

    /// The flow arriving at `now`: its destination and size, then the next
    /// arrival (None: the process has ended). Draws in this order: size,
    /// destination, gap.
    pub fn next_flow(&mut self, now: Time) -> (u16, u64, Option<Time>) {
        let size = sample_cdf(&self.cdf, self.rng.gen::<f64>());
        let n = self.dests.len();
        let dst = match self.me {
            Some(m) => {
                let r = self.rng.gen_range(0..n - 1);
                self.dests[if r >= m { r + 1 } else { r }]
            }
            None => self.dests[self.rng.gen_range(0..n)],
        };
        let next = now.saturating_add(exp_gap(self.mean_gap_ps, &mut self.rng));
        (dst, size, (next < self.end).then_some(next))
    }

    /// Every arrival of the process, in time order: (start, destination, size).
    pub fn arrivals(mut self) -> impl Iterator<Item = (Time, u16, u64)> {
        let mut at = self.first_arrival();
        std::iter::from_fn(move || {
            let now = at?;
            let (dst, size, next) = self.next_flow(now);
            at = next;
            Some((now, dst, size))
        })
    }
}

/// An exponential gap of mean `mean_ps` (ps), at least 1.
pub fn exp_gap(mean_ps: f64, rng: &mut Stream) -> Time {
    let u = 1.0 - rng.gen::<f64>(); // (0, 1]
    let x = -u.ln() * mean_ps;
    if x >= 1e18 {
        Time::MAX / 4
    } else {
        (x as Time).max(1)
    }
}

/// Draws a size from a piecewise-linear CDF (inverse transform, linear
/// between points), rounded to whole bytes, at least 1.
pub fn sample_cdf(cdf: &[(f64, f64)], u: f64) -> u64 {
    let i = cdf.partition_point(|&(_, p)| p < u);
    let size = if i == 0 {
        cdf[0].0
    } else if i >= cdf.len() {
        cdf[cdf.len() - 1].0
    } else {
        let (s0, p0) = cdf[i - 1];
        let (s1, p1) = cdf[i];
        if p1 > p0 {
            s0 + (s1 - s0) * (u - p0) / (p1 - p0)
        } else {
            s1
        }
    };
    (size.round() as u64).max(1)
}

/// Mean of a piecewise-linear CDF (bytes).
pub fn cdf_mean(cdf: &[(f64, f64)]) -> f64 {
    let mut m = cdf[0].0 * cdf[0].1;
    for w in cdf.windows(2) {
        m += (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0;
    }
    m
}

/// The transport's part of a run.
pub struct Transport {
    pub flows: Vec<Flow>,
    pub gens: Vec<FlowGen>,
    pub ack_every: u32,
    pub rto_ps: Time,
    pub end_when_done: bool,
    /// Flows started and not finished (sender side), flows given one by
    /// one not yet started, arrival processes still running.
    pub active: usize,
    pub pending_starts: usize,
    pub gens_live: usize,
    /// Acks, nacks, discarded frames and timeouts: the results' counters.
    pub counts: TransportCounters,
}

impl Transport {
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty() && self.gens.is_empty()
    }

    /// Every flow has finished and none will start.
    pub fn done(&self) -> bool {
        self.active == 0 && self.pending_starts == 0 && self.gens_live == 0
    }
}

/// When the last of `n` frames (all `full` bytes but the last, `last`)
/// reaches the end of `hops` (rate, then the delay after it), all ready at
/// time 0, store and forward. In the tandem the frames' finishing times obey
/// C(k, h) = max(C(k, h - 1) + delay, C(k - 1, h)) + service; every path
/// through the (frame, hop) grid crosses each delay once, so C is the
/// delays plus the longest path of services: along the first frame to hop j,
/// down hop j for the other full frames (the slowest hop so far carries
/// them), then the last frame from hop j on. O(hops^2), whatever the size.
pub fn pipeline_ps(hops: &[(u64, Time)], n: u32, full: u64, last: u64) -> Time {
    let delays: Time = hops.iter().map(|h| h.1).sum();
    let s: Vec<Time> = hops.iter().map(|&(r, _)| serialization_ps(full, r)).collect();
    let t: Vec<Time> = hops.iter().map(|&(r, _)| serialization_ps(last, r)).collect();
    if n <= 1 {
        return delays + t.iter().sum::<Time>();
    }
    let mut best = 0;
    let (mut prefix, mut slowest) = (0, 0);
    for j in 0..hops.len() {
        prefix += s[j];
        slowest = slowest.max(s[j]);
        let rest: Time = t[j..].iter().sum();
        best = best.max(prefix + (n as Time - 2) * slowest + rest);
    }
    delays + best
}

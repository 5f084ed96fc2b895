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
pub(crate) type FlowPaths = BTreeMap<(Time, u32), (u32, u32)>;

/// One flow: its identity, its sender's and its receiver's state.
#[derive(Clone, Debug)]
pub struct Flow {
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub n_frames: u32,
    /// Wire length of the last frame (the others are full).
    pub last_len: u16,
    pub start: Time,
    /// When the receiver had every byte in order (`Time::MAX`: not yet).
    pub finish: Time,
    /// When the sender had every byte acknowledged (`Time::MAX`: not yet):
    /// the sender's completion time, one acknowledgement's trip after
    /// `finish` (the HPCC project's and the Ultra Ethernet reference's FCT).
    pub acked: Time,
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
    /// 802.1p priority of its data frames (its source station's).
    pub prio: u8,
}

impl Flow {
    /// A flow of `size` bytes of payload in frames of `frame_bytes` on the
    /// wire, `header_bytes` of each frame headers (0: the size is the
    /// flow's bytes on the wire): full frames and a last one of the rest
    /// and its header.
    pub(super) fn new(src: u32, dst: u32, size: u64, start: Time, frame_bytes: u32, header_bytes: u32) -> Flow {
        let payload = (frame_bytes - header_bytes) as u64;
        let n_frames = size.div_ceil(payload) as u32;
        let last_len = (size - (n_frames as u64 - 1) * payload + header_bytes as u64) as u16;
        Flow {
            src,
            dst,
            size,
            n_frames,
            last_len,
            start,
            finish: Time::MAX,
            acked: Time::MAX,
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
            prio: crate::frame::DATA_PRIORITY,
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

    /// Sender: takes the next frame to send at `now` (the caller checked
    /// that one is left); arms the retransmission deadline `rto_ps` ahead
    /// unless it is already armed.
    #[inline]
    pub fn take_next(&mut self, now: Time, rto_ps: Time) -> Sent {
        let seq = self.snd_nxt;
        let resent = seq < self.snd_max;
        if resent {
            self.retransmitted += 1;
        }
        self.snd_nxt += 1;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        let arm = self.rto_event == Time::MAX;
        self.rto_deadline = self.rto_deadline.min(now + rto_ps);
        if arm {
            self.rto_event = self.rto_deadline;
        }
        Sent {
            seq,
            resent,
            all_sent: self.snd_nxt == self.n_frames,
            arm_rto: arm.then_some(self.rto_event),
        }
    }

    /// Receiver: frame `seq` arrived at `now`. In order it is taken (an ACK
    /// every `ack_every` frames and for the last); beyond a gap it is
    /// discarded and the gap NACKed once; below, a duplicate, it is
    /// acknowledged again.
    #[inline]
    pub fn receive(&mut self, seq: u32, now: Time, ack_every: u32) -> Received {
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            self.unacked += 1;
            self.nack_for = u32::MAX;
            let last = self.rcv_nxt == self.n_frames;
            if last {
                self.finish = now;
            }
            let ack = self.unacked >= ack_every || last;
            if ack {
                self.unacked = 0;
            }
            Received {
                finished: last,
                discarded: false,
                reply: ack.then_some(Reply::Ack(self.rcv_nxt)),
            }
        } else if seq > self.rcv_nxt {
            let nack = self.nack_for != self.rcv_nxt;
            if nack {
                self.nack_for = self.rcv_nxt;
            }
            Received {
                finished: false,
                discarded: true,
                reply: nack.then_some(Reply::Nack(self.rcv_nxt)),
            }
        } else {
            Received {
                finished: false,
                discarded: false,
                reply: Some(Reply::Duplicate(self.rcv_nxt)),
            }
        }
    }

    /// Sender: an ACK (`nack` false) or a NACK of `seq` (the next frame
    /// the receiver expects) at `now`; a NACK goes back to it (go-back-N).
    /// Returns the first frame not acknowledged before, and by how much the
    /// count of the station's flows with frames left to send changes.
    #[inline]
    pub fn on_ack(&mut self, seq: u32, nack: bool, now: Time, rto_ps: Time) -> AckEffect {
        let cum = seq.min(self.n_frames);
        let old_una = self.snd_una;
        let was_all_sent = self.snd_nxt == self.n_frames;
        if cum > self.snd_una {
            self.snd_una = cum;
            self.rto_deadline = now + rto_ps;
        }
        // After going back, acknowledgements of the frames sent before can
        // overtake the new sending position.
        self.snd_nxt = self.snd_nxt.max(self.snd_una);
        if nack {
            self.snd_nxt = self.snd_una; // go back N
        }
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = Time::MAX;
        }
        let now_all_sent = self.snd_nxt == self.n_frames;
        AckEffect {
            old_una,
            pending: match (was_all_sent, now_all_sent) {
                (true, false) => 1,
                (false, true) => -1,
                _ => 0,
            },
        }
    }

    /// Sender: the retransmission timer event of `now` fired.
    #[inline]
    pub fn on_rto(&mut self, now: Time) -> Rto {
        if self.rto_event != now {
            return Rto::Stale;
        }
        self.rto_event = Time::MAX;
        if self.rl == NO_RL || self.rto_deadline == Time::MAX {
            return Rto::Stale;
        }
        if now < self.rto_deadline {
            self.rto_event = self.rto_deadline; // progress moved it: wait again
            return Rto::Rearm(self.rto_deadline);
        }
        // Nothing acknowledged for a whole RTO: go back to the first unacknowledged frame.
        self.timeouts += 1;
        let pending = self.snd_nxt == self.n_frames;
        self.snd_nxt = self.snd_una;
        self.rto_deadline = Time::MAX; // re-armed by the next frame sent
        Rto::Fired { pending_again: pending }
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
            entropy: 0,
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

/// A frame the sender takes ([`Flow::take_next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    pub seq: u32,
    /// Sent before (after a NACK or a timeout).
    pub resent: bool,
    /// It was the last frame not yet sent.
    pub all_sent: bool,
    /// A retransmission timer event to schedule, at this time.
    pub arm_rto: Option<Time>,
}

/// What the receiver answers a data frame with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Cumulative: every frame below this one received.
    Ack(u32),
    /// A gap at this frame.
    Nack(u32),
    /// An ACK of a frame received before.
    Duplicate(u32),
}

/// What a data frame did at the receiver ([`Flow::receive`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// It was the flow's last byte in order.
    pub finished: bool,
    /// Beyond a gap: dropped by the receiver.
    pub discarded: bool,
    pub reply: Option<Reply>,
}

/// What an acknowledgement did at the sender ([`Flow::on_ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckEffect {
    pub old_una: u32,
    /// +1: the flow has frames to send again; -1: no more; 0: unchanged.
    pub pending: i8,
}

/// A retransmission timer event ([`Flow::on_rto`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rto {
    /// Superseded, the flow finished, or nothing in flight.
    Stale,
    /// Progress moved the deadline: wait until this time.
    Rearm(Time),
    /// Timed out: the sender goes back to its first unacknowledged frame
    /// (`pending_again`: it had sent every frame, and has frames to send again).
    Fired { pending_again: bool },
}

/// A Poisson arrival process of flows at one station.
pub struct FlowGen {
    pub station: u32,
    /// Mean gap between arrivals (ps).
    pub mean_gap_ps: f64,
    /// Destinations, drawn uniformly (the station itself excluded).
    pub dests: Arc<[u32]>,
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
        members: &[u32],
        name: impl Fn(u32) -> String,
        seed: u64,
        duration: Time,
    ) -> Vec<FlowGen> {
        let cdf: Arc<[(f64, f64)]> = a.cdf.clone().into();
        let dests: Arc<[u32]> = members.to_vec().into();
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
    pub fn next_flow(&mut self, now: Time) -> (u32, u64, Option<Time>) {
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
    pub fn arrivals(mut self) -> impl Iterator<Item = (Time, u32, u64)> {
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

/// What the results need of a run's collective jobs.
pub struct JobsState {
    pub plan: crate::collective::Plan,
    pub tags: Vec<(u32, crate::collective::FlowTag)>,
    pub payload_bps: Vec<Vec<f64>>,
}

/// The transport's part of a run.
pub struct Transport {
    pub flows: Vec<Flow>,
    pub gens: Vec<FlowGen>,
    /// Bytes of each data frame that are headers (`workload.header_bytes`).
    pub header_bytes: u32,
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
    /// Given flows that wait for others (None: none does).
    pub deps: Option<Box<super::deps::Deps>>,
    /// Collective jobs (None: none): their plan, each job flow's tag, each
    /// job's rank payload rates (bit/s), for the results.
    pub jobs: Option<Box<JobsState>>,
    /// A selective transport's (`Scheme::SELECTIVE`) settings, and each
    /// flow's two ends (net::sack), by flow id; empty otherwise.
    pub sel_cfg: crate::scheme::Selective,
    pub sel: Vec<super::sack::SelFlow>,
    /// Receiver credit (`Selective::credit`): each station's pull pacer and
    /// its time per quantum (ps), each flow's side at its receiver.
    pub pacers: Vec<super::credit::PullPacer>,
    pub quantum_ps: Vec<f64>,
    pub sinks: Vec<super::credit::PullSink>,
}

impl Transport {
    /// Flows recover losses selectively, with `cfg`: every flow gets its
    /// two ends (those that arrive later get theirs when they start).
    pub fn selective(&mut self, cfg: crate::scheme::Selective, line_bps: &[f64]) {
        self.sel_cfg = cfg;
        self.sel = (0..self.flows.len()).map(|_| super::sack::SelFlow::new()).collect();
        if let Some(c) = cfg.credit {
            self.pacers = vec![Default::default(); line_bps.len()];
            self.quantum_ps = line_bps
                .iter()
                .map(|&r| 8.0 * super::credit::QUANTUM as f64 * 1e12 / r.max(1.0) / c.rate_fraction)
                .collect();
            self.sinks = vec![Default::default(); self.flows.len()];
        }
    }

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

/// Frames beyond which a sprayed flow's ideal is the one path's: what its
/// shorter last frame could gain by overtaking is under 1/4096 of it.
const SPRAYED_EXACT_FRAMES: u32 = 4096;

/// The ideal FCT when frames are sprayed over paths of their own: each
/// frame leaves the sender's link in turn, crosses the middle hops alone,
/// and the receiver's link sends them in the order they reach it (the
/// shorter last frame may overtake full ones). Equals [`pipeline_ps`] for
/// frames of one size on hops of one rate; a lower bound otherwise.
pub fn sprayed_pipeline_ps(hops: &[(u64, Time)], n: u32, full: u64, last: u64) -> Time {
    if n <= 1 || hops.len() < 2 || n > SPRAYED_EXACT_FRAMES {
        return pipeline_ps(hops, n, full, last);
    }
    let h = hops.len();
    let size = |i: u32| if i + 1 == n { last } else { full };
    let mid: Time = hops[..h - 1].iter().map(|x| x.1).sum();
    let mut left = 0;
    let mut arrive: Vec<(Time, u32)> = (0..n)
        .map(|i| {
            left += serialization_ps(size(i), hops[0].0);
            let cross: Time = hops[1..h - 1].iter().map(|&(r, _)| serialization_ps(size(i), r)).sum();
            (left + cross + mid, i)
        })
        .collect();
    arrive.sort_unstable();
    let (rate, delay) = hops[h - 1];
    let mut free = 0;
    for (at, i) in arrive {
        free = free.max(at) + serialization_ps(size(i), rate);
    }
    free + delay
}

#[cfg(test)]
mod tests {
    use super::*;

    const FB: u32 = 1500;

    #[test]
    fn a_sprayed_last_frame_may_overtake_and_the_ideal_allows_it() {
        // Four hops of 10 Gbit/s and 1 us: 1,500 + 359 bytes. The short
        // frame, on a path of its own, reaches the last switch first.
        let hops = [(10_000_000_000u64, 1_000_000 as Time); 4];
        let one_path = pipeline_ps(&hops, 2, 1500, 359);
        let sprayed = sprayed_pipeline_ps(&hops, 2, 1500, 359);
        assert_eq!(sprayed, 4 * 1_200_000 + 4_000_000, "the first frame's own arrival");
        assert!(sprayed < one_path);
        // Frames of one size on hops of one rate: the one path's ideal.
        for n in [2, 3, 50] {
            assert_eq!(sprayed_pipeline_ps(&hops, n, 1500, 1500), pipeline_ps(&hops, n, 1500, 1500));
        }
        // A last frame that cannot overtake: the same too.
        let hops2 = [(10_000_000_000u64, 1_000_000 as Time); 2];
        assert_eq!(sprayed_pipeline_ps(&hops2, 3, 1500, 700), pipeline_ps(&hops2, 3, 1500, 700));
    }

    const RTO: Time = 1_000;

    /// A flow of `n` full frames whose sender has its RL (so that its
    /// retransmission timer counts).
    fn flow(n: u32) -> Flow {
        let mut f = Flow::new(0, 1, n as u64 * FB as u64, 0, FB, 0);
        f.rl = 0;
        f
    }

    /// A frame lost in the network: the receiver discards what follows and
    /// NACKs the gap once; the sender goes back to it and sends every frame
    /// from there again (go-back-N), counting them as retransmissions.
    #[test]
    fn a_gap_is_nacked_once_and_the_sender_goes_back_n() {
        let (mut tx, mut rx) = (flow(6), flow(6));
        let sent: Vec<u32> = (0..5).map(|t| tx.take_next(t, RTO).seq).collect();
        assert_eq!(sent, vec![0, 1, 2, 3, 4]);
        // Frame 1 is lost.
        assert_eq!(rx.receive(0, 10, 1).reply, Some(Reply::Ack(1)));
        let r = rx.receive(2, 11, 1);
        assert!(r.discarded);
        assert_eq!(r.reply, Some(Reply::Nack(1)));
        let r = rx.receive(3, 12, 1);
        assert!(r.discarded && r.reply.is_none(), "one NACK per gap");
        // The sender hears ACK 1, then NACK 1: it goes back to frame 1.
        assert_eq!(tx.on_ack(1, false, 20, RTO).old_una, 0);
        tx.on_ack(1, true, 21, RTO);
        assert_eq!((tx.snd_una, tx.snd_nxt), (1, 1));
        let again: Vec<u32> = (0..5).map(|t| tx.take_next(30 + t, RTO).seq).collect();
        assert_eq!(again, vec![1, 2, 3, 4, 5]);
        assert_eq!(tx.retransmitted, 4, "frames 1-4 went twice");
        for seq in 1..6 {
            let r = rx.receive(seq, 40 + seq as Time, 1);
            assert_eq!(r.reply, Some(Reply::Ack(seq + 1)));
            assert_eq!(r.finished, seq == 5);
        }
        assert_eq!(rx.finish, 45);
        // A frame received before is acknowledged again, not taken.
        assert_eq!(rx.receive(2, 50, 1).reply, Some(Reply::Duplicate(6)));
    }

    /// ACKs every `ack_every` frames, and always for the last.
    #[test]
    fn the_receiver_acks_every_n_frames_and_the_last() {
        let mut rx = flow(5);
        let acks: Vec<Option<Reply>> = (0..5).map(|s| rx.receive(s, s as Time, 2).reply).collect();
        assert_eq!(
            acks,
            vec![None, Some(Reply::Ack(2)), None, Some(Reply::Ack(4)), Some(Reply::Ack(5))]
        );
    }

    /// The retransmission timer: armed by the first frame in flight, moved
    /// (not rescheduled) by progress, disarmed when nothing is in flight; on
    /// expiry the sender goes back to its first unacknowledged frame.
    #[test]
    fn the_timeout_fires_only_after_an_rto_without_progress() {
        let mut tx = flow(4);
        let first = tx.take_next(0, RTO);
        assert_eq!(first.arm_rto, Some(RTO));
        assert_eq!(tx.take_next(5, RTO).arm_rto, None, "already armed");
        tx.take_next(6, RTO);
        // Progress at 500 moves the deadline to 1,500: the event at 1,000 waits again.
        tx.on_ack(1, false, 500, RTO);
        assert_eq!(tx.on_rto(RTO), Rto::Rearm(1_500));
        assert_eq!(tx.on_rto(1_200), Rto::Stale, "not the pending event");
        let fired = tx.on_rto(1_500);
        assert_eq!(fired, Rto::Fired { pending_again: false });
        assert_eq!((tx.snd_una, tx.snd_nxt, tx.timeouts), (1, 1, 1));
        // Everything acknowledged: no deadline, the timer event is stale.
        for t in 0..3 {
            tx.take_next(2_000 + t, RTO);
        }
        assert_eq!(tx.on_ack(4, false, 2_100, RTO).pending, 0);
        assert_eq!(tx.rto_deadline, Time::MAX);
        assert_eq!(tx.on_rto(2_000 + RTO), Rto::Stale);
    }

    /// The sender's "frames left to send" count moves with every way of
    /// reaching and leaving the end of the flow.
    #[test]
    fn the_pending_count_follows_the_sending_position() {
        let mut tx = flow(2);
        tx.take_next(0, RTO);
        let last = tx.take_next(1, RTO);
        assert!(last.all_sent);
        assert_eq!(tx.on_ack(1, true, 2, RTO).pending, 1, "a NACK reopens the flow");
        assert!(tx.take_next(3, RTO).all_sent);
        assert_eq!(tx.on_ack(2, false, 4, RTO).pending, 0);
        let mut tx = flow(2);
        tx.take_next(0, RTO);
        tx.take_next(1, RTO);
        assert_eq!(tx.on_rto(RTO), Rto::Fired { pending_again: true });
    }
}

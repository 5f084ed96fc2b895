//! The Ultra Ethernet transport (UE 1.0, 2025) as the consortium's
//! reference simulator (`ultraethernet/uet-htsim`) runs it: a selective
//! transport (net::sack: selective acknowledgements, a NACK per trimmed
//! frame, a timer at the oldest outstanding send), packets sprayed over
//! `paths` entropy values by a load balancer, bridges that trim instead of
//! dropping (net::trim), ECN marked on dequeue between 20% and 80% of a BDP,
//! and NSCC, the sender's window driven by delay and ECN:
//!
//! - **Constants** from the network (`fit_network`): its RTT (the longest
//!   base RTT of the flows' paths: a full frame there and its ACK back) and
//!   link rate C give its BDP; a = BDP / reference BDP (100 Gbit/s x 12 us),
//!   target = 0.75 x RTT with trimming (the RTT without), b = target / 12 us;
//!   alpha = 4 MSS a b / target, fair increase 5 MSS a, eta 0.15 MSS a,
//!   fast increase 0.25 a; the first window and the largest 1.5 BDP.
//! - **Per ACK**, from the delay (RTT less the flow's base RTT, its running
//!   minimum) and the echoed ECN mark: no mark and delay >= target: fair
//!   increase (fi per byte acknowledged, applied per window); no mark and
//!   below: proportional increase alpha (target - delay) per byte, or, after
//!   a window of delays under 1 us, fast increase 0.25 a per byte at once;
//!   mark and above target: multiplicative decrease by gamma (avg - target)
//!   / avg of the delay's moving average, at most once per base RTT and at
//!   most by half; mark and below: no change (the balancer moves off the
//!   path). Increases are applied when more than 8 MTU were acknowledged or
//!   an RTT passed; eta once per RTT.
//! - **Quick adapt**: per window of base RTT + target, if a NACK or a delay
//!   over 4 x target was seen and fewer than maxwnd / 8 bytes arrived, the
//!   window is set to what arrived and marks are ignored until what was then
//!   in flight is acknowledged.
//! - **A NACK** (a trimmed frame) takes its frame's bytes off the window; a
//!   timeout too.
//! - **Balancers** (`balancer`): oblivious (every entropy once per round,
//!   in a random XOR order), bitmap (the same, skipping entropies penalised
//!   by ECN 1, NACK 4 or timeout 15, one penalty point off per skip), reps
//!   (recycle the entropies of unmarked ACKs from a buffer of 8, random when
//!   none; frozen for 10 ms after a timeout), mixed (recycle every unmarked
//!   ACK's entropy first, else bitmap; the reference's default).
//!
//! Where cnsim differs from the reference on purpose is said in
//! docs/uet.md: a flow's sender sends through its station's NIC in round
//! robin with the other flows there (the reference's NIC too) but control
//! frames go strictly first (the reference gives them 10 turns in 11); ECMP
//! hashes (source, destination, entropy) with the run's seed rather than
//! (flow id, entropy, a random salt per switch); the random streams are
//! cnsim's.

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{AckKind, AckView, ExtFields, NetView, QueueView, Red, RlCore, SackFields, Scheme, Selective};
use crate::engine::rng::Stream;
use crate::engine::{Time, PS_PER_US};
use crate::error::ConfigError;
use crate::frame::Frame;
use serde::{Deserialize, Serialize};

mod balance;
use balance::{Balancer, Feedback};

/// UET parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UetParams {
    pub cc: Cc,
    pub balancer: BalancerKind,
    pub paths: u32,
    pub trim: bool,
    pub trim_bytes: u32,
    pub queue_bdp: f64,
    pub ecn_low_bdp: f64,
    pub ecn_high_bdp: f64,
    pub ack_bytes: u32,
    pub rto_us: Option<f64>,
    pub target_qdelay_us: Option<f64>,
    pub target_fraction: f64,
    pub ref_rtt_us: f64,
    pub ref_rate_gbps: f64,
    pub maxwnd_bdp: f64,
    pub fair_increase_mss: f64,
    pub alpha_mss: f64,
    pub eta_mss: f64,
    pub fast_increase: f64,
    pub fast_delay_us: f64,
    pub gamma: f64,
    pub max_decrease: f64,
    pub delay_ewma: f64,
    pub qa_gate: u32,
    pub qa_threshold: f64,
    pub adjust_mtus: f64,
    pub nack_base_rtt: bool,
    pub credit_per_pull_bytes: u32,
    pub pull_rate: f64,
}

/// Which congestion control runs (`cc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cc {
    Nscc,
    Rccc,
    Both,
}

/// The load balancer (`balancer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BalancerKind {
    Oblivious,
    Bitmap,
    Reps,
    Mixed,
}

/// The `[uet]` table.
pub fn table() -> Table {
    Table::new(
        "uet",
        "Ultra Ethernet transport (UE 1.0) as its reference simulator runs it (docs/uet.md): NSCC, spraying, trimming; for transport flows",
    )
    .choice(
        "cc",
        &["nscc", "rccc", "both"],
        "nscc",
        "congestion control: nscc (the sender's window), rccc (receiver credit), both",
    )
    .choice(
        "balancer",
        &["oblivious", "bitmap", "reps", "mixed"],
        "mixed",
        "load balancer choosing each packet's entropy: oblivious, bitmap (skip penalised entropies), reps (recycle unmarked ACKs' entropies), mixed (recycle, else bitmap)",
    )
    .int(
        "paths",
        64,
        Range::ge(1.0).le(65536.0),
        "entropy values a flow sprays over (a power of 2 for oblivious, bitmap and mixed)",
    )
    .flag("trim", true, "bridges trim a frame a full queue cannot take (false: drop it)")
    .int(
        "trim_bytes",
        64,
        Range::ge(64.0).le(9000.0),
        "length of a trimmed frame (bytes; at most a frame)",
    )
    .float(
        "queue_bdp",
        1.0,
        Range::ge(0.0),
        "each per_output bridge port's queue, in BDPs of the network (the reference: 1 with trimming, 5 without; 0: bridge.buffer_bytes)",
    )
    .float(
        "ecn_low_bdp",
        0.2,
        Range::ge(0.0),
        "ECN marking starts above this queue, in BDPs (probability rising linearly to 1 at ecn_high_bdp)",
    )
    .float("ecn_high_bdp", 0.8, Range::ge(0.0), "every frame leaving a longer queue is marked (BDPs)")
    .int(
        "ack_bytes",
        16_384,
        Range::ge(1.0).le(1e9),
        "the receiver acknowledges every this many bytes received (and at once for CE, an ACK request, the first frame)",
    )
    .float(
        "rto_us",
        0.0,
        Range::gt(0.0),
        "retransmission timeout from the oldest outstanding send (us)",
    )
    .optional("rto_us", "15 us + six full queues at line rate, the reference's")
    .float(
        "target_qdelay_us",
        0.0,
        Range::gt(0.0),
        "NSCC's target queueing delay (us)",
    )
    .optional("target_qdelay_us", "target_fraction x the network RTT with trimming, the RTT without")
    .float(
        "target_fraction",
        0.75,
        Range::gt(0.0),
        "with trimming, the target delay as a fraction of the network RTT",
    )
    .float("ref_rtt_us", 12.0, Range::gt(0.0), "the reference network's RTT NSCC's constants scale from (us)")
    .float("ref_rate_gbps", 100.0, Range::gt(0.0), "the reference network's link rate (Gbit/s)")
    .float("maxwnd_bdp", 1.5, Range::gt(0.0), "largest (and first) window, in BDPs of the flow's base RTT")
    .float("fair_increase_mss", 5.0, Range::ge(0.0), "fair increase per window: this many MSS x a")
    .float("alpha_mss", 4.0, Range::ge(0.0), "proportional increase gain: alpha = alpha_mss x MSS x a x b / target")
    .float("eta_mss", 0.15, Range::ge(0.0), "additive increase once per RTT: this many MSS x a")
    .float("fast_increase", 0.25, Range::ge(0.0), "fast increase per byte acknowledged: this x a")
    .float(
        "fast_delay_us",
        1.0,
        Range::ge(0.0),
        "fast increase after a window of delays below this (us)",
    )
    .float("gamma", 0.8, Range::ge(0.0).le(1.0), "multiplicative decrease gain")
    .float("max_decrease", 0.5, Range::gt(0.0).le(1.0), "one decrease keeps at least this share of the window")
    .float("delay_ewma", 0.0125, Range::gt(0.0).le(1.0), "weight of a delay sample in its moving average")
    .int("qa_gate", 3, Range::ge(0.0).le(30.0), "quick adapt acts when fewer than maxwnd / 2^qa_gate bytes arrived in its window")
    .float("qa_threshold", 4.0, Range::ge(0.0), "quick adapt considers delays above this x the target")
    .float("adjust_mtus", 8.0, Range::ge(0.0), "increases are applied after more than this many MTU acknowledged (or an RTT)")
    .flag("nack_base_rtt", true, "a NACK's round trip may lower the flow's base RTT (the reference's default)")
    .int(
        "credit_per_pull_bytes",
        16_384,
        Range::ge(256.0).le(1e9),
        "RCCC: credit one PULL grants (bytes, in quanta of 256; the reference's 16,384 whatever its MTU)",
    )
    .float(
        "pull_rate",
        0.99,
        Range::gt(0.0).le(1.0),
        "RCCC: a receiver paces its PULLs at this fraction of its line rate",
    )
    .rule(
        &["ecn_low_bdp", "ecn_high_bdp"],
        "ecn_low_bdp <= ecn_high_bdp",
        |v| v.f("ecn_low_bdp") <= v.f("ecn_high_bdp"),
    )
}

impl Default for UetParams {
    fn default() -> Self {
        table().default_params()
    }
}

/// UET's frame extension. Data: its ECN mark and flags; an ACK or NACK:
/// the mark it echoes, the selective acknowledgement and the receiver's
/// count of bytes received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UetExt {
    pub sack_bits: u64,
    pub recvd_bytes: u64,
    pub sack_base: u32,
    /// Bit 0: ECN CE (or its echo); 1: ACK requested; 2: sent again (or
    /// answering a retransmission); 3: NACK of a frame trimmed at the last
    /// hop; 4: a PULL (RCCC's credit grant, in `recvd_bytes`).
    pub flags: u8,
}

const CE: u8 = 1;
const AR: u8 = 2;
const RTX: u8 = 4;
const LAST_HOP: u8 = 8;
/// A PULL (RCCC): `recvd_bytes` is the receiver's cumulative grant (quanta);
/// on a data frame, `recvd_bytes` is its pull target.
const PULL: u8 = 16;
/// Bytes in one quantum of credit.
const QUANTUM: u64 = super::CREDIT_QUANTUM;

impl UetExt {
    #[inline]
    pub fn ce(&self) -> bool {
        self.flags & CE != 0
    }
}

/// The network constants NSCC derives (`fit_network`).
#[derive(Debug, Clone, Copy, Default)]
struct Fitted {
    /// The network's RTT; a full frame (bytes).
    rtt_ps: Time,
    mtu: u64,
    target_ps: Time,
    /// Bytes per ps per ps of delay below target.
    alpha: f64,
    fi: f64,
    eta: f64,
    fi_scale: f64,
    qa_threshold_ps: Time,
    adjust_bytes: u64,
    /// The largest window of the network's BDP: RCCC's first (speculative)
    /// credit and its cap (bytes).
    maxwnd: u64,
    /// ECN thresholds (bytes), the queues (bytes), the RTO.
    ecn: Red,
    queue_bytes: Option<u64>,
    rto_ps: Time,
}

pub struct Uet {
    p: UetParams,
    fit: Fitted,
}

impl Uet {
    pub fn from_config(s: &SchemeConfig) -> Result<Uet, ConfigError> {
        let p: UetParams = table().parse(s.table(), &s.params)?;
        if matches!(p.balancer, BalancerKind::Oblivious | BalancerKind::Bitmap | BalancerKind::Mixed) && !p.paths.is_power_of_two() {
            return crate::error::fail(
                "uet.paths",
                format!(
                    "{} is not allowed with balancer = \"{}\"; expected a power of 2 (its entropies are masked)",
                    p.paths,
                    match p.balancer {
                        BalancerKind::Oblivious => "oblivious",
                        BalancerKind::Bitmap => "bitmap",
                        _ => "mixed",
                    }
                ),
            );
        }
        Ok(Uet { p, fit: Fitted::default() })
    }

    pub fn params(&self) -> &UetParams {
        &self.p
    }

    /// Receivers grant credit (RCCC); senders keep a window (NSCC).
    fn credit(&self) -> bool {
        self.p.cc != Cc::Nscc
    }

    fn window(&self) -> bool {
        self.p.cc != Cc::Rccc
    }
}

/// `red`'s thresholds times `ratio`, floored to whole bytes.
fn scaled_red(red: Red, ratio: f64) -> Red {
    Red {
        kmin_bytes: (red.kmin_bytes * ratio).floor(),
        kmax_bytes: (red.kmax_bytes * ratio).floor(),
        pmax: red.pmax,
    }
}

/// A UET CP: ECN marking on dequeue, linear from the low to the high
/// threshold on the queue the frame leaves behind (its bridge's RED profile
/// if it has one, else the scheme's from the BDP).
pub struct UetCp {
    red: Option<Red>,
    /// `red` as built (a `scale_buffers` event scales from it).
    built: Option<Red>,
    rng: Stream,
    /// Marks nothing (a port into a station under receiver credit, as the
    /// reference leaves its ToR downlinks unmarked then).
    off: bool,
}

/// One flow's sender: NSCC's state and its load balancer.
#[derive(Debug, Clone)]
pub struct UetRl {
    cwnd: u64,
    maxwnd: u64,
    base_rtt: Time,
    avg_delay: Time,
    inc_bytes: u64,
    received_bytes: u64,
    achieved_bytes: u64,
    bytes_ignored: u64,
    bytes_to_ignore: u64,
    fi_count: u64,
    increase: bool,
    trigger_qa: bool,
    qa_end: Time,
    last_dec: Time,
    last_adjust: Time,
    lb: Balancer,
    /// RCCC: credit (bytes; one frame's worth below zero at most), before
    /// any feedback (speculating), the receiver's cumulative grant (quanta).
    credit: i64,
    speculating: bool,
    pull: u64,
}

impl Uet {
    /// The delay's moving average takes sample `raw` (an RTT); a sample
    /// above target without a mark pulls it towards base_rtt / 4.
    fn update_delay(&self, rl: &mut UetRl, raw: Time, skip: bool) {
        let delay = raw.saturating_sub(rl.base_rtt) as f64;
        let w = self.p.delay_ewma;
        let sample = if !skip && delay > self.fit.target_ps as f64 {
            rl.base_rtt as f64 * 0.25
        } else {
            delay
        };
        rl.avg_delay = (w * sample + (1.0 - w) * rl.avg_delay as f64) as Time;
    }

    fn update_base_rtt(&self, rl: &mut UetRl, raw: Time, line_bps: f64) {
        if raw < rl.base_rtt {
            rl.base_rtt = raw;
            let bdp = raw as f64 / PS_PER_US as f64 * line_bps / 8e6;
            rl.maxwnd = (self.p.maxwnd_bdp * bdp) as u64;
        }
    }

    fn bounds(&self, rl: &mut UetRl) {
        rl.cwnd = rl.cwnd.max(self.fit.mtu).min(rl.maxwnd.max(self.fit.mtu));
    }

    /// Quick adapt; true when it acted (or ignores this feedback).
    fn quick_adapt(&self, rl: &mut UetRl, core: &RlCore, is_loss: bool, skip: bool, delay: Time, now: Time) -> bool {
        let mut done = false;
        if rl.bytes_ignored < rl.bytes_to_ignore && skip {
            done = true;
        } else if now > rl.qa_end {
            if rl.qa_end != 0
                && (rl.trigger_qa || is_loss || delay > self.fit.qa_threshold_ps)
                && rl.achieved_bytes < (rl.maxwnd >> self.p.qa_gate)
            {
                rl.cwnd = rl.achieved_bytes.max(self.fit.mtu);
                rl.bytes_to_ignore = core.inflight_bytes;
                rl.bytes_ignored = 0;
                rl.trigger_qa = false;
                done = true;
            }
            rl.achieved_bytes = 0;
            rl.qa_end = now + rl.base_rtt + self.fit.target_ps;
        }
        if done {
            rl.inc_bytes = 0;
            rl.received_bytes = 0;
        }
        done
    }

    fn on_ack(&self, rl: &mut UetRl, core: &RlCore, ack: &AckView, ce: bool, now: Time) {
        let newly = ack.acked_bytes;
        rl.achieved_bytes += newly;
        rl.received_bytes += newly;
        rl.bytes_ignored += newly;
        let delay = if ack.rtt_ps > 0 {
            self.update_base_rtt(rl, ack.rtt_ps, core.line_rate_bps);
            self.update_delay(rl, ack.rtt_ps, ce);
            ack.rtt_ps - rl.base_rtt
        } else {
            rl.avg_delay
        };
        rl.lb.feedback(ack.entropy, if ce { Feedback::Ecn } else { Feedback::Good }, now);
        if self.quick_adapt(rl, core, false, ce, delay, now) {
            return;
        }
        let target = self.fit.target_ps;
        if !ce && delay >= target {
            rl.inc_bytes += (self.fit.fi * newly as f64) as u64;
        } else if !ce {
            // Fast increase after a window of delays under fast_delay_us.
            let fast_ps = (self.p.fast_delay_us * PS_PER_US as f64) as Time;
            if delay < fast_ps {
                rl.fi_count += newly;
                if rl.fi_count > rl.cwnd || rl.increase {
                    rl.cwnd += (newly as f64 * self.fit.fi_scale) as u64;
                    rl.increase = true;
                } else {
                    rl.increase = false;
                }
            } else {
                rl.fi_count = 0;
                rl.increase = false;
            }
            if !rl.increase {
                rl.inc_bytes += (self.fit.alpha * newly as f64 * (target - delay) as f64) as u64;
            }
        } else if delay >= target {
            rl.increase = false;
            rl.fi_count = 0;
            let avg = rl.avg_delay;
            if avg > target && now.saturating_sub(rl.last_dec) > rl.base_rtt {
                let factor = (1.0 - self.p.gamma * (avg - target) as f64 / avg as f64).max(self.p.max_decrease);
                rl.cwnd = ((rl.cwnd as f64 * factor) as u64).max(self.fit.mtu);
                rl.last_dec = now;
            }
        }
        self.bounds(rl);
        if rl.received_bytes > self.fit.adjust_bytes || now.saturating_sub(rl.last_adjust) > self.fit.rtt_ps {
            rl.cwnd += rl.inc_bytes / rl.cwnd.max(1);
            if now.saturating_sub(rl.last_adjust) >= self.fit.rtt_ps {
                rl.cwnd = (rl.cwnd as f64 + self.fit.eta) as u64;
                rl.last_adjust = now;
            }
            rl.inc_bytes = 0;
            rl.received_bytes = 0;
        }
        self.bounds(rl);
    }

    /// RCCC's pull target after a frame was sent: what is left to send
    /// (at most the window and a frame, at most the largest window), less
    /// the credit in hand, shared with the station's other flows waiting
    /// to send, on top of what was granted: cumulative quanta, rounded up.
    fn pull_target(&self, core: &RlCore, rl: &UetRl) -> u64 {
        let mtu = self.fit.mtu as i64;
        let mut t = core.backlog_bytes as i64;
        if self.window() {
            t = t.min(rl.cwnd as i64 + mtu);
        }
        t = t.min(self.fit.maxwnd as i64) - rl.credit;
        if rl.speculating && t < mtu && core.backlog_bytes > 0 {
            t = mtu;
        }
        if core.nic_flows > 1 {
            t /= core.nic_flows as i64;
        }
        let t = t + (rl.pull * QUANTUM) as i64;
        if t <= 0 {
            0
        } else {
            (t as u64).div_ceil(QUANTUM)
        }
    }

    fn on_nack(&self, rl: &mut UetRl, core: &RlCore, ack: &AckView, last_hop: bool, ce: bool, now: Time) {
        if self.p.nack_base_rtt && ack.rtt_ps > 0 {
            self.update_base_rtt(rl, ack.rtt_ps, core.line_rate_bps);
        }
        rl.bytes_ignored += ack.acked_bytes;
        // The reference's estimate of a trimmed frame's delay: the network RTT.
        let w = self.p.delay_ewma;
        rl.avg_delay = (w * self.fit.rtt_ps as f64 + (1.0 - w) * rl.avg_delay as f64) as Time;
        rl.trigger_qa = true;
        // With receiver credit too, a frame trimmed at the last hop is the
        // credit's to pace, not the window's.
        if !(self.quick_adapt(rl, core, true, true, 0, now) || self.credit() && last_hop) {
            rl.cwnd = rl.cwnd.saturating_sub(ack.acked_bytes);
            self.bounds(rl);
        }
        let f = if last_hop {
            if ce {
                Feedback::Ecn
            } else {
                Feedback::Good
            }
        } else {
            Feedback::Nack
        };
        rl.lb.feedback(ack.entropy, f, now);
    }
}

impl Scheme for Uet {
    type Ext = UetExt;
    type Cp = UetCp;
    type Np = ();
    type Rl = UetRl;

    const MARKS_ECN: bool = true;
    const CP_ON_DEQUEUE: bool = true;
    const SELECTIVE: bool = true;
    const TRIMS: bool = true;
    const SCALES_CP: bool = true;

    fn fit_network(&mut self, net: &NetView) {
        let p = &self.p;
        let rtt_ps = net.longest_path().map_or(0, |x| x.base_rtt_ps);
        let rate_bps = net.min_line_rate_bps;
        let bdp = rtt_ps as f64 / 1e12 * rate_bps / 8.0;
        let mtu = net.frame_bytes as u64;
        let mss = (net.frame_bytes - net.header_bytes) as f64;
        let ref_bdp = p.ref_rate_gbps * 1e9 / 8.0 * p.ref_rtt_us * 1e-6;
        let a = bdp / ref_bdp;
        let target_ps = match p.target_qdelay_us {
            Some(us) => (us * PS_PER_US as f64) as Time,
            None if p.trim => (rtt_ps as f64 * p.target_fraction) as Time,
            None => rtt_ps,
        };
        let b = target_ps as f64 / (p.ref_rtt_us * PS_PER_US as f64);
        // Queue and ECN thresholds in whole frames of the BDP, as the reference sizes them.
        let bdp_frames = if mtu > 0 { (bdp / mtu as f64).ceil() } else { 0.0 };
        // No flows, no path, no BDP: the bridges keep their own buffers (a
        // queue of 0 BDPs would drop every frame).
        let queue_bytes =
            (p.queue_bdp > 0.0 && bdp_frames > 0.0).then(|| ((bdp_frames * p.queue_bdp).round() as u64).max(1) * mtu);
        let ecn = Red {
            kmin_bytes: ((bdp_frames * p.ecn_low_bdp).ceil() * mtu as f64),
            kmax_bytes: ((bdp_frames * p.ecn_high_bdp).ceil() * mtu as f64),
            pmax: 1.0,
        };
        let queue = queue_bytes.map_or(net.cp_queue_bytes, |q| q as f64);
        let rto_ps = match p.rto_us {
            Some(us) => (us * PS_PER_US as f64) as Time,
            None if queue.is_finite() && rate_bps > 0.0 => {
                15 * PS_PER_US + (queue * 6.0 * 8.0 / rate_bps * 1e12) as Time
            }
            None => 15 * PS_PER_US + 6 * rtt_ps,
        };
        self.fit = Fitted {
            rtt_ps,
            mtu,
            target_ps: target_ps.max(1),
            alpha: p.alpha_mss * mss * a * b / target_ps.max(1) as f64,
            fi: p.fair_increase_mss * mss * a,
            eta: p.eta_mss * mss * a,
            fi_scale: p.fast_increase * a,
            qa_threshold_ps: (p.qa_threshold * target_ps as f64) as Time,
            adjust_bytes: (p.adjust_mtus * mtu as f64) as u64,
            maxwnd: (p.maxwnd_bdp * bdp) as u64,
            ecn,
            queue_bytes,
            rto_ps,
        };
    }

    fn sprays(&self) -> bool {
        self.p.paths > 1
    }

    fn selective(&self) -> Selective {
        Selective {
            ack_bytes: self.p.ack_bytes,
            rto_ps: self.fit.rto_ps.max(1),
            trim: self.p.trim,
            trim_bytes: self.p.trim_bytes as u16,
            queue_bytes: self.fit.queue_bytes,
            credit: self.credit().then(|| super::Credit {
                per_pull: (self.p.credit_per_pull_bytes as u64).div_ceil(QUANTUM),
                most_slow: self.fit.maxwnd / QUANTUM,
                rate_fraction: self.p.pull_rate,
            }),
        }
    }

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        if self.p.trim_bytes >= net.frame_bytes && net.frame_bytes > 0 {
            return crate::error::fail(
                "uet.trim_bytes",
                format!(
                    "{} is not allowed here; expected less than a frame (defaults.frame_bytes = {})",
                    self.p.trim_bytes, net.frame_bytes
                ),
            );
        }
        let mut out = Vec::new();
        if net.paths.is_empty() {
            out.push("uet: no transport flows ([workload]): UET acts on transport flows only; nothing is sprayed, trimmed or controlled".to_string());
        }
        if net.header_bytes == 0 {
            out.push("uet: workload.header_bytes = 0: every byte of a frame counts as payload (the reference's packets carry 64 bytes of headers; set workload.header_bytes = 64 to compare)".to_string());
        }
        Ok(out)
    }

    fn new_cp(&self, rng: Stream, red: Option<Red>) -> UetCp {
        UetCp {
            red,
            built: red,
            rng,
            off: false,
        }
    }

    fn new_cp_at(&self, rng: Stream, red: Option<Red>, into_station: bool) -> UetCp {
        UetCp {
            red,
            built: red,
            rng,
            off: into_station && self.credit(),
        }
    }

    /// A degraded port (`scale_buffers`): its ECN thresholds times `ratio`,
    /// floored to whole bytes, as the reference sets a reduced-speed
    /// queue's (`_ecn_low * _failed_link_ratio` into a `mem_b`).
    fn scale_cp(&self, cp: &mut UetCp, ratio: f64) {
        cp.red = if ratio == 1.0 {
            cp.built
        } else {
            let base = cp.built.unwrap_or(self.fit.ecn);
            Some(scaled_red(base, ratio))
        };
    }

    fn cp_on_dequeue(&self, cp: &mut UetCp, frame: &mut Frame<UetExt>, q: QueueView, _cpid: u32) {
        if cp.off {
            return;
        }
        // The queue the frame leaves behind.
        let left = q.bytes.saturating_sub(frame.len as u64) as f64;
        let red = cp.red.unwrap_or(self.fit.ecn);
        if red.marks(left, &mut cp.rng) {
            frame.ext.flags |= CE;
        }
    }

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (UetRl, Option<Time>) {
        // NSCC's first window is its largest: 1.5 BDP of the network's RTT.
        let bdp = self.fit.rtt_ps as f64 / 1e12 * core.line_rate_bps / 8.0;
        let maxwnd = (self.p.maxwnd_bdp * bdp) as u64;
        core.window_bytes = maxwnd.max(self.fit.mtu);
        let rl = UetRl {
            cwnd: core.window_bytes,
            maxwnd,
            base_rtt: self.fit.rtt_ps,
            avg_delay: 0,
            inc_bytes: 0,
            received_bytes: 0,
            achieved_bytes: 0,
            bytes_ignored: 0,
            bytes_to_ignore: 0,
            fi_count: 0,
            increase: false,
            trigger_qa: false,
            qa_end: 0,
            last_dec: 0,
            last_adjust: 0,
            lb: Balancer::Unset,
            credit: self.fit.maxwnd as i64,
            speculating: true,
            pull: 0,
        };
        if !self.window() {
            core.window_bytes = u64::MAX;
        }
        (rl, None)
    }

    fn rp_on_send(&self, core: &mut RlCore, rl: &mut UetRl, frame: &mut Frame<UetExt>, _now: Time, rng: &mut Stream) -> Option<Time> {
        if let Balancer::Unset = rl.lb {
            rl.lb = Balancer::new(self.p.balancer, self.p.paths, rng);
        }
        frame.entropy = rl.lb.next(rng);
        if self.credit() {
            rl.credit -= frame.len as i64;
            frame.ext.recvd_bytes = self.pull_target(core, rl);
            if rl.credit <= 0 {
                // Out of credit: ask for the acknowledgement now, or it
                // waits for frames that cannot be sent.
                frame.ext.flags |= AR;
            }
        }
        None
    }

    fn rp_on_note(&self, _core: &mut RlCore, rl: &mut UetRl, note: &UetExt, _cpid: u32, _now: Time, _rng: &mut Stream) -> Option<Time> {
        if note.flags & PULL != 0 {
            rl.speculating = false;
            rl.credit = rl.credit.min(0);
            if note.recvd_bytes > rl.pull {
                rl.credit = (rl.credit + ((note.recvd_bytes - rl.pull) * QUANTUM) as i64).min(self.fit.maxwnd as i64);
                rl.pull = note.recvd_bytes;
            }
        }
        None
    }

    fn sack_gate(&self, rl: &UetRl) -> bool {
        !self.credit() || rl.credit > 0
    }

    fn sack_pull_target(&self, data: &UetExt) -> u64 {
        data.recvd_bytes
    }

    fn sack_pull(&self, latest: u64) -> UetExt {
        UetExt {
            recvd_bytes: latest,
            flags: PULL,
            ..UetExt::default()
        }
    }

    fn rp_on_ack(&self, core: &mut RlCore, rl: &mut UetRl, ack: &AckView, echo: &UetExt, now: Time, _rng: &mut Stream) -> Option<Time> {
        if ack.kind != AckKind::Timeout && rl.speculating {
            // The first feedback ends speculation: unused credit is dropped.
            rl.speculating = false;
            rl.credit = rl.credit.min(0);
        }
        let last_hop = echo.flags & LAST_HOP != 0;
        if !self.window() {
            // RCCC alone: no window, the balancer still learns.
            let f = match ack.kind {
                AckKind::Ack if echo.ce() => Feedback::Ecn,
                AckKind::Ack => Feedback::Good,
                AckKind::Nack if last_hop => {
                    if echo.ce() {
                        Feedback::Ecn
                    } else {
                        Feedback::Good
                    }
                }
                AckKind::Nack => Feedback::Nack,
                AckKind::Timeout => Feedback::Timeout,
            };
            let e = if ack.kind == AckKind::Timeout { 0 } else { ack.entropy };
            rl.lb.feedback(e, f, now);
            return None;
        }
        match ack.kind {
            AckKind::Ack => self.on_ack(rl, core, ack, echo.ce(), now),
            AckKind::Nack => self.on_nack(rl, core, ack, last_hop, echo.ce(), now),
            AckKind::Timeout => {
                rl.cwnd = rl.cwnd.saturating_sub(ack.acked_bytes).max(self.fit.mtu);
                // The reference reports a timeout on entropy 0.
                rl.lb.feedback(0, Feedback::Timeout, now);
            }
        }
        core.window_bytes = rl.cwnd;
        None
    }

    fn sack_stamp(&self, ext: &mut UetExt, ar: bool, resent: bool) {
        if ar {
            ext.flags |= AR;
        }
        if resent {
            ext.flags |= RTX;
        }
    }

    fn sack_flags(&self, data: &UetExt) -> (bool, bool) {
        (data.flags & CE != 0, data.flags & AR != 0)
    }

    fn sack_ack(&self, data: &UetExt, sack: &SackFields) -> UetExt {
        let mut flags = data.flags & (CE | RTX);
        if sack.last_hop {
            flags |= LAST_HOP;
        }
        UetExt {
            sack_bits: sack.bits,
            recvd_bytes: sack.recvd_bytes,
            sack_base: sack.base,
            flags,
        }
    }

    fn sack_of(&self, ack: &UetExt) -> SackFields {
        SackFields {
            base: ack.sack_base,
            bits: ack.sack_bits,
            recvd_bytes: ack.recvd_bytes,
            rtx: ack.flags & RTX != 0,
            last_hop: ack.flags & LAST_HOP != 0,
        }
    }

    fn ack_echo(&self, data: &UetExt) -> UetExt {
        UetExt {
            flags: data.flags & CE,
            ..UetExt::default()
        }
    }

    fn ext_fields(&self, ext: &UetExt) -> ExtFields {
        ExtFields {
            ce: ext.ce(),
            uet: Some(super::UetFields {
                ar: ext.flags & AR != 0,
                rtx: ext.flags & RTX != 0,
                sack_base: ext.sack_base,
                sack_bits: ext.sack_bits,
                recvd_bytes: ext.recvd_bytes,
                last_hop: ext.flags & LAST_HOP != 0,
            }),
            ..ExtFields::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fitted() -> Uet {
        let mut u = Uet::from_config(&SchemeConfig::of("uet", &UetParams::default())).unwrap();
        let net = NetView {
            min_line_rate_bps: 100e9,
            slowest_sender: "H0".into(),
            cp_queue_bytes: 1e9,
            paths: vec![super::super::PathView {
                flow: "H0->H13".into(),
                base_rtt_ps: 14_022_720,
                hops: 6,
            }],
            frame_bytes: 4150,
            header_bytes: 64,
            ctrl_bytes: 64,
        };
        u.fit_network(&net);
        u
    }

    /// The reference's constants at 100 Gbit/s and a 14.02272 us RTT
    /// (its validation fabric), from its own printout.
    #[test]
    fn nscc_constants_match_the_reference() {
        let u = fitted();
        let f = u.fit;
        assert_eq!(f.rtt_ps, 14_022_720);
        assert_eq!(f.target_ps, 10_517_040);
        assert!((f.alpha - 0.00159158).abs() < 1e-7, "{}", f.alpha);
        assert!((f.fi - 23_873.7).abs() < 0.1, "{}", f.fi);
        assert!((f.eta - 716.21).abs() < 0.01, "{}", f.eta);
        assert!((f.fi_scale - 0.29214).abs() < 1e-5);
        assert_eq!(f.queue_bytes, Some(43 * 4150), "1 BDP: 43 frames");
        assert_eq!((f.ecn.kmin_bytes, f.ecn.kmax_bytes), (37_350.0, 145_250.0));
        assert_eq!(f.rto_ps, 100_656_000, "15 us + six queues at line rate");
        let mut core = RlCore::at_line_rate(100e9);
        let (rl, _) = u.new_rl(&mut core, 0);
        assert_eq!(core.window_bytes, 262_926, "1.5 BDP");
        assert_eq!(rl.maxwnd, 262_926);
    }

    /// A mark with a delay above target cuts the window by the moving
    /// average's excess, at most once per base RTT and at most by half.
    #[test]
    fn a_marked_ack_above_target_cuts_once_per_base_rtt() {
        let u = fitted();
        let mut core = RlCore::at_line_rate(100e9);
        let (mut rl, _) = u.new_rl(&mut core, 0);
        rl.avg_delay = 3 * u.fit.target_ps;
        rl.qa_end = u64::MAX; // quick adapt out of the way
        let ack = AckView {
            kind: AckKind::Ack,
            acked_bytes: 4150,
            rtt_ps: rl.base_rtt + 2 * u.fit.target_ps,
            una_bytes: 0,
            nxt_bytes: 0,
            mss: 4150,
            hops: 6,
            base_rtt_ps: rl.base_rtt,
            entropy: 1,
        };
        let before = rl.cwnd;
        let t = 20_000_000;
        u.on_ack(&mut rl, &core, &ack, true, t);
        assert!(rl.cwnd < before && rl.cwnd >= before / 2, "{before} -> {}", rl.cwnd);
        let once = rl.cwnd;
        u.on_ack(&mut rl, &core, &ack, true, t + 1);
        assert_eq!(rl.cwnd, once, "not twice in one base RTT");
    }
}

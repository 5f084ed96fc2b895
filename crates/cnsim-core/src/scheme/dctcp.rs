//! DCTCP (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010): a
//! window scheme for transport flows.
//!
//! - CP: a frame that joins a queue longer than K is marked Congestion
//!   Experienced (the step marking of the paper, on the instantaneous queue).
//! - Receiver: echoes each frame's mark in its acknowledgement (every frame
//!   acknowledged: the paper's two-state delayed-ACK machine is then exact).
//! - Sender: alpha = (1 - g) alpha + g F once per window of data, F the
//!   fraction of bytes acknowledged with the mark; on a marked ACK, at most
//!   once per window, cwnd = cwnd (1 - alpha / 2); otherwise slow start below
//!   ssthresh and one MSS per window above. A NACK halves cwnd (as TCP's
//!   fast retransmit), a timeout sets it to one MSS. Frames leave at line
//!   rate as the window allows.
//! - **[assumed]** The window grows only while it limits the flow (RFC
//!   7661's cwnd validation, as Linux's `tcp_is_cwnd_limited`): in slow
//!   start while cwnd < 2 x the most bytes in flight in this or the last
//!   window, above ssthresh while they came within one MSS of cwnd. Without
//!   it a flow whose own link is its bottleneck grows cwnd by every ACK and
//!   meets its first competitor with a window of megabytes, which alpha,
//!   near 0 after a long time without marks, cuts by little.
//!
//! Three choices the paper leaves to the implementation, each a parameter
//! (docs/schemes.md shows what each does to the peak queue of an incast):
//!
//! - `mark_at`: `enqueue` (default: the paper's "marked if the queue
//!   occupancy is greater than K upon its arrival"; the queue includes the
//!   arriving frame) or `dequeue` (a frame is marked as it leaves a queue
//!   that, including it, exceeds K: htsim's, and feedback no longer waits
//!   out the queue);
//! - `alpha_init`: alpha's first value, 1 (default: Linux's
//!   `dctcp_alpha_on_init`, a first cut halves the window as TCP's would)
//!   or anything down to 0 (htsim: the first cuts are by g F / 2);
//! - `slow_start_exit`: on the first ECN echo in slow start, `cut` (default:
//!   TCP's reaction to ECE, Linux and the paper: cwnd (1 - alpha / 2), and
//!   slow start ends there) or `ssthresh` (htsim: ssthresh = cwnd, the window
//!   kept; the next cut waits a window of data).
//!
//! Defaults from the paper: K = 65 packets of 1,500 B at 10 Gbit/s, g = 1/16;
//! initial window 10 MSS (RFC 6928) **[assumed]**.

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{AckKind, AckView, ExtFields, NetView, QueueView, Red, RlCore, Scheme, unreachable_threshold};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::error::ConfigError;
use crate::frame::Frame;
use serde::{Deserialize, Serialize};

/// DCTCP parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DctcpParams {
    pub k_bytes: f64,
    pub g: f64,
    pub init_cwnd_frames: f64,
    pub min_cwnd_frames: f64,
    pub cwnd_validation: bool,
    pub mark_at: MarkAt,
    pub alpha_init: f64,
    pub slow_start_exit: SlowStartExit,
}

/// Where the CP marks (`mark_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkAt {
    Enqueue,
    Dequeue,
}

/// What the first ECN echo in slow start does (`slow_start_exit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlowStartExit {
    Cut,
    Ssthresh,
}

/// The `[dctcp]` table.
pub fn table() -> Table {
    Table::new("dctcp", "DCTCP parameters (Alizadeh et al., SIGCOMM 2010); for transport flows")
        .float(
            "k_bytes",
            97_500.0,
            Range::ge(0.0),
            "marking threshold K: a frame joining a longer queue is marked (bytes; 65 x 1,500 B)",
        )
        .float("g", 1.0 / 16.0, Range::gt(0.0).le(1.0), "weight g of the marked fraction in alpha")
        .float(
            "init_cwnd_frames",
            10.0,
            Range::ge(1.0),
            "[assumed] initial window (full frames, RFC 6928)",
        )
        .float("min_cwnd_frames", 1.0, Range::gt(0.0), "smallest window (full frames)")
        .flag(
            "cwnd_validation",
            true,
            "[assumed] the window grows only while it limits the flow (RFC 7661, Linux); false: by every ACK",
        )
        .choice(
            "mark_at",
            &["enqueue", "dequeue"],
            "enqueue",
            "mark a frame joining a queue above K (the paper) or leaving one (htsim)",
        )
        .float(
            "alpha_init",
            1.0,
            Range::ge(0.0).le(1.0),
            "alpha's first value (Linux: 1, a first cut halves; htsim: 0)",
        )
        .choice(
            "slow_start_exit",
            &["cut", "ssthresh"],
            "cut",
            "first ECN echo in slow start: cut by alpha / 2 (the paper, Linux) or only end slow start (htsim)",
        )
        .rule(
            &["min_cwnd_frames", "init_cwnd_frames"],
            "min_cwnd_frames <= init_cwnd_frames",
            |v| v.f("min_cwnd_frames") <= v.f("init_cwnd_frames"),
        )
}

impl Default for DctcpParams {
    fn default() -> Self {
        table().default_params()
    }
}

/// DCTCP's frame extension: the ECN CE bit of a data frame, echoed (ECE)
/// in its acknowledgement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DctcpExt {
    pub ce: bool,
}

/// Sender state of one flow.
#[derive(Debug, Clone)]
pub struct DctcpRl {
    pub cwnd: f64,
    pub ssthresh: f64,
    pub alpha: f64,
    /// Bytes acknowledged, and of them marked, in the current observation window.
    pub acked: u64,
    pub marked: u64,
    /// The observation window ends when the flow's acknowledged bytes reach this.
    pub window_end: u64,
    /// No second cut before the acknowledged bytes reach this.
    pub cut_end: u64,
    /// The most bytes in flight seen by an ACK in the current and in the
    /// last observation window (cwnd validation).
    pub max_inflight: u64,
    pub last_max_inflight: u64,
}

pub struct Dctcp {
    p: DctcpParams,
}

impl Dctcp {
    pub fn from_config(s: &SchemeConfig) -> Result<Dctcp, ConfigError> {
        Ok(Dctcp {
            p: table().parse(s.table(), &s.params)?,
        })
    }

    pub fn new(p: DctcpParams) -> Result<Dctcp, ConfigError> {
        Dctcp::from_config(&SchemeConfig::of("dctcp", &p))
    }

    pub fn params(&self) -> &DctcpParams {
        &self.p
    }

    fn min_cwnd(&self, mss: u32) -> f64 {
        self.p.min_cwnd_frames * mss as f64
    }
}

/// A DCTCP CP: the step at `dctcp.k_bytes`, unless its bridge has a RED
/// profile of its own (then marked by it, with this stream).
pub struct DctcpCp {
    red: Option<(Red, Stream)>,
}

impl DctcpCp {
    #[inline]
    fn marks(&mut self, k_bytes: f64, q: u64) -> bool {
        match &mut self.red {
            None => q as f64 > k_bytes,
            Some((red, rng)) => red.marks(q as f64, rng),
        }
    }
}

impl Scheme for Dctcp {
    type Ext = DctcpExt;
    type Cp = DctcpCp;
    const MARKS_ECN: bool = true;
    type Np = ();
    type Rl = DctcpRl;

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        Ok(unreachable_threshold(
            "dctcp.k_bytes",
            self.p.k_bytes,
            net,
            "no frame is ever marked (the flows only lose frames)",
        )
        .into_iter()
        .collect())
    }

    fn new_cp(&self, rng: Stream, red: Option<Red>) -> DctcpCp {
        DctcpCp { red: red.map(|r| (r, rng)) }
    }

    const CP_ON_DEQUEUE: bool = true;

    fn cp_on_enqueue(&self, cp: &mut DctcpCp, frame: &mut Frame<DctcpExt>, q: QueueView, _cpid: u32) -> Option<DctcpExt> {
        if self.p.mark_at == MarkAt::Enqueue && cp.marks(self.p.k_bytes, q.bytes) {
            frame.ext.ce = true;
        }
        None
    }

    fn cp_on_dequeue(&self, cp: &mut DctcpCp, frame: &mut Frame<DctcpExt>, q: QueueView, _cpid: u32) {
        // The queue including the frame leaving it.
        if self.p.mark_at == MarkAt::Dequeue && cp.marks(self.p.k_bytes, q.bytes) {
            frame.ext.ce = true;
        }
    }

    fn ext_fields(&self, ext: &DctcpExt) -> ExtFields {
        ExtFields {
            ce: ext.ce,
            ..ExtFields::default()
        }
    }

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (DctcpRl, Option<Time>) {
        // The frame length is not known here: 1,500 B until the first ACK says otherwise.
        let cwnd = self.p.init_cwnd_frames * 1500.0;
        core.window_bytes = cwnd as u64;
        let rl = DctcpRl {
            cwnd,
            ssthresh: f64::INFINITY,
            alpha: self.p.alpha_init,
            acked: 0,
            marked: 0,
            window_end: 0,
            cut_end: 0,
            max_inflight: 0,
            last_max_inflight: 0,
        };
        (rl, None)
    }

    fn rp_on_ack(
        &self,
        core: &mut RlCore,
        rl: &mut DctcpRl,
        ack: &AckView,
        echo: &DctcpExt,
        _now: Time,
        _rng: &mut Stream,
    ) -> Option<Time> {
        let mss = ack.mss as f64;
        match ack.kind {
            AckKind::Timeout => {
                rl.ssthresh = (rl.cwnd / 2.0).max(2.0 * mss);
                rl.cwnd = mss;
                rl.cut_end = ack.nxt_bytes;
            }
            AckKind::Nack => {
                if ack.una_bytes >= rl.cut_end {
                    rl.cwnd = (rl.cwnd / 2.0).max(self.min_cwnd(ack.mss));
                    rl.ssthresh = rl.cwnd;
                    rl.cut_end = ack.una_bytes + rl.cwnd as u64;
                }
            }
            AckKind::Ack => {
                // In flight just before this ACK: what the window allowed.
                let inflight = ack.nxt_bytes.saturating_sub(ack.una_bytes) + ack.acked_bytes;
                rl.max_inflight = rl.max_inflight.max(inflight);
                rl.acked += ack.acked_bytes;
                if echo.ce {
                    rl.marked += ack.acked_bytes;
                }
                if ack.una_bytes >= rl.window_end {
                    // One window of data observed: update alpha with its marked fraction.
                    if rl.acked > 0 {
                        let f = rl.marked as f64 / rl.acked as f64;
                        rl.alpha = (1.0 - self.p.g) * rl.alpha + self.p.g * f;
                    }
                    rl.acked = 0;
                    rl.marked = 0;
                    rl.window_end = ack.nxt_bytes;
                    rl.last_max_inflight = rl.max_inflight;
                    rl.max_inflight = 0;
                }
                let used = if self.p.cwnd_validation {
                    rl.max_inflight.max(rl.last_max_inflight) as f64
                } else {
                    f64::INFINITY
                };
                if echo.ce && rl.cwnd < rl.ssthresh && self.p.slow_start_exit == SlowStartExit::Ssthresh {
                    // htsim: slow start ends; the window is kept, and cut
                    // (by alpha) no sooner than a window of data later.
                    rl.ssthresh = rl.cwnd;
                    rl.cut_end = ack.nxt_bytes;
                } else if echo.ce {
                    if ack.una_bytes >= rl.cut_end {
                        rl.cwnd = (rl.cwnd * (1.0 - rl.alpha / 2.0)).max(self.min_cwnd(ack.mss));
                        rl.ssthresh = rl.cwnd;
                        rl.cut_end = ack.nxt_bytes;
                    }
                } else if rl.cwnd < rl.ssthresh {
                    if rl.cwnd < 2.0 * used {
                        rl.cwnd += ack.acked_bytes as f64;
                    }
                } else if used + mss > rl.cwnd {
                    rl.cwnd += mss * ack.acked_bytes as f64 / rl.cwnd;
                }
            }
        }
        core.window_bytes = rl.cwnd.max(1.0) as u64;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::stream;

    fn core() -> RlCore {
        RlCore::at_line_rate(10e9)
    }

    fn ack(acked: u64, una: u64, nxt: u64) -> AckView {
        AckView {
            kind: AckKind::Ack,
            acked_bytes: acked,
            rtt_ps: 10_000_000,
            una_bytes: una,
            nxt_bytes: nxt,
            mss: 1500,
            hops: 2,
            base_rtt_ps: 10_000_000,
            entropy: 0,
        }
    }

    #[test]
    fn marks_above_k_only() {
        let d = Dctcp::new(DctcpParams::default()).unwrap();
        let q = |bytes| QueueView {
            bytes,
            rate_bps: 10_000_000_000,
            tx_bytes: 0,
            now: 0,
        };
        let mut f: Frame<DctcpExt> = Frame::data(0, 0, 1, 1500);
        d.cp_on_enqueue(&mut DctcpCp { red: None }, &mut f, q(97_500), 1);
        assert!(!f.ext.ce);
        d.cp_on_enqueue(&mut DctcpCp { red: None }, &mut f, q(97_501), 1);
        assert!(f.ext.ce);
    }

    #[test]
    fn slow_start_then_a_cut_by_alpha_once_per_window() {
        let d = Dctcp::new(DctcpParams::default()).unwrap();
        let mut c = core();
        let mut rng = stream(0, "t");
        let (mut rl, _) = d.new_rl(&mut c, 0);
        assert_eq!(c.window_bytes, 15_000);
        // Unmarked ACKs: the window grows by what they acknowledge (slow start).
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 1500, 15_000), &DctcpExt { ce: false }, 0, &mut rng);
        assert_eq!(c.window_bytes, 16_500);
        // alpha = (1 - g) + g x 0 after the first window.
        assert!((rl.alpha - 15.0 / 16.0).abs() < 1e-12);
        // A marked ACK cuts by alpha / 2, once per window of data.
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 3000, 18_000), &DctcpExt { ce: true }, 0, &mut rng);
        let w = 16_500.0 * (1.0 - rl.alpha / 2.0);
        assert_eq!(c.window_bytes, w as u64);
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 4500, 18_000), &DctcpExt { ce: true }, 0, &mut rng);
        assert_eq!(c.window_bytes, w as u64, "no second cut in the same window");
        // Above ssthresh: one MSS per window.
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 19_500, 20_000), &DctcpExt { ce: false }, 0, &mut rng);
        assert!((rl.cwnd - (w + 1500.0 * 1500.0 / w)).abs() < 1e-9);
    }

    #[test]
    fn the_window_grows_only_while_it_limits_the_flow() {
        let d = Dctcp::new(DctcpParams::default()).unwrap();
        let mut c = core();
        let mut rng = stream(0, "t");
        let (mut rl, _) = d.new_rl(&mut c, 0);
        // Slow start with 4 frames in flight (the sender's own link limits
        // it): the 15 KB window is more than twice that, and stays.
        for i in 1..=20u64 {
            d.rp_on_ack(
                &mut c,
                &mut rl,
                &ack(1500, 1500 * i, 1500 * (i + 3)),
                &DctcpExt { ce: false },
                0,
                &mut rng,
            );
        }
        assert_eq!(c.window_bytes, 15_000);
        // With 8 frames in flight (more than half the window) it grows again.
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 31_500, 42_000), &DctcpExt { ce: false }, 0, &mut rng);
        assert_eq!(c.window_bytes, 16_500);
        // Above ssthresh: only while the flight came within one MSS of cwnd.
        rl.ssthresh = 0.0;
        let w = rl.cwnd;
        for i in 0..40u64 {
            let una = 43_500 + 1500 * i;
            d.rp_on_ack(&mut c, &mut rl, &ack(1500, una, una + 3000), &DctcpExt { ce: false }, 0, &mut rng);
        }
        assert_eq!(rl.cwnd, w, "two windows of 3 frames in flight: no growth");
        let una = 43_500 + 1500 * 40;
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, una, una + 15_000), &DctcpExt { ce: false }, 0, &mut rng);
        assert!(rl.cwnd > w);
    }

    /// `mark_at = "dequeue"`: nothing happens on arrival; a frame leaving a
    /// queue that, including it, holds more than K is marked.
    #[test]
    fn marks_at_dequeue_when_asked() {
        let d = Dctcp::new(DctcpParams {
            mark_at: MarkAt::Dequeue,
            ..DctcpParams::default()
        })
        .unwrap();
        let q = |bytes| QueueView {
            bytes,
            rate_bps: 10_000_000_000,
            tx_bytes: 0,
            now: 0,
        };
        let mut f: Frame<DctcpExt> = Frame::data(0, 0, 1, 1500);
        d.cp_on_enqueue(&mut DctcpCp { red: None }, &mut f, q(200_000), 1);
        assert!(!f.ext.ce);
        d.cp_on_dequeue(&mut DctcpCp { red: None }, &mut f, q(97_500), 1);
        assert!(!f.ext.ce);
        d.cp_on_dequeue(&mut DctcpCp { red: None }, &mut f, q(97_501), 1);
        assert!(f.ext.ce);
        // The default marks on arrival only.
        let e = Dctcp::new(DctcpParams::default()).unwrap();
        let mut f: Frame<DctcpExt> = Frame::data(0, 0, 1, 1500);
        e.cp_on_dequeue(&mut DctcpCp { red: None }, &mut f, q(200_000), 1);
        assert!(!f.ext.ce);
    }

    /// alpha starts at `alpha_init`; with `slow_start_exit = "ssthresh"` the
    /// first echo in slow start keeps the window and ends slow start, and
    /// the next cut waits a window of data.
    #[test]
    fn alpha_init_and_the_slow_start_exit_are_options() {
        let mut rng = stream(0, "t");
        let d = Dctcp::new(DctcpParams {
            alpha_init: 0.0,
            slow_start_exit: SlowStartExit::Ssthresh,
            ..DctcpParams::default()
        })
        .unwrap();
        let mut c = core();
        let (mut rl, _) = d.new_rl(&mut c, 0);
        assert_eq!(rl.alpha, 0.0);
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 1500, 15_000), &DctcpExt { ce: true }, 0, &mut rng);
        assert_eq!((rl.cwnd, rl.ssthresh), (15_000.0, 15_000.0), "kept; slow start over");
        assert!((rl.alpha - 1.0 / 16.0).abs() < 1e-12, "the first window, all marked: g x 1");
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 3000, 16_500), &DctcpExt { ce: true }, 0, &mut rng);
        assert_eq!(rl.cwnd, 15_000.0, "no cut within the window");
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 15_000, 18_000), &DctcpExt { ce: true }, 0, &mut rng);
        assert!(
            (rl.cwnd - 15_000.0 * (1.0 - rl.alpha / 2.0)).abs() < 1e-9,
            "then a cut by alpha / 2"
        );
        // The defaults: alpha 1, the first echo halves the window.
        let d = Dctcp::new(DctcpParams::default()).unwrap();
        let (mut rl, _) = d.new_rl(&mut c, 0);
        assert_eq!(rl.alpha, 1.0);
        d.rp_on_ack(&mut c, &mut rl, &ack(1500, 1500, 15_000), &DctcpExt { ce: true }, 0, &mut rng);
        assert!((rl.cwnd - 7_500.0).abs() < 1e-9 && rl.ssthresh == rl.cwnd);
    }
}

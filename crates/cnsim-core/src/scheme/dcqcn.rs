//! DCQCN (schemes.md, "DCQCN"): congestion control of RoCEv2 (2015), the
//! descendant of QCN that data centres run with PFC.
//!
//! - CP: RED-like ECN marking as a frame leaves the queue: probability 0
//!   below Kmin, rising linearly to Pmax at Kmax, 1 above.
//! - NP (the destination): at most one CNP per flow per `cnp_interval` while
//!   marked frames arrive.
//! - RP: one rate limiter per flow (destination). On a CNP: TR = CR,
//!   CR = CR (1 - alpha / 2), alpha = (1 - g) alpha + g. Rate increase by a
//!   timer and a byte counter with the fast-recovery / additive / hyper stages
//!   of QCN (F = 5). **[assumed]** One timer of period `timer` serves both the
//!   alpha decay and the rate increase (both restart with each CNP and have the
//!   same 55 us period in the source).

use super::{Feedback, FeedbackKind, RlCore, Scheme};
use crate::config::{err, ConfigError};
use crate::engine::rng::Stream;
use crate::engine::{Time, PS_PER_US};
use crate::net::Frame;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// DCQCN parameters (engine units); defaults from schemes.md.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnParams {
    /// ECN marking thresholds (bytes) and the marking probability at Kmax.
    pub kmin_bytes: f64,
    pub kmax_bytes: f64,
    pub pmax: f64,
    /// At most one CNP per flow per this interval.
    pub cnp_interval_ps: Time,
    /// Alpha gain g.
    pub g: f64,
    /// Alpha-decay and rate-increase timer.
    pub timer_ps: Time,
    /// Byte counter of the rate increase (bytes).
    pub bc_bytes: f64,
    /// Fast-recovery threshold F (stages).
    pub fr_thr: u32,
    /// Additive and hyper increase steps (bit/s).
    pub r_ai_bps: f64,
    pub r_hai_bps: f64,
    /// Rate floor (bit/s).
    pub min_rate_bps: f64,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            kmin_bytes: 5_000.0,
            kmax_bytes: 200_000.0,
            pmax: 0.01,
            cnp_interval_ps: 50 * PS_PER_US,
            g: 1.0 / 256.0,
            timer_ps: 55 * PS_PER_US,
            bc_bytes: 10e6,
            fr_thr: 5,
            r_ai_bps: 40e6,
            r_hai_bps: 100e6,
            min_rate_bps: 10e6,
        }
    }
}

pub struct Dcqcn {
    p: DcqcnParams,
}

impl Dcqcn {
    pub fn new(p: DcqcnParams) -> Result<Dcqcn, ConfigError> {
        if !(p.kmin_bytes >= 0.0 && p.kmax_bytes > p.kmin_bytes) {
            return err(format!(
                "dcqcn.kmax_bytes: {} must be above dcqcn.kmin_bytes {}",
                p.kmax_bytes, p.kmin_bytes
            ));
        }
        if !(p.pmax > 0.0 && p.pmax <= 1.0) {
            return err(format!("dcqcn.pmax: {} is not allowed; expected 0 < pmax <= 1", p.pmax));
        }
        if !(p.g > 0.0 && p.g < 1.0) {
            return err(format!("dcqcn.g: {} is not allowed; expected 0 < g < 1", p.g));
        }
        if p.timer_ps == 0 {
            return err("dcqcn.timer_us: must be > 0");
        }
        if !(p.bc_bytes > 0.0 && p.min_rate_bps > 0.0) {
            return err("dcqcn.bc_bytes / dcqcn.min_rate_mbps: must be > 0");
        }
        if p.fr_thr == 0 {
            return err("dcqcn.fr_thr: must be >= 1");
        }
        Ok(Dcqcn { p })
    }

    /// Marking probability at a queue of `q` bytes.
    pub fn mark_probability(&self, q: f64) -> f64 {
        let p = &self.p;
        if q <= p.kmin_bytes {
            0.0
        } else if q <= p.kmax_bytes {
            p.pmax * (q - p.kmin_bytes) / (p.kmax_bytes - p.kmin_bytes)
        } else {
            1.0
        }
    }

    fn increase(&self, core: &mut RlCore, rl: &mut DcqcnRl) {
        let f = self.p.fr_thr;
        let ri = if rl.si > f && rl.ts > f {
            self.p.r_hai_bps * (rl.si.min(rl.ts) - f) as f64
        } else if rl.si > f || rl.ts > f {
            self.p.r_ai_bps
        } else {
            0.0
        };
        rl.tr = (rl.tr + ri).min(core.line_rate_bps);
        core.rate_bps = ((core.rate_bps + rl.tr) / 2.0).min(core.line_rate_bps);
        if core.line_rate_bps - core.rate_bps < 1.0 {
            core.rate_bps = core.line_rate_bps; // converged: the engine may release the RL
        }
    }
}

pub struct DcqcnCp {
    rng: Stream,
}

/// RP state of one flow's rate limiter.
#[derive(Debug, Clone)]
pub struct DcqcnRl {
    pub alpha: f64,
    pub tr: f64,
    pub si: u32,
    pub ts: u32,
    pub bc: f64,
}

impl Scheme for Dcqcn {
    type Cp = DcqcnCp;
    type Rl = DcqcnRl;
    const SINK_EVENTS: bool = true;
    const CP_ON_DEQUEUE: bool = true;

    fn new_cp(&self, rng: Stream) -> DcqcnCp {
        DcqcnCp { rng }
    }

    fn new_rl(&self) -> DcqcnRl {
        DcqcnRl {
            alpha: 1.0,
            tr: 0.0,
            si: 0,
            ts: 0,
            bc: self.p.bc_bytes,
        }
    }

    /// DCQCN marks at dequeue; nothing happens on arrival.
    fn cp_on_enqueue(&self, _cp: &mut DcqcnCp, _frame: &mut Frame, _q: u64, _cpid: u16) -> Option<Feedback> {
        None
    }

    fn cp_on_dequeue(&self, cp: &mut DcqcnCp, frame: &mut Frame, q_bytes: u64, cpid: u16) {
        let p = self.mark_probability(q_bytes as f64);
        if p > 0.0 && (p >= 1.0 || cp.rng.gen::<f64>() < p) {
            frame.cp_mark = cpid; // ECN congestion experienced
        }
    }

    fn sink_on_data(&self, frame: &Frame, now: Time, last_sent: &mut Time, _rng: &mut Stream) -> Option<(Feedback, u16)> {
        if frame.cp_mark == 0 {
            return None;
        }
        if *last_sent != Time::MAX && now < last_sent.saturating_add(self.p.cnp_interval_ps) {
            return None;
        }
        *last_sent = now;
        // A CNP names the flow (the RP keys its RL by the flow), not a CP.
        Some((
            Feedback {
                kind: FeedbackKind::Negative,
                fb: 1.0,
            },
            crate::net::rl::NO_CPID,
        ))
    }

    fn creates_rl(&self, fb: &Feedback) -> bool {
        fb.kind == FeedbackKind::Negative
    }

    fn rp_on_create(&self, core: &mut RlCore, rl: &mut DcqcnRl, _now: Time) -> Option<Time> {
        rl.tr = core.line_rate_bps;
        None
    }

    fn rp_on_feedback(&self, core: &mut RlCore, rl: &mut DcqcnRl, fb: &Feedback, now: Time, _rng: &mut Stream) -> Option<Time> {
        if fb.kind != FeedbackKind::Negative {
            return None;
        }
        let g = self.p.g;
        rl.tr = core.rate_bps;
        core.rate_bps = (core.rate_bps * (1.0 - rl.alpha / 2.0)).max(self.p.min_rate_bps);
        rl.alpha = (1.0 - g) * rl.alpha + g;
        rl.si = 0;
        rl.ts = 0;
        rl.bc = self.p.bc_bytes;
        Some(now + self.p.timer_ps)
    }

    fn rp_on_transmit(&self, core: &mut RlCore, rl: &mut DcqcnRl, len: u16, _now: Time, _rng: &mut Stream) -> Option<Time> {
        rl.bc -= len as f64;
        if rl.bc < 0.0 {
            rl.si += 1;
            rl.bc = self.p.bc_bytes;
            self.increase(core, rl);
        }
        None
    }

    fn rp_on_timer(&self, core: &mut RlCore, rl: &mut DcqcnRl, now: Time, _rng: &mut Stream) -> Option<Time> {
        // No CNP for a whole period (the timer restarts with each CNP).
        rl.alpha *= 1.0 - self.p.g;
        rl.ts += 1;
        self.increase(core, rl);
        if core.rate_bps >= core.line_rate_bps {
            Some(Time::MAX)
        } else {
            Some(now + self.p.timer_ps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::stream;

    fn dcqcn() -> Dcqcn {
        Dcqcn::new(DcqcnParams::default()).unwrap()
    }

    #[test]
    fn red_marking_probability() {
        let d = dcqcn();
        assert_eq!(d.mark_probability(4_000.0), 0.0);
        assert!((d.mark_probability(102_500.0) - 0.005).abs() < 1e-12);
        assert!((d.mark_probability(200_000.0) - 0.01).abs() < 1e-12);
        assert_eq!(d.mark_probability(200_001.0), 1.0);
        let mut cp = d.new_cp(stream(0, "cp"));
        let marked = (0..100_000)
            .filter(|_| {
                let mut f = Frame::data(0, 0, 1, 1500);
                d.cp_on_dequeue(&mut cp, &mut f, 102_500, 9);
                f.cp_mark == 9
            })
            .count();
        assert!((marked as f64 / 1e5 - 0.005).abs() < 0.001, "{marked}");
    }

    #[test]
    fn one_cnp_per_flow_per_interval() {
        let d = dcqcn();
        let mut rng = stream(0, "np");
        let mut f = Frame::data(0, 3, 7, 1500);
        f.cp_mark = 2;
        let mut last = Time::MAX;
        let times = [0, 10 * PS_PER_US, 49 * PS_PER_US, 50 * PS_PER_US, 60 * PS_PER_US, 120 * PS_PER_US];
        let sent: Vec<Time> = times
            .iter()
            .filter(|&&t| d.sink_on_data(&f, t, &mut last, &mut rng).is_some())
            .copied()
            .collect();
        assert_eq!(sent, vec![0, 50 * PS_PER_US, 120 * PS_PER_US]);
        let (fb, id) = d.sink_on_data(&f, 500 * PS_PER_US, &mut last, &mut rng).unwrap();
        assert_eq!(
            (fb.kind, id),
            (FeedbackKind::Negative, crate::net::rl::NO_CPID),
            "a CNP names no CP"
        );
        f.cp_mark = 0;
        assert!(d.sink_on_data(&f, 1_000 * PS_PER_US, &mut last, &mut rng).is_none());
    }

    #[test]
    fn cnp_cuts_by_alpha_and_alpha_follows_congestion() {
        let d = dcqcn();
        let mut rng = stream(0, "rp");
        let mut c = RlCore {
            rate_bps: 10e9,
            line_rate_bps: 10e9,
            stopped_until: 0,
        };
        let mut rl = d.new_rl();
        d.rp_on_create(&mut c, &mut rl, 0);
        let cnp = Feedback {
            kind: FeedbackKind::Negative,
            fb: 1.0,
        };
        // alpha starts at 1: the first CNP halves the rate.
        let t = d.rp_on_feedback(&mut c, &mut rl, &cnp, 0, &mut rng).unwrap();
        assert_eq!(t, 55 * PS_PER_US);
        assert!((c.rate_bps - 5e9).abs() < 1.0 && rl.tr == 10e9);
        assert!((rl.alpha - (255.0 / 256.0 + 1.0 / 256.0)).abs() < 1e-12);
        // Without CNPs alpha decays by (1 - g) per period, and fast recovery halves the gap to TR.
        let a0 = rl.alpha;
        d.rp_on_timer(&mut c, &mut rl, t, &mut rng);
        assert!((rl.alpha - a0 * 255.0 / 256.0).abs() < 1e-12);
        assert!((c.rate_bps - 7.5e9).abs() < 1.0);
        // Back to line rate after enough periods.
        let mut now = t;
        for _ in 0..200 {
            now += 55 * PS_PER_US;
            if d.rp_on_timer(&mut c, &mut rl, now, &mut rng) == Some(Time::MAX) {
                break;
            }
        }
        assert_eq!(c.rate_bps, 10e9);
    }
}

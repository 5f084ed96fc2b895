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

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{ExtFields, NetView, NoteFormat, QueueView, Red, RlCore, Scheme, check_floor, unreachable_threshold};
use crate::engine::rng::Stream;
use crate::engine::{us_to_ps, Time};
use crate::error::ConfigError;
use crate::frame::Frame;
use serde::{Deserialize, Serialize};

/// DCQCN parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcqcnParams {
    pub kmin_bytes: f64,
    pub kmax_bytes: f64,
    pub pmax: f64,
    pub cnp_interval_us: f64,
    pub g: f64,
    pub timer_us: f64,
    pub bc_bytes: f64,
    pub fr_thr: u32,
    pub r_ai_mbps: f64,
    pub r_hai_mbps: f64,
    pub min_rate_mbps: f64,
    pub window: bool,
}

/// The `[dcqcn]` table (schemes.md "DCQCN"); run it with PAUSE (PFC) on.
pub fn table() -> Table {
    Table::new("dcqcn", "DCQCN parameters (schemes.md \"DCQCN\"); run it with PAUSE (PFC) on")
        .float("kmin_bytes", 5_000.0, Range::ge(0.0), "ECN marking starts above Kmin (bytes)")
        .float(
            "kmax_bytes",
            200_000.0,
            Range::gt(0.0),
            "marking probability Pmax at Kmax, 1 above (bytes)",
        )
        .float("pmax", 0.01, Range::gt(0.0).le(1.0), "marking probability at Kmax")
        .float(
            "cnp_interval_us",
            50.0,
            Range::ge(0.0),
            "at most one CNP per flow per interval (us)",
        )
        .float("g", 1.0 / 256.0, Range::gt(0.0).lt(1.0), "alpha gain g")
        .float(
            "timer_us",
            55.0,
            Range::ge(1.0),
            "alpha-decay and rate-increase timer (us; at least 1: it fires per RL per period)",
        )
        .float("bc_bytes", 10e6, Range::gt(0.0), "rate-increase byte counter (bytes)")
        .int("fr_thr", 5, Range::ge(1.0), "fast-recovery threshold F (stages)")
        .float("r_ai_mbps", 40.0, Range::ge(0.0), "additive-increase step R_AI (Mbit/s)")
        .float("r_hai_mbps", 100.0, Range::ge(0.0), "[assumed] hyper-increase step R_HAI (Mbit/s)")
        .float("min_rate_mbps", 10.0, Range::gt(0.0), "[assumed] rate floor (Mbit/s)")
        .flag(
            "window",
            false,
            "transport flows: besides the rate, a fixed window of one BDP in flight (line rate x the flow's base RTT): DCQCN+w of HPCC's evaluation (Li et al., SIGCOMM 2019), which keeps DCQCN's first RTT at line rate from filling buffers; open-loop traffic has no window",
        )
        .rule(&["kmin_bytes", "kmax_bytes"], "kmin_bytes < kmax_bytes", |v| {
            v.f("kmin_bytes") < v.f("kmax_bytes")
        })
}

impl Default for DcqcnParams {
    fn default() -> Self {
        table().default_params()
    }
}

impl DcqcnParams {
    pub fn cnp_interval_ps(&self) -> Time {
        us_to_ps(self.cnp_interval_us)
    }
    pub fn timer_ps(&self) -> Time {
        us_to_ps(self.timer_us)
    }
    pub fn r_ai_bps(&self) -> f64 {
        self.r_ai_mbps * 1e6
    }
    pub fn r_hai_bps(&self) -> f64 {
        self.r_hai_mbps * 1e6
    }
    pub fn min_rate_bps(&self) -> f64 {
        self.min_rate_mbps * 1e6
    }
}

/// DCQCN's frame extension: a data frame's ECN Congestion Experienced bit
/// (a CNP carries nothing else).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DcqcnExt {
    pub ce: bool,
}

/// The NP's memory of one source: when it last sent it a CNP.
#[derive(Clone, Copy, Debug, Default)]
pub struct DcqcnNp {
    pub last_cnp: Option<Time>,
}

pub struct Dcqcn {
    p: DcqcnParams,
}

impl Dcqcn {
    /// The scheme as configured: its parameters checked against `[dcqcn]`.
    pub fn from_config(s: &SchemeConfig) -> Result<Dcqcn, ConfigError> {
        Ok(Dcqcn {
            p: table().parse(s.table(), &s.params)?,
        })
    }

    /// DCQCN with parameters `p` (checked against the declaration).
    pub fn new(p: DcqcnParams) -> Result<Dcqcn, ConfigError> {
        Dcqcn::from_config(&SchemeConfig::of("dcqcn", &p))
    }

    pub fn params(&self) -> &DcqcnParams {
        &self.p
    }

    /// The scheme's RED profile (K_min, K_max, P_max).
    pub fn red(&self) -> Red {
        Red {
            kmin_bytes: self.p.kmin_bytes,
            kmax_bytes: self.p.kmax_bytes,
            pmax: self.p.pmax,
        }
    }

    /// Marking probability at a queue of `q` bytes.
    pub fn mark_probability(&self, q: f64) -> f64 {
        self.red().probability(q)
    }

    fn increase(&self, core: &mut RlCore, rl: &mut DcqcnRl) {
        let f = self.p.fr_thr;
        let ri = if rl.si > f && rl.ts > f {
            self.p.r_hai_bps() * (rl.si.min(rl.ts) - f) as f64
        } else if rl.si > f || rl.ts > f {
            self.p.r_ai_bps()
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
    /// The bridge's RED profile, or the scheme's.
    red: Red,
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
    type Ext = DcqcnExt;
    type Cp = DcqcnCp;
    type Np = DcqcnNp;
    type Rl = DcqcnRl;
    const NP_EVENTS: bool = true;
    const CP_ON_DEQUEUE: bool = true;
    const MARKS_ECN: bool = true;

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        check_floor("dcqcn.min_rate_mbps", self.p.min_rate_mbps, net)?;
        let mut warnings: Vec<String> = unreachable_threshold("dcqcn.kmin_bytes", self.p.kmin_bytes, net, "no frame is ever marked")
            .into_iter()
            .collect();
        if self.p.window && net.paths.is_empty() {
            warnings.push("dcqcn.window = true: there are no transport flows, and open-loop traffic has no window; it changes nothing".into());
        }
        Ok(warnings)
    }

    fn new_cp(&self, rng: Stream, red: Option<Red>) -> DcqcnCp {
        DcqcnCp {
            rng,
            red: red.unwrap_or_else(|| self.red()),
        }
    }

    /// DCQCN marks at dequeue; nothing happens on arrival.
    fn cp_on_dequeue(&self, cp: &mut DcqcnCp, frame: &mut Frame<DcqcnExt>, q: QueueView, _cpid: u32) {
        if cp.red.marks(q.bytes as f64, &mut cp.rng) {
            frame.ext.ce = true; // ECN congestion experienced
        }
    }

    fn np_on_data(&self, np: &mut DcqcnNp, frame: &Frame<DcqcnExt>, now: Time, _rng: &mut Stream) -> Option<(DcqcnExt, u32)> {
        if !frame.ext.ce {
            return None;
        }
        if let Some(last) = np.last_cnp {
            if now < last.saturating_add(self.p.cnp_interval_ps()) {
                return None;
            }
        }
        np.last_cnp = Some(now);
        // A CNP names the flow (the RP keys its RL by the flow), not a CP.
        Some((DcqcnExt::default(), super::NO_CPID))
    }

    fn creates_rl(&self, _note: &DcqcnExt) -> bool {
        true
    }

    fn slows(&self, _note: &DcqcnExt) -> bool {
        true
    }

    fn ext_fields(&self, ext: &DcqcnExt) -> ExtFields {
        ExtFields {
            note: NoteFormat::Cnp,
            ce: ext.ce,
            ..ExtFields::default()
        }
    }

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (DcqcnRl, Option<Time>) {
        if self.p.window && core.base_rtt_ps > 0 {
            // One BDP of the flow's own path (the HPCC fork takes the
            // fabric's largest: the same on a uniform leaf-spine).
            core.window_bytes = ((core.line_rate_bps / 8.0 * core.base_rtt_ps as f64 / 1e12) as u64).max(1);
        }
        let rl = DcqcnRl {
            alpha: 1.0,
            tr: core.line_rate_bps,
            si: 0,
            ts: 0,
            bc: self.p.bc_bytes,
        };
        (rl, None)
    }

    fn rp_on_note(&self, core: &mut RlCore, rl: &mut DcqcnRl, _note: &DcqcnExt, _cpid: u32, now: Time, _rng: &mut Stream) -> Option<Time> {
        let g = self.p.g;
        rl.tr = core.rate_bps;
        core.rate_bps = (core.rate_bps * (1.0 - rl.alpha / 2.0)).max(self.p.min_rate_bps());
        rl.alpha = (1.0 - g) * rl.alpha + g;
        rl.si = 0;
        rl.ts = 0;
        rl.bc = self.p.bc_bytes;
        Some(now + self.p.timer_ps())
    }

    fn rp_on_send(&self, core: &mut RlCore, rl: &mut DcqcnRl, frame: &mut Frame<DcqcnExt>, _now: Time, _rng: &mut Stream) -> Option<Time> {
        rl.bc -= frame.len as f64;
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
            Some(now + self.p.timer_ps())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::stream;
    use crate::engine::PS_PER_US;

    fn dcqcn() -> Dcqcn {
        Dcqcn::new(DcqcnParams::default()).unwrap()
    }

    fn qv(bytes: u64) -> QueueView {
        QueueView {
            bytes,
            rate_bps: 10_000_000_000,
            tx_bytes: 0,
            now: 0,
        }
    }

    #[test]
    fn red_marking_probability() {
        let d = dcqcn();
        assert_eq!(d.mark_probability(4_000.0), 0.0);
        assert!((d.mark_probability(102_500.0) - 0.005).abs() < 1e-12);
        assert!((d.mark_probability(200_000.0) - 0.01).abs() < 1e-12);
        assert_eq!(d.mark_probability(200_001.0), 1.0);
        let mut cp = d.new_cp(stream(0, "cp"), None);
        let marked = (0..100_000)
            .filter(|_| {
                let mut f = Frame::data(0, 0, 1, 1500);
                d.cp_on_dequeue(&mut cp, &mut f, qv(102_500), 9);
                f.ext.ce
            })
            .count();
        assert!((marked as f64 / 1e5 - 0.005).abs() < 0.001, "{marked}");
    }

    #[test]
    fn one_cnp_per_flow_per_interval() {
        let d = dcqcn();
        let mut rng = stream(0, "np");
        let mut f: Frame<DcqcnExt> = Frame::data(0, 3, 7, 1500);
        f.ext.ce = true;
        let mut np = DcqcnNp::default();
        let times = [0, 10 * PS_PER_US, 49 * PS_PER_US, 50 * PS_PER_US, 60 * PS_PER_US, 120 * PS_PER_US];
        let sent: Vec<Time> = times
            .iter()
            .filter(|&&t| d.np_on_data(&mut np, &f, t, &mut rng).is_some())
            .copied()
            .collect();
        assert_eq!(sent, vec![0, 50 * PS_PER_US, 120 * PS_PER_US]);
        let (_, id) = d.np_on_data(&mut np, &f, 500 * PS_PER_US, &mut rng).unwrap();
        assert_eq!(id, crate::scheme::NO_CPID, "a CNP names no CP");
        f.ext.ce = false;
        assert!(d.np_on_data(&mut np, &f, 1_000 * PS_PER_US, &mut rng).is_none());
    }

    #[test]
    fn cnp_cuts_by_alpha_and_alpha_follows_congestion() {
        let d = dcqcn();
        let mut rng = stream(0, "rp");
        let mut c = RlCore::at_line_rate(10e9);
        let (mut rl, _) = d.new_rl(&mut c, 0);
        let cnp = DcqcnExt::default();
        // alpha starts at 1: the first CNP halves the rate.
        let t = d.rp_on_note(&mut c, &mut rl, &cnp, 0, 0, &mut rng).unwrap();
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

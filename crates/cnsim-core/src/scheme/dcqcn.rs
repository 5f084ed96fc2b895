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
    pub window_follows_rate: bool,
    pub rp_model: RpModel,
    pub alpha_timer_us: f64,
    pub decrease_interval_us: f64,
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
        .flag(
            "window_follows_rate",
            false,
            "with window: the window is one BDP x the current rate / the line rate (the HPCC artifact's VAR_WIN, which its DCQCN+w runs), not a fixed BDP",
        )
        .choice(
            "rp_model",
            &["paper", "nic"],
            "paper",
            "the reaction point: paper (the DCQCN paper's: a cut at each CNP, one timer for alpha and the rate increase, and a byte counter) or nic (the NIC vendor's, as the HPCC artifact models it: alpha updated every alpha_timer_us, a cut at most every decrease_interval_us when a CNP came, the rate increased every timer_us only, fr_thr steps of fast recovery; docs/hpcc-benchmark.md)",
        )
        .float(
            "alpha_timer_us",
            55.0,
            Range::ge(0.001),
            "rp_model = nic: alpha's update period: (1 - g) alpha + g if a CNP came in it, else (1 - g) alpha (us)",
        )
        .float(
            "decrease_interval_us",
            4.0,
            Range::ge(0.001),
            "rp_model = nic: the rate is cut at most once per this period, at its end, if a CNP came in it (us)",
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

/// Which reaction point runs (`dcqcn.rp_model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RpModel {
    /// The DCQCN paper's (Zhu et al., SIGCOMM 2015).
    Paper,
    /// The NIC vendor's, as the HPCC artifact's rdma-hw.cc models it.
    Nic,
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

    /// With a window following the rate: the window for the rate now.
    fn follow_rate(&self, core: &mut RlCore, rl: &DcqcnRl) {
        if self.p.window && self.p.window_follows_rate && rl.bdp_bytes > 0 {
            core.window_bytes = ((rl.bdp_bytes as f64 * core.rate_bps / core.line_rate_bps) as u64).max(1);
        }
    }

    /// rp_model = nic: alpha's updates due by `now`.
    fn nic_alpha(&self, rl: &mut DcqcnRl, now: Time) {
        let period = us_to_ps(self.p.alpha_timer_us).max(1);
        if !rl.nic.started || now < rl.nic.alpha_at {
            return;
        }
        let n = 1 + (now - rl.nic.alpha_at) / period;
        let g = self.p.g;
        rl.alpha = (1.0 - g) * rl.alpha + if rl.nic.alpha_cnp { g } else { 0.0 };
        rl.nic.alpha_cnp = false;
        if n > 1 {
            rl.alpha *= (1.0 - g).powf((n - 1) as f64);
        }
        rl.nic.alpha_at += n * period;
    }

    /// rp_model = nic: the RL's next timer (a pending decrease check or the
    /// next increase).
    fn nic_next(&self, rl: &DcqcnRl) -> Option<Time> {
        let check = if rl.nic.cut_pending { rl.nic.next_check } else { Time::MAX };
        Some(check.min(rl.nic.inc_at))
    }

    /// rp_model = nic: a CNP came.
    fn nic_on_cnp(&self, core: &mut RlCore, rl: &mut DcqcnRl, now: Time) -> Option<Time> {
        let check = us_to_ps(self.p.decrease_interval_us).max(1);
        if !rl.nic.started {
            // The first CNP: alpha starts at 1 and its periods, and the
            // decrease checks (1 ns after alpha's: the artifact's order).
            rl.nic = NicRp {
                started: true,
                alpha_at: now + us_to_ps(self.p.alpha_timer_us).max(1),
                alpha_cnp: false,
                check0: now + check + 1_000,
                cut_pending: true,
                next_check: now + check + 1_000,
                inc_at: Time::MAX,
            };
            rl.alpha = 1.0;
            rl.tr = core.rate_bps;
            return self.nic_next(rl);
        }
        self.nic_alpha(rl, now);
        rl.nic.alpha_cnp = true;
        if !rl.nic.cut_pending {
            rl.nic.cut_pending = true;
            // The first periodic check after now.
            let k = if now < rl.nic.check0 { 0 } else { (now - rl.nic.check0) / check + 1 };
            rl.nic.next_check = rl.nic.check0 + k * check;
        }
        self.nic_next(rl)
    }

    /// rp_model = nic: the RL's timer at `now`: a due cut, a due increase.
    fn nic_on_timer(&self, core: &mut RlCore, rl: &mut DcqcnRl, now: Time) -> Option<Time> {
        if rl.nic.cut_pending && now >= rl.nic.next_check {
            self.nic_alpha(rl, now);
            // The vendor's target clamp (CLAMP_TARGET_RATE 0): the target
            // takes the rate only if an increase came since the last cut.
            if rl.ts != 0 {
                rl.tr = core.rate_bps;
            }
            core.rate_bps = (core.rate_bps * (1.0 - rl.alpha / 2.0)).max(self.p.min_rate_bps());
            rl.ts = 0;
            rl.nic.cut_pending = false;
            rl.nic.inc_at = now + self.p.timer_ps();
        }
        if now >= rl.nic.inc_at {
            let f = self.p.fr_thr;
            if rl.ts == f {
                rl.tr = (rl.tr + self.p.r_ai_bps()).min(core.line_rate_bps);
            } else if rl.ts > f {
                rl.tr = (rl.tr + self.p.r_hai_bps()).min(core.line_rate_bps);
            }
            core.rate_bps = ((core.rate_bps + rl.tr) / 2.0).min(core.line_rate_bps);
            if core.line_rate_bps - core.rate_bps < 1.0 {
                core.rate_bps = core.line_rate_bps;
            }
            rl.ts += 1;
            rl.nic.inc_at = now + self.p.timer_ps();
        }
        self.follow_rate(core, rl);
        self.nic_next(rl)
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
    /// The flow's BDP (bytes) when it has a window.
    pub bdp_bytes: u64,
    /// rp_model = nic: the vendor's periodic state, kept lazily (each
    /// period is applied when it matters, not by an event of its own).
    pub nic: NicRp,
}

/// The vendor's reaction point: alpha's period, the periodic decrease check
/// and the rate-increase timer, each from the flow's first CNP.
#[derive(Debug, Clone, Default)]
pub struct NicRp {
    /// A CNP has come (the periods have started).
    pub started: bool,
    /// The next alpha update, and whether a CNP came since the last one.
    pub alpha_at: Time,
    pub alpha_cnp: bool,
    /// The first decrease check; a CNP came since the last check.
    pub check0: Time,
    pub cut_pending: bool,
    pub next_check: Time,
    /// The next rate increase (Time::MAX: none before the first cut).
    pub inc_at: Time,
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
        let mut bdp_bytes = 0;
        if self.p.window && core.base_rtt_ps > 0 {
            // One BDP of the flow's own path (the HPCC fork takes the
            // fabric's largest: the same on a uniform leaf-spine).
            bdp_bytes = ((core.line_rate_bps / 8.0 * core.base_rtt_ps as f64 / 1e12) as u64).max(1);
            core.window_bytes = bdp_bytes;
        }
        let rl = DcqcnRl {
            alpha: 1.0,
            tr: core.line_rate_bps,
            si: 0,
            ts: 0,
            bc: self.p.bc_bytes,
            bdp_bytes,
            nic: NicRp::default(),
        };
        self.follow_rate(core, &rl);
        (rl, None)
    }

    fn rp_on_note(&self, core: &mut RlCore, rl: &mut DcqcnRl, _note: &DcqcnExt, _cpid: u32, now: Time, _rng: &mut Stream) -> Option<Time> {
        if self.p.rp_model == RpModel::Nic {
            return self.nic_on_cnp(core, rl, now);
        }
        let g = self.p.g;
        rl.tr = core.rate_bps;
        core.rate_bps = (core.rate_bps * (1.0 - rl.alpha / 2.0)).max(self.p.min_rate_bps());
        rl.alpha = (1.0 - g) * rl.alpha + g;
        rl.si = 0;
        rl.ts = 0;
        rl.bc = self.p.bc_bytes;
        self.follow_rate(core, rl);
        Some(now + self.p.timer_ps())
    }

    fn rp_on_send(&self, core: &mut RlCore, rl: &mut DcqcnRl, frame: &mut Frame<DcqcnExt>, _now: Time, _rng: &mut Stream) -> Option<Time> {
        if self.p.rp_model == RpModel::Nic {
            return None; // the vendor's RP has no byte counter
        }
        rl.bc -= frame.len as f64;
        if rl.bc < 0.0 {
            rl.si += 1;
            rl.bc = self.p.bc_bytes;
            self.increase(core, rl);
            self.follow_rate(core, rl);
        }
        None
    }

    fn rp_on_timer(&self, core: &mut RlCore, rl: &mut DcqcnRl, now: Time, _rng: &mut Stream) -> Option<Time> {
        if self.p.rp_model == RpModel::Nic {
            return self.nic_on_timer(core, rl, now);
        }
        // No CNP for a whole period (the timer restarts with each CNP).
        rl.alpha *= 1.0 - self.p.g;
        rl.ts += 1;
        self.increase(core, rl);
        self.follow_rate(core, rl);
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

    /// The artifact's settings of the vendor's RP (run.py `dcqcn` at 100
    /// Gbit/s): alpha every 1 us, cuts every 4 us, increases every 300 us.
    fn nic() -> Dcqcn {
        Dcqcn::new(DcqcnParams {
            rp_model: RpModel::Nic,
            alpha_timer_us: 1.0,
            decrease_interval_us: 4.0,
            timer_us: 300.0,
            fr_thr: 1,
            r_ai_mbps: 20.0,
            r_hai_mbps: 200.0,
            ..DcqcnParams::default()
        })
        .unwrap()
    }

    #[test]
    fn the_nic_rp_cuts_once_per_decrease_period_with_alpha_of_its_own_period() {
        let d = nic();
        let line = 100e9;
        let mut core = RlCore::at_line_rate(line);
        let (mut rl, first) = d.new_rl(&mut core, 0);
        assert_eq!(first, None);
        let mut rng = stream(1, "t");
        let note = DcqcnExt::default();
        // The first CNP cuts nothing yet: the check comes 4 us (and 1 ns) later.
        let t = d.rp_on_note(&mut core, &mut rl, &note, 0, 0, &mut rng);
        let check = 4 * PS_PER_US + 1_000;
        assert_eq!(t, Some(check));
        assert_eq!(core.rate_bps, line);
        // Two more CNPs in the same period: still one pending check.
        assert_eq!(d.rp_on_note(&mut core, &mut rl, &note, 0, PS_PER_US / 2, &mut rng), Some(check));
        assert_eq!(d.rp_on_note(&mut core, &mut rl, &note, 0, 5 * PS_PER_US / 2, &mut rng), Some(check));
        // At the check: alpha had its ticks at 1, 2, 3 and 4 us, with a CNP
        // before the first (at 0.5 us) and the third (at 2.5 us).
        let g = d.params().g;
        let mut alpha: f64 = 1.0;
        alpha = (1.0 - g) * alpha + g; // 1 us
        alpha *= 1.0 - g; // 2 us
        alpha = (1.0 - g) * alpha + g; // 3 us
        alpha *= 1.0 - g; // 4 us
        let next = d.rp_on_timer(&mut core, &mut rl, check, &mut rng);
        assert!((rl.alpha - alpha).abs() < 1e-12, "{} against {alpha}", rl.alpha);
        assert!((core.rate_bps - line * (1.0 - alpha / 2.0)).abs() < 1.0);
        // No CNP since: no check pending; the increase in 300 us.
        assert_eq!(next, Some(check + 300 * PS_PER_US));
        let cut = core.rate_bps;
        // Fast recovery (stage 0 < F = 1): halfway back to the target (the line rate).
        d.rp_on_timer(&mut core, &mut rl, check + 300 * PS_PER_US, &mut rng);
        assert!((core.rate_bps - (cut + line) / 2.0).abs() < 1.0);
        // A CNP now: the next periodic check, a whole number of periods from the first.
        let now = check + 300 * PS_PER_US + 2 * PS_PER_US;
        let t = d.rp_on_note(&mut core, &mut rl, &note, 0, now, &mut rng).unwrap();
        assert!(t > now && t - now <= 4 * PS_PER_US && (t - check).is_multiple_of(4 * PS_PER_US), "{t}");
    }

    #[test]
    fn a_window_following_the_rate_shrinks_with_each_cut() {
        let d = Dcqcn::new(DcqcnParams {
            window: true,
            window_follows_rate: true,
            ..DcqcnParams::default()
        })
        .unwrap();
        let mut core = RlCore::at_line_rate(100e9);
        core.base_rtt_ps = 10 * PS_PER_US;
        let (mut rl, _) = d.new_rl(&mut core, 0);
        assert_eq!(core.window_bytes, 125_000, "one BDP at line rate");
        let mut rng = stream(1, "t");
        d.rp_on_note(&mut core, &mut rl, &DcqcnExt::default(), 0, 0, &mut rng);
        assert_eq!(core.window_bytes, (125_000.0 * core.rate_bps / 100e9) as u64);
        assert!(core.window_bytes < 125_000);
    }
}

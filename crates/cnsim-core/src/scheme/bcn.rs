//! BCN (Backward Congestion Notification) and its variants BCN(0,0),
//! BCN-Max and ECM (schemes.md, "BCN" and "ECM"). One parameter set covers
//! them all; the variants are switches.

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{CpFields, ExtFields, NetView, NoteFormat, QueueView, Red, RlCore, Scheme, check_floor, unreachable_threshold};
use crate::engine::rng::Stream;
use crate::engine::{us_to_ps, Time};
use crate::error::ConfigError;
use crate::frame::Frame;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// BCN parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BcnParams {
    pub qeq_pages: f64,
    pub w: f64,
    pub gi: f64,
    pub gd: f64,
    pub ru_mbps: f64,
    pub sample_bytes: f64,
    pub jitter_bytes: f64,
    pub qoff_lo_qeq: f64,
    pub qoff_hi_qeq: f64,
    pub qdelta_range_qeq: f64,
    pub bcn_max: bool,
    pub qmc_bytes: f64,
    pub bcn00: bool,
    pub qsc_bytes: f64,
    pub tmax_us: f64,
    pub rmin_gbps: f64,
    pub drift_mbps: f64,
    pub drift_interval_us: f64,
    pub self_increase: bool,
    pub oversampling: bool,
    pub oversample_above_bytes: f64,
    pub sample_sev_bytes: f64,
    pub min_rate_mbps: f64,
    pub sample_dropped: bool,
    pub notify_below_qeq: bool,
    pub positive_untagged: bool,
}

/// The `[bcn]` table (schemes.md "BCN"): BCN, BCN(0,0) and BCN-Max; the
/// defaults are the baseline of scenarios.md.
pub fn table() -> Table {
    Table::new("bcn", "BCN / BCN(0,0) / BCN-Max parameters (schemes.md \"BCN\")")
        .float("qeq_pages", 375.0, Range::gt(0.0), "equilibrium queue Qeq (64-byte pages)")
        .float("w", 2.0, Range::ge(0.0), "weight W of the queue derivative Qdelta")
        .float("gi", 0.53, Range::ge(0.0), "increase gain Gi (per page of Fb, in units of Ru)")
        .float("gd", 2.6e-4, Range::ge(0.0), "decrease gain Gd (per page of Fb)")
        .float("ru_mbps", 1.0, Range::gt(0.0), "rate unit Ru (Mbit/s)")
        .float("sample_bytes", 150_000.0, Range::gt(0.0), "mean sampling interval S (bytes)")
        .float(
            "jitter_bytes",
            5_000.0,
            Range::ge(0.0),
            "each interval is S + U(-jitter, +jitter) (bytes)",
        )
        .float("qoff_lo_qeq", 1.0, Range::gt(0.0), "Qoff clipped below at -lo x Qeq")
        .float("qoff_hi_qeq", 1.0, Range::gt(0.0), "Qoff clipped above at +hi x Qeq")
        .float("qdelta_range_qeq", 2.0, Range::gt(0.0), "Qdelta clipped to +-range x Qeq")
        .flag("bcn_max", false, "BCN-Max: above Qmc send the most negative Fb")
        .float("qmc_bytes", 112_500.0, Range::gt(0.0), "BCN-Max threshold Qmc (bytes)")
        .flag("bcn00", false, "BCN(0,0): above Qsc send a stop message")
        .float("qsc_bytes", 112_500.0, Range::gt(0.0), "severe-congestion threshold Qsc (bytes)")
        .float("tmax_us", 100.0, Range::ge(0.0), "BCN(0,0) stop time U(0, Tmax) (us)")
        .float("rmin_gbps", 1.0, Range::gt(0.0), "BCN(0,0) restart rate Rmin (Gbit/s)")
        .float("drift_mbps", 1.0, Range::ge(0.0), "drift step after a restart (Mbit/s)")
        .float(
            "drift_interval_us",
            100.0,
            Range::ge(1.0),
            "drift period (us; at least 1: it fires per RL per period)",
        )
        .flag("self_increase", false, "drift every RL, not only after BCN(0,0)")
        .flag("oversampling", false, "sample every sample_sev_bytes above a threshold")
        .float(
            "oversample_above_bytes",
            112_500.0,
            Range::gt(0.0),
            "oversampling threshold (bytes; Qsc for BCN, Qmc for ECM)",
        )
        .float(
            "sample_sev_bytes",
            15_000.0,
            Range::gt(0.0),
            "sampling interval while oversampling (bytes)",
        )
        .float(
            "min_rate_mbps",
            5.0,
            Range::gt(0.0),
            "[derived] rate floor after a decrease (Mbit/s; docs/calibration.md)",
        )
        .flag(
            "sample_dropped",
            true,
            "[assumed] the sampler also sees frames the full queue drops",
        )
        .flag(
            "notify_below_qeq",
            false,
            "[derived] negative feedback also at or below Qeq, from the derivative term alone \
             (the literal rule; off: only a queue above Qeq slows sources)",
        )
        .flag(
            "positive_untagged",
            false,
            "positive messages also for untagged sampled frames (not the spec; shows what the \
             published ECM overhead counts, docs/calibration.md)",
        )
        .rule(&["jitter_bytes", "sample_bytes"], "jitter_bytes < sample_bytes", |v| {
            v.f("jitter_bytes") < v.f("sample_bytes")
        })
}

/// The `[ecm]` table (schemes.md "ECM"): BCN's parameters with ECM's
/// defaults (2007).
pub fn ecm_table() -> Table {
    table()
        .variant("ecm", "ECM (2007 BCN) parameters (schemes.md \"ECM\")")
        .with_default("gi", 0.5333, Some("increase gain Gi"))
        .with_default("gd", 2.6667e-4, Some("decrease gain Gd"))
        .with_default("sample_bytes", 75_000.0, Some("FixedSamplingInt (bytes)"))
        .with_default("jitter_bytes", 5_000.0, Some("RandomSamplingInt = U(-j, +j) (bytes)"))
        .with_default("bcn_max", true, Some("ECM-Max"))
        .with_default("qmc_bytes", 1300.0 * 64.0, Some("ECM-Max threshold Qmc (bytes)"))
        .with_default("oversampling", true, Some("oversample above Qmc"))
        .with_default("oversample_above_bytes", 1300.0 * 64.0, Some("= Qmc (bytes)"))
}

impl Default for BcnParams {
    fn default() -> Self {
        table().default_params()
    }
}

impl BcnParams {
    /// Rate unit Ru (bit/s).
    pub fn ru_bps(&self) -> f64 {
        self.ru_mbps * 1e6
    }
    pub fn rmin_bps(&self) -> f64 {
        self.rmin_gbps * 1e9
    }
    pub fn drift_bps(&self) -> f64 {
        self.drift_mbps * 1e6
    }
    pub fn min_rate_bps(&self) -> f64 {
        self.min_rate_mbps * 1e6
    }
    pub fn tmax_ps(&self) -> Time {
        us_to_ps(self.tmax_us)
    }
    pub fn drift_interval_ps(&self) -> Time {
        us_to_ps(self.drift_interval_us)
    }
}

/// What a BCN message says (its frame extension on notifications).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BcnMsg {
    /// Not a message (data frames).
    #[default]
    None,
    /// Fb < 0: decrease (creates the RL when the flow has none).
    Negative,
    /// Fb > 0: increase (only for an existing RL).
    Positive,
    /// BCN(0,0): stop for a random time, then restart slowly.
    Stop,
}

/// BCN's frame extension: on a notification, its kind and Fb (64-byte pages).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BcnExt {
    pub msg: BcnMsg,
    pub fb: f32,
}

impl BcnExt {
    pub fn new(msg: BcnMsg, fb: f32) -> BcnExt {
        BcnExt { msg, fb }
    }
}

pub struct Bcn {
    p: BcnParams,
    /// The table as the user named it (`bcn` or `ecm`), for messages.
    label: String,
}

impl Bcn {
    /// The scheme as configured: its parameters checked against the table
    /// the user named (`bcn` or `ecm`).
    pub fn from_config(s: &SchemeConfig) -> Result<Bcn, ConfigError> {
        let declared = if s.table() == "ecm" { ecm_table() } else { table() };
        Ok(Bcn {
            p: declared.parse(s.table(), &s.params)?,
            label: s.table().to_string(),
        })
    }

    /// BCN with parameters `p` (checked against the `[bcn]` declaration).
    pub fn new(p: BcnParams) -> Result<Bcn, ConfigError> {
        Bcn::from_config(&SchemeConfig::of("bcn", &p))
    }

    pub fn params(&self) -> &BcnParams {
        &self.p
    }

    /// Fb (pages) for a queue of `q_bytes` after `qold_pages`, clipped.
    pub fn feedback(&self, q_bytes: u64, qold_pages: f64) -> f64 {
        let (qoff, qdelta) = self.offsets(q_bytes, qold_pages);
        -(qoff + self.p.w * qdelta)
    }

    /// Qoff and Qdelta (pages, clipped) of a queue of `q_bytes` after `qold_pages`.
    pub fn offsets(&self, q_bytes: u64, qold_pages: f64) -> (f64, f64) {
        let p = &self.p;
        let q = q_bytes as f64 / 64.0;
        let qoff = (q - p.qeq_pages).clamp(-p.qoff_lo_qeq * p.qeq_pages, p.qoff_hi_qeq * p.qeq_pages);
        let range = p.qdelta_range_qeq * p.qeq_pages;
        let qdelta = (q - qold_pages).clamp(-range, range);
        (qoff, qdelta)
    }

    /// Whether a CP holding `q_bytes` may send negative feedback (rule 3):
    /// only above Qeq unless `notify_below_qeq`.
    pub fn negative_allowed(&self, q_bytes: f64) -> bool {
        self.p.notify_below_qeq || q_bytes > self.p.qeq_pages * 64.0
    }

    /// The most negative Fb the clipping ranges allow.
    pub fn fb_max_negative(&self) -> f64 {
        let p = &self.p;
        -(p.qoff_hi_qeq * p.qeq_pages + p.w * p.qdelta_range_qeq * p.qeq_pages)
    }

    /// Mean bytes to the next sample with `q_bytes` queued (oversampling or not).
    pub fn mean_interval(&self, q_bytes: f64) -> f64 {
        let p = &self.p;
        if p.oversampling && q_bytes >= p.oversample_above_bytes {
            p.sample_sev_bytes
        } else {
            p.sample_bytes
        }
    }

    fn next_interval(&self, q_bytes: u64, rng: &mut Stream) -> f64 {
        let p = &self.p;
        let s = self.mean_interval(q_bytes as f64);
        let j = if p.jitter_bytes > 0.0 {
            rng.gen_range(-p.jitter_bytes..=p.jitter_bytes)
        } else {
            0.0
        };
        (s + j).max(1.0)
    }
}

pub struct BcnCp {
    rng: Stream,
    /// Bytes until the next sample.
    counter: f64,
    qold_pages: f64,
    started: bool,
}

#[derive(Default)]
pub struct BcnRl {
    /// Waiting for the end of a BCN(0,0) stop.
    resume_pending: bool,
    /// Drifting up (after a BCN(0,0) restart, or self-increase).
    drifting: bool,
}

impl Bcn {
    /// Thresholds out of order (legal, almost certainly unintended) and a
    /// floor above a sender's line rate (refused).
    fn check(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        let (p, t) = (&self.p, &self.label);
        check_floor(&format!("{t}.min_rate_mbps"), p.min_rate_mbps, net)?;
        let qeq = p.qeq_pages * 64.0;
        let mut w = Vec::new();
        let at_or_below_qeq = |name: &str, v: f64, what: &str| {
            format!(
                "{t}.{name} = {} bytes is at or below Qeq ({t}.qeq_pages = {} pages, {} bytes): {what}",
                super::params::num(v),
                super::params::num(p.qeq_pages),
                super::params::num(qeq)
            )
        };
        if p.bcn00 && p.qsc_bytes <= qeq {
            w.push(at_or_below_qeq("qsc_bytes", p.qsc_bytes, "every congested sample stops its source"));
        }
        if p.bcn_max && p.qmc_bytes <= qeq {
            w.push(at_or_below_qeq(
                "qmc_bytes",
                p.qmc_bytes,
                "every congested sample sends the most negative Fb",
            ));
        }
        w.extend(unreachable_threshold(
            &format!("{t}.qeq_pages x 64"),
            qeq,
            net,
            "no source is ever slowed",
        ));
        Ok(w)
    }
}

impl Scheme for Bcn {
    type Ext = BcnExt;
    type Cp = BcnCp;
    type Np = ();
    type Rl = BcnRl;

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        self.check(net)
    }

    fn new_cp(&self, rng: Stream, _red: Option<Red>) -> BcnCp {
        BcnCp {
            rng,
            counter: 0.0,
            qold_pages: 0.0,
            started: false,
        }
    }

    fn cp_on_enqueue(&self, cp: &mut BcnCp, frame: &mut Frame<BcnExt>, q: QueueView, cpid: u32) -> Option<BcnExt> {
        let q_bytes = q.bytes;
        if !cp.started {
            // The first interval is drawn too, so CPs do not sample in lockstep.
            cp.started = true;
            cp.counter = self.next_interval(q_bytes, &mut cp.rng);
        }
        cp.counter -= frame.len as f64;
        if cp.counter > 0.0 {
            return None;
        }
        cp.counter = self.next_interval(q_bytes, &mut cp.rng);
        let fb = self.feedback(q_bytes, cp.qold_pages);
        cp.qold_pages = q_bytes as f64 / 64.0;
        let p = &self.p;
        let q = q_bytes as f64;
        if p.bcn_max && q > p.qmc_bytes {
            Some(BcnExt::new(BcnMsg::Negative, self.fb_max_negative() as f32))
        } else if p.bcn00 && q > p.qsc_bytes {
            Some(BcnExt::new(BcnMsg::Stop, 0.0))
        } else if fb < 0.0 && self.negative_allowed(q) {
            Some(BcnExt::new(BcnMsg::Negative, fb as f32))
        } else if fb > 0.0 && (frame.cpid == cpid || p.positive_untagged) {
            // Rule 4: the sampled frame left an RL this CP slowed (its tag).
            Some(BcnExt::new(BcnMsg::Positive, fb as f32))
        } else {
            None
        }
    }

    fn creates_rl(&self, note: &BcnExt) -> bool {
        matches!(note.msg, BcnMsg::Negative | BcnMsg::Stop)
    }

    fn slows(&self, note: &BcnExt) -> bool {
        matches!(note.msg, BcnMsg::Negative | BcnMsg::Stop)
    }

    fn cp_samples_dropped(&self) -> bool {
        self.p.sample_dropped
    }

    fn ext_fields(&self, ext: &BcnExt) -> ExtFields {
        let (note, fb) = match ext.msg {
            BcnMsg::None => (NoteFormat::Bcn, None),
            BcnMsg::Stop => (NoteFormat::BcnStop, Some(0.0)),
            BcnMsg::Negative | BcnMsg::Positive => (NoteFormat::Bcn, Some(ext.fb as f64)),
        };
        ExtFields {
            note,
            fb,
            ..ExtFields::default()
        }
    }

    fn cp_fields(&self, cp: &BcnCp, q: QueueView) -> Option<CpFields> {
        let (qoff, qdelta) = self.offsets(q.bytes, cp.qold_pages);
        Some(CpFields { qoff, qdelta })
    }

    fn new_rl(&self, _core: &mut RlCore, now: Time) -> (BcnRl, Option<Time>) {
        if self.p.self_increase {
            let rl = BcnRl {
                drifting: true,
                ..BcnRl::default()
            };
            return (rl, Some(now + self.p.drift_interval_ps()));
        }
        (BcnRl::default(), None)
    }

    fn rp_on_note(&self, core: &mut RlCore, rl: &mut BcnRl, note: &BcnExt, _cpid: u32, now: Time, rng: &mut Stream) -> Option<Time> {
        let p = &self.p;
        match note.msg {
            BcnMsg::None => None,
            BcnMsg::Negative => {
                core.rate_bps = (core.rate_bps * (1.0 + p.gd * note.fb as f64)).max(p.min_rate_bps());
                None
            }
            BcnMsg::Positive => {
                core.rate_bps = (core.rate_bps + p.gi * note.fb as f64 * p.ru_bps()).min(core.line_rate_bps);
                None
            }
            BcnMsg::Stop => {
                let stop = if p.tmax_ps() > 0 { rng.gen_range(0..=p.tmax_ps()) } else { 0 };
                core.stopped_until = now + stop;
                rl.resume_pending = true;
                Some(core.stopped_until)
            }
        }
    }

    fn rp_on_timer(&self, core: &mut RlCore, rl: &mut BcnRl, now: Time, _rng: &mut Stream) -> Option<Time> {
        let p = &self.p;
        if rl.resume_pending {
            rl.resume_pending = false;
            core.rate_bps = core.rate_bps.min(p.rmin_bps());
            rl.drifting = true;
            return Some(now + p.drift_interval_ps());
        }
        if rl.drifting {
            core.rate_bps = (core.rate_bps + p.drift_bps()).min(core.line_rate_bps);
            if core.rate_bps < core.line_rate_bps || p.self_increase {
                return Some(now + p.drift_interval_ps());
            }
            rl.drifting = false;
        }
        Some(Time::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::stream;

    #[test]
    fn a_bcn_frame_stays_small() {
        // BCN's tag and Fb add 8 bytes to the 40 of a frame.
        assert!(std::mem::size_of::<crate::frame::Frame<BcnExt>>() <= 48);
    }
    use crate::engine::PS_PER_US;

    fn core() -> RlCore {
        RlCore::at_line_rate(10e9)
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
    fn fb_on_hand_computed_cases() {
        let b = Bcn::new(BcnParams::default()).unwrap(); // Qeq 375 pages, W 2
                                                         // Q = 400 pages (25,600 B), Qold = 390: Qoff = 25, Qdelta = 10 -> Fb = -(25 + 20) = -45.
        assert!((b.feedback(25_600, 390.0) + 45.0).abs() < 1e-9);
        // Q = 100 pages, Qold = 100: Qoff = -275 -> Fb = +275.
        assert!((b.feedback(6_400, 100.0) - 275.0).abs() < 1e-9);
        // Far above: Qoff clipped at +Qeq (375), Qdelta at +2 Qeq (750): Fb = -(375 + 1500) = -1875.
        assert!((b.feedback(2_000_000, 0.0) + 1875.0).abs() < 1e-9);
        // Empty after full: Qoff clipped at -Qeq, Qdelta at -2 Qeq: Fb = +1875.
        assert!((b.feedback(0, 100_000.0) - 1875.0).abs() < 1e-9);
        assert_eq!(b.fb_max_negative(), -1875.0);
        // The widened ranges of the transient study: Qoff (-Qeq, +2 Qeq), Qdelta +-4 Qeq.
        let wide = Bcn::new(BcnParams {
            qoff_hi_qeq: 2.0,
            qdelta_range_qeq: 4.0,
            ..BcnParams::default()
        })
        .unwrap();
        assert!((wide.feedback(2_000_000, 0.0) + (750.0 + 2.0 * 1500.0)).abs() < 1e-9);
        assert!((wide.feedback(0, 100_000.0) - (375.0 + 2.0 * 1500.0)).abs() < 1e-9);
    }

    #[test]
    fn negative_feedback_needs_the_queue_above_qeq_unless_notify_below_qeq() {
        let mut rng = stream(0, "t");
        // Qeq 375 pages = 24,000 B. A queue rising from 5,000 to 20,000 B
        // has Fb = -(Qoff + W Qdelta) = -(-62.5 + 2 x 234.4) < 0 below Qeq.
        let p = BcnParams {
            sample_bytes: 1500.0,
            jitter_bytes: 0.0,
            ..BcnParams::default()
        };
        for (below, expect) in [(false, None), (true, Some(BcnMsg::Negative))] {
            let b = Bcn::new(BcnParams {
                notify_below_qeq: below,
                ..p.clone()
            })
            .unwrap();
            let mut cp = b.new_cp(stream(0, "cp"), None);
            let mut f: Frame<BcnExt> = Frame::data(0, 0, 1, 1500);
            b.cp_on_enqueue(&mut cp, &mut f, qv(5_000), 1);
            assert!(b.feedback(20_000, cp.qold_pages) < 0.0);
            let got = b.cp_on_enqueue(&mut cp, &mut f, qv(20_000), 1).map(|fb| fb.msg);
            assert_eq!(got, expect, "notify_below_qeq = {below}");
            // Above Qeq both readings slow the source.
            assert_eq!(
                b.cp_on_enqueue(&mut cp, &mut f, qv(40_000), 1).map(|fb| fb.msg),
                Some(BcnMsg::Negative)
            );
        }
        let _ = &mut rng;
    }

    #[test]
    fn maximal_feedback_halves_or_adds_a_tenth_of_line_rate() {
        let b = Bcn::new(BcnParams::default()).unwrap();
        let mut rng = stream(0, "t");
        let mut c = core();
        let mut rl = BcnRl::default();
        b.rp_on_note(&mut c, &mut rl, &BcnExt::new(BcnMsg::Negative, -1875.0), 0, 0, &mut rng);
        assert!((c.rate_bps / 10e9 - 0.5125).abs() < 1e-6, "{}", c.rate_bps);
        let before = c.rate_bps;
        b.rp_on_note(&mut c, &mut rl, &BcnExt::new(BcnMsg::Positive, 1875.0), 0, 0, &mut rng);
        assert!(((c.rate_bps - before) / 1e9 - 1.0).abs() < 0.01, "increase {}", c.rate_bps - before);
        // Never below the floor, never above line rate.
        for _ in 0..100 {
            b.rp_on_note(&mut c, &mut rl, &BcnExt::new(BcnMsg::Negative, -1875.0), 0, 0, &mut rng);
        }
        assert_eq!(c.rate_bps, BcnParams::default().min_rate_bps());
        for _ in 0..100 {
            b.rp_on_note(&mut c, &mut rl, &BcnExt::new(BcnMsg::Positive, 1875.0), 0, 0, &mut rng);
        }
        assert_eq!(c.rate_bps, 10e9);
    }

    #[test]
    fn sampling_interval_is_uniform_around_s() {
        let b = Bcn::new(BcnParams {
            sample_bytes: 100_000.0,
            jitter_bytes: 5_000.0,
            ..BcnParams::default()
        })
        .unwrap();
        let mut rng = stream(1, "cp");
        let xs: Vec<f64> = (0..20_000).map(|_| b.next_interval(0, &mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let min = xs.iter().cloned().fold(f64::MAX, f64::min);
        let max = xs.iter().cloned().fold(0.0, f64::max);
        assert!((mean - 100_000.0).abs() < 100.0, "mean {mean}");
        assert!((95_000.0..95_100.0).contains(&min) && max <= 105_000.0 && max > 104_900.0);
        // Uniform: variance (2j)^2 / 12.
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((var.sqrt() - 10_000.0 / 12f64.sqrt()).abs() < 60.0);
    }

    #[test]
    fn cp_samples_every_s_bytes_and_applies_the_message_rules_in_order() {
        let b = Bcn::new(BcnParams {
            sample_bytes: 15_000.0,
            jitter_bytes: 0.0,
            ..BcnParams::default()
        })
        .unwrap();
        let mut cp = b.new_cp(stream(0, "cp"), None);
        let f: Frame<BcnExt> = Frame::data(0, 0, 1, 1500);
        let mut samples = 0;
        for i in 0..100 {
            // A growing queue: every sample is negative.
            if let Some(fb) = b.cp_on_enqueue(&mut cp, &mut f.clone(), qv(30_000 + i * 1500), 7) {
                assert_eq!(fb.msg, BcnMsg::Negative);
                samples += 1;
            }
        }
        assert_eq!(samples, 10, "one sample per 15 KB of 1500-byte frames");
        // An empty queue: positive feedback, but only for frames tagged with this CP.
        let mut cp = b.new_cp(stream(0, "cp"), None);
        let mut tagged = f;
        tagged.cpid = 7;
        let untagged: usize = (0..100)
            .filter(|_| b.cp_on_enqueue(&mut cp, &mut f.clone(), qv(1500), 7).is_some())
            .count();
        assert_eq!(untagged, 0);
        let pos: Vec<_> = (0..100)
            .filter_map(|_| b.cp_on_enqueue(&mut cp, &mut tagged.clone(), qv(1500), 7))
            .collect();
        assert_eq!(pos.len(), 10);
        assert!(pos.iter().all(|fb| fb.msg == BcnMsg::Positive && fb.fb > 0.0));
        // Without the tag test (not the spec) every positive sample is a message.
        let any = Bcn::new(BcnParams {
            positive_untagged: true,
            ..b.params().clone()
        })
        .unwrap();
        let mut cp = any.new_cp(stream(0, "cp"), None);
        let n = (0..100)
            .filter_map(|_| any.cp_on_enqueue(&mut cp, &mut f.clone(), qv(1500), 7))
            .filter(|fb| fb.msg == BcnMsg::Positive)
            .count();
        assert_eq!(n, 10);
        // BCN-Max wins over BCN(0,0), which wins over a plain negative.
        let both = Bcn::new(BcnParams {
            sample_bytes: 1500.0,
            jitter_bytes: 0.0,
            bcn_max: true,
            bcn00: true,
            qmc_bytes: 120_000.0,
            qsc_bytes: 100_000.0,
            ..BcnParams::default()
        })
        .unwrap();
        let mut cp = both.new_cp(stream(0, "cp"), None);
        assert_eq!(
            both.cp_on_enqueue(&mut cp, &mut f.clone(), qv(130_000), 7).unwrap(),
            BcnExt::new(BcnMsg::Negative, -1875.0)
        );
        assert_eq!(
            both.cp_on_enqueue(&mut cp, &mut f.clone(), qv(110_000), 7).unwrap().msg,
            BcnMsg::Stop
        );
        // Falling from 110 KB to 90 KB: Fb = -(375 - 2 x 312.5) > 0, and the frame is untagged.
        assert_eq!(both.cp_on_enqueue(&mut cp, &mut f.clone(), qv(90_000), 7), None);
        let mut fresh = both.new_cp(stream(0, "cp"), None);
        assert_eq!(
            both.cp_on_enqueue(&mut fresh, &mut f.clone(), qv(90_000), 7).unwrap(),
            BcnExt::new(BcnMsg::Negative, -1875.0)
        );
    }

    #[test]
    fn oversampling_samples_more_often_above_its_threshold() {
        let b = Bcn::new(BcnParams {
            sample_bytes: 75_000.0,
            jitter_bytes: 0.0,
            oversampling: true,
            oversample_above_bytes: 100_000.0,
            sample_sev_bytes: 15_000.0,
            ..BcnParams::default()
        })
        .unwrap();
        let f: Frame<BcnExt> = Frame::data(0, 0, 1, 1500);
        let count = |q: u64| {
            let mut cp = b.new_cp(stream(0, "cp"), None);
            (0..3000)
                .filter(|_| b.cp_on_enqueue(&mut cp, &mut f.clone(), qv(q), 7).is_some())
                .count()
        };
        // 3000 frames of 1500 B = 4.5 MB: 60 samples at 75 KB, 300 at 15 KB (all negative: Q far above Qeq).
        assert_eq!(count(90_000), 60);
        assert_eq!(count(120_000), 300);
    }

    #[test]
    fn bcn00_stops_then_restarts_at_rmin_and_drifts_to_line_rate() {
        let b = Bcn::new(BcnParams {
            bcn00: true,
            ..BcnParams::default()
        })
        .unwrap();
        let mut rng = stream(0, "t");
        let mut c = core();
        let mut rl = BcnRl::default();
        let t = b
            .rp_on_note(&mut c, &mut rl, &BcnExt::new(BcnMsg::Stop, 0.0), 0, 1000, &mut rng)
            .unwrap();
        assert!((1000..=1000 + 100 * PS_PER_US).contains(&t) && c.stopped_until == t);
        let mut now = t;
        let mut next = b.rp_on_timer(&mut c, &mut rl, now, &mut rng).unwrap();
        assert_eq!(c.rate_bps, 1e9);
        let mut steps = 0;
        while next != Time::MAX {
            now = next;
            next = b.rp_on_timer(&mut c, &mut rl, now, &mut rng).unwrap();
            steps += 1;
        }
        assert_eq!(c.rate_bps, 10e9);
        assert_eq!(steps, 9000, "+1 Mbit/s per 100 us from 1 to 10 Gbit/s");
    }
}

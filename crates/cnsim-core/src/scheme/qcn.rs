//! QCN (schemes.md, "QCN, final standard" and "QCN, 2007 proposals").
//!
//! CP: Fb = -(Qoff + w Qdelta) in bytes, quantised to 6 bits; sampling by the
//! final standard's table, or by the 2007 rule (probability rising linearly
//! from Pmin to Pmax with qFb, by bytes or per frame). Two-point: the CP sends
//! the CNM. Three-point: the CP marks a frame (by default the next to leave
//! its queue, mark-front) and the destination reflects it, also sampling
//! unmarked frames with probability RefP (qFb = 0 messages).
//!
//! RP: the rate-limiter state machine (current rate CR, target rate TR, byte
//! counter and timer stages SI / TS, fast recovery, active and hyperactive
//! increase).

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{CpFields, ExtFields, NetView, NoteFormat, QueueView, Red, RlCore, Scheme, check_floor, unreachable_threshold};
use crate::engine::rng::Stream;
use crate::engine::{ms_to_ps, Time};
use crate::error::ConfigError;
use crate::frame::Frame;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Sampling of the final standard, in KB per qFb / 8.
pub const SAMPLE_TABLE_KB: [f64; 8] = [150.0, 75.0, 50.0, 37.5, 30.0, 25.0, 21.5, 18.5];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Final standard: the next sample after Table[qFb / 8] bytes.
    Table,
    /// 2007: the next sample after 1500 B / p(qFb) bytes.
    Bytes,
    /// 2007: every frame is sampled with probability p(qFb).
    Frames,
}

/// Extra Fast Recovery readings (schemes.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Efr {
    /// No EFR: a CNM leaves the stage counters as they are.
    Off,
    /// Every CNM puts the RL back into fast recovery (SI = TS = 0).
    ResetStage,
    /// The TR/8 rule only (stages not reset).
    Tr8,
    /// Final standard: stages reset and the TR/8 rule.
    Standard,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fb0Action {
    /// A qFb = 0 message counts as one rate-increase event.
    Increase,
    /// A qFb = 0 message does nothing.
    None,
    /// A qFb = 0 message stands for the 1 / RefP frames the destination
    /// received: it advances the byte counter by that many full frames (a
    /// CNM resets the counter, so it raises the RL only after a stretch of
    /// them with no decrease).
    Credit,
}

/// Which frame a three-point CP marks (docs/calibration.md section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkAt {
    /// The sampled arriving frame: the mark waits out the queue it reports on.
    Enqueue,
    /// The CP samples departures instead of arrivals and marks the sampled
    /// departing frame.
    Dequeue,
    /// Mark-front: the CP samples arriving frames exactly as the two-point
    /// CP does, and each sample's mark goes on the next frame to leave the
    /// queue, so it does not wait behind the queue it reports on.
    Front,
}

/// QCN parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QcnParams {
    pub qeq_bytes: f64,
    pub w: f64,
    pub sampling: Sampling,
    pub pmin: f64,
    pub pmax: f64,
    pub randomize: f64,
    /// Three-point: CP marks, destination reflects (set by the scheme name
    /// `qcn3pt`).
    pub three_point: bool,
    pub refp: f64,
    pub fb0_action: Fb0Action,
    pub mark_at: MarkAt,
    pub bc_limit_bytes: f64,
    pub bc_ai_bytes: f64,
    pub timer_ms: f64,
    pub fr_thr: u32,
    pub r_ai_mbps: f64,
    pub r_hai_mbps: f64,
    pub hai: bool,
    pub gd: f64,
    pub min_dec_factor: f64,
    pub min_rate_mbps: f64,
    pub efr: Efr,
    pub sample_dropped: bool,
    pub notify_below_qeq: bool,
}

/// The `[qcn]` table: QCN as the final 802.1Qau standard has it (schemes.md).
pub fn table() -> Table {
    Table::new("qcn", "QCN parameters; defaults: the final 802.1Qau standard (schemes.md)")
        .float("qeq_bytes", 26_000.0, Range::gt(0.0), "equilibrium queue Qeq (bytes)")
        .float("w", 2.0, Range::ge(0.0), "weight w of Qdelta")
        .choice(
            "sampling",
            &["table", "bytes", "frames"],
            "table",
            "table (final standard) | bytes / frames (2007 Pmin-Pmax rule)",
        )
        .float("pmin", 0.01, Range::gt(0.0).le(1.0), "2007 sampling probability at qFb = 0")
        .float("pmax", 0.1, Range::gt(0.0).le(1.0), "2007 sampling probability at qFb = 63")
        .float("randomize", 0.15, Range::ge(0.0).lt(1.0), "intervals x U(1 - r, 1 + r)")
        .flag("three_point", false, "three-point: the CP marks, the destination reflects")
        .fixed("three_point")
        .float("refp", 0.04, Range::ge(0.0).le(1.0), "three-point: reflection probability")
        .choice(
            "fb0_action",
            &["credit", "increase", "none"],
            "credit",
            "three-point: what a qFb = 0 message does at the RP (credit: 1 / RefP frames of byte counter)",
        )
        .choice(
            "mark_at",
            &["front", "enqueue", "dequeue"],
            "front",
            "three-point: the frame a sample marks (front: the next to leave the queue)",
        )
        .float("bc_limit_bytes", 150_000.0, Range::gt(0.0), "byte counter in fast recovery")
        .float("bc_ai_bytes", 75_000.0, Range::gt(0.0), "byte counter in active increase")
        .float("timer_ms", 15.0, Range::ge(0.0), "rate-increase timer T (ms; 0 = none)")
        .int("fr_thr", 5, Range::ge(1.0), "fast-recovery threshold FRThr (cycles)")
        .float("r_ai_mbps", 5.0, Range::ge(0.0), "active-increase step R_AI (Mbit/s)")
        .float("r_hai_mbps", 50.0, Range::ge(0.0), "hyperactive-increase step R_HAI (Mbit/s)")
        .flag("hai", true, "hyperactive increase")
        .float("gd", 1.0 / 128.0, Range::gt(0.0).lt(1.0), "decrease gain Gd (per qFb unit)")
        .float("min_dec_factor", 0.5, Range::ge(0.0).le(1.0), "smallest factor of one decrease")
        .float("min_rate_mbps", 5.0, Range::gt(0.0), "minimum rate (Mbit/s)")
        .choice(
            "efr",
            &["off", "reset_stage", "tr8", "standard"],
            "standard",
            "Extra Fast Recovery reading (standard = reset_stage + tr8)",
        )
        .flag(
            "sample_dropped",
            true,
            "[assumed] the sampler also sees frames the full queue drops",
        )
        .flag(
            "notify_below_qeq",
            false,
            "[derived] a CNM (or mark) also at or below Qeq, from the derivative term alone \
             (the literal rule; off: only a queue above Qeq slows sources)",
        )
        .rule(&["pmin", "pmax"], "pmin <= pmax", |v| v.f("pmin") <= v.f("pmax"))
        // A timer fires per RL per period: below 1 us a run would crawl
        // (a 1 ps timer is 10^9 events per RL per simulated ms).
        .rule(&["timer_ms"], "timer_ms = 0 (no timer) or timer_ms >= 0.001 (1 us)", |v| {
            v.f("timer_ms") == 0.0 || v.f("timer_ms") >= 0.001
        })
}

/// The `[qcn2pt]` table: two-point QCN as compared in July 2007.
pub fn table_2pt() -> Table {
    table_2007(
        "qcn2pt",
        "QCN two-point as compared in July 2007 (schemes.md \"QCN, 2007 proposals\")",
    )
}

/// The `[qcn3pt]` table: three-point QCN as compared in July 2007.
pub fn table_3pt() -> Table {
    table_2007(
        "qcn3pt",
        "QCN three-point as compared in July 2007 (schemes.md \"QCN, 2007 proposals\")",
    )
}

/// QCN's parameters with the July 2007 defaults (schemes.md "QCN, 2007
/// proposals").
fn table_2007(name: &'static str, doc: &'static str) -> Table {
    table()
        .variant(name, doc)
        .with_default("qeq_bytes", 409.0 * 64.0, Some("Qeq = 409 pages of 64 B (bytes)"))
        .with_default("sampling", "bytes", Some("2007 rule by bytes"))
        .with_default("bc_ai_bytes", 37_500.0, Some("AIByteCnt (bytes)"))
        .with_default("timer_ms", 0.0, Some("no timer in 2007"))
        .with_default("r_ai_mbps", 12.0, Some("Ri, the active-increase step (Mbit/s)"))
        .with_default("hai", false, Some("no hyperactive increase in 2007"))
        .with_default("efr", "reset_stage", Some("Extra Fast Recovery: off | reset_stage | tr8"))
}

impl Default for QcnParams {
    fn default() -> Self {
        table().default_params()
    }
}

impl QcnParams {
    pub fn timer_ps(&self) -> Time {
        ms_to_ps(self.timer_ms)
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

/// QCN's frame extension. Data (three-point): the mark of the CP that
/// sampled it, `qfb` > 0 and `marked_by` its CPID. Notification: its `qfb`
/// (0: a three-point reflection of an unmarked frame).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QcnExt {
    pub qfb: u8,
    pub marked_by: u32,
}

pub struct Qcn {
    p: QcnParams,
    /// The table as the user named it (`qcn`, `qcn2pt`, `qcn3pt`), for messages.
    label: String,
}

impl Qcn {
    /// The scheme as configured: its parameters checked against the table
    /// the user named (`qcn`, or the 2007 `qcn2pt` / `qcn3pt`).
    pub fn from_config(s: &SchemeConfig) -> Result<Qcn, ConfigError> {
        let declared = match s.table() {
            "qcn2pt" => table_2pt(),
            "qcn3pt" => table_3pt(),
            _ => table(),
        };
        Ok(Qcn {
            p: declared.parse(s.table(), &s.params)?,
            label: s.table().to_string(),
        })
    }

    /// QCN with parameters `p` (checked against the `[qcn]` declaration).
    pub fn new(p: QcnParams) -> Result<Qcn, ConfigError> {
        Qcn::from_config(&SchemeConfig::of("qcn", &p))
    }

    pub fn params(&self) -> &QcnParams {
        &self.p
    }

    /// 6-bit quantised feedback of Fb (bytes): 0 when Fb >= 0.
    pub fn quantize(&self, fb: f64) -> u8 {
        if fb >= 0.0 {
            return 0;
        }
        let scale = self.p.qeq_bytes * (2.0 * self.p.w + 1.0);
        // The value is > 0 here: `as` truncates it, which is its floor.
        (-fb * 63.0 / scale).min(63.0) as u8
    }

    /// Fb (bytes) of a queue of `q` bytes after `qold`.
    pub fn feedback(&self, q: f64, qold: f64) -> f64 {
        -((q - self.p.qeq_bytes) + self.p.w * (q - qold))
    }

    /// The quantised feedback a CP sends for a sample of a queue of `q`
    /// bytes after `qold`: 0 (nothing) at or below Qeq unless `notify_below_qeq`.
    pub fn sample_qfb(&self, q: f64, qold: f64) -> u8 {
        if !self.p.notify_below_qeq && q <= self.p.qeq_bytes {
            return 0;
        }
        self.quantize(self.feedback(q, qold))
    }

    /// 2007 sampling probability at `qfb`.
    pub fn probability(&self, qfb: u8) -> f64 {
        self.p.pmin + (self.p.pmax - self.p.pmin) * qfb as f64 / 63.0
    }

    /// Mean bytes to the next sample after a sample with `qfb`.
    pub fn interval_bytes(&self, qfb: u8) -> f64 {
        match self.p.sampling {
            Sampling::Table => SAMPLE_TABLE_KB[(qfb / 8) as usize] * 1000.0,
            _ => 1500.0 / self.probability(qfb),
        }
    }

    /// The CP's sampler sees a frame of `len` bytes (the queue `qv` includes
    /// it): the qFb of a sample that finds congestion, if this frame is one.
    fn sample(&self, cp: &mut QcnCp, len: u16, qv: QueueView) -> Option<u8> {
        let q = qv.bytes as f64;
        let qfb = if self.p.sampling == Sampling::Frames {
            let qfb = self.sample_qfb(q, cp.qold);
            if cp.rng.gen::<f64>() >= self.probability(qfb) {
                return None;
            }
            qfb
        } else {
            if !cp.started {
                cp.started = true;
                cp.time_to_mark = self.interval_bytes(0) * self.jitter(&mut cp.rng);
            }
            cp.time_to_mark -= len as f64;
            if cp.time_to_mark >= 0.0 {
                return None;
            }
            let qfb = self.sample_qfb(q, cp.qold);
            cp.time_to_mark = self.interval_bytes(qfb) * self.jitter(&mut cp.rng);
            qfb
        };
        cp.qold = q;
        (qfb > 0).then_some(qfb)
    }

    fn jitter(&self, rng: &mut Stream) -> f64 {
        let r = self.p.randomize;
        if r > 0.0 {
            rng.gen_range(1.0 - r..=1.0 + r)
        } else {
            1.0
        }
    }

    /// A sample with `qfb` > 0: the two-point CP's CNM, or the three-point
    /// CP's mark on the sampled frame.
    fn notify(&self, frame: &mut Frame<QcnExt>, qfb: u8, cpid: u32) -> Option<QcnExt> {
        if self.p.three_point {
            frame.ext = QcnExt { qfb, marked_by: cpid };
            return None;
        }
        Some(QcnExt { qfb, marked_by: 0 })
    }

    fn self_increase(&self, core: &mut RlCore, rl: &mut QcnRl) {
        let p = &self.p;
        let thr = p.fr_thr;
        let ri = if p.hai && rl.si > thr && rl.ts > thr {
            p.r_hai_bps() * (rl.si.min(rl.ts) - thr) as f64
        } else if rl.si > thr || rl.ts > thr {
            p.r_ai_bps()
        } else {
            0.0
        };
        let tr8 = matches!(p.efr, Efr::Tr8 | Efr::Standard);
        if tr8 && (rl.si == 1 || rl.ts == 1) && rl.tr > 10.0 * core.rate_bps {
            rl.tr /= 8.0;
        } else {
            rl.tr += ri;
        }
        core.rate_bps = ((core.rate_bps + rl.tr) / 2.0).min(core.line_rate_bps);
    }

    /// A byte-counter cycle completes: next stage, counter reloaded, self-increase.
    fn byte_cycle(&self, core: &mut RlCore, rl: &mut QcnRl, rng: &mut Stream) {
        rl.si += 1;
        let base = if rl.si < self.p.fr_thr {
            self.p.bc_limit_bytes
        } else {
            self.p.bc_ai_bytes
        };
        rl.bc = base * self.jitter(rng);
        self.self_increase(core, rl);
    }

    fn timer_after(&self, rl: &QcnRl, now: Time, rng: &mut Stream) -> Option<Time> {
        if self.p.timer_ps() == 0 {
            return None;
        }
        let t = if rl.ts < self.p.fr_thr {
            self.p.timer_ps() as f64
        } else {
            self.p.timer_ps() as f64 / 2.0
        };
        Some(now + (t * self.jitter(rng)) as Time)
    }
}

pub struct QcnCp {
    rng: Stream,
    time_to_mark: f64,
    qold: f64,
    started: bool,
    /// Three-point mark-front: the qFb of samples whose marks wait for the
    /// next departures (never more than the frames queued). Boxed: only the
    /// three-point CP uses it, and the sampler's fields, touched by every
    /// arriving frame, stay within 48 bytes.
    #[allow(clippy::box_collection)] // deliberate: the box keeps the CP small
    pending: Box<std::collections::VecDeque<u8>>,
}

/// RP state of one rate limiter.
#[derive(Debug, Clone, Default)]
pub struct QcnRl {
    /// Target rate (bit/s).
    pub tr: f64,
    /// Byte-counter and timer stages.
    pub si: u32,
    pub ts: u32,
    /// Bytes left in the current byte-counter cycle.
    pub bc: f64,
}

impl Qcn {
    /// A floor above a sender's line rate (refused); Qeq that no CP queue
    /// reaches (warned).
    fn check(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        let (p, t) = (&self.p, &self.label);
        check_floor(&format!("{t}.min_rate_mbps"), p.min_rate_mbps, net)?;
        Ok(
            unreachable_threshold(&format!("{t}.qeq_bytes"), p.qeq_bytes, net, "no source is ever slowed")
                .into_iter()
                .collect(),
        )
    }
}

impl Scheme for Qcn {
    type Ext = QcnExt;
    type Cp = QcnCp;
    type Np = ();
    type Rl = QcnRl;

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        self.check(net)
    }

    fn new_cp(&self, rng: Stream, _red: Option<Red>) -> QcnCp {
        QcnCp {
            rng,
            time_to_mark: 0.0,
            qold: 0.0,
            started: false,
            pending: Box::default(),
        }
    }

    fn cp_on_enqueue(&self, cp: &mut QcnCp, frame: &mut Frame<QcnExt>, qv: QueueView, cpid: u32) -> Option<QcnExt> {
        let qfb = self.sample(cp, frame.len, qv)?;
        self.notify(frame, qfb, cpid)
    }

    fn creates_rl(&self, note: &QcnExt) -> bool {
        note.qfb > 0
    }

    fn slows(&self, note: &QcnExt) -> bool {
        note.qfb > 0
    }

    fn cp_samples_dropped(&self) -> bool {
        self.p.sample_dropped
    }

    fn ext_fields(&self, ext: &QcnExt) -> ExtFields {
        ExtFields {
            note: NoteFormat::Cnm,
            fb: Some(ext.qfb as f64),
            marked_by: ext.marked_by,
            ..ExtFields::default()
        }
    }

    fn cp_fields(&self, cp: &QcnCp, q: QueueView) -> Option<CpFields> {
        let q = q.bytes as f64;
        Some(CpFields {
            qoff: q - self.p.qeq_bytes,
            qdelta: q - cp.qold,
        })
    }

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (QcnRl, Option<Time>) {
        // The timer starts with the first CNM (rp_on_note restarts it).
        let rl = QcnRl {
            tr: core.line_rate_bps,
            bc: self.p.bc_limit_bytes,
            ..QcnRl::default()
        };
        (rl, None)
    }

    fn rp_on_note(&self, core: &mut RlCore, rl: &mut QcnRl, note: &QcnExt, _cpid: u32, now: Time, rng: &mut Stream) -> Option<Time> {
        let p = &self.p;
        if note.qfb == 0 {
            // A qFb = 0 message (three-point reflection of an unmarked frame).
            match p.fb0_action {
                Fb0Action::Increase => {
                    rl.si += 1;
                    self.self_increase(core, rl);
                }
                Fb0Action::Credit if p.refp > 0.0 => {
                    rl.bc -= 1500.0 / p.refp;
                    if rl.bc < 0.0 {
                        self.byte_cycle(core, rl, rng);
                    }
                }
                Fb0Action::Credit | Fb0Action::None => {}
            }
            return None;
        }
        let qfb = note.qfb as f64;
        match p.efr {
            Efr::ResetStage | Efr::Standard => {
                if rl.si != 0 {
                    rl.tr = core.rate_bps;
                }
                rl.si = 0;
                rl.ts = 0;
            }
            Efr::Off | Efr::Tr8 => rl.tr = core.rate_bps,
        }
        rl.bc = p.bc_limit_bytes;
        core.rate_bps = (core.rate_bps * (1.0 - p.gd * qfb).max(p.min_dec_factor)).max(p.min_rate_bps());
        self.timer_after(rl, now, rng).or(Some(Time::MAX))
    }

    fn rp_on_send(&self, core: &mut RlCore, rl: &mut QcnRl, frame: &mut Frame<QcnExt>, _now: Time, rng: &mut Stream) -> Option<Time> {
        rl.bc -= frame.len as f64;
        if rl.bc < 0.0 {
            self.byte_cycle(core, rl, rng);
        }
        None
    }

    fn rp_on_timer(&self, core: &mut RlCore, rl: &mut QcnRl, now: Time, rng: &mut Stream) -> Option<Time> {
        rl.ts += 1;
        self.self_increase(core, rl);
        self.timer_after(rl, now, rng).or(Some(Time::MAX))
    }
}

/// QCN three-point: the same CP and RP, with the destination stations
/// reflecting marked frames (and RefP of the unmarked ones).
pub struct Qcn3pt(pub Qcn);

impl Scheme for Qcn3pt {
    type Ext = QcnExt;
    type Cp = QcnCp;
    type Np = ();
    type Rl = QcnRl;
    const NP_EVENTS: bool = true;
    const CP_ON_DEQUEUE: bool = true;

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        self.0.check(net)
    }

    fn new_cp(&self, rng: Stream, red: Option<Red>) -> QcnCp {
        self.0.new_cp(rng, red)
    }
    fn cp_on_enqueue(&self, cp: &mut QcnCp, frame: &mut Frame<QcnExt>, q: QueueView, cpid: u32) -> Option<QcnExt> {
        match self.0.p.mark_at {
            MarkAt::Enqueue => self.0.cp_on_enqueue(cp, frame, q, cpid),
            MarkAt::Dequeue => None,
            MarkAt::Front => {
                // One mark per queued frame: a sample that finds every frame
                // in the queue already carrying one is lost.
                let queued = q.bytes.div_ceil(frame.len.max(1) as u64) as usize;
                if let Some(qfb) = self.0.sample(cp, frame.len, q) {
                    if cp.pending.len() < queued {
                        cp.pending.push_back(qfb);
                    }
                }
                None
            }
        }
    }
    fn cp_on_dequeue(&self, cp: &mut QcnCp, frame: &mut Frame<QcnExt>, q: QueueView, cpid: u32) {
        let qfb = match self.0.p.mark_at {
            MarkAt::Enqueue => None,
            MarkAt::Dequeue => self.0.sample(cp, frame.len, q),
            MarkAt::Front => cp.pending.pop_front(),
        };
        if let Some(qfb) = qfb {
            frame.ext = QcnExt { qfb, marked_by: cpid };
        }
    }
    fn np_on_data(&self, _np: &mut (), frame: &Frame<QcnExt>, _now: Time, rng: &mut Stream) -> Option<(QcnExt, u32)> {
        if frame.ext.marked_by != 0 {
            return Some((
                QcnExt {
                    qfb: frame.ext.qfb,
                    marked_by: 0,
                },
                frame.ext.marked_by,
            ));
        }
        if rng.gen::<f64>() < self.0.p.refp {
            // Names the RL the frame left (its tag), if any.
            return Some((QcnExt::default(), frame.cpid));
        }
        None
    }
    fn creates_rl(&self, note: &QcnExt) -> bool {
        self.0.creates_rl(note)
    }
    fn slows(&self, note: &QcnExt) -> bool {
        self.0.slows(note)
    }
    fn cp_samples_dropped(&self) -> bool {
        self.0.cp_samples_dropped()
    }
    fn ext_fields(&self, ext: &QcnExt) -> ExtFields {
        self.0.ext_fields(ext)
    }
    fn cp_fields(&self, cp: &QcnCp, q: QueueView) -> Option<CpFields> {
        self.0.cp_fields(cp, q)
    }
    fn new_rl(&self, core: &mut RlCore, now: Time) -> (QcnRl, Option<Time>) {
        self.0.new_rl(core, now)
    }
    fn rp_on_note(&self, core: &mut RlCore, rl: &mut QcnRl, note: &QcnExt, cpid: u32, now: Time, rng: &mut Stream) -> Option<Time> {
        self.0.rp_on_note(core, rl, note, cpid, now, rng)
    }
    fn rp_on_send(&self, core: &mut RlCore, rl: &mut QcnRl, frame: &mut Frame<QcnExt>, now: Time, rng: &mut Stream) -> Option<Time> {
        self.0.rp_on_send(core, rl, frame, now, rng)
    }
    fn rp_on_timer(&self, core: &mut RlCore, rl: &mut QcnRl, now: Time, rng: &mut Stream) -> Option<Time> {
        self.0.rp_on_timer(core, rl, now, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::stream;

    fn qcn(p: QcnParams) -> Qcn {
        Qcn::new(p).unwrap()
    }

    fn core(rate: f64) -> RlCore {
        RlCore {
            rate_bps: rate,
            ..RlCore::at_line_rate(10e9)
        }
    }

    fn qv(bytes: u64) -> QueueView {
        QueueView {
            bytes,
            rate_bps: 10_000_000_000,
            tx_bytes: 0,
            now: 0,
        }
    }

    fn cnm(qfb: u8) -> QcnExt {
        QcnExt { qfb, marked_by: 0 }
    }

    /// The RL sends one frame of `len` bytes.
    fn send(q: &Qcn, c: &mut RlCore, rl: &mut QcnRl, len: u16, rng: &mut Stream) {
        let mut f: Frame<QcnExt> = Frame::data(0, 0, 1, len);
        q.rp_on_send(c, rl, &mut f, 0, rng);
    }

    #[test]
    fn quantisation_on_hand_computed_cases() {
        let q = qcn(QcnParams::default()); // Qeq 26,000 B, w 2: full scale 130,000 B
        assert_eq!(q.quantize(0.0), 0);
        assert_eq!(q.quantize(100.0), 0);
        assert_eq!(q.quantize(-130_000.0), 63);
        assert_eq!(q.quantize(-1e9), 63);
        // -65,000 x 63 / 130,000 = 31.5 -> 31
        assert_eq!(q.quantize(-65_000.0), 31);
        // Q = 36,000, Qold = 30,000: Fb = -(10,000 + 12,000) = -22,000 -> floor(10.66) = 10
        assert_eq!(q.quantize(q.feedback(36_000.0, 30_000.0)), 10);
    }

    #[test]
    fn sampling_table_and_the_2007_probability_rule() {
        let q = qcn(QcnParams::default());
        assert_eq!(q.interval_bytes(0), 150_000.0);
        assert_eq!(q.interval_bytes(7), 150_000.0);
        assert_eq!(q.interval_bytes(8), 75_000.0);
        assert_eq!(q.interval_bytes(31), 37_500.0);
        assert_eq!(q.interval_bytes(63), 18_500.0);
        let old = qcn(QcnParams {
            sampling: Sampling::Bytes,
            ..QcnParams::default()
        });
        assert!((old.interval_bytes(0) - 150_000.0).abs() < 1e-6);
        assert!((old.interval_bytes(63) - 15_000.0).abs() < 1e-6);
    }

    #[test]
    fn cp_samples_by_bytes_updates_qold_and_notifies_only_when_congested() {
        let q = qcn(QcnParams {
            randomize: 0.0,
            ..QcnParams::default()
        });
        let mut cp = q.new_cp(stream(0, "cp"), None);
        let mut f = Frame::data(0, 0, 1, 1500);
        // Below Qeq and steady: samples every 150 KB and sends nothing, not
        // even for the first sample, whose Qdelta (Qold still 0) is +10,000.
        let sent = (0..1000)
            .filter(|_| q.cp_on_enqueue(&mut cp, &mut f, qv(10_000), 3).is_some())
            .count();
        assert_eq!(sent, 0);
        assert_eq!(cp.qold, 10_000.0);
        // The literal rule (notify_below_qeq) lets the derivative term alone notify.
        let lit = qcn(QcnParams {
            randomize: 0.0,
            notify_below_qeq: true,
            ..QcnParams::default()
        });
        let mut lcp = lit.new_cp(stream(0, "cp"), None);
        let sent = (0..1000)
            .filter(|_| lit.cp_on_enqueue(&mut lcp, &mut f, qv(10_000), 3).is_some())
            .count();
        assert_eq!(sent, 1);
        // Far above: qFb = 63 -> samples every 18.5 KB.
        let sent: Vec<_> = (0..1000).filter_map(|_| q.cp_on_enqueue(&mut cp, &mut f, qv(200_000), 3)).collect();
        assert!(sent.len() >= 70 && sent.len() <= 82, "{}", sent.len());
        assert!(sent.iter().all(|n| n.qfb >= 1));
        // Three-point, marking the sampled arrival: the frame is marked instead.
        let q3 = qcn(QcnParams {
            randomize: 0.0,
            three_point: true,
            mark_at: MarkAt::Enqueue,
            ..QcnParams::default()
        });
        let mut cp = q3.new_cp(stream(0, "cp"), None);
        let mut marked = 0;
        for _ in 0..1000 {
            let mut g = f;
            assert!(q3.cp_on_enqueue(&mut cp, &mut g, qv(200_000), 3).is_none());
            if g.ext.marked_by == 3 {
                assert!(g.ext.qfb > 0);
                marked += 1;
            }
        }
        assert!(marked >= 70);
    }

    /// Drives one RL through byte-counter cycles of 1500-byte frames.
    fn cycles(q: &Qcn, c: &mut RlCore, rl: &mut QcnRl, n: usize, rng: &mut Stream) -> Vec<(u32, f64, f64)> {
        let mut out = vec![];
        for _ in 0..n {
            let si = rl.si;
            while rl.si == si {
                send(q, c, rl, 1500, rng);
            }
            out.push((rl.si, c.rate_bps, rl.tr));
        }
        out
    }

    #[test]
    fn rp_fast_recovery_then_active_then_hyperactive_increase() {
        let q = qcn(QcnParams {
            randomize: 0.0,
            ..QcnParams::default()
        });
        let mut rng = stream(0, "rp");
        let mut c = core(10e9);
        let (mut rl, _) = q.new_rl(&mut c, 0);
        // qFb 63: decrease by 63/128 -> factor 0.5078, TR stays at line rate (SI was 0).
        q.rp_on_note(&mut c, &mut rl, &cnm(63), 0, 0, &mut rng);
        assert!((c.rate_bps - 10e9 * (1.0 - 63.0 / 128.0)).abs() < 1.0);
        assert_eq!(rl.tr, 10e9);
        let cr0 = c.rate_bps;
        // Another CNM before any increase: the 50% floor on one decrease.
        q.rp_on_note(&mut c, &mut rl, &cnm(200), 0, 0, &mut rng);
        assert!((c.rate_bps - cr0 * 0.5).abs() < 1.0, "min decrease factor");
        let cr1 = c.rate_bps;
        // The TR/8 rule: the first increase with TR > 10 CR divides TR by 8.
        let mut c2 = core(0.5e9);
        let mut rl2 = QcnRl {
            tr: 10e9,
            ..QcnRl::default()
        };
        send(&q, &mut c2, &mut rl2, 1500, &mut rng); // BC 0 -> cycle done, SI = 1
        assert_eq!(rl2.si, 1);
        assert!((rl2.tr - 10e9 / 8.0).abs() < 1.0, "TR/8 rule: tr {}", rl2.tr);
        // Five fast-recovery cycles: TR fixed, CR halves the distance each time.
        let h = cycles(&q, &mut c, &mut rl, 5, &mut rng);
        let mut expect = cr1;
        for (i, &(si, cr, tr)) in h.iter().enumerate() {
            assert_eq!(si, i as u32 + 1);
            assert_eq!(tr, 10e9);
            expect = (expect + 10e9) / 2.0;
            assert!((cr - expect).abs() < 1.0, "FR step {i}");
        }
        // Then active increase: TR grows by R_AI per cycle.
        let h = cycles(&q, &mut c, &mut rl, 2, &mut rng);
        assert_eq!(h[0].0, 6);
        assert!((h[0].2 - (10e9 + 5e6)).abs() < 1.0);
        assert!((h[1].2 - (10e9 + 10e6)).abs() < 1.0);
        // Hyperactive only when both stages exceed FRThr.
        let mut c3 = core(1e9);
        let mut rl3 = QcnRl {
            tr: 2e9,
            si: 7,
            ts: 5,
            bc: 0.0,
        };
        send(&q, &mut c3, &mut rl3, 1, &mut rng); // SI 8, TS 5: AI
        assert!((rl3.tr - (2e9 + 5e6)).abs() < 1.0);
        rl3.ts = 7;
        rl3.bc = 0.0;
        send(&q, &mut c3, &mut rl3, 1, &mut rng); // SI 9, TS 7: HAI x (7 - 5)
        assert!((rl3.tr - (2e9 + 5e6 + 2.0 * 50e6)).abs() < 1.0);
    }

    #[test]
    fn rp_reaches_line_rate_and_respects_the_minimum_rate() {
        let q = qcn(QcnParams {
            randomize: 0.0,
            ..QcnParams::default()
        });
        let mut rng = stream(0, "rp");
        let mut c = core(10e9);
        let (mut rl, _) = q.new_rl(&mut c, 0);
        for _ in 0..50 {
            q.rp_on_note(&mut c, &mut rl, &cnm(63), 0, 0, &mut rng);
        }
        assert_eq!(c.rate_bps, 5e6);
        // The TR/8 rule drops TR to 1.25 Gbit/s; active increase climbs from there.
        let h = cycles(&q, &mut c, &mut rl, 3000, &mut rng);
        assert!(h.windows(2).all(|w| w[1].1 >= w[0].1), "CR never falls without a CNM");
        assert_eq!(c.rate_bps, 10e9, "back at line rate: the engine releases the RL");
    }

    #[test]
    fn efr_off_keeps_the_stage_reset_stage_restarts_fast_recovery() {
        let base = QcnParams {
            randomize: 0.0,
            timer_ms: 0.0,
            hai: false,
            r_ai_mbps: 12.0,
            bc_ai_bytes: 37_500.0,
            ..QcnParams::default()
        };
        for (efr, expect_si) in [(Efr::Off, 8), (Efr::ResetStage, 0), (Efr::Standard, 0), (Efr::Tr8, 8)] {
            let q = qcn(QcnParams { efr, ..base.clone() });
            let mut rng = stream(0, "rp");
            let mut c = core(5e9);
            let mut rl = QcnRl {
                tr: 6e9,
                si: 8,
                ts: 0,
                bc: 100.0,
            };
            q.rp_on_note(&mut c, &mut rl, &cnm(10), 0, 0, &mut rng);
            assert_eq!(rl.si, expect_si, "{efr:?}");
        }
    }

    #[test]
    fn three_point_destination_reflects_marks_and_samples_refp() {
        let q = Qcn3pt(qcn(QcnParams {
            three_point: true,
            fb0_action: Fb0Action::Increase,
            ..QcnParams::default()
        }));
        let mut rng = stream(0, "sink");
        let mut marked: Frame<QcnExt> = Frame::data(0, 0, 1, 1500);
        marked.ext = QcnExt { qfb: 17, marked_by: 4 };
        assert_eq!(q.np_on_data(&mut (), &marked, 0, &mut rng), Some((cnm(17), 4)));
        let mut plain: Frame<QcnExt> = Frame::data(0, 0, 1, 1500);
        plain.cpid = 4; // it left the RL of CP 4
        let n = 100_000;
        let zero: Vec<_> = (0..n).filter_map(|_| q.np_on_data(&mut (), &plain, 0, &mut rng)).collect();
        let share = zero.len() as f64 / n as f64;
        assert!((share - 0.04).abs() < 0.003, "{share}");
        assert!(zero.iter().all(|&(n, cpid)| n.qfb == 0 && cpid == 4));
        // fb0_action = increase: one increase event per qFb = 0 message.
        let mut c = core(1e9);
        let mut rl = QcnRl {
            tr: 3e9,
            ..QcnRl::default()
        };
        q.rp_on_note(&mut c, &mut rl, &zero[0].0, 4, 0, &mut rng);
        assert_eq!(rl.si, 1);
        assert!((c.rate_bps - 2e9).abs() < 1.0);
    }

    #[test]
    fn credit_reading_counts_reflections_toward_the_byte_counter_and_a_cnm_resets_it() {
        let q = qcn(QcnParams {
            three_point: true,
            fb0_action: Fb0Action::Credit,
            efr: Efr::ResetStage,
            randomize: 0.0,
            ..QcnParams::default()
        });
        let mut rng = stream(0, "rp");
        let mut c = core(1e9);
        let mut rl = QcnRl {
            tr: 3e9,
            bc: 150_000.0,
            ..QcnRl::default()
        };
        let zero = QcnExt::default();
        // Each stands for 1 / RefP = 25 frames of 1500 B: 37.5 KB of the 150 KB cycle.
        for _ in 0..4 {
            q.rp_on_note(&mut c, &mut rl, &zero, 0, 0, &mut rng);
        }
        assert_eq!((rl.si, c.rate_bps), (0, 1e9), "150 KB exactly: the cycle is not over");
        q.rp_on_note(&mut c, &mut rl, &zero, 0, 0, &mut rng);
        assert_eq!(rl.si, 1);
        assert!((c.rate_bps - 2e9).abs() < 1.0, "one cycle: halfway to TR");
        // A CNM reloads the counter: four reflections after it raise nothing.
        q.rp_on_note(&mut c, &mut rl, &cnm(10), 0, 0, &mut rng);
        let after_cnm = c.rate_bps;
        for _ in 0..4 {
            q.rp_on_note(&mut c, &mut rl, &zero, 0, 0, &mut rng);
        }
        assert_eq!(c.rate_bps, after_cnm);
    }

    fn three_point(mark_at: MarkAt) -> Qcn3pt {
        Qcn3pt(qcn(QcnParams {
            three_point: true,
            randomize: 0.0,
            mark_at,
            ..QcnParams::default()
        }))
    }

    #[test]
    fn mark_front_samples_arrivals_like_the_two_point_cp_and_marks_the_next_departures() {
        let q = three_point(MarkAt::Front);
        let two_point = qcn(QcnParams {
            randomize: 0.0,
            ..QcnParams::default()
        });
        let (mut cp, mut cp2) = (q.new_cp(stream(0, "cp"), None), two_point.new_cp(stream(0, "cp"), None));
        let mut cnms = vec![];
        for i in 0..1000u64 {
            let q_bytes = 100_000 + 100 * i; // far above Qeq and rising
            let mut arriving: Frame<QcnExt> = Frame::data(0, 0, 1, 1500);
            assert!(q.cp_on_enqueue(&mut cp, &mut arriving, qv(q_bytes), 3).is_none());
            assert_eq!(arriving.ext, QcnExt::default(), "the sampled arrival itself is not marked");
            let mut same = arriving;
            cnms.extend(two_point.cp_on_enqueue(&mut cp2, &mut same, qv(q_bytes), 3));
        }
        // The same samples, with the same qFb, as the two-point CP's CNMs.
        let pending: Vec<u8> = cp.pending.iter().copied().collect();
        assert_eq!(pending, cnms.iter().map(|n| n.qfb).collect::<Vec<_>>());
        assert!(pending.len() > 50, "{}", pending.len());
        // Each departure takes one mark, oldest first, replacing an upstream CP's mark.
        for &qfb in &pending {
            let mut leaving: Frame<QcnExt> = Frame::data(5, 0, 2, 1500);
            leaving.ext = QcnExt { qfb: 9, marked_by: 7 };
            q.cp_on_dequeue(&mut cp, &mut leaving, qv(100_000), 3);
            assert_eq!(leaving.ext, QcnExt { qfb, marked_by: 3 });
        }
        // Nothing pending: a departure keeps what it carries.
        let mut leaving: Frame<QcnExt> = Frame::data(5, 0, 2, 1500);
        leaving.ext = QcnExt { qfb: 9, marked_by: 7 };
        q.cp_on_dequeue(&mut cp, &mut leaving, qv(100_000), 3);
        assert_eq!(leaving.ext, QcnExt { qfb: 9, marked_by: 7 });
    }

    #[test]
    fn mark_front_holds_at_most_one_mark_per_queued_frame() {
        let q = three_point(MarkAt::Front);
        let mut cp = q.new_cp(stream(0, "cp"), None);
        // 30 KB of 10 KB frames (above Qeq): at most three frames to mark.
        for _ in 0..2000 {
            let mut arriving: Frame<QcnExt> = Frame::data(0, 0, 1, 10_000);
            q.cp_on_enqueue(&mut cp, &mut arriving, qv(30_000), 3);
        }
        assert_eq!(cp.pending.len(), 3);
    }

    #[test]
    fn mark_at_dequeue_samples_departures_and_enqueue_marks_the_arrival() {
        let deq = three_point(MarkAt::Dequeue);
        let mut cp = deq.new_cp(stream(0, "cp"), None);
        let mut marked = 0;
        for _ in 0..1000 {
            let mut f: Frame<QcnExt> = Frame::data(0, 0, 1, 1500);
            assert!(deq.cp_on_enqueue(&mut cp, &mut f, qv(200_000), 3).is_none());
            assert_eq!(f.ext, QcnExt::default(), "arrivals are not sampled");
            deq.cp_on_dequeue(&mut cp, &mut f, qv(200_000), 3);
            marked += usize::from(f.ext.marked_by == 3);
        }
        assert!((70..=82).contains(&marked), "{marked}");
        let enq = three_point(MarkAt::Enqueue);
        let mut cp = enq.new_cp(stream(0, "cp"), None);
        let mut f: Frame<QcnExt> = Frame::data(0, 0, 1, 1500);
        for _ in 0..1000 {
            enq.cp_on_dequeue(&mut cp, &mut f, qv(200_000), 3);
        }
        assert_eq!(f.ext, QcnExt::default(), "departures are not marked");
    }

    #[test]
    fn a_cp_stays_within_48_bytes() {
        // Every arriving frame updates its port's CP: keep it small (docs/performance.md).
        assert!(
            std::mem::size_of::<Option<QcnCp>>() <= 48,
            "{}",
            std::mem::size_of::<Option<QcnCp>>()
        );
    }

    #[test]
    fn the_2007_tables_default_to_the_calibrated_readings() {
        for t in [table_2pt(), table_3pt()] {
            let p: QcnParams = t.default_params();
            assert_eq!(p.efr, Efr::ResetStage);
            assert_eq!((p.fb0_action, p.mark_at), (Fb0Action::Credit, MarkAt::Front));
        }
    }
}

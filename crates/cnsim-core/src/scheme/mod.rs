//! Congestion-management schemes behind two small roles:
//!
//! - the **congestion point** (CP): state per bridge output port with CP
//!   detection; it sees every data frame that joins the queue and may answer
//!   with [`Feedback`] for the frame's source (a CNM);
//! - the **reaction point** (RP): the rate law of a rate limiter (RL) at a
//!   source station. The network model owns the RL mechanics common to every
//!   scheme (its queue, pacing, tagging, round robin, release at line rate);
//!   the scheme only moves [`RlCore::rate_bps`] and asks for timers.
//!
//! A scheme is one file implementing [`Scheme`], registered with one line in
//! [`build`]. Schemes are type parameters of the simulation, so the per-frame
//! path has no dynamic dispatch.

pub mod bcn;
pub mod dcqcn;
pub mod nocm;
pub mod qcn;

use crate::config::{ConfigError, SchemeConfig, SimConfig};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::net::sim::{NetSim, Run};
use crate::net::Frame;

/// What a CP tells a source, carried by a CNM (64-byte control frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feedback {
    pub kind: FeedbackKind,
    /// Feedback value (BCN: Fb in 64-byte pages, negative = slow down).
    pub fb: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FeedbackKind {
    /// Fb < 0: decrease (creates the RL when the station has none for this CP).
    Negative = 0,
    /// Fb > 0: increase (only for an existing RL).
    Positive = 1,
    /// BCN(0,0): stop for a random time, then restart slowly.
    Stop = 2,
}

impl FeedbackKind {
    pub fn from_u8(x: u8) -> FeedbackKind {
        match x {
            0 => FeedbackKind::Negative,
            1 => FeedbackKind::Positive,
            _ => FeedbackKind::Stop,
        }
    }
}

/// The part of a rate limiter a scheme may change.
#[derive(Clone, Debug)]
pub struct RlCore {
    /// Current rate (bit/s).
    pub rate_bps: f64,
    /// The station's line rate (bit/s); an RL at line rate with an empty
    /// queue is released.
    pub line_rate_bps: f64,
    /// The RL sends nothing before this time (BCN(0,0) stop).
    pub stopped_until: Time,
}

/// A congestion-management scheme: its CP and its RP rate law.
pub trait Scheme: Send + 'static {
    /// State of one CP (one bridge output port with detection on).
    type Cp: Send;
    /// Scheme state of one rate limiter.
    type Rl: Send;

    /// Data frames arriving at their destination are events (reflection
    /// points); otherwise the engine counts them when they are sent.
    const SINK_EVENTS: bool = false;
    /// The CP also sees every data frame as it leaves the queue (`cp_on_dequeue`).
    const CP_ON_DEQUEUE: bool = false;

    fn new_cp(&self, rng: Stream) -> Self::Cp;
    fn new_rl(&self) -> Self::Rl;

    /// A data frame joined a CP queue, which now holds `q_bytes` (including
    /// it). `cpid` identifies this CP in tags.
    fn cp_on_enqueue(&self, cp: &mut Self::Cp, frame: &mut Frame, q_bytes: u64, cpid: u16) -> Option<Feedback>;

    /// A data frame leaves a CP queue that holds `q_bytes` (including it);
    /// the CP may mark it. Only with `CP_ON_DEQUEUE`.
    fn cp_on_dequeue(&self, _cp: &mut Self::Cp, _frame: &mut Frame, _q_bytes: u64, _cpid: u16) {}

    /// A data frame reached its destination (only with `SINK_EVENTS`) at
    /// `now`: the destination may answer its source with feedback for RL
    /// `cpid`. `last_sent` is when this destination last notified this
    /// source (`Time::MAX`: never); the scheme updates it when it answers.
    fn sink_on_data(&self, _frame: &Frame, _now: Time, _last_sent: &mut Time, _rng: &mut Stream) -> Option<(Feedback, u16)> {
        None
    }

    /// A frame left the RL (byte counters). Returns a timer request as
    /// `rp_on_feedback` does; the rate may change.
    fn rp_on_transmit(&self, _core: &mut RlCore, _rl: &mut Self::Rl, _len: u16, _now: Time, _rng: &mut Stream) -> Option<Time> {
        None
    }

    /// Whether the CP also samples frames that find the queue full (and are
    /// dropped); `cp_on_enqueue` then sees the queue without them.
    fn cp_samples_dropped(&self) -> bool {
        false
    }

    /// Whether `fb` creates an RL at a station that has none for its CP.
    fn creates_rl(&self, fb: &Feedback) -> bool;

    /// A new RL was created (at line rate). Returns its first timer, if any.
    fn rp_on_create(&self, _core: &mut RlCore, _rl: &mut Self::Rl, _now: Time) -> Option<Time> {
        None
    }

    /// Feedback reached the RL. Returns when the RL's timer should next fire
    /// (`None` leaves any pending timer as it is, `Some(Time::MAX)` cancels it).
    fn rp_on_feedback(&self, core: &mut RlCore, rl: &mut Self::Rl, fb: &Feedback, now: Time, rng: &mut Stream) -> Option<Time>;

    /// The RL's timer fired. Returns the next timer time, if any.
    fn rp_on_timer(&self, core: &mut RlCore, rl: &mut Self::Rl, now: Time, rng: &mut Stream) -> Option<Time>;
}

/// Builds the simulation of `cfg` with its scheme. One line per scheme.
pub fn build(cfg: &SimConfig, seed: u64) -> Result<Box<dyn Run>, ConfigError> {
    Ok(match &cfg.scheme {
        SchemeConfig::Nocm => Box::new(NetSim::new(cfg, seed, nocm::NoCm)?),
        SchemeConfig::Bcn(p) => Box::new(NetSim::new(cfg, seed, bcn::Bcn::new(p.clone())?)?),
        SchemeConfig::Qcn(p) if p.three_point => Box::new(NetSim::new(cfg, seed, qcn::Qcn3pt(qcn::Qcn::new(p.clone())?))?),
        SchemeConfig::Qcn(p) => Box::new(NetSim::new(cfg, seed, qcn::Qcn::new(p.clone())?)?),
        SchemeConfig::Dcqcn(p) => Box::new(NetSim::new(cfg, seed, dcqcn::Dcqcn::new(p.clone())?)?),
    })
}

//! The event trace hook (docs/looking-at-frames.md): what the network model
//! tells a tracer at each event that matters, and the tracer that does
//! nothing.
//!
//! The simulation is generic over its tracer (`NetSim<S, T>`) and every call
//! site is `if T::ON { ... }`: with [`NoTrace`], a zero-sized type whose
//! `ON` is false, the compiler removes the calls and the arguments they
//! would have computed, so a run without a trace executes exactly the code
//! it did before the hook existed. [`Recorder`] writes the events that pass
//! its filters to `events.parquet` (`crate::io::events`) and the frames of
//! the ports it captures to pcapng files (`crate::io::pcap`).
//!
//! A tracer only observes: it reads the frames and states it is shown and
//! changes nothing, so a traced run's results are the untraced run's.

pub mod record;

pub use record::{Recorder, TraceOutput, TraceSummary};

// The event kinds and reasons are the trace file's vocabulary, declared with
// its columns (io/events.rs, a layer below): re-exported here for the hooks.
pub use crate::io::events::{Kind, Reason, NO_PORT};

use crate::engine::Time;
use crate::frame::Frame;
use crate::scheme::{CpFields, Scheme};

/// Where and when an event happens: node index, port id ([`NO_PORT`]: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub at: Time,
    pub node: u32,
    pub port: u32,
}

/// Where a notification comes from.
#[derive(Clone, Copy, Debug)]
pub struct NoteOrigin {
    pub site: Site,
    /// Sent by the CP of `site.port` (else by a notification point at a station).
    pub from_cp: bool,
    /// The sequence number of the frame it answers, the CP's queue, and the
    /// CP's sample of it.
    pub sampled_seq: u32,
    pub queue_bytes: Option<u64>,
    pub cp: Option<CpFields>,
}

/// What a rate limiter is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RlKey {
    /// One flow's RL (`rl_scope = flow`, transport flows): station to destination.
    Flow { src: u32, dst: u32 },
    /// One CP's RL (`rl_scope = cp`).
    Cp { src: u32, cpid: u32 },
}

/// A rate limiter as it is now.
#[derive(Clone, Copy, Debug)]
pub struct RlView {
    pub id: u32,
    pub key: RlKey,
    /// Its transport flow (`NO_FLOW`: open-loop).
    pub flow: u32,
    pub rate_bps: f64,
    /// `u64::MAX`: no window.
    pub window_bytes: u64,
}

/// A transport flow event.
#[derive(Clone, Copy, Debug)]
pub struct FlowView {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub n_frames: u32,
    /// Rto: the first frame not acknowledged.
    pub seq: Option<u32>,
}

/// What the network model tells a tracer. Every call site is guarded by
/// `if T::ON`; a tracer only reads what it is given.
pub trait Tracer<S: Scheme>: Send + 'static {
    /// False for [`NoTrace`]: the compiler removes every call.
    const ON: bool;

    /// A frame event (any kind but `Dequeue`): `queue_bytes` is the queue
    /// the event concerns, when there is one.
    fn frame(&mut self, s: &S, site: Site, kind: Kind, reason: Reason, f: &Frame<S::Ext>, queue_bytes: Option<u64>);

    /// `f` starts leaving `site.port` at `site.at` (the port holds
    /// `queue_bytes` of data, the frame included if it is data).
    fn depart(&mut self, s: &S, site: Site, f: &Frame<S::Ext>, queue_bytes: u64);

    /// A notification leaves its origin.
    fn note_sent(&mut self, s: &S, origin: NoteOrigin, note: &Frame<S::Ext>);

    /// Port `site.port` queued a PAUSE frame of `quanta` (0 = XON); the
    /// bridge holds `in_bytes` that arrived through that port.
    fn pause_sent(&mut self, site: Site, prio: u8, quanta: u16, reason: Reason, in_bytes: u64);

    /// Transmitter `site.port` received a PAUSE or PFC frame of `quanta`
    /// naming `classes` (its class-enable vector; 0: 802.3x). `honoured`:
    /// the priorities it pauses, each until `until` (`site.at`: resumed);
    /// `Some(0)`: 802.3x, the whole port; None: the frame was ignored.
    fn pause_received(&mut self, site: Site, classes: u8, honoured: Option<u8>, quanta: u16, until: Time);

    /// The PFC watchdog stormed (`Reason::Stormed`) or restored
    /// (`Reason::Restored`) priority `prio`'s queue at port `site.port`.
    fn watchdog(&mut self, site: Site, prio: u8, reason: Reason);
    /// A port of a deadlocked cycle, paused at `prio`.
    fn deadlock(&mut self, site: Site, prio: u8);

    /// A rate limiter's state (created, changed or not); the tracer keeps the changes.
    fn rl_state(&mut self, site: Site, rl: RlView, reason: Reason);

    /// A flow event (FlowStart, FlowEnd, Rto).
    fn flow(&mut self, site: Site, kind: Kind, flow: FlowView);

    /// The run ended at `end`: close the files.
    fn finish(&mut self, end: Time) -> Result<Option<TraceSummary>, String>;
}

/// The tracer of a run without a trace: zero-sized, and every call to it
/// compiled away (`ON` is false).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTrace;

impl<S: Scheme> Tracer<S> for NoTrace {
    const ON: bool = false;
    #[inline(always)]
    fn frame(&mut self, _: &S, _: Site, _: Kind, _: Reason, _: &Frame<S::Ext>, _: Option<u64>) {}
    #[inline(always)]
    fn depart(&mut self, _: &S, _: Site, _: &Frame<S::Ext>, _: u64) {}
    #[inline(always)]
    fn note_sent(&mut self, _: &S, _: NoteOrigin, _: &Frame<S::Ext>) {}
    #[inline(always)]
    fn pause_sent(&mut self, _: Site, _: u8, _: u16, _: Reason, _: u64) {}
    #[inline(always)]
    fn pause_received(&mut self, _: Site, _: u8, _: Option<u8>, _: u16, _: Time) {}
    #[inline(always)]
    fn watchdog(&mut self, _: Site, _: u8, _: Reason) {}
    fn deadlock(&mut self, _: Site, _: u8) {}
    #[inline(always)]
    fn rl_state(&mut self, _: Site, _: RlView, _: Reason) {}
    #[inline(always)]
    fn flow(&mut self, _: Site, _: Kind, _: FlowView) {}
    fn finish(&mut self, _: Time) -> Result<Option<TraceSummary>, String> {
        Ok(None)
    }
}

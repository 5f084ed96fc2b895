//! What an element of the network may ask of the rest of the simulation:
//! the time, scheduling an event, the scheme's hooks, recording a statistic
//! or a trace row. The elements ([`Fabric`](super::fabric::Fabric): ports,
//! bridges, PAUSE; [`Hosts`](super::hosts::Hosts): stations, rate limiters,
//! transport flows) own their state; the simulator ([`NetSim`](super::sim::NetSim))
//! owns the elements and one `Ctx`, and hands the context to the element an
//! event is for. An element reaches another element's state only when the
//! simulator passes it that element.

use super::port::PortId;
use crate::engine::queue::EventQueue;
use crate::engine::Time;
use crate::scheme::Scheme;
use crate::stats::Stats;
use crate::trace::Tracer;

// Event kinds (the 4-bit kind of an event key; the index names the element).
/// A station's open-loop source generates a frame (index: station).
pub(crate) const EV_GENERATE: u8 = 0;
/// A port's transmitter finishes its frame (index: port).
pub(crate) const EV_TX_DONE: u8 = 1;
/// EV_ARRIVE + wire class (MAC, DATA, CNM): the head of a port's wire ring
/// reaches the far end (index: port).
pub(crate) const EV_ARRIVE: u8 = 2;
/// A paused or pacing transmitter may send again (index: port).
pub(crate) const EV_WAKE: u8 = 5;
/// An asserted PAUSE is refreshed (index: the port it is sent on).
pub(crate) const EV_PAUSE_REFRESH: u8 = 6;
/// A timed scenario action (index: the action).
pub(crate) const EV_SCENARIO: u8 = 7;
/// A rate limiter's timer (index: the RL).
pub(crate) const EV_RL_TIMER: u8 = 8;
/// A transport flow given one by one starts (index: the flow).
pub(crate) const EV_FLOW_START: u8 = 9;
/// A Poisson flow arrival (index: the arrival generator).
pub(crate) const EV_FLOW_ARRIVAL: u8 = 10;
/// A flow's retransmission timer (index: the flow).
pub(crate) const EV_FLOW_RTO: u8 = 11;
/// The PFC watchdog's poll of every bridge port (index: 0).
pub(crate) const EV_WATCHDOG: u8 = 12;
/// EV_WATCHDOG's index for the deadlock detector's poll (one event kind
/// for the periodic polls: a new arm in the event loop's dispatch costs
/// every run a few percent, through the loop's code layout).
pub(crate) const POLL_DEADLOCK: u32 = 1;
/// EV_WATCHDOG's indices from this one on: station (index - POLL_PULL)'s
/// pull pacer (receiver credit, net::credit).
pub(crate) const POLL_PULL: u32 = 2;

/// The constants of one run that elements read.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The run ends at this time (simulated; shortened when every flow ends).
    pub duration: Time,
    /// The run ends before this time: every flow has finished (`Time::MAX`: at the duration).
    pub stop_at: Time,
    /// The measure window (`windows[0]`).
    pub measure: (Time, Time),
    pub seed: u64,
    /// Wire length of a full data frame and of a control frame.
    pub frame_bytes: u32,
    pub ctrl_bytes: u16,
    /// The scheme or the transport acts on data frames reaching their
    /// destination, so those arrivals must be events (otherwise they are
    /// counted when their last hop starts).
    pub sink_events: bool,
    /// Some station has an open-loop (Bernoulli) source.
    pub open_loop: bool,
}

/// The engine's services, as elements see them.
pub struct Ctx<S: Scheme, T: Tracer<S>> {
    pub now: Time,
    pub q: EventQueue,
    pub stats: Stats,
    pub scheme: S,
    /// The event trace's hook (crate::trace); called only `if T::ON`.
    pub tracer: T,
    pub run: RunSpec,
    /// More RLs or flows were live at once than event indices can name: the
    /// run fails in `finish`.
    pub overflow: bool,
}

impl<S: Scheme, T: Tracer<S>> Ctx<S, T> {
    /// Schedules an event of `kind` for element `index` at `at`.
    #[inline(always)]
    pub fn schedule(&mut self, at: Time, kind: u8, index: u32) {
        self.q.push(at, kind, index);
    }

    /// Whether now lies in the measure window.
    #[inline]
    pub fn in_measure(&self) -> bool {
        self.now >= self.run.measure.0 && self.now < self.run.measure.1
    }
}

/// A resolved timed scenario event.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Action {
    Start(u32),
    Stop(u32),
    /// A port's new rate; whether its queue and CP thresholds follow it.
    LinkRate(PortId, u64, bool),
    /// A station's NIC (its port) starts / stops a PFC storm on a priority.
    PfcStorm(PortId, u8, bool),
    /// A link (one of its directions) goes down (false) or comes back up.
    LinkState(PortId, bool),
}

//! The simulation: its state, the event loop, and what ports do (start a
//! frame, finish it, deliver it). Stations live in `station.rs`, bridges in
//! `bridge.rs`, PAUSE in `pause.rs`, rate limiters in `rl.rs`; statistics are
//! recorded through [`Stats`] and assembled into a [`RunResult`] by
//! `results.rs` only when the run ends.

use super::port::{Port, PortId, TxFrame, NO_PEER_BRIDGE, NO_TRACE, WIRE_DATA, WIRE_MAC, WIRE_NOTE};
use super::rl::{RateLimiter, RlTrace, StationRp};
use super::topology::{Network, NodeKind, Station, NO_ROUTE};
use super::transport::Transport;
use crate::config::PauseConfig;
use crate::engine::queue::EventQueue;
use crate::engine::Time;
use crate::frame::{Frame, FrameKind, NO_FLOW};
use crate::scheme::{QueueView, Scheme};
use crate::stats::{FrameCounts, RunResult, Stats};
use crate::trace::{Kind, NoTrace, Reason, Site, Tracer};
use std::collections::BTreeMap;
use std::time::Instant;

// Event kinds.
/// Bytes of port state above which the event loop prefetches (half the L2
/// cache of this project's machines: below it the ports stay cached and the
/// hints cost more than they save, about 5% at 64 hosts).
/// Events between two looks at the clock in a run with a wall-time
/// deadline (`run_for`): ~0.1-0.5 ms of work, a read of the clock per step.
const DEADLINE_EVERY: u32 = 4096;

pub(crate) const PREFETCH_MIN_BYTES: usize = 1 << 20;
/// How many events ahead the loop prefetches the next event's port or station.
const PREFETCH_AHEAD: usize = 8;

/// Hints the cache to load the line at `addr` (no effect on results).
#[inline(always)]
fn prefetch_line(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, reads nothing into
    // the program's state and writes nothing, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(addr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// `Frame::in_port` of a frame on the wire to a bridge that has no route for it.
const NO_ROUTE_U16: u16 = u16::MAX;

/// `NetSim::express` of a port that does not end at a pass-through bridge.
pub(crate) const NO_EXPRESS: PortId = PortId::MAX;

pub(crate) const EV_GENERATE: u8 = 0;
pub(crate) const EV_TX_DONE: u8 = 1;
/// EV_ARRIVE + wire class (MAC, DATA, CNM).
pub(crate) const EV_ARRIVE: u8 = 2;
pub(crate) const EV_WAKE: u8 = 5;
pub(crate) const EV_PAUSE_REFRESH: u8 = 6;
pub(crate) const EV_SCENARIO: u8 = 7;
pub(crate) const EV_RL_TIMER: u8 = 8;
pub(crate) const EV_FLOW_START: u8 = 9;
pub(crate) const EV_FLOW_ARRIVAL: u8 = 10;
pub(crate) const EV_FLOW_RTO: u8 = 11;

/// A resolved timed scenario event.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Action {
    Start(u32),
    Stop(u32),
    LinkRate(PortId, u64),
}

/// One run of one scenario with scheme `S`, traced by `T` (by default
/// [`NoTrace`]: no trace, every hook compiled away).
pub struct NetSim<S: Scheme, T: Tracer<S> = NoTrace> {
    pub(crate) scheme: S,
    /// The event trace's hook (crate::trace); called only `if T::ON`.
    pub(crate) tracer: T,
    /// CP state per port (bridges with CP detection on).
    pub(crate) cps: Vec<Option<S::Cp>>,
    /// Reaction points per station, and the slab of their rate limiters
    /// (ids index RL timer events; freed ids are reused).
    pub(crate) rps: Vec<StationRp>,
    pub(crate) rls: Vec<Option<RateLimiter<S::Rl, S::Ext>>>,
    pub(crate) free_rls: Vec<u32>,
    /// More RLs were live at once than event indices can name.
    pub(crate) rl_overflow: bool,
    /// The event loop prefetches (a large network in a calendar-queue run).
    pub(crate) prefetch: bool,
    /// Per port, the output port of the pass-through bridge at its far end
    /// (`NO_EXPRESS`: none); see [`express_ports`].
    pub(crate) express: Vec<PortId>,
    pub(crate) rl_traces: Vec<RlTrace>,
    pub(crate) rl_trace_index: BTreeMap<String, usize>,
    pub(crate) trace_rls: Option<Vec<String>>,
    /// Notification-point state per destination station: its memory of each
    /// source that reached it, sorted by source (only pairs that met).
    pub(crate) nps: Vec<Vec<(u16, S::Np)>>,
    pub(crate) n_stations: usize,
    pub(crate) now: Time,
    pub(crate) duration: Time,
    pub(crate) seed: u64,
    pub(crate) frame_bytes: u32,
    pub(crate) ctrl_bytes: u16,
    pub(crate) q: EventQueue,
    pub(crate) net: Network<S::Ext>,
    pub(crate) stats: Stats,
    pub(crate) pause: PauseConfig,
    /// The measure window (windows[0]).
    pub(crate) measure: (Time, Time),
    pub(crate) actions: Vec<Action>,
    pub(crate) window_names: Vec<String>,
    /// The scheme acts on data frames reaching their destination, so those
    /// arrivals must be events (otherwise they are counted when sent).
    pub(crate) sink_events: bool,
    pub(crate) wall_s: f64,
    pub(crate) finished: bool,
    /// Transport flows (net/transport.rs).
    pub(crate) tp: Transport,
    /// Some station has an open-loop (Bernoulli) source.
    pub(crate) open_loop: bool,
    /// The run ends before this time: every flow has finished (`Time::MAX`: at the duration).
    pub(crate) stop_at: Time,
    /// What the scheme's check of the built network warned about (one line each).
    pub(crate) warnings: Vec<String>,
}

impl<S: Scheme, T: Tracer<S>> NetSim<S, T> {
    pub fn now(&self) -> Time {
        self.now
    }

    pub fn duration(&self) -> Time {
        self.duration
    }

    pub fn is_finished(&self) -> bool {
        self.finished || self.now >= self.duration
    }

    /// Runs every event strictly before `t` (capped at the run's end).
    /// Returns true once the run has reached its end.
    pub fn run_until(&mut self, t: Time) -> bool {
        self.run_until_deadline(t, None)
    }

    /// Runs events for about `wall` of wall-clock time, or to the run's
    /// end: the engine looks at the clock every `DEADLINE_EVERY` events, so
    /// a caller driving a run in steps (progress, a Ctrl-C) gets control
    /// back within about `wall` whatever the workload. Where a step ends
    /// never changes a result: events are only ever taken in order.
    /// Returns true once the run has reached its end.
    pub fn run_for(&mut self, wall: std::time::Duration) -> bool {
        self.run_until_deadline(Time::MAX, Some(Instant::now() + wall))
    }

    fn run_until_deadline(&mut self, t: Time, deadline: Option<Instant>) -> bool {
        let t = t.min(self.duration);
        let started = Instant::now();
        // Two copies of the loop: prefetching only where it pays (ports far
        // larger than the caches, in a calendar-queue run); the others keep a
        // lean loop.
        let cut_short = if self.prefetch {
            self.event_loop::<true>(t, deadline)
        } else {
            self.event_loop::<false>(t, deadline)
        };
        if cut_short {
            // The deadline passed: `now` stays at the last event taken.
        } else if self.stop_at <= t {
            // Every flow has finished: the run ends here.
            self.duration = self.stop_at.max(self.now);
            self.now = self.duration;
        } else {
            self.now = self.now.max(t);
        }
        self.wall_s += started.elapsed().as_secs_f64();
        self.now >= self.duration
    }

    /// Takes events before `t`; returns true if it stopped because
    /// `deadline` passed first.
    #[inline(always)]
    fn event_loop<const PREFETCH: bool>(&mut self, t: Time, deadline: Option<Instant>) -> bool {
        let mut countdown = DEADLINE_EVERY;
        while let Some(et) = self.q.peek_time() {
            if et >= t || et >= self.stop_at {
                break;
            }
            countdown -= 1;
            if countdown == 0 {
                countdown = DEADLINE_EVERY;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return true;
                }
            }
            let ev = self.q.pop().expect("peeked");
            if PREFETCH {
                self.prefetch_ahead();
            }
            self.now = ev.time;
            if ev.time >= self.stats.next_edge {
                self.stats.advance_bin(ev.time);
            }
            match ev.kind {
                EV_GENERATE => self.on_generate(ev.index),
                EV_TX_DONE => self.on_tx_done(ev.index),
                k if (EV_ARRIVE..EV_ARRIVE + 3).contains(&k) => self.on_arrive(ev.index, (k - EV_ARRIVE) as usize),
                EV_WAKE => self.on_wake(ev.index),
                EV_PAUSE_REFRESH => self.on_pause_refresh(ev.index),
                EV_SCENARIO => self.on_scenario(ev.index as usize),
                EV_RL_TIMER => self.on_rl_timer(ev.index),
                EV_FLOW_START => self.on_flow_start(ev.index),
                EV_FLOW_ARRIVAL => self.on_flow_arrival(ev.index),
                EV_FLOW_RTO => self.on_flow_rto(ev.index),
                k => unreachable!("unknown event kind {k}"),
            }
        }
        false
    }

    /// On a large fabric (the calendar queue's runs) the ports and stations
    /// an event touches are rarely in cache: ask now for those of the events
    /// a few places ahead in the current bucket, in stages (the event's own
    /// port or station, then the frame it will take off the wire, then the
    /// output port that frame joins), each stage reading only what the one
    /// before brought in. Hints only: nothing here changes a result.
    #[inline(always)]
    fn prefetch_ahead(&self) {
        if let Some((kind, index)) = self.q.ahead(PREFETCH_AHEAD) {
            self.prefetch(kind, index);
        }
        if let Some((kind, index)) = self.q.ahead(PREFETCH_AHEAD / 2) {
            self.prefetch_frame(kind, index);
        }
        if let Some((kind, index)) = self.q.ahead(2) {
            if kind == EV_GENERATE {
                if let Some(st) = self.net.stations.get(index as usize) {
                    prefetch_line((&self.net.ports[st.port as usize] as *const Port<S::Ext>).cast());
                }
            } else if kind == EV_TX_DONE {
                // The partition counter the departing frame frees.
                if let Some(p) = self.net.ports.get(index as usize) {
                    if let Some(x) = p.bytes_by_ingress.get(p.tx.in_local as usize) {
                        prefetch_line((x as *const u64).cast());
                    }
                }
            } else if let Some((out, _)) = self.output_of(kind, index) {
                let o: *const u8 = (&self.net.ports[out as usize] as *const Port<S::Ext>).cast();
                prefetch_line(o);
                prefetch_line(o.wrapping_add(64));
            }
        }
        if let Some((kind, index)) = self.q.ahead(1) {
            if let Some((out, in_local)) = self.output_of(kind, index) {
                let o = &self.net.ports[out as usize];
                if let Some(x) = o.bytes_by_ingress.get(in_local as usize) {
                    prefetch_line((x as *const u64).cast());
                }
                if let Some(Some(cp)) = self.cps.get(out as usize) {
                    prefetch_line((cp as *const S::Cp).cast());
                }
            }
        }
    }

    #[inline(always)]
    fn prefetch(&self, kind: u8, index: u32) {
        let addr: *const u8 = match kind {
            EV_GENERATE => match self.net.stations.get(index as usize) {
                Some(st) => (st as *const Station).cast(),
                None => return,
            },
            EV_TX_DONE | EV_ARRIVE..=EV_WAKE => match self.net.ports.get(index as usize) {
                Some(p) => (p as *const Port<S::Ext>).cast(),
                None => return,
            },
            _ => return,
        };
        prefetch_line(addr);
        prefetch_line(addr.wrapping_add(64));
    }

    /// For an arrival, the frame it will take off the wire (its port,
    /// prefetched earlier, is in cache by now).
    #[inline(always)]
    fn prefetch_frame(&self, kind: u8, index: u32) {
        if (EV_ARRIVE..EV_ARRIVE + 3).contains(&kind) {
            if let Some(f) = self
                .net
                .ports
                .get(index as usize)
                .and_then(|p| p.wire((kind - EV_ARRIVE) as usize).front())
            {
                prefetch_line((f as *const Frame<S::Ext>).cast());
            }
        }
    }

    /// For a data frame arriving at a bridge: the output port it will join
    /// and its ingress partition there.
    #[inline(always)]
    fn output_of(&self, kind: u8, index: u32) -> Option<(PortId, u16)> {
        if kind != EV_ARRIVE + WIRE_DATA as u8 {
            return None;
        }
        let p = self.net.ports.get(index as usize)?;
        if p.peer_bridge == NO_PEER_BRIDGE {
            return None;
        }
        let f = p.wire_data.front()?;
        (f.in_port != NO_ROUTE_U16).then_some((f.in_port as PortId, p.reverse_local))
    }

    // ------------------------------------------------------------ sources

    /// Starts the next frame on `port` if it is idle: control frames first
    /// (never paused), then data unless paused.
    pub(crate) fn try_start(&mut self, port: PortId) {
        let now = self.now;
        let p = &mut self.net.ports[port as usize];
        if p.busy {
            if p.done_pending {
                return;
            }
            if now < p.done_at {
                if p.drain_lazy {
                    return; // `settle` will start the next frame when it is read
                }
                // Someone waits behind the frame being sent: now its end matters.
                p.done_pending = true;
                self.q.push(p.done_at, EV_TX_DONE, port);
                return;
            }
            self.complete_tx(port);
        }
        let p = &mut self.net.ports[port as usize];
        if p.rate_bps == 0 {
            return;
        }
        let owner = p.owner as usize;
        let limited = owner < self.n_stations && self.rps[owner].active();
        let frame = if let Some(f) = p.ctrl.pop_front() {
            f
        } else if p.data.is_empty() && !(limited && self.rps[owner].has_queued()) {
            return;
        } else if p.is_paused(now) {
            if p.wake_at != p.pause_end {
                p.wake_at = p.pause_end;
                self.q.push(p.pause_end, EV_WAKE, port);
            }
            return;
        } else if limited {
            match self.station_next_data(owner, port) {
                Some(f) => f,
                None => return,
            }
        } else {
            let mut f = p.data.pop_front().expect("non-empty");
            if S::CP_ON_DEQUEUE {
                let q = QueueView {
                    bytes: p.data_bytes,
                    rate_bps: p.rate_bps,
                    tx_bytes: p.bytes_sent,
                    now,
                };
                if let Some(cp) = self.cps[port as usize].as_mut() {
                    let before = if T::ON { Some(self.scheme.ext_fields(&f.ext)) } else { None };
                    self.scheme.cp_on_dequeue(cp, &mut f, q, port as u16 + 1);
                    if T::ON {
                        self.trace_mark(port, &f, before, q.bytes);
                    }
                }
            }
            f
        };
        let more_waiting = limited && self.rps[owner].has_queued();
        self.start_tx(port, frame, more_waiting);
    }

    /// `port` (idle, running, not paused for this frame) starts sending `frame`.
    #[inline(always)]
    pub(crate) fn start_tx(&mut self, port: PortId, frame: Frame<S::Ext>, more_waiting: bool) {
        let now = self.now;
        if T::ON {
            let p = &self.net.ports[port as usize];
            let site = Site {
                at: now,
                node: p.owner,
                port,
            };
            self.tracer.depart(&self.scheme, site, &frame, p.data_bytes);
        }
        let p = &mut self.net.ports[port as usize];
        let ser = p.ser_ps(frame.len, self.frame_bytes);
        let class = match frame.kind {
            FrameKind::Pause => WIRE_MAC,
            FrameKind::Data => WIRE_DATA,
            FrameKind::Note | FrameKind::Ack | FrameKind::Nack => WIRE_NOTE,
        };
        p.busy = true;
        p.tx = TxFrame {
            len: frame.len,
            in_port: frame.in_port,
            in_local: frame.in_local,
            data: frame.is_data(),
        };
        p.frames_sent += 1;
        p.bytes_sent += frame.len as u64;
        p.done_at = now + ser;
        // A TxDone event only when someone waits and nobody settles the port lazily.
        let idle_after = p.lazy_ok && p.ctrl.is_empty() && p.data.is_empty() && !more_waiting;
        p.done_pending = !(p.drain_lazy || idle_after);
        if p.done_pending {
            self.q.push(now + ser, EV_TX_DONE, port);
        }
        let arrive = now + ser + p.delay_ps + p.rx_extra(class);
        let len = frame.len as u64;
        self.onto_wire(port, class, frame, arrive);
        let p = &mut self.net.ports[port as usize];
        self.stats.transmit(now, port as usize, len, &mut p.win_bytes);
    }

    /// `frame`, sent on `port`, reaches the far end at `arrive`.
    #[inline(always)]
    fn onto_wire(&mut self, port: PortId, class: usize, frame: Frame<S::Ext>, arrive: Time) {
        if class == WIRE_DATA && self.express[port as usize] != NO_EXPRESS && arrive < self.duration {
            // Through a pass-through bridge: it starts forwarding at `arrive`.
            self.forward_express(self.express[port as usize], frame, arrive);
        } else {
            self.arrive_at_far_end(port, class, frame, arrive);
        }
    }

    /// `frame` is on `port`'s wire until `arrive`: delivered at once to a
    /// station that only counts it, else an arrival event.
    #[inline(always)]
    fn arrive_at_far_end(&mut self, port: PortId, class: usize, mut frame: Frame<S::Ext>, arrive: Time) {
        let p = &mut self.net.ports[port as usize];
        if class == WIRE_DATA && p.peer_is_station && !self.sink_events {
            // Delivery is certain once sending starts, and nothing happens at
            // the sink but counting: record it now, at its arrival time.
            if arrive < self.duration {
                let st = p.peer as usize;
                if T::ON {
                    let site = Site {
                        at: arrive,
                        node: p.peer,
                        port,
                    };
                    self.tracer.frame(&self.scheme, site, Kind::Deliver, Reason::None, &frame, None);
                }
                self.net.stations[st].delivered += 1;
                self.stats.deliver(
                    arrive,
                    frame.src as usize,
                    frame.dst as usize,
                    frame.len as u64,
                    arrive - frame.born,
                );
            } else {
                p.wire_mut(class).push_back(frame); // still in flight when the run ends
            }
        } else {
            if class != WIRE_MAC && p.peer_bridge != NO_PEER_BRIDGE {
                // Routed once, here: on the wire `in_port` carries the port
                // the next bridge forwards the frame on (the bridge sets the
                // field to the frame's ingress when it accepts it).
                let out = self.net.router.next_hop(p.peer_bridge, frame.src, frame.dst);
                frame.in_port = if out == NO_ROUTE { NO_ROUTE_U16 } else { out as u16 };
            }
            p.wire_mut(class).push_back(frame);
            self.q.push(arrive, EV_ARRIVE + class as u8, port);
        }
    }

    /// `frame` leaves pass-through port `out` at `start` (see [`express_ports`]):
    /// what `start_tx` does for it there, at the instants it would.
    fn forward_express(&mut self, out: PortId, frame: Frame<S::Ext>, start: Time) {
        let o = &mut self.net.ports[out as usize];
        let len = frame.len as u64;
        if T::ON {
            // The pass-through bridge takes the frame and starts sending it at `start`.
            let site = Site {
                at: start,
                node: o.owner,
                port: out,
            };
            self.tracer
                .frame(&self.scheme, site, Kind::Enqueue, Reason::Output, &frame, Some(len));
            self.tracer.depart(&self.scheme, site, &frame, len);
        }
        let arrive = start + o.ser_ps(frame.len, self.frame_bytes) + o.delay_ps + o.rx_extra_data_ps;
        o.frames_sent += 1;
        o.bytes_sent += len;
        self.arrive_at_far_end(out, WIRE_DATA, frame, arrive);
        let o = &mut self.net.ports[out as usize];
        self.stats.transmit(start, out as usize, len, &mut o.win_bytes);
    }

    /// The frame being sent on `port` is done (at `done_at`): free its buffer.
    fn complete_tx(&mut self, port: PortId) {
        let p = &mut self.net.ports[port as usize];
        p.busy = false;
        let f = p.tx;
        if f.data {
            p.data_bytes -= f.len as u64;
            let owner = p.owner;
            let at = p.done_at;
            if p.trace != NO_TRACE {
                let b = self.stats.bin_of(at);
                self.stats.queue_traces[p.trace as usize].update(b, p.data_bytes);
                self.stats.queue_hists[p.trace as usize].record(at, p.data_bytes);
            }
            if let NodeKind::Bridge(b) = self.net.nodes[owner as usize].kind {
                self.bridge_release(b, port, &f);
            }
        }
    }

    /// Brings a lazily finishing port up to date before its queue is read.
    #[inline]
    pub(crate) fn settle(&mut self, port: PortId) {
        let p = &self.net.ports[port as usize];
        if p.busy && !p.done_pending && self.now >= p.done_at {
            if p.drain_lazy {
                self.drain_until(port, self.now, true);
            } else {
                self.complete_tx(port);
            }
        }
    }

    /// A lazily draining port sends what it would have sent up to `t`
    /// (frames ending at `t` included when `inclusive`): each frame that
    /// ended frees its buffer and the next starts at that instant, as the
    /// TxDone events would have had it.
    fn drain_until(&mut self, port: PortId, t: Time, inclusive: bool) {
        let now = self.now;
        loop {
            let p = &self.net.ports[port as usize];
            if !p.busy || p.done_at > t || (p.done_at == t && !inclusive) {
                break;
            }
            self.now = p.done_at;
            self.complete_tx(port);
            self.try_start(port);
        }
        self.now = now;
    }

    fn on_tx_done(&mut self, port: PortId) {
        self.net.ports[port as usize].done_pending = false;
        self.complete_tx(port);
        self.try_start(port);
    }

    fn on_wake(&mut self, port: PortId) {
        let p = &mut self.net.ports[port as usize];
        if p.wake_at == self.now {
            p.wake_at = Time::MAX;
        }
        self.try_start(port);
    }

    #[inline]
    pub(crate) fn queue_changed(&mut self, port: PortId) {
        let p = &self.net.ports[port as usize];
        if p.trace != NO_TRACE {
            let b = self.stats.bin_now();
            self.stats.queue_traces[p.trace as usize].update(b, p.data_bytes);
            self.stats.queue_hists[p.trace as usize].record(self.now, p.data_bytes);
        }
    }

    /// The frame at the head of `port`'s wire ring `class` is received by the peer.
    fn on_arrive(&mut self, port: PortId, class: usize) {
        let p = &mut self.net.ports[port as usize];
        let f = p.wire_mut(class).pop_front().expect("arrival without a frame on the wire");
        let peer = p.peer;
        let ingress = p.reverse;
        let in_local = p.reverse_local;
        let peer_bridge = p.peer_bridge;
        if class == WIRE_MAC {
            self.receive_pause(ingress, f.quanta());
            return;
        }
        if peer_bridge != NO_PEER_BRIDGE {
            let b = peer_bridge;
            let out = if f.in_port == NO_ROUTE_U16 { NO_ROUTE } else { f.in_port as PortId };
            self.bridge_receive(b, ingress, in_local, out, f);
            return;
        }
        match self.net.nodes[peer as usize].kind {
            NodeKind::Station(s) => {
                if T::ON {
                    let kind = match f.kind {
                        FrameKind::Data => Kind::Deliver,
                        FrameKind::Note => Kind::CnRx,
                        FrameKind::Ack => Kind::AckRx,
                        FrameKind::Nack => Kind::NackRx,
                        FrameKind::Pause => Kind::PauseRx,
                    };
                    let site = Site {
                        at: self.now,
                        node: peer,
                        port,
                    };
                    self.tracer.frame(&self.scheme, site, kind, Reason::None, &f, None);
                }
                if f.is_data() {
                    debug_assert_eq!(f.dst as u32, s, "frame delivered to the wrong station");
                    self.net.stations[s as usize].delivered += 1;
                    self.stats
                        .deliver(self.now, f.src as usize, f.dst as usize, f.len as u64, self.now - f.born);
                    if f.flow != NO_FLOW {
                        self.transport_receive(s as usize, &f);
                    }
                    if S::NP_EVENTS {
                        self.np_receive(s as usize, &f);
                    }
                    return;
                }
                match f.kind {
                    FrameKind::Note => self.rp_receive(s as usize, &f),
                    FrameKind::Ack | FrameKind::Nack => self.transport_ack(&f),
                    FrameKind::Data | FrameKind::Pause => {}
                }
            }
            NodeKind::Bridge(_) => unreachable!("a bridge peer is handled above"),
        }
    }

    // ------------------------------------------------------------ bridges

    /// Closes the statistics, checks frame conservation and builds the results.
    pub fn finish(&mut self) -> Result<RunResult, String> {
        if self.now < self.duration {
            return Err(format!("run not finished: at {} ps of {} ps", self.now, self.duration));
        }
        self.finished = true;
        if self.rl_overflow {
            return Err(format!(
                "more than {} rate limiters (or flows) were live at once, more than the engine indexes",
                crate::engine::queue::MAX_INDEX
            ));
        }
        let end = self.duration;
        for port in 0..self.net.ports.len() {
            if self.net.ports[port].drain_lazy {
                // What its TxDone events before the end would have sent.
                self.drain_until(port as PortId, end, false);
            }
        }
        self.close_pause_intervals(end);
        let trace = if T::ON { self.tracer.finish(end)? } else { None };
        let n_bins = self.stats.bins_reached(end);
        for t in &mut self.stats.queue_traces {
            t.finish(n_bins);
        }
        for h in &mut self.stats.queue_hists {
            let q = h.last_q_bytes();
            h.record(end, q);
        }
        self.stats.finish_station_sums();
        let in_flight: u64 = self.net.ports.iter().map(|p| p.data_frames_in_flight()).sum::<u64>() + self.rl_frames_queued();
        for t in &mut self.rl_traces {
            t.rate.finish(n_bins);
            t.bytes.finish(n_bins);
            if let Some(w) = &mut t.window {
                w.finish(n_bins);
            }
        }
        let frames = FrameCounts::new(self.stats.counts, in_flight);
        frames
            .check_conservation()
            .map_err(|books| format!("frame conservation violated (seed {}): {books}", self.seed))?;
        let mut result = self.build_result(frames);
        result.trace = trace;
        Ok(result)
    }

    /// CP `port` may have marked `f` (ECN CE, a three-point mark) on its way
    /// through: a `mark` row if it did.
    pub(crate) fn trace_mark(&mut self, port: PortId, f: &Frame<S::Ext>, before: Option<crate::scheme::ExtFields>, queue_bytes: u64) {
        let after = self.scheme.ext_fields(&f.ext);
        if before.is_some_and(|b| b.ce == after.ce && b.marked_by == after.marked_by) {
            return;
        }
        let site = Site {
            at: self.now,
            node: self.net.ports[port as usize].owner,
            port,
        };
        self.tracer
            .frame(&self.scheme, site, Kind::Mark, Reason::None, f, Some(queue_bytes));
    }
}

/// A run of any scheme, as the outside world drives it.
pub trait Run: Send {
    fn run_for(&mut self, wall: std::time::Duration) -> bool;
    /// Runs every event strictly before `t`; true once the run reached its end.
    fn run_until(&mut self, t: Time) -> bool;
    /// Closes statistics, checks frame conservation and builds the results.
    fn finish(&mut self) -> Result<RunResult, String>;
    fn now(&self) -> Time;
    fn duration(&self) -> Time;
    /// Warnings found while the simulation was built (one line each).
    fn warnings(&self) -> &[String];
}

impl<S: Scheme, T: Tracer<S>> Run for NetSim<S, T> {
    fn run_for(&mut self, wall: std::time::Duration) -> bool {
        NetSim::run_for(self, wall)
    }
    fn run_until(&mut self, t: Time) -> bool {
        NetSim::run_until(self, t)
    }
    fn finish(&mut self) -> Result<RunResult, String> {
        NetSim::finish(self)
    }
    fn now(&self) -> Time {
        self.now
    }
    fn duration(&self) -> Time {
        self.duration
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// A simulation of one scenario and seed, whatever its scheme.
pub struct Sim {
    inner: Box<dyn Run>,
}

impl Sim {
    /// A built simulation (`Sim::new`, in build.rs, makes it).
    pub(super) fn from_run(inner: Box<dyn Run>) -> Sim {
        Sim { inner }
    }

    pub fn run_until(&mut self, t: Time) -> bool {
        self.inner.run_until(t)
    }

    /// Runs for about `wall` of wall-clock time, or to the end; true once
    /// the run has reached its end (see `NetSim::run_for`).
    pub fn run_for(&mut self, wall: std::time::Duration) -> bool {
        self.inner.run_for(wall)
    }

    pub fn finish(&mut self) -> Result<RunResult, String> {
        self.inner.finish()
    }

    /// Runs to the end and returns the results (conservation checked).
    pub fn run(mut self) -> Result<RunResult, String> {
        self.inner.run_until(Time::MAX);
        self.inner.finish()
    }

    pub fn now(&self) -> Time {
        self.inner.now()
    }

    pub fn duration(&self) -> Time {
        self.inner.duration()
    }

    /// What only the built network reveals about the parameters and is
    /// legal but almost certainly unintended (a delay threshold below a
    /// flow's base RTT): one line each, naming the parameter.
    pub fn warnings(&self) -> &[String] {
        self.inner.warnings()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::star_config;
    use crate::config::SimConfig;
    use crate::config::{EventConfig, SchemeConfig};
    use crate::engine::{PS_PER_MS, PS_PER_US};
    use crate::frame::Frame;
    use crate::net::topology::{gap_table, geometric_gap};
    use crate::scheme::bcn::{Bcn, BcnExt, BcnMsg, BcnParams};
    use crate::scheme::nocm::NoCm;
    use rand::Rng;

    /// The gaps read off the powers of 1 - p are the formula's, draw for draw,
    /// for loads from almost nothing to almost everything, and at the edges
    /// of the margins.
    #[test]
    fn short_gaps_read_off_the_table_equal_the_formula() {
        use rand::SeedableRng;
        let formula = |u: f64, inv_ln_q: f64| {
            let x = u.ln() * inv_ln_q;
            if !(x < 1e15) {
                Time::MAX / 4
            } else {
                x as Time
            }
        };
        for p in [1e-12, 1e-6, 0.01, 0.1, 0.3, 0.49, 0.5, 0.85, 0.99, 0.999_999] {
            let (inv, q_pow) = gap_table(p);
            let mut a = crate::engine::rng::Stream::seed_from_u64(7);
            let mut b = a.clone();
            for _ in 0..200_000 {
                let g = geometric_gap(p, inv, &q_pow, &mut a);
                let u = 1.0 - b.gen::<f64>();
                assert_eq!(g, formula(u, inv), "p {p} u {u}");
            }
            // The draws (u = 1 - m 2^-53, as the generator makes them) nearest each power.
            for &t in &q_pow {
                let m0 = ((1.0 - t) * (1u64 << 53) as f64) as i64;
                for m in (m0 - 4).max(0)..=(m0 + 4).min((1 << 53) - 1) {
                    let u = 1.0 - m as f64 / (1u64 << 53) as f64;
                    let mut one = ConstRng((m as u64) << 11);
                    assert_eq!(geometric_gap(p, inv, &q_pow, &mut one), formula(u, inv), "p {p} u {u}");
                }
            }
        }
    }

    /// A load too small for 1 - p to differ from 1 in floating point sends
    /// (almost) nothing, not at line rate; a small one keeps its mean gap.
    #[test]
    fn tiny_loads_give_long_gaps_not_line_rate() {
        use rand::SeedableRng;
        let mut rng = crate::engine::rng::Stream::seed_from_u64(1);
        for p in [1e-17, 1.1e-16, 1e-300, 1e-320, f64::MIN_POSITIVE] {
            let (inv, q_pow) = gap_table(p);
            for _ in 0..10_000 {
                assert!(geometric_gap(p, inv, &q_pow, &mut rng) >= 1_000_000_000, "p {p}");
            }
        }
        // The mean of a geometric gap is (1 - p) / p failures.
        for p in [1e-13, 1e-9, 1e-5] {
            let (inv, q_pow) = gap_table(p);
            let n = 200_000;
            let mean = (0..n).map(|_| geometric_gap(p, inv, &q_pow, &mut rng) as f64).sum::<f64>() / n as f64;
            let want = (1.0 - p) / p;
            assert!((mean / want - 1.0).abs() < 0.01, "p {p}: mean {mean} against {want}");
        }
    }

    /// A generator that returns one value (`gen::<f64>()` is `next_u64 >> 11` x 2^-53).
    struct ConstRng(u64);
    impl rand::RngCore for ConstRng {
        fn next_u32(&mut self) -> u32 {
            self.0 as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            dest.fill(0);
        }
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
            dest.fill(0);
            Ok(())
        }
    }

    /// Through a pass-through bridge a frame's arrival downstream is worked
    /// out when it is sent, with no event at the bridge: the results are the
    /// event-by-event run's, to the bit (counters, windows, binned series).
    #[test]
    fn express_forwarding_through_two_port_bridges_changes_no_result() {
        let mut cfg = crate::bench::incast_config(30 * PS_PER_MS);
        cfg.windows.push(crate::config::WindowConfig {
            name: "late".into(),
            start_ps: 10 * PS_PER_MS + 123,
            end_ps: 20 * PS_PER_MS + 7,
        });
        let run = |express: bool| {
            let mut sim = NetSim::new(&cfg, 3, NoCm).unwrap();
            if !express {
                sim.express.fill(NO_EXPRESS);
            }
            let used = sim.express.iter().filter(|&&x| x != NO_EXPRESS).count();
            sim.run_until(Time::MAX);
            let mut r = serde_json::to_value(sim.finish().unwrap()).unwrap();
            let events = r["engine"]["events"].as_u64().unwrap();
            r.as_object_mut().unwrap().remove("engine");
            (r, events, used)
        };
        let (fast, fast_events, used) = run(true);
        let (slow, slow_events, _) = run(false);
        // Both directions of the four edge bridges.
        assert_eq!(used, 8);
        assert!(fast_events < slow_events * 3 / 4, "{fast_events} events against {slow_events}");
        assert_eq!(fast, slow);
        // With a CP on an edge bridge, or with PAUSE, nothing is forwarded express.
        let mut paused = cfg.clone();
        paused.pause.enabled = true;
        assert!(NetSim::new(&paused, 3, NoCm).unwrap().express.iter().all(|&x| x == NO_EXPRESS));
        let mut with_cp = cfg.clone();
        for b in &mut with_cp.bridges {
            b.cp = true;
        }
        assert!(NetSim::new(&with_cp, 3, NoCm).unwrap().express.iter().all(|&x| x == NO_EXPRESS));
    }

    /// A bridge port into a counting station drains lazily: no TxDone event,
    /// the frames it would have sent by the time it is next read are sent
    /// then, at their instants. Away from exact ties between a departure and
    /// an arrival (the sink link a little slower than the sources, so their
    /// slot grids drift apart) the results are the event-by-event run's, to
    /// the bit; at a tie the departure frees its buffer first.
    #[test]
    fn a_lazily_draining_port_changes_no_result_away_from_ties() {
        let mut cfg = crate::bench::incast_config(30 * PS_PER_MS);
        for l in &mut cfg.links {
            if l.a == "B0" && l.b == "D" || l.a == "D" && l.b == "B0" {
                l.rate_bps = 9_999_999_937;
            }
        }
        cfg.windows.push(crate::config::WindowConfig {
            name: "late".into(),
            start_ps: 10 * PS_PER_MS + 123,
            end_ps: 20 * PS_PER_MS + 7,
        });
        let run = |cfg: &SimConfig, lazy: bool| {
            let mut sim = NetSim::new(cfg, 3, NoCm).unwrap();
            let drained: Vec<usize> = (0..sim.net.ports.len()).filter(|&p| sim.net.ports[p].drain_lazy).collect();
            if !lazy {
                for p in &mut sim.net.ports {
                    p.drain_lazy = false;
                }
            }
            sim.run_until(Time::MAX);
            let mut r = serde_json::to_value(sim.finish().unwrap()).unwrap();
            let events = r["engine"]["events"].as_u64().unwrap();
            r.as_object_mut().unwrap().remove("engine");
            (r, events, drained)
        };
        let (fast, fast_events, drained) = run(&cfg, true);
        let (slow, slow_events, _) = run(&cfg, false);
        let b0_d = cfg_port(&cfg, "B0", "D");
        // The bottleneck into the sink, and the edge bridges' ports back to the sources.
        assert!(drained.contains(&b0_d) && drained.len() == 5, "{drained:?}");
        assert!(fast_events < slow_events * 85 / 100, "{fast_events} events against {slow_events}");
        assert!(fast["frames"]["dropped_cp"].as_u64().unwrap() > 0 && fast["frames"]["in_flight"].as_u64().unwrap() > 0);
        assert_eq!(fast, slow);
        // With PAUSE (the port's departures release ingress counters) nothing drains lazily.
        let mut paused = cfg.clone();
        paused.pause.enabled = true;
        assert!(NetSim::new(&paused, 3, NoCm).unwrap().net.ports.iter().all(|p| !p.drain_lazy));
    }

    fn cfg_port(cfg: &SimConfig, from: &str, to: &str) -> usize {
        let sim = NetSim::new(cfg, 0, NoCm).unwrap();
        sim.net.port_by_name(from, to).unwrap() as usize
    }

    /// A notification is a control frame: it leaves a paused port at once,
    /// ahead of the data waiting there, and reaches its source at exactly the
    /// sum of serialisation, propagation, bridge latency and processing time.
    #[test]
    fn a_notification_crosses_a_paused_port_without_delay() {
        // S1 - B1 - B0 - D, 10 Gbit/s, 0.5 us links, 1 us bridges, 2 us processing.
        let mut cfg = star_config(1, 0.0, 10 * PS_PER_MS, 0);
        cfg.pause.enabled = true;
        cfg.scheme = SchemeConfig::of("bcn", &BcnParams::default());
        // D floods S1 from t = 0: its frames queue at B0 behind the paused port.
        let d = cfg.stations.iter_mut().find(|s| s.name == "D").unwrap();
        d.load = 1.0;
        d.dest = crate::config::DestConfig::Fixed { node: "S1".into() };
        cfg.events.push(EventConfig::Start {
            at_ps: 0,
            node: "D".into(),
        });
        let mut sim = NetSim::new(&cfg, 0, Bcn::new(BcnParams::default()).unwrap()).unwrap();
        let back = sim.net.port_by_name("B0", "B1").unwrap();
        let cp = sim.net.port_by_name("B0", "D").unwrap();
        let b0 = match sim.net.nodes[*sim.net.node_by_name.get("B0").unwrap() as usize].kind {
            NodeKind::Bridge(b) => b,
            NodeKind::Station(_) => unreachable!(),
        };
        // B1 pauses B0's port towards it for the full 65,535 quanta (3.36 ms).
        sim.receive_pause(back, u16::MAX);
        let pause_end = sim.net.ports[back as usize].pause_end;
        assert!(pause_end > 3 * PS_PER_MS);

        let t0 = 100 * PS_PER_US;
        sim.run_until(t0);
        sim.now = t0;
        assert!(!sim.net.ports[back as usize].data.is_empty(), "data waits behind the pause");
        assert_eq!(sim.net.ports[back as usize].frames_sent, 0);
        // The CP at B0 -> D notifies S1 about a frame of S1's (negative feedback).
        let sampled = Frame::data(t0, 0, 1, 1500);
        sim.send_note(b0, cp, &sampled, BcnExt::new(BcnMsg::Negative, -100.0));
        assert_eq!(sim.net.ports[back as usize].frames_sent, 1, "the CNM left at once");
        // 64 B at 10 Gbit/s twice (51.2 ns), two 0.5 us links, B1's 1 us, S1's 2 us.
        let arrive = t0 + 2 * 51_200 + 2 * PS_PER_US / 2 + PS_PER_US + 2 * PS_PER_US;
        sim.run_until(arrive);
        assert_eq!(sim.rps[0].notifications, 0, "not before its exact arrival time");
        sim.run_until(arrive + 1);
        assert_eq!(sim.rps[0].notifications, 1);
        assert!(sim.rps[0].rl_of(1).is_some(), "the negative notification created S1's RL for D");
        // The data it overtook is still held by the pause.
        sim.run_until(pause_end - 1);
        assert_eq!(sim.net.ports[back as usize].frames_sent, 1);
        sim.run_until(pause_end + 10 * PS_PER_US);
        assert!(sim.net.ports[back as usize].frames_sent > 1, "data flows once the pause ends");
    }

    /// A run of the 4-to-1 incast stopped half way: frames are queued in
    /// bridges, on wires and in NICs.
    fn half_run() -> NetSim<NoCm> {
        let cfg = star_config(4, 0.49, 2 * PS_PER_MS, 0);
        let mut sim = NetSim::new(&cfg, 0, NoCm).unwrap();
        sim.run_until(PS_PER_MS);
        sim
    }

    /// The busiest queue of the run above (the CP towards the sink).
    fn busiest(sim: &NetSim<NoCm>) -> usize {
        (0..sim.net.ports.len()).max_by_key(|&p| sim.net.ports[p].data.len()).unwrap()
    }

    #[test]
    fn the_conservation_check_passes_an_untouched_run() {
        let mut sim = half_run();
        sim.run_until(Time::MAX);
        assert!(sim.finish().is_ok());
    }

    #[test]
    fn the_conservation_check_fires_on_a_lost_frame() {
        let mut sim = half_run();
        let p = busiest(&sim);
        assert!(sim.net.ports[p].data.len() > 2, "the queue holds frames");
        // Fault: a queued frame vanishes (its bytes stay accounted, as a bug would leave them).
        sim.net.ports[p].data.remove(1);
        sim.run_until(Time::MAX);
        let e = sim.finish().unwrap_err();
        assert!(e.contains("frame conservation violated"), "{e}");
    }

    #[test]
    fn the_conservation_check_fires_on_a_duplicated_frame() {
        let mut sim = half_run();
        let p = busiest(&sim);
        // Fault: a queued frame is delivered twice (no bytes accounted for the copy).
        let copy = sim.net.ports[p].data[1];
        let (len, ingress) = (copy.len as u64, copy.in_port);
        sim.net.ports[p].data.insert(1, copy);
        sim.net.ports[p].data_bytes += len;
        sim.net.ports[ingress as usize].in_bytes += len;
        let b = match sim.net.nodes[sim.net.ports[p].owner as usize].kind {
            NodeKind::Bridge(b) => b as usize,
            NodeKind::Station(_) => unreachable!(),
        };
        sim.net.bridges[b].total_bytes += len;
        let local = sim.net.ports[ingress as usize].local as usize;
        sim.net.ports[p].bytes_by_ingress[local] += len;
        sim.run_until(Time::MAX);
        let e = sim.finish().unwrap_err();
        assert!(e.contains("frame conservation violated"), "{e}");
    }
}

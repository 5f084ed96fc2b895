//! The switched network between the stations: its ports (one per link
//! direction: a transmitter, its queues and its wire), its bridges (buffer,
//! admission, CPs, in bridge.rs), PAUSE (pause.rs) and forwarding. A frame
//! is put on a link by queueing it at a port and starting the port
//! ([`Fabric::try_start`]); a station's port pulls its next data frame from
//! the station through [`Nic`], so the fabric never reaches into a station.

use super::bridge::Bridge;
use super::ctx::{Ctx, EV_ARRIVE, EV_TX_DONE, EV_WAKE};
use super::node::{Node, NodeKind};
use super::port::{Port, PortId, TxFrame, NO_PEER_BRIDGE, NO_TRACE, WIRE_DATA, WIRE_MAC, WIRE_NOTE};
use super::routing::{Router, NO_ROUTE};
use crate::config::PauseConfig;
use crate::engine::Time;
use crate::frame::{Frame, FrameKind, NO_PORT_IN};
use crate::scheme::{QueueView, Scheme};
use crate::trace::{Kind, Reason, Site, Tracer};
use std::collections::BTreeMap;

/// `Fabric::express` of a port that does not end at a pass-through bridge.
pub(crate) const NO_EXPRESS: PortId = PortId::MAX;

/// What a station's port asks of its station: the station's reaction point
/// decides which data frame leaves next when rate limiters are active.
pub trait Nic<S: Scheme> {
    /// Station `s` has live rate limiters: its link serves them and its NIC
    /// FIFO round robin (through `next_data`).
    fn limited(&self, s: usize) -> bool;
    /// Station `s` has frames in rate limiters or flows with frames to send.
    fn has_queued(&self, s: usize) -> bool;
    /// The next data frame of station `s` on its port `port` (`p`), if one
    /// may leave now; otherwise the station arranges to wake the port.
    fn next_data<T: Tracer<S>>(&mut self, s: usize, port: PortId, p: &mut Port<S::Ext>, ctx: &mut Ctx<S, T>) -> Option<Frame<S::Ext>>;
    /// Station `s` received `f` (a data frame, counted as delivered, or a
    /// control frame after the station's processing time): its transport,
    /// notification point or reaction point acts on it, and may put frames
    /// on its link through `fabric`.
    fn receive<T: Tracer<S>>(&mut self, s: usize, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>);
    /// Station `s`'s pull pacer's event (receiver credit).
    fn on_pull<T: Tracer<S>>(&mut self, s: usize, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>);
}

pub struct Fabric<S: Scheme> {
    /// Stations first (node index = station index), then bridges.
    pub nodes: Vec<Node>,
    pub ports: Vec<Port<S::Ext>>,
    pub bridges: Vec<Bridge>,
    /// CP state per port (bridges with CP detection on).
    pub cps: Vec<Option<S::Cp>>,
    pub router: Router,
    /// Per port, the output port of the pass-through bridge at its far end
    /// (`NO_EXPRESS`: none); see `build::express_ports`.
    pub express: Vec<PortId>,
    pub pause: PauseConfig,
    /// PFC frames sent, by the priorities they name.
    pub pfc_frames: [u64; 8],
    /// The PFC watchdog: queues stormed, and frames it dropped, per priority.
    pub watchdog_storms: [u64; 8],
    pub watchdog_drops: [u64; 8],
    /// Data frames a bridge's buffer refused (any limit but headroom), and
    /// lossless frames an `mmu` buffer lost for want of headroom, per priority.
    pub buffer_drops: [u64; 8],
    pub headroom_drops: [u64; 8],
    /// What routing is rebuilt from when a link goes down or comes back
    /// (runs with `link_down` events only).
    pub reroute: Option<Box<super::routing::Reroute>>,
    /// The deadlock detector's findings (`net::deadlock`).
    pub deadlock: Box<super::pause::Deadlocks>,
    /// The watchdog drops the frames of stormed queues (checked per frame).
    pub watchdog_drop: bool,
    /// PFC is on (`pause.enabled` and `pause.mode = "pfc"`).
    pub pfc_on: bool,
    /// The lossless priorities (`pause.lossless`) when PFC is on, else none:
    /// the PFC-enable vector of every port.
    pub lossless: u8,
    /// No multi-class port, no mmu buffer, no PFC and no watchdog that
    /// drops: a bridge forwards as the 802.1Qau-era model did, by a path
    /// without their checks (`Fabric::bridge_receive`).
    pub plain: bool,
    /// Trimming at full queues (schemes with `Scheme::TRIMS`; net::trim).
    pub trim: Option<Box<super::trim::Trimming>>,
    pub n_stations: usize,
    pub node_by_name: BTreeMap<String, u32>,
}

impl<S: Scheme> Fabric<S> {
    pub fn port_by_name(&self, from: &str, to: &str) -> Option<PortId> {
        let a = *self.node_by_name.get(from)?;
        let b = *self.node_by_name.get(to)?;
        self.nodes[a as usize]
            .ports
            .iter()
            .copied()
            .find(|&p| self.ports[p as usize].peer == b)
    }

    /// Starts the next frame on `port` if it is idle: control frames first
    /// (never paused), then data unless paused.
    pub(crate) fn try_start<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let now = ctx.now;
        let p = &mut self.ports[port as usize];
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
                ctx.schedule(p.done_at, EV_TX_DONE, port);
                return;
            }
            self.complete_tx(port, ctx, nic);
        }
        let p = &mut self.ports[port as usize];
        if p.rate_bps == 0 {
            return;
        }
        let owner = p.owner as usize;
        let limited = owner < self.n_stations && nic.limited(owner);
        let frame = if let Some(f) = p.ctrl.pop_front() {
            if S::TRIMS {
                if let Some(tr) = self.trim.as_mut() {
                    let q = &mut tr.ctrl_bytes[port as usize];
                    *q = q.saturating_sub(f.len as u64);
                }
            }
            f
        } else if !(p.data_waiting() || limited && nic.has_queued(owner)) {
            return;
        } else if p.is_paused(now) {
            if p.wake_at != p.pause_end {
                p.wake_at = p.pause_end;
                ctx.schedule(p.pause_end, EV_WAKE, port);
            }
            return;
        } else if limited {
            match nic.next_data(owner, port, p, ctx) {
                Some(f) => f,
                None => return,
            }
        } else {
            let mut f = if !p.multiclass {
                p.data.pop_front().expect("non-empty")
            } else if let Some(f) = p.pop_class(now) {
                f
            } else {
                self.wake_when_a_class_resumes(port, ctx);
                return;
            };
            if S::CP_ON_DEQUEUE {
                let q = QueueView {
                    bytes: p.data_bytes,
                    rate_bps: p.rate_bps,
                    tx_bytes: p.bytes_sent,
                    now,
                };
                if let Some(cp) = self.cps[port as usize].as_mut() {
                    let before = if T::ON { Some(ctx.scheme.ext_fields(&f.ext)) } else { None };
                    ctx.scheme.cp_on_dequeue(cp, &mut f, q, port + 1);
                    if T::ON {
                        self.trace_mark(port, &f, before, q.bytes, ctx);
                    }
                }
            }
            f
        };
        let more_waiting = limited && nic.has_queued(owner);
        self.start_tx(port, frame, more_waiting, ctx);
    }

    /// PFC holds every class with frames waiting at multi-class `port`: it
    /// wakes when the first resumes (an XON wakes it sooner).
    #[cold]
    #[inline(never)]
    fn wake_when_a_class_resumes<T: Tracer<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>) {
        let p = &mut self.ports[port as usize];
        let at = p.classes.as_ref().and_then(|c| c.resume_at(ctx.now)).expect("a paused class waits");
        if p.wake_at != at {
            p.wake_at = at;
            ctx.schedule(at, EV_WAKE, port);
        }
    }

    /// `port` (idle, running, not paused for this frame) starts sending `frame`.
    #[inline(always)]
    pub(crate) fn start_tx<T: Tracer<S>>(&mut self, port: PortId, frame: Frame<S::Ext>, more_waiting: bool, ctx: &mut Ctx<S, T>) {
        let now = ctx.now;
        if T::ON {
            let p = &self.ports[port as usize];
            let site = Site {
                at: now,
                node: p.owner,
                port,
            };
            ctx.tracer.depart(&ctx.scheme, site, &frame, p.data_bytes);
        }
        let p = &mut self.ports[port as usize];
        let ser = p.ser_ps(frame.len, ctx.run.frame_bytes);
        let class = match frame.kind {
            FrameKind::Pause => WIRE_MAC,
            FrameKind::Data => WIRE_DATA,
            FrameKind::Note | FrameKind::Ack | FrameKind::Nack | FrameKind::Trimmed => WIRE_NOTE,
        };
        p.busy = true;
        p.tx = TxFrame {
            len: frame.len,
            in_port: frame.in_port,
            in_local: frame.in_local,
            data: frame.is_data(),
            prio: frame.prio,
        };
        p.frames_sent += 1;
        p.bytes_sent += frame.len as u64;
        p.done_at = now + ser;
        // A TxDone event only when someone waits and nobody settles the port lazily.
        let idle_after = p.lazy_ok && p.ctrl.is_empty() && !p.data_waiting() && !more_waiting;
        p.done_pending = !(p.drain_lazy || idle_after);
        if p.done_pending {
            ctx.schedule(now + ser, EV_TX_DONE, port);
        }
        let arrive = now + ser + p.delay_ps + p.rx_extra(class);
        let len = frame.len as u64;
        self.onto_wire(port, class, frame, arrive, ctx);
        let p = &mut self.ports[port as usize];
        ctx.stats.transmit(now, port as usize, len, &mut p.win_bytes);
    }

    /// `frame`, sent on `port`, reaches the far end at `arrive`.
    #[inline(always)]
    fn onto_wire<T: Tracer<S>>(&mut self, port: PortId, class: usize, frame: Frame<S::Ext>, arrive: Time, ctx: &mut Ctx<S, T>) {
        if class == WIRE_DATA && self.express[port as usize] != NO_EXPRESS && arrive < ctx.run.duration {
            // Through a pass-through bridge: it starts forwarding at `arrive`.
            self.forward_express(self.express[port as usize], frame, arrive, ctx);
        } else {
            self.arrive_at_far_end(port, class, frame, arrive, ctx);
        }
    }

    /// `frame` is on `port`'s wire until `arrive`: delivered at once to a
    /// station that only counts it, else an arrival event.
    #[inline(always)]
    fn arrive_at_far_end<T: Tracer<S>>(&mut self, port: PortId, class: usize, mut frame: Frame<S::Ext>, arrive: Time, ctx: &mut Ctx<S, T>) {
        let p = &mut self.ports[port as usize];
        if class == WIRE_DATA && p.peer_is_station && !ctx.run.sink_events {
            // Delivery is certain once sending starts, and nothing happens at
            // the sink but counting: record it now, at its arrival time.
            if arrive < ctx.run.duration {
                if T::ON {
                    let site = Site {
                        at: arrive,
                        node: p.peer,
                        port,
                    };
                    ctx.tracer.frame(&ctx.scheme, site, Kind::Deliver, Reason::None, &frame, None);
                }
                p.frames_delivered += 1;
                ctx.stats.deliver(
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
                let out = self.router.next_hop_sprayed(p.peer_bridge, frame.src, frame.dst, frame.entropy);
                frame.in_port = if out == NO_ROUTE { NO_PORT_IN } else { out };
            }
            p.wire_mut(class).push_back(frame);
            ctx.schedule(arrive, EV_ARRIVE + class as u8, port);
        }
    }

    /// `frame` leaves pass-through port `out` at `start` (see
    /// `build::express_ports`): what `start_tx` does for it there, at the
    /// instants it would.
    fn forward_express<T: Tracer<S>>(&mut self, out: PortId, frame: Frame<S::Ext>, start: Time, ctx: &mut Ctx<S, T>) {
        let o = &mut self.ports[out as usize];
        let len = frame.len as u64;
        if T::ON {
            // The pass-through bridge takes the frame and starts sending it at `start`.
            let site = Site {
                at: start,
                node: o.owner,
                port: out,
            };
            ctx.tracer
                .frame(&ctx.scheme, site, Kind::Enqueue, Reason::Output, &frame, Some(len));
            ctx.tracer.depart(&ctx.scheme, site, &frame, len);
        }
        let arrive = start + o.ser_ps(frame.len, ctx.run.frame_bytes) + o.delay_ps + o.rx_extra_data_ps;
        o.frames_sent += 1;
        o.bytes_sent += len;
        self.arrive_at_far_end(out, WIRE_DATA, frame, arrive, ctx);
        let o = &mut self.ports[out as usize];
        ctx.stats.transmit(start, out as usize, len, &mut o.win_bytes);
    }

    /// The frame being sent on `port` is done (at `done_at`): free its buffer.
    fn complete_tx<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &mut self.ports[port as usize];
        p.busy = false;
        let f = p.tx;
        if f.data {
            p.data_bytes -= f.len as u64;
            let owner = p.owner;
            let at = p.done_at;
            if p.trace != NO_TRACE {
                let b = ctx.stats.bin_of(at);
                ctx.stats.queue_traces[p.trace as usize].update(b, p.data_bytes);
                ctx.stats.queue_hists[p.trace as usize].record(at, p.data_bytes);
            }
            if let NodeKind::Bridge(b) = self.nodes[owner as usize].kind {
                self.bridge_release(b, port, &f, ctx, nic);
            }
        }
    }

    /// Brings a lazily finishing port up to date before its queue is read.
    #[inline(always)]
    pub(crate) fn settle<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &self.ports[port as usize];
        if p.busy && !p.done_pending && ctx.now >= p.done_at {
            if p.drain_lazy {
                self.drain_until(port, ctx.now, true, ctx, nic);
            } else {
                self.complete_tx(port, ctx, nic);
            }
        }
    }

    /// A lazily draining port sends what it would have sent up to `t`
    /// (frames ending at `t` included when `inclusive`): each frame that
    /// ended frees its buffer and the next starts at that instant, as the
    /// TxDone events would have had it.
    #[inline]
    pub(crate) fn drain_until<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        port: PortId,
        t: Time,
        inclusive: bool,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let now = ctx.now;
        loop {
            let p = &self.ports[port as usize];
            if !p.busy || p.done_at > t || (p.done_at == t && !inclusive) {
                break;
            }
            ctx.now = p.done_at;
            self.complete_tx(port, ctx, nic);
            self.try_start(port, ctx, nic);
        }
        ctx.now = now;
    }

    pub(crate) fn on_tx_done<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        self.ports[port as usize].done_pending = false;
        self.complete_tx(port, ctx, nic);
        self.try_start(port, ctx, nic);
    }

    pub(crate) fn on_wake<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &mut self.ports[port as usize];
        if p.wake_at == ctx.now {
            p.wake_at = Time::MAX;
        }
        self.try_start(port, ctx, nic);
    }

    /// A timed link-rate change: `port` sends at `rate_bps` from now (0 stops it).
    pub(crate) fn set_rate<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, rate_bps: u64, scale: bool, ctx: &mut Ctx<S, T>, nic: &mut N) {
        self.ports[port as usize].set_rate(rate_bps, ctx.run.frame_bytes);
        if scale {
            self.scale_buffers(port, ctx);
        }
        if rate_bps > 0 {
            self.try_start(port, ctx, nic);
        }
    }

    /// A `link_rate` event with `scale_buffers`: bridge port `port`'s data
    /// queue limit, its header queue's (twice that) and its CP's marking
    /// thresholds become its bridge's (its CP's as built) times the new
    /// rate over the configured one, floored to whole bytes, as the Ultra
    /// Ethernet reference builds a degraded link (`alloc_queue` with
    /// `reduced_speed`). Back at the configured rate they are as built.
    /// Frames already queued beyond a smaller limit stay and are sent.
    fn scale_buffers<T: Tracer<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>) {
        let p = &self.ports[port as usize];
        let NodeKind::Bridge(b) = self.nodes[p.owner as usize].kind else {
            unreachable!("scale_buffers is refused on a station's port when the network is built")
        };
        let ratio = p.rate_bps as f64 / p.nominal_rate_bps as f64;
        let cap = if p.rate_bps == p.nominal_rate_bps {
            u64::MAX
        } else {
            (self.bridges[b as usize].buffer_bytes as f64 * ratio).floor() as u64
        };
        self.ports[port as usize].queue_cap = cap;
        if let Some(cp) = self.cps[port as usize].as_mut() {
            ctx.scheme.scale_cp(cp, ratio);
        }
    }

    /// The limit of `out`'s header (control) queue at bridge `b` under
    /// trimming: twice its data queue's.
    #[inline(always)]
    pub(crate) fn header_limit(&self, b: u32, out: PortId) -> u64 {
        let bridge = &self.bridges[b as usize];
        if bridge.port_caps {
            2 * bridge.buffer_bytes.min(self.ports[out as usize].queue_cap)
        } else {
            2 * bridge.buffer_bytes
        }
    }

    /// The data queue of `port` changed: its trace, if traced, records it.
    #[inline(always)]
    pub(crate) fn queue_changed<T: Tracer<S>>(&self, port: PortId, ctx: &mut Ctx<S, T>) {
        let p = &self.ports[port as usize];
        if p.trace != NO_TRACE {
            let b = ctx.stats.bin_now();
            ctx.stats.queue_traces[p.trace as usize].update(b, p.data_bytes);
            ctx.stats.queue_hists[p.trace as usize].record(ctx.now, p.data_bytes);
        }
    }

    /// The frame at the head of `port`'s wire ring `class` is received by
    /// the peer: a bridge, a receiving MAC, or a station (through `nic`).
    pub(crate) fn on_arrive<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, class: usize, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &mut self.ports[port as usize];
        let f = p.wire_mut(class).pop_front().expect("arrival without a frame on the wire");
        let peer = p.peer;
        let ingress = p.reverse;
        let in_local = p.reverse_local;
        let peer_bridge = p.peer_bridge;
        if class == WIRE_MAC {
            self.receive_pause(ingress, f.prio, f.quanta(), ctx, nic);
            return;
        }
        if peer_bridge != NO_PEER_BRIDGE {
            let out = if f.in_port == NO_PORT_IN { NO_ROUTE } else { f.in_port as PortId };
            self.bridge_receive(peer_bridge, ingress, in_local, out, f, ctx, nic);
            return;
        }
        let NodeKind::Station(s) = self.nodes[peer as usize].kind else {
            unreachable!("a bridge peer is handled above")
        };
        if T::ON {
            let kind = match f.kind {
                FrameKind::Data => Kind::Deliver,
                FrameKind::Note => Kind::CnRx,
                FrameKind::Ack => Kind::AckRx,
                FrameKind::Nack => Kind::NackRx,
                FrameKind::Trimmed => Kind::TrimRx,
                FrameKind::Pause => Kind::PauseRx,
            };
            let site = Site {
                at: ctx.now,
                node: peer,
                port,
            };
            ctx.tracer.frame(&ctx.scheme, site, kind, Reason::None, &f, None);
        }
        if f.is_data() {
            debug_assert_eq!(f.dst, s, "frame delivered to the wrong station");
            self.ports[port as usize].frames_delivered += 1;
            ctx.stats
                .deliver(ctx.now, f.src as usize, f.dst as usize, f.len as u64, ctx.now - f.born);
        }
        nic.receive(s as usize, &f, ctx, self);
    }

    /// Queues control frame `f` (a notification, an acknowledgement) on
    /// `port` and starts the port.
    pub(crate) fn send_control<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, f: Frame<S::Ext>, ctx: &mut Ctx<S, T>, nic: &mut N) {
        self.settle(port, ctx, nic);
        if S::TRIMS {
            if let Some(tr) = self.trim.as_mut() {
                tr.ctrl_bytes[port as usize] += f.len as u64;
            }
        }
        self.ports[port as usize].ctrl.push_back(f);
        self.try_start(port, ctx, nic);
    }

    /// CP `port` may have marked `f` (ECN CE, a three-point mark) on its way
    /// through: a `mark` row if it did.
    pub(crate) fn trace_mark<T: Tracer<S>>(
        &self,
        port: PortId,
        f: &Frame<S::Ext>,
        before: Option<crate::scheme::ExtFields>,
        queue_bytes: u64,
        ctx: &mut Ctx<S, T>,
    ) {
        let after = ctx.scheme.ext_fields(&f.ext);
        if before.is_some_and(|b| b.ce == after.ce && b.marked_by == after.marked_by) {
            return;
        }
        let site = Site {
            at: ctx.now,
            node: self.ports[port as usize].owner,
            port,
        };
        ctx.tracer.frame(&ctx.scheme, site, Kind::Mark, Reason::None, f, Some(queue_bytes));
    }

    /// Data frames held by the fabric: queued, being sent, or on the wire.
    pub(crate) fn data_frames_in_flight(&self) -> u64 {
        self.ports.iter().map(|p| p.data_frames_in_flight()).sum()
    }
}

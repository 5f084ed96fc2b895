//! Forwarding at a bridge, as the fabric carries it out: a received frame
//! joins its output queue (the bridge's buffer admission, the CP's view of
//! it, PAUSE), leaves it freeing its buffer; notifications from CPs and
//! from notification points at destinations travel back to the flows'
//! sources as control frames. The bridge's own state and rules are in
//! `bridge.rs`; this file is the fabric's side, which reaches ports,
//! routes and the scheme around it.

use super::ctx::Ctx;
use super::fabric::{Fabric, Nic};
use super::port::{PortId, TxFrame};
use super::routing::NO_ROUTE;
use crate::config::BufferMode;
use crate::frame::Frame;
use crate::scheme::{CpFields, QueueView, Scheme};
use crate::stats;
use crate::trace::{Kind, NoteOrigin, Reason, Site, Tracer, NO_PORT};

/// Who sends a notification.
#[derive(Clone, Copy)]
pub(crate) enum NoteFrom {
    /// The CP of port `out` of bridge `b`, from its sample of a queue of
    /// `queue_bytes` (`sample`: what the trace shows of it).
    Cp {
        b: u32,
        out: PortId,
        queue_bytes: u64,
        sample: Option<CpFields>,
    },
    /// The notification point of station `s`.
    Np { s: usize },
}

impl<S: Scheme> Fabric<S> {
    /// A frame fully received (plus latency) by bridge `b` through `ingress`
    /// (the bridge's port on the arrival link, its local index `in_local`)
    /// joins its output queue `out` (routed when the frame was sent).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn bridge_receive<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        ingress: PortId,
        in_local: u16,
        out: PortId,
        f: Frame<S::Ext>,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        if T::ON {
            let node = self.bridges[b as usize].node;
            let site = Site {
                at: ctx.now,
                node,
                port: NO_PORT,
            };
            if out == NO_ROUTE {
                ctx.tracer.frame(&ctx.scheme, site, Kind::Drop, Reason::NoRoute, &f, None);
            } else if f.is_control() {
                let site = Site { port: out, ..site };
                ctx.tracer.frame(&ctx.scheme, site, Kind::Enqueue, Reason::Control, &f, None);
            }
        }
        let bridge = &mut self.bridges[b as usize];
        if out == NO_ROUTE {
            // Unreachable destinations of loaded sources are rejected when
            // the network is built; count rather than lose anything else.
            if f.is_data() {
                bridge.dropped_cp += 1;
                ctx.stats.count(ctx.now, stats::DROPPED_CP);
            }
            return;
        }
        if f.is_control() {
            if S::TRIMS && self.trim.is_some() {
                // The header queue: at most twice the port's data queue.
                let limit = self.header_limit(b, out);
                self.push_control(out, limit, f, ctx, nic);
                return;
            }
            self.ports[out as usize].ctrl.push_back(f);
            self.try_start(out, ctx, nic);
            return;
        }
        if self.plain {
            self.receive_data::<true, T, N>(b, ingress, in_local, out, f, ctx, nic);
        } else {
            self.receive_data::<false, T, N>(b, ingress, in_local, out, f, ctx, nic);
        }
    }

    /// A data frame joins output queue `out` of bridge `b`. `PLAIN`
    /// (`Fabric::plain`): the 802.1Qau-era bridge, one FIFO per output port
    /// and PAUSE at most, compiled without the checks of priorities, mmu
    /// buffers, PFC and the watchdog.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn receive_data<const PLAIN: bool, T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        ingress: PortId,
        in_local: u16,
        out: PortId,
        mut f: Frame<S::Ext>,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let len = f.len as u64;
        if !PLAIN && self.watchdog_drop && self.stormed_drop(out, f.prio) {
            self.watchdog_refuse(b, out, f, ctx);
            return;
        }
        self.settle(out, ctx, nic);
        let bridge = &mut self.bridges[b as usize];
        let in_local = in_local as usize;
        let o = &self.ports[out as usize];
        let mmu = !PLAIN && bridge.buffer_mode == BufferMode::Mmu;
        if mmu {
            let m = bridge.mmu.as_deref_mut().expect("an mmu bridge has its MMU");
            if let Err(reason) = m.admit(in_local, o.local as usize, (f.prio & 7) as usize, len) {
                self.refuse(b, out, in_local, f, Some(reason), ctx, nic);
                return;
            }
        } else if !bridge.admits(len, o.data_bytes, || o.bytes_by_ingress[in_local])
            || (bridge.port_caps && o.data_bytes + len > o.queue_cap)
        {
            if !S::TRIMS || self.trim.is_none() {
                self.refuse(b, out, in_local, f, None, ctx, nic);
                return;
            }
            // Trimmed or dropped: the arriving frame, or the last one
            // queued (the arriving one then takes its place).
            match self.overflow(b, out, f, ctx, nic) {
                Some(back) => f = back,
                None => return,
            }
        }
        self.admit(b, ingress, in_local, out, &mut f, ctx, nic);
        let prio = f.prio;
        if PLAIN {
            self.ports[out as usize].data.push_back(f);
        } else {
            self.ports[out as usize].push_data(f);
        }
        self.queue_changed(out, ctx);
        if mmu {
            self.mmu_on_enqueue(ingress, in_local, prio, ctx, nic);
        } else if self.pause.enabled {
            if !PLAIN && self.pfc_on {
                self.pfc_on_enqueue(ingress, prio, len, ctx, nic);
            } else {
                self.pause_on_enqueue(b, out, ingress, ctx, nic);
            }
        }
        self.try_start(out, ctx, nic);
    }

    /// The watchdog drops data frame `f` of a stormed queue at `out`.
    #[cold]
    #[inline(never)]
    fn watchdog_refuse<T: Tracer<S>>(&mut self, b: u32, out: PortId, f: Frame<S::Ext>, ctx: &mut Ctx<S, T>) {
        let bridge = &mut self.bridges[b as usize];
        bridge.dropped_cp += 1;
        ctx.stats.count(ctx.now, stats::DROPPED_CP);
        self.watchdog_drops[(f.prio & 7) as usize] += 1;
        if T::ON {
            let site = Site {
                at: ctx.now,
                node: bridge.node,
                port: out,
            };
            ctx.tracer.frame(&ctx.scheme, site, Kind::Drop, Reason::Watchdog, &f, None);
        }
    }

    /// Bridge `b` accepted data frame `f` (from local ingress `in_local`)
    /// for output `out`: its bytes counted, its enqueue traced, its CP's
    /// sample taken (which may mark it or notify its source).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn admit<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        ingress: PortId,
        in_local: usize,
        out: PortId,
        f: &mut Frame<S::Ext>,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let len = f.len as u64;
        let bridge = &mut self.bridges[b as usize];
        let ports = &mut self.ports;
        f.in_port = ingress;
        f.in_local = in_local as u16;
        bridge.total_bytes += len;
        if self.pause.enabled && !self.pfc_on {
            // Ingress accounting: read by PAUSE only (not touched otherwise: a cache miss per hop).
            ports[ingress as usize].pause_in.in_bytes += len;
        }
        let o = &mut ports[out as usize];
        o.data_bytes += len;
        o.bytes_by_ingress[in_local] += len;
        if T::ON {
            let site = Site {
                at: ctx.now,
                node: bridge.node,
                port: out,
            };
            let held = Some(o.data_bytes);
            ctx.tracer.frame(&ctx.scheme, site, Kind::Enqueue, Reason::Output, f, held);
        }
        // The CP sees the queue including this frame, and may mark it (QCN-3pt).
        if let Some(cp) = self.cps[out as usize].as_mut() {
            let q = QueueView {
                // Its own class's queue on a multi-class port (ECN per queue).
                bytes: if o.multiclass { o.class_bytes(f.prio) + len } else { o.data_bytes },
                rate_bps: o.rate_bps,
                tx_bytes: o.bytes_sent,
                now: ctx.now,
            };
            let (sample, before) = if T::ON {
                (ctx.scheme.cp_fields(cp, q), Some(ctx.scheme.ext_fields(&f.ext)))
            } else {
                (None, None)
            };
            let note = ctx.scheme.cp_on_enqueue(cp, f, q, out + 1);
            if T::ON {
                self.trace_mark(out, f, before, q.bytes, ctx);
            }
            if let Some(note) = note {
                self.cp_notify(b, out, f, note, q.bytes, sample, ctx, nic);
            }
        }
    }

    /// Bridge `b` refuses data frame `f` for output `out` (from local
    /// ingress `in_local`): `why`, or (None) the bridge's own buffer rule.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn refuse<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        out: PortId,
        in_local: usize,
        mut f: Frame<S::Ext>,
        why: Option<Reason>,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let len = f.len as u64;
        let bridge = &mut self.bridges[b as usize];
        let o = &self.ports[out as usize];
        let p = (f.prio & 7) as usize;
        if why == Some(Reason::HeadroomFull) {
            self.headroom_drops[p] += 1;
        } else {
            self.buffer_drops[p] += 1;
        }
        bridge.dropped_cp += 1;
        ctx.stats.count(ctx.now, stats::DROPPED_CP);
        if T::ON {
            // Which buffer refused the frame, and what it held.
            let (reason, held) = match why {
                Some(r) => (r, o.class_bytes(f.prio)),
                None => bridge.refusal(len, o.data_bytes, o.bytes_by_ingress[in_local]),
            };
            let site = Site {
                at: ctx.now,
                node: bridge.node,
                port: out,
            };
            ctx.tracer.frame(&ctx.scheme, site, Kind::Drop, reason, &f, Some(held));
        }
        // The CP's sampler sits at the queue's input: it may see the frame
        // the full queue is about to drop (scheme option `sample_dropped`).
        if let Some(cp) = self.cps[out as usize].as_mut() {
            if ctx.scheme.cp_samples_dropped() {
                let q = QueueView {
                    bytes: if o.multiclass { o.class_bytes(f.prio) } else { o.data_bytes },
                    rate_bps: o.rate_bps,
                    tx_bytes: o.bytes_sent,
                    now: ctx.now,
                };
                let sample = if T::ON { ctx.scheme.cp_fields(cp, q) } else { None };
                if let Some(note) = ctx.scheme.cp_on_enqueue(cp, &mut f, q, out + 1) {
                    self.cp_notify(b, out, &f, note, q.bytes, sample, ctx, nic);
                }
            }
        }
    }

    /// CP `out` of bridge `b` notifies the source of `sampled` (a 64-byte
    /// control frame on the reverse path).
    #[cfg(test)]
    pub(crate) fn send_note<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        out: PortId,
        sampled: &Frame<S::Ext>,
        note: S::Ext,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let q = self.ports[out as usize].data_bytes;
        self.cp_notify(b, out, sampled, note, q, None, ctx, nic);
    }

    /// `send_note` from the CP's sample of a queue of `queue_bytes`.
    #[allow(clippy::too_many_arguments)]
    fn cp_notify<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        out: PortId,
        sampled: &Frame<S::Ext>,
        note: S::Ext,
        queue_bytes: u64,
        sample: Option<CpFields>,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        // The notification's own flow (from the sampled frame's destination
        // to its source), as every later bridge routes it.
        let back = self.router.next_hop(b, sampled.dst, sampled.src);
        if back == NO_ROUTE {
            return;
        }
        self.ports[out as usize].cnm_frames += 1;
        let from = NoteFrom::Cp {
            b,
            out,
            queue_bytes,
            sample,
        };
        self.emit_note(back, sampled, note, out + 1, from, ctx, nic);
    }

    /// Queues on `port` a notification from CP `cpid` (0: none) to the source
    /// of `sampled` about its flow.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn emit_note<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        port: PortId,
        sampled: &Frame<S::Ext>,
        note: S::Ext,
        cpid: u32,
        from: NoteFrom,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let mut f = Frame::note(ctx.now, sampled.dst, sampled.src, sampled.dst, cpid, ctx.run.ctrl_bytes, note);
        f.flow = sampled.flow;
        if T::ON {
            let at = ctx.now;
            let origin = match from {
                NoteFrom::Cp {
                    b,
                    out,
                    queue_bytes,
                    sample,
                } => NoteOrigin {
                    site: Site {
                        at,
                        node: self.bridges[b as usize].node,
                        port: out,
                    },
                    from_cp: true,
                    sampled_seq: sampled.seq,
                    queue_bytes: Some(queue_bytes),
                    cp: sample,
                },
                NoteFrom::Np { s } => NoteOrigin {
                    site: Site { at, node: s as u32, port },
                    from_cp: false,
                    sampled_seq: sampled.seq,
                    queue_bytes: None,
                    cp: None,
                },
            };
            ctx.tracer.note_sent(&ctx.scheme, origin, &f);
        }
        if ctx.in_measure() {
            ctx.stats.counts.note_bytes_measure += f.len as u64;
        }
        self.send_control(port, f, ctx, nic);
    }

    /// A data frame left bridge `b` through `out`: free its buffer.
    pub(crate) fn bridge_release<T: Tracer<S>, N: Nic<S>>(&mut self, b: u32, out: PortId, f: &TxFrame, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let len = f.len as u64;
        let bridge = &mut self.bridges[b as usize];
        bridge.total_bytes -= len;
        let ingress = f.in_port as PortId;
        self.ports[out as usize].bytes_by_ingress[f.in_local as usize] -= len;
        if self.plain {
            if self.pause.enabled {
                self.ports[ingress as usize].pause_in.in_bytes -= len;
                self.pause_on_dequeue(b, out, ingress, ctx, nic);
            }
        } else if bridge.buffer_mode == BufferMode::Mmu {
            self.mmu_release(b, out, f, ctx, nic);
        } else if self.pause.enabled {
            if self.pfc_on {
                self.pfc_on_dequeue(ingress, f.prio, len, ctx, nic);
            } else {
                self.ports[ingress as usize].pause_in.in_bytes -= len;
                self.pause_on_dequeue(b, out, ingress, ctx, nic);
            }
        }
    }
}

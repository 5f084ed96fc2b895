//! Bridges: a received frame joins its output queue (buffer admission by
//! the bridge's buffer mode, the CP's view of it, PAUSE), leaves it freeing
//! its buffer; notifications from CPs and from notification points at
//! destinations travel back to the flows' sources as control frames.

use super::ctx::Ctx;
use super::fabric::{Fabric, Nic};
use super::port::{PortId, TxFrame};
use super::routing::NO_ROUTE;
use crate::config::{BufferMode, PauseTrigger};
use crate::engine::Time;
use crate::frame::Frame;
use crate::scheme::{CpFields, QueueView, Scheme};
use crate::stats;
use crate::trace::{Kind, NoteOrigin, Reason, Site, Tracer, NO_PORT};

/// A bridge: its shared buffer and how it admits frames, its latency, and
/// whether its output ports are CPs.
pub struct Bridge {
    pub node: u32,
    pub buffer_mode: BufferMode,
    pub buffer_bytes: u64,
    /// `dynamic` buffers: alpha of the dynamic threshold.
    pub dt_alpha: f64,
    pub latency_ps: Time,
    pub cp: bool,
    pub trigger: PauseTrigger,
    /// Data bytes held by the whole bridge.
    pub total_bytes: u64,
    pub dropped_cp: u64,
}

impl Bridge {
    /// Whether a data frame of `len` bytes may join an output queue that
    /// holds `queue` bytes, `partition()` of them from the frame's ingress
    /// (read only by the buffer mode that needs it).
    #[inline(always)]
    pub fn admits(&self, len: u64, queue: u64, partition: impl FnOnce() -> u64) -> bool {
        match self.buffer_mode {
            BufferMode::PerOutput => queue + len <= self.buffer_bytes,
            BufferMode::PerInput => partition() + len <= self.buffer_bytes,
            BufferMode::Shared => self.total_bytes + len <= self.buffer_bytes,
            BufferMode::Dynamic => {
                let free = self.buffer_bytes.saturating_sub(self.total_bytes);
                len <= free && (queue + len) as f64 <= self.dt_alpha * free as f64
            }
            BufferMode::Infinite => true,
        }
    }

    /// Why a frame that [`Bridge::admits`] refuses was refused, and what
    /// the refusing buffer held.
    pub fn refusal(&self, len: u64, queue: u64, partition: u64) -> (Reason, u64) {
        match self.buffer_mode {
            BufferMode::PerOutput | BufferMode::Infinite => (Reason::OutputBufferFull, queue),
            BufferMode::PerInput => (Reason::InputPartitionFull, partition),
            BufferMode::Shared => (Reason::SharedBufferFull, self.total_bytes),
            BufferMode::Dynamic if self.total_bytes + len > self.buffer_bytes => (Reason::SharedBufferFull, self.total_bytes),
            BufferMode::Dynamic => (Reason::DynamicThreshold, queue),
        }
    }
}

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
        mut f: Frame<S::Ext>,
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
            self.ports[out as usize].ctrl.push_back(f);
            self.try_start(out, ctx, nic);
            return;
        }
        let len = f.len as u64;
        self.settle(out, ctx, nic);
        let bridge = &mut self.bridges[b as usize];
        let ports = &mut self.ports;
        let in_local = in_local as usize;
        let o = &ports[out as usize];
        if !bridge.admits(len, o.data_bytes, || o.bytes_by_ingress[in_local]) {
            bridge.dropped_cp += 1;
            ctx.stats.count(ctx.now, stats::DROPPED_CP);
            if T::ON {
                // Which buffer refused the frame, and what it held.
                let (reason, held) = bridge.refusal(len, o.data_bytes, o.bytes_by_ingress[in_local]);
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
                    let o = &self.ports[out as usize];
                    let q = QueueView {
                        bytes: o.data_bytes,
                        rate_bps: o.rate_bps,
                        tx_bytes: o.bytes_sent,
                        now: ctx.now,
                    };
                    let sample = if T::ON { ctx.scheme.cp_fields(cp, q) } else { None };
                    if let Some(note) = ctx.scheme.cp_on_enqueue(cp, &mut f, q, out as u16 + 1) {
                        self.cp_notify(b, out, &f, note, q.bytes, sample, ctx, nic);
                    }
                }
            }
            return;
        }
        f.in_port = ingress as u16;
        f.in_local = in_local as u16;
        bridge.total_bytes += len;
        if self.pause.enabled {
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
            ctx.tracer.frame(&ctx.scheme, site, Kind::Enqueue, Reason::Output, &f, held);
        }
        // The CP sees the queue including this frame, and may mark it (QCN-3pt).
        if let Some(cp) = self.cps[out as usize].as_mut() {
            let q = QueueView {
                bytes: o.data_bytes,
                rate_bps: o.rate_bps,
                tx_bytes: o.bytes_sent,
                now: ctx.now,
            };
            let (sample, before) = if T::ON {
                (ctx.scheme.cp_fields(cp, q), Some(ctx.scheme.ext_fields(&f.ext)))
            } else {
                (None, None)
            };
            let note = ctx.scheme.cp_on_enqueue(cp, &mut f, q, out as u16 + 1);
            if T::ON {
                self.trace_mark(out, &f, before, q.bytes, ctx);
            }
            if let Some(note) = note {
                self.cp_notify(b, out, &f, note, q.bytes, sample, ctx, nic);
            }
        }
        self.ports[out as usize].data.push_back(f);
        self.queue_changed(out, ctx);
        if self.pause.enabled {
            self.pause_on_enqueue(b, out, ingress, ctx, nic);
        }
        self.try_start(out, ctx, nic);
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
        self.emit_note(back, sampled, note, out as u16 + 1, from, ctx, nic);
    }

    /// Queues on `port` a notification from CP `cpid` (0: none) to the source
    /// of `sampled` about its flow.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn emit_note<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        port: PortId,
        sampled: &Frame<S::Ext>,
        note: S::Ext,
        cpid: u16,
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
        self.bridges[b as usize].total_bytes -= len;
        let ingress = f.in_port as PortId;
        self.ports[out as usize].bytes_by_ingress[f.in_local as usize] -= len;
        if self.pause.enabled {
            self.ports[ingress as usize].pause_in.in_bytes -= len;
            self.pause_on_dequeue(b, out, ingress, ctx, nic);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bridge(mode: BufferMode, buffer: u64, held: u64) -> Bridge {
        Bridge {
            node: 0,
            buffer_mode: mode,
            buffer_bytes: buffer,
            dt_alpha: 0.5,
            latency_ps: 0,
            cp: false,
            trigger: PauseTrigger::Auto,
            total_bytes: held,
            dropped_cp: 0,
        }
    }

    /// Each buffer mode refuses exactly the frame that would overflow the
    /// buffer it models, and says which buffer that was.
    #[test]
    fn each_buffer_mode_admits_up_to_its_own_limit() {
        // 10,000-byte buffers; the bridge holds 6,000 bytes, 4,000 of them in
        // the output queue, 1,000 of those from the frame's ingress.
        let (queue, part) = (4_000, 1_000);
        let b = bridge(BufferMode::PerOutput, 10_000, 6_000);
        assert!(b.admits(6_000, queue, || part) && !b.admits(6_001, queue, || part));
        assert_eq!(b.refusal(6_001, queue, part), (Reason::OutputBufferFull, queue));
        let b = bridge(BufferMode::PerInput, 10_000, 6_000);
        assert!(b.admits(9_000, queue, || part) && !b.admits(9_001, queue, || part));
        assert_eq!(b.refusal(9_001, queue, part), (Reason::InputPartitionFull, part));
        let b = bridge(BufferMode::Shared, 10_000, 6_000);
        assert!(b.admits(4_000, queue, || part) && !b.admits(4_001, queue, || part));
        assert_eq!(b.refusal(4_001, queue, part), (Reason::SharedBufferFull, 6_000));
        // Dynamic threshold: the queue may grow to alpha x the free buffer
        // (0.5 x 4,000 = 2,000 < 4,000 queued): refused though the buffer has room.
        let b = bridge(BufferMode::Dynamic, 10_000, 6_000);
        assert!(!b.admits(100, queue, || part));
        assert_eq!(b.refusal(100, queue, part), (Reason::DynamicThreshold, queue));
        assert!(b.admits(100, 1_000, || part), "1,100 <= 0.5 x 4,000");
        assert_eq!(b.refusal(4_001, 0, 0).0, Reason::SharedBufferFull);
        assert!(bridge(BufferMode::Infinite, 0, u64::MAX / 2).admits(u64::MAX / 4, u64::MAX / 4, || 0));
    }
}

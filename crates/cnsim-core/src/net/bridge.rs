//! Bridges: a received frame joins its output queue (buffer admission by
//! the bridge's buffer mode, the CP's view of it, PAUSE), leaves it freeing
//! its buffer; notifications from CPs and from notification points at
//! destinations travel back to the flows' sources as control frames.

use super::port::{PortId, TxFrame};
use super::sim::NetSim;
use super::topology::NO_ROUTE;
use crate::config::BufferMode;
use crate::frame::Frame;
use crate::trace::{Kind, NoteOrigin, Reason, Site, Tracer, NO_PORT};

/// Who sends a notification.
#[derive(Clone, Copy)]
enum NoteFrom {
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
use crate::scheme::{CpFields, QueueView, Scheme};
use crate::stats;

impl<S: Scheme, T: Tracer<S>> NetSim<S, T> {
    /// A frame fully received (plus latency) by bridge `b` through `ingress`
    /// (the bridge's port on the arrival link, its local index `in_local`)
    /// joins its output queue `out` (routed when the frame was sent).
    pub(crate) fn bridge_receive(&mut self, b: u32, ingress: PortId, in_local: u16, out: PortId, mut f: Frame<S::Ext>) {
        if T::ON {
            let node = self.net.bridges[b as usize].node;
            let site = Site {
                at: self.now,
                node,
                port: NO_PORT,
            };
            if out == NO_ROUTE {
                self.tracer.frame(&self.scheme, site, Kind::Drop, Reason::NoRoute, &f, None);
            } else if f.is_control() {
                let site = Site { port: out, ..site };
                self.tracer.frame(&self.scheme, site, Kind::Enqueue, Reason::Control, &f, None);
            }
        }
        let bridge = &mut self.net.bridges[b as usize];
        if out == NO_ROUTE {
            // Unreachable destinations of loaded sources are rejected when
            // the network is built; count rather than lose anything else.
            if f.is_data() {
                bridge.dropped_cp += 1;
                self.stats.count(self.now, stats::DROPPED_CP);
            }
            return;
        }
        if f.is_control() {
            self.net.ports[out as usize].ctrl.push_back(f);
            self.try_start(out);
            return;
        }
        let len = f.len as u64;
        self.settle(out);
        let bridge = &mut self.net.bridges[b as usize];
        let ports = &mut self.net.ports;
        let in_local = in_local as usize;
        let admitted = match bridge.buffer_mode {
            BufferMode::PerOutput => ports[out as usize].data_bytes + len <= bridge.buffer_bytes,
            BufferMode::PerInput => ports[out as usize].bytes_by_ingress[in_local] + len <= bridge.buffer_bytes,
            BufferMode::Shared => bridge.total_bytes + len <= bridge.buffer_bytes,
            BufferMode::Dynamic => {
                let free = bridge.buffer_bytes.saturating_sub(bridge.total_bytes);
                len <= free && (ports[out as usize].data_bytes + len) as f64 <= bridge.dt_alpha * free as f64
            }
            BufferMode::Infinite => true,
        };
        if !admitted {
            bridge.dropped_cp += 1;
            self.stats.count(self.now, stats::DROPPED_CP);
            if T::ON {
                // Which buffer refused the frame, and what it held.
                let o = &ports[out as usize];
                let (reason, held) = match bridge.buffer_mode {
                    BufferMode::PerOutput | BufferMode::Infinite => (Reason::OutputBufferFull, o.data_bytes),
                    BufferMode::PerInput => (Reason::InputPartitionFull, o.bytes_by_ingress[in_local]),
                    BufferMode::Shared => (Reason::SharedBufferFull, bridge.total_bytes),
                    BufferMode::Dynamic if bridge.total_bytes + len > bridge.buffer_bytes => (Reason::SharedBufferFull, bridge.total_bytes),
                    BufferMode::Dynamic => (Reason::DynamicThreshold, o.data_bytes),
                };
                let site = Site {
                    at: self.now,
                    node: bridge.node,
                    port: out,
                };
                self.tracer.frame(&self.scheme, site, Kind::Drop, reason, &f, Some(held));
            }
            // The CP's sampler sits at the queue's input: it may see the frame
            // the full queue is about to drop (scheme option `sample_dropped`).
            if let Some(cp) = self.cps[out as usize].as_mut() {
                if self.scheme.cp_samples_dropped() {
                    let o = &self.net.ports[out as usize];
                    let q = QueueView {
                        bytes: o.data_bytes,
                        rate_bps: o.rate_bps,
                        tx_bytes: o.bytes_sent,
                        now: self.now,
                    };
                    let sample = if T::ON { self.scheme.cp_fields(cp, q) } else { None };
                    if let Some(note) = self.scheme.cp_on_enqueue(cp, &mut f, q, out as u16 + 1) {
                        self.cp_notify(b, out, &f, note, q.bytes, sample);
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
            ports[ingress as usize].in_bytes += len;
        }
        let o = &mut ports[out as usize];
        o.data_bytes += len;
        o.bytes_by_ingress[in_local] += len;
        if T::ON {
            let site = Site {
                at: self.now,
                node: bridge.node,
                port: out,
            };
            let held = Some(o.data_bytes);
            self.tracer.frame(&self.scheme, site, Kind::Enqueue, Reason::Output, &f, held);
        }
        // The CP sees the queue including this frame, and may mark it (QCN-3pt).
        if let Some(cp) = self.cps[out as usize].as_mut() {
            let q = QueueView {
                bytes: o.data_bytes,
                rate_bps: o.rate_bps,
                tx_bytes: o.bytes_sent,
                now: self.now,
            };
            let (sample, before) = if T::ON {
                (self.scheme.cp_fields(cp, q), Some(self.scheme.ext_fields(&f.ext)))
            } else {
                (None, None)
            };
            let note = self.scheme.cp_on_enqueue(cp, &mut f, q, out as u16 + 1);
            if T::ON {
                self.trace_mark(out, &f, before, q.bytes);
            }
            if let Some(note) = note {
                self.cp_notify(b, out, &f, note, q.bytes, sample);
            }
        }
        self.net.ports[out as usize].data.push_back(f);
        self.queue_changed(out);
        if self.pause.enabled {
            self.pause_on_enqueue(b, out, ingress);
        }
        self.try_start(out);
    }

    /// CP `out` of bridge `b` notifies the source of `sampled` (a 64-byte
    /// control frame on the reverse path).
    #[cfg(test)]
    pub(crate) fn send_note(&mut self, b: u32, out: PortId, sampled: &Frame<S::Ext>, note: S::Ext) {
        let q = self.net.ports[out as usize].data_bytes;
        self.cp_notify(b, out, sampled, note, q, None);
    }

    /// `send_note` from the CP's sample of a queue of `queue_bytes`.
    fn cp_notify(&mut self, b: u32, out: PortId, sampled: &Frame<S::Ext>, note: S::Ext, queue_bytes: u64, sample: Option<CpFields>) {
        // The notification's own flow (from the sampled frame's destination
        // to its source), as every later bridge routes it.
        let back = self.net.router.next_hop(b, sampled.dst, sampled.src);
        if back == NO_ROUTE {
            return;
        }
        self.net.ports[out as usize].cnm_frames += 1;
        let from = NoteFrom::Cp {
            b,
            out,
            queue_bytes,
            sample,
        };
        self.emit_note(back, sampled, note, out as u16 + 1, from);
    }

    /// The notification point at destination station `s` sees a data frame.
    pub(crate) fn np_receive(&mut self, s: usize, f: &Frame<S::Ext>) {
        let np = &mut self.nps[s];
        let i = match np.binary_search_by_key(&f.src, |e| e.0) {
            Ok(i) => i,
            Err(i) => {
                np.insert(i, (f.src, S::Np::default()));
                i
            }
        };
        let rp = &mut self.rps[s];
        if let Some((note, cpid)) = self.scheme.np_on_data(&mut np[i].1, f, self.now, &mut rp.rng) {
            let port = self.net.stations[s].port;
            self.net.ports[port as usize].cnm_frames += 1;
            self.emit_note(port, f, note, cpid, NoteFrom::Np { s });
        }
    }

    /// Queues on `port` a notification from CP `cpid` (0: none) to the source
    /// of `sampled` about its flow.
    fn emit_note(&mut self, port: PortId, sampled: &Frame<S::Ext>, note: S::Ext, cpid: u16, from: NoteFrom) {
        let mut f = Frame::note(self.now, sampled.dst, sampled.src, sampled.dst, cpid, self.ctrl_bytes, note);
        f.flow = sampled.flow;
        if T::ON {
            let at = self.now;
            let origin = match from {
                NoteFrom::Cp {
                    b,
                    out,
                    queue_bytes,
                    sample,
                } => NoteOrigin {
                    site: Site {
                        at,
                        node: self.net.bridges[b as usize].node,
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
            self.tracer.note_sent(&self.scheme, origin, &f);
        }
        if self.now >= self.measure.0 && self.now < self.measure.1 {
            self.stats.counts.note_bytes_measure += f.len as u64;
        }
        self.settle(port);
        self.net.ports[port as usize].ctrl.push_back(f);
        self.try_start(port);
    }

    /// A data frame left bridge `b` through `out`: free its buffer.
    pub(crate) fn bridge_release(&mut self, b: u32, out: PortId, f: &TxFrame) {
        let len = f.len as u64;
        self.net.bridges[b as usize].total_bytes -= len;
        let ingress = f.in_port as PortId;
        self.net.ports[out as usize].bytes_by_ingress[f.in_local as usize] -= len;
        if self.pause.enabled {
            self.net.ports[ingress as usize].in_bytes -= len;
            self.pause_on_dequeue(b, out, ingress);
        }
    }
}

//! Bridges: a received frame joins its output queue (buffer admission by
//! the bridge's buffer mode, the CP's view of it, PAUSE), leaves it freeing
//! its buffer; notifications from CPs and from notification points at
//! destinations travel back to the flows' sources as control frames.

use super::port::{PortId, TxFrame};
use super::sim::NetSim;
use super::topology::NO_ROUTE;
use crate::config::BufferMode;
use crate::frame::Frame;
use crate::scheme::{QueueView, Scheme};
use crate::stats;

impl<S: Scheme> NetSim<S> {
    /// A frame fully received (plus latency) by bridge `b` through `ingress`
    /// (the bridge's port on the arrival link, its local index `in_local`)
    /// joins its output queue `out` (routed when the frame was sent).
    pub(crate) fn bridge_receive(&mut self, b: u32, ingress: PortId, in_local: u16, out: PortId, mut f: Frame<S::Ext>) {
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
                    if let Some(note) = self.scheme.cp_on_enqueue(cp, &mut f, q, out as u16 + 1) {
                        self.send_note(b, out, &f, note);
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
        // The CP sees the queue including this frame, and may mark it (QCN-3pt).
        if let Some(cp) = self.cps[out as usize].as_mut() {
            let q = QueueView {
                bytes: o.data_bytes,
                rate_bps: o.rate_bps,
                tx_bytes: o.bytes_sent,
                now: self.now,
            };
            if let Some(note) = self.scheme.cp_on_enqueue(cp, &mut f, q, out as u16 + 1) {
                self.send_note(b, out, &f, note);
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
    pub(crate) fn send_note(&mut self, b: u32, out: PortId, sampled: &Frame<S::Ext>, note: S::Ext) {
        // The notification's own flow (from the sampled frame's destination
        // to its source), as every later bridge routes it.
        let back = self.net.router.next_hop(b, sampled.dst, sampled.src);
        if back == NO_ROUTE {
            return;
        }
        self.net.ports[out as usize].cnm_frames += 1;
        self.emit_note(back, sampled, note, out as u16 + 1);
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
            self.emit_note(port, f, note, cpid);
        }
    }

    /// Queues on `port` a notification from CP `cpid` (0: none) to the source
    /// of `sampled` about its flow.
    fn emit_note(&mut self, port: PortId, sampled: &Frame<S::Ext>, note: S::Ext, cpid: u16) {
        let mut f = Frame::note(self.now, sampled.dst, sampled.src, sampled.dst, cpid, self.ctrl_bytes, note);
        f.flow = sampled.flow;
        if self.now >= self.measure.0 && self.now < self.measure.1 {
            self.cnm_bytes_window += f.len as u64;
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

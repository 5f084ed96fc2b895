//! IEEE 802.3x PAUSE (schemes.md, "PAUSE"): the two triggers, XOFF / XON,
//! refresh, and the paused transmitter's bookkeeping.
//!
//! - `output_queue`: an output queue reaching XOFF holds every ingress port
//!   that has frames in it, and any ingress whose frame joins it while it is
//!   above XON; at XON it lets them go. An ingress stays paused while any
//!   queue holds it.
//! - `ingress`: bytes in the bridge that arrived through an ingress port;
//!   XOFF pauses that port's upstream, XON releases it.
//! - `partition`: a per-input partition of an output buffer (`per_input`
//!   buffers) at XOFF holds its input paused; at XON it lets it go.
//!
//! A PAUSE frame is a control frame: queued ahead of data, never paused
//! itself, and acted on when fully received (no bridge latency).

use super::port::PortId;
use super::sim::{NetSim, EV_PAUSE_REFRESH};
use crate::config::PauseTrigger;
use crate::engine::time::pause_quanta_ps;
use crate::engine::Time;
use crate::frame::Frame;
use crate::scheme::Scheme;
use crate::stats::{overlap, Stats};
use crate::trace::{Reason, Site, Tracer};

/// Headroom above XOFF: the bytes of data that can still reach a bridge's
/// queue after it decides to pause the `ingress_ports` ports feeding it, so
/// that a buffer of XOFF plus this much never drops a data frame. Once per
/// queue, the frame whose arrival crossed XOFF (the check runs when a frame
/// joins, so the queue may be up to a frame past XOFF); then through each
/// paused port, at its line rate `rate_bps`: the data frame the PAUSE waits
/// behind on the reverse link, the PAUSE frame (`control_bytes`), the wire
/// both ways (`delay_ps` each), the bridge's latency pipeline
/// (`latency_ps`), and the frame the upstream is sending when the PAUSE
/// lands (it finishes it). Two frames per port plus one per queue: a
/// per-port count of two alone is one frame short. Control frames are never
/// paused and are not counted.
pub fn headroom_bytes(rate_bps: u64, delay_ps: Time, latency_ps: Time, frame_bytes: u64, control_bytes: u64, ingress_ports: u64) -> u64 {
    let ps_per_s = crate::engine::PS_PER_S as u128;
    let at_line_rate = |ps: Time| (rate_bps as u128 * ps as u128).div_ceil(8 * ps_per_s) as u64;
    frame_bytes + ingress_ports * (2 * frame_bytes + control_bytes + at_line_rate(2 * delay_ps + latency_ps))
}

impl<S: Scheme, T: Tracer<S>> NetSim<S, T> {
    /// A data frame from `ingress` joined output queue `out` of bridge `b`.
    pub(crate) fn pause_on_enqueue(&mut self, b: u32, out: PortId, ingress: PortId) {
        let xoff = self.pause.xoff_bytes;
        match self.net.bridges[b as usize].trigger {
            PauseTrigger::Ingress => {
                let p = &self.net.ports[ingress as usize];
                if !p.xoff_sent && p.in_bytes >= xoff {
                    self.send_xoff(ingress);
                }
            }
            PauseTrigger::Partition => {
                let local = self.net.ports[ingress as usize].local as usize;
                if self.net.ports[out as usize].bytes_by_ingress[local] >= xoff {
                    self.hold(b, out, local);
                }
            }
            _ => {
                let o = &mut self.net.ports[out as usize];
                if o.oq_xoff {
                    let local = self.net.ports[ingress as usize].local as usize;
                    self.hold(b, out, local);
                } else if o.data_bytes >= xoff {
                    o.oq_xoff = true;
                    for local in 0..o.bytes_by_ingress.len() {
                        if self.net.ports[out as usize].bytes_by_ingress[local] > 0 {
                            self.hold(b, out, local);
                        }
                    }
                }
            }
        }
    }

    /// A data frame that came through `ingress` left output queue `out` of bridge `b`.
    pub(crate) fn pause_on_dequeue(&mut self, b: u32, out: PortId, ingress: PortId) {
        let xon = self.pause.xon_bytes;
        match self.net.bridges[b as usize].trigger {
            PauseTrigger::Ingress => {
                let p = &self.net.ports[ingress as usize];
                if p.xoff_sent && p.in_bytes <= xon {
                    self.send_xon(ingress);
                }
            }
            PauseTrigger::Partition => {
                let local = self.net.ports[ingress as usize].local as usize;
                let o = &self.net.ports[out as usize];
                if o.holds[local] && o.bytes_by_ingress[local] <= xon {
                    self.unhold(b, out, local);
                }
            }
            _ => {
                let o = &mut self.net.ports[out as usize];
                if o.oq_xoff && o.data_bytes <= xon {
                    o.oq_xoff = false;
                    for local in 0..o.holds.len() {
                        self.unhold(b, out, local);
                    }
                }
            }
        }
    }

    /// Output queue `out` holds the ingress with local index `local` paused.
    fn hold(&mut self, b: u32, out: PortId, local: usize) {
        let o = &mut self.net.ports[out as usize];
        if o.holds[local] {
            return;
        }
        o.holds[local] = true;
        let ing = self.net.nodes[self.net.bridges[b as usize].node as usize].ports[local];
        let p = &mut self.net.ports[ing as usize];
        p.hold_count += 1;
        if p.hold_count == 1 {
            self.send_xoff(ing);
        }
    }

    /// Output queue `out` lets the ingress with local index `local` go.
    fn unhold(&mut self, b: u32, out: PortId, local: usize) {
        let o = &mut self.net.ports[out as usize];
        if !o.holds[local] {
            return;
        }
        o.holds[local] = false;
        let ing = self.net.nodes[self.net.bridges[b as usize].node as usize].ports[local];
        let p = &mut self.net.ports[ing as usize];
        p.hold_count -= 1;
        if p.hold_count == 0 {
            self.send_xon(ing);
        }
    }

    /// How often an asserted pause is refreshed: at half its duration, so
    /// the upstream never resumes while we are above XON.
    fn refresh_interval(&self, port: PortId) -> Time {
        (pause_quanta_ps(self.pause.quanta, self.net.ports[port as usize].nominal_rate_bps) / 2).max(1)
    }

    fn send_xoff(&mut self, port: PortId) {
        let at = self.now + self.refresh_interval(port);
        let p = &mut self.net.ports[port as usize];
        p.xoff_sent = true;
        p.refresh_at = at;
        self.q.push(at, EV_PAUSE_REFRESH, port);
        self.send_pause_frame(port, self.pause.quanta, Reason::Xoff);
    }

    fn send_xon(&mut self, port: PortId) {
        let p = &mut self.net.ports[port as usize];
        p.xoff_sent = false;
        p.refresh_at = Time::MAX;
        self.send_pause_frame(port, 0, Reason::Xon);
    }

    pub(crate) fn on_pause_refresh(&mut self, port: PortId) {
        let p = &self.net.ports[port as usize];
        if !p.xoff_sent || p.refresh_at != self.now {
            return; // released, or superseded by a newer refresh
        }
        let at = self.now + self.refresh_interval(port);
        self.net.ports[port as usize].refresh_at = at;
        self.q.push(at, EV_PAUSE_REFRESH, port);
        self.send_pause_frame(port, self.pause.quanta, Reason::Refresh);
    }

    fn send_pause_frame(&mut self, port: PortId, quanta: u16, why: Reason) {
        let f = Frame::pause(self.now, quanta, self.ctrl_bytes);
        let p = &mut self.net.ports[port as usize];
        if T::ON {
            let site = Site {
                at: self.now,
                node: p.owner,
                port,
            };
            self.tracer.pause_sent(site, quanta, why, p.in_bytes);
        }
        p.ctrl.push_back(f);
        p.pause_frames += 1;
        self.try_start(port);
    }

    /// A PAUSE(quanta) was fully received by the owner of `port`: that
    /// transmitter pauses (a new PAUSE replaces the remaining time; 0 resumes).
    pub(crate) fn receive_pause(&mut self, port: PortId, quanta: u16) {
        let now = self.now;
        let p = &mut self.net.ports[port as usize];
        let rate = if p.rate_bps > 0 { p.rate_bps } else { p.nominal_rate_bps };
        let end = now + pause_quanta_ps(quanta, rate);
        if p.is_paused(now) {
            p.pause_end = end;
        } else if quanta > 0 {
            self.account_pause_interval(port);
            let p = &mut self.net.ports[port as usize];
            p.pause_start = now;
            p.pause_end = end;
            p.paused_ever = true;
        }
        if T::ON {
            let p = &self.net.ports[port as usize];
            let until = if p.is_paused(now) { p.pause_end } else { now };
            let site = Site {
                at: now,
                node: p.owner,
                port,
            };
            self.tracer.pause_received(site, quanta, until);
        }
        if quanta == 0 {
            self.try_start(port);
        }
    }

    /// Adds the last (finished) pause interval of `port` to its statistics.
    fn account_pause_interval(&mut self, port: PortId) {
        let (m0, m1) = self.measure;
        let bin_ps = self.stats.bin_ps;
        let max_bins = self.stats.max_bins;
        let p = &mut self.net.ports[port as usize];
        if !p.paused_ever || p.pause_end <= p.pause_start {
            return;
        }
        let (a, b) = (p.pause_start, p.pause_end.min(self.duration));
        p.paused_ps_window += overlap(a, b, m0, m1);
        if self.stats.paused_series {
            let bins = p.paused_bins.get_or_insert_with(Vec::new);
            Stats::add_interval_to_bins(bins, bin_ps, max_bins, a, b);
        }
        // Mark as accounted.
        p.pause_start = p.pause_end;
    }

    pub(crate) fn close_pause_intervals(&mut self, end: Time) {
        for port in 0..self.net.ports.len() as PortId {
            let p = &mut self.net.ports[port as usize];
            if p.pause_end > end {
                p.pause_end = end;
            }
            self.account_pause_interval(port);
        }
    }
}

//! The end stations: their open-loop sources (station.rs), their reaction
//! points and rate limiters (rl.rs; the RL mechanics in rp.rs), the
//! notification points of the schemes that have them, and their transport
//! flows (transport.rs; the senders and receivers in flows.rs). A station
//! puts its frames on its link through the [`Fabric`] it is handed, and its
//! link pulls rate-limited frames from it through [`Nic`].

use super::ctx::{Ctx, EV_GENERATE};
use super::fabric::{Fabric, Nic};
use super::forwarding::NoteFrom;
use super::port::{Port, PortId};
use super::rl::{RateLimiter, RlTrace, StationRp};
use super::station::Station;
use super::transport::Transport;
use crate::config::NicFull;
use crate::frame::{Frame, FrameKind, NO_FLOW};
use crate::scheme::Scheme;
use crate::stats;
use crate::trace::{Kind, Reason, Tracer};
use std::collections::BTreeMap;

pub struct Hosts<S: Scheme> {
    pub stations: Vec<Station>,
    /// Reaction points per station, and the slab of their rate limiters
    /// (ids index RL timer events; freed ids are reused).
    pub rps: Vec<StationRp>,
    pub rls: Vec<Option<RateLimiter<S::Rl, S::Ext>>>,
    pub free_rls: Vec<u32>,
    /// Notification-point state per destination station: its memory of each
    /// source that reached it, sorted by source (only pairs that met).
    pub nps: Vec<Vec<(u32, S::Np)>>,
    pub rl_traces: Vec<RlTrace>,
    pub rl_trace_index: BTreeMap<String, usize>,
    pub trace_rls: Option<Vec<String>>,
    /// Transport flows (transport.rs, flows.rs).
    pub tp: Transport,
}

/// `station_site!(hosts, ctx, s)`: where station `s`'s events happen now
/// (its node, its NIC port), read field by field so that it borrows only
/// `ctx.now` and `hosts.stations` (a borrowed RL stays usable).
macro_rules! station_site {
    ($hosts:expr, $ctx:expr, $s:expr) => {
        $crate::trace::Site {
            at: $ctx.now,
            node: $s as u32,
            port: $hosts.stations[$s].port,
        }
    };
}
pub(crate) use station_site;

impl<S: Scheme> Nic<S> for Hosts<S> {
    #[inline(always)]
    fn limited(&self, s: usize) -> bool {
        self.rps[s].active()
    }

    #[inline(always)]
    fn has_queued(&self, s: usize) -> bool {
        self.rps[s].has_queued()
    }

    #[inline]
    fn next_data<T: Tracer<S>>(&mut self, s: usize, port: PortId, p: &mut Port<S::Ext>, ctx: &mut Ctx<S, T>) -> Option<Frame<S::Ext>> {
        self.station_next_data(s, port, p, ctx)
    }

    /// A frame reached station `s` (data counted as delivered by the
    /// fabric): the transport, the notification point or the reaction point
    /// acts on it.
    #[inline]
    fn receive<T: Tracer<S>>(&mut self, s: usize, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        if f.is_data() {
            if f.flow != NO_FLOW {
                self.transport_receive(s, f, ctx, fabric);
            }
            if S::NP_EVENTS {
                self.np_receive(s, f, ctx, fabric);
            }
            return;
        }
        match f.kind {
            FrameKind::Note => self.rp_receive(s, f, ctx, fabric),
            FrameKind::Ack | FrameKind::Nack => self.transport_ack(f, ctx, fabric),
            FrameKind::Trimmed => self.transport_trimmed(s, f, ctx, fabric),
            FrameKind::Data | FrameKind::Pause => {}
        }
    }

    fn on_pull<T: Tracer<S>>(&mut self, s: usize, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        self.pull_event(s, ctx, fabric);
    }
}

impl<S: Scheme> Hosts<S> {
    /// A timed action starts station `s`'s source.
    pub(crate) fn start_source<T: Tracer<S>>(&mut self, s: u32, ctx: &mut Ctx<S, T>) {
        if let Some(at) = self.stations[s as usize].start(ctx.now) {
            ctx.schedule(at, EV_GENERATE, s);
        }
    }

    pub(crate) fn stop_source(&mut self, s: u32) {
        self.stations[s as usize].stop();
    }

    /// One Bernoulli success: a frame is generated in this slot, and goes to
    /// its flow's rate-limiter queue or the NIC FIFO (deferred or dropped
    /// when PAUSE has filled it).
    pub(crate) fn on_generate<T: Tracer<S>>(&mut self, s: u32, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let now = ctx.now;
        let n_st = self.stations.len();
        let st = &mut self.stations[s as usize];
        if !st.active || st.next_gen != now {
            return; // stale (the source was stopped or restarted)
        }
        let dst = st.draw_dest(s, n_st);
        let next = st.next_after(now);
        let port = st.port;
        let cap = st.nic_buffer_bytes;
        let nic_full = st.nic_full;
        ctx.schedule(next, EV_GENERATE, s);

        let mut frame = Frame::data(now, s, dst, ctx.run.frame_bytes as u16);
        frame.prio = st.priority;
        if let Some(id) = self.rps[s as usize].rl_of(dst) {
            // A rate-limited flow: into its RLQ, or dropped there when full.
            self.count_generated(s, dst, ctx);
            if T::ON {
                let site = station_site!(self, ctx, s as usize);
                ctx.tracer.frame(&ctx.scheme, site, Kind::Generate, Reason::None, &frame, None);
            }
            if self.rl_enqueue(id, frame, ctx) {
                fabric.try_start(port, ctx, self);
            }
            return;
        }
        fabric.settle(port, ctx, self);
        if fabric.ports[port as usize].data_bytes + frame.len as u64 > cap {
            // Only PAUSE (or a stopped link) fills the NIC FIFO.
            if T::ON {
                let site = station_site!(self, ctx, s as usize);
                let held = Some(fabric.ports[port as usize].data_bytes);
                if nic_full == NicFull::Drop {
                    ctx.tracer.frame(&ctx.scheme, site, Kind::Generate, Reason::None, &frame, None);
                    ctx.tracer.frame(&ctx.scheme, site, Kind::Drop, Reason::NicFull, &frame, held);
                } else {
                    ctx.tracer.frame(&ctx.scheme, site, Kind::Defer, Reason::NicFull, &frame, held);
                }
            }
            let st = &mut self.stations[s as usize];
            match nic_full {
                NicFull::Defer => {
                    st.deferred += 1;
                    ctx.stats.count(now, stats::DEFERRED);
                }
                NicFull::Drop => {
                    st.dropped_nic += 1;
                    self.count_generated(s, dst, ctx);
                    ctx.stats.count(now, stats::DROPPED_NIC);
                }
            }
            return;
        }
        self.count_generated(s, dst, ctx);
        let p = &mut fabric.ports[port as usize];
        p.data_bytes += frame.len as u64;
        if T::ON {
            let site = station_site!(self, ctx, s as usize);
            ctx.tracer.frame(&ctx.scheme, site, Kind::Generate, Reason::None, &frame, None);
            ctx.tracer
                .frame(&ctx.scheme, site, Kind::Enqueue, Reason::Nic, &frame, Some(p.data_bytes));
        }
        if !p.busy && p.data.is_empty() && p.ctrl.is_empty() && p.rate_bps > 0 && !p.is_paused(now) && !self.rps[s as usize].active() {
            // An idle NIC (settled above) sends the frame at once: what
            // `try_start` would take from the FIFO, without the round trip.
            fabric.queue_changed(port, ctx);
            fabric.start_tx(port, frame, false, ctx);
            return;
        }
        p.data.push_back(frame);
        fabric.queue_changed(port, ctx);
        fabric.try_start(port, ctx, self);
    }

    #[inline(always)]
    pub(crate) fn count_generated<T: Tracer<S>>(&mut self, s: u32, dst: u32, ctx: &mut Ctx<S, T>) {
        let n_st = self.stations.len();
        self.stations[s as usize].generated += 1;
        ctx.stats.count(ctx.now, stats::GENERATED);
        if ctx.stats.per_flow {
            ctx.stats.flow_generated[s as usize * n_st + dst as usize] += 1;
        }
    }

    /// The notification point at destination station `s` sees a data frame.
    fn np_receive<T: Tracer<S>>(&mut self, s: usize, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let np = &mut self.nps[s];
        let i = match np.binary_search_by_key(&f.src, |e| e.0) {
            Ok(i) => i,
            Err(i) => {
                np.insert(i, (f.src, S::Np::default()));
                i
            }
        };
        let rp = &mut self.rps[s];
        if let Some((note, cpid)) = ctx.scheme.np_on_data(&mut np[i].1, f, ctx.now, &mut rp.rng) {
            let port = self.stations[s].port;
            fabric.ports[port as usize].cnm_frames += 1;
            fabric.emit_note(port, f, note, cpid, NoteFrom::Np { s }, ctx, self);
        }
    }

    /// Frames waiting in every RLQ.
    pub(crate) fn rl_frames_queued(&self) -> u64 {
        self.rls.iter().flatten().map(|rl| rl.queue.len() as u64).sum()
    }
}

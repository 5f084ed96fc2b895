//! The stations' reaction points at work (the RL itself is rl.rs's):
//! creating and releasing RLs, pacing their frames onto the station's link,
//! their timers and wake-ups, notifications reaching them.

use super::ctx::{Ctx, EV_RL_TIMER, EV_WAKE};
use super::fabric::Fabric;
use super::hosts::{station_site, Hosts};
use super::port::{Port, PortId};
use super::rl::*;
use crate::config::RlScope;
use crate::engine::Time;
use crate::frame::{Frame, NO_FLOW, NO_NODE};
use crate::scheme::{RlCore, Scheme, NO_CPID};
use crate::stats::QueueTrace;
use crate::trace::{Kind, Reason, RlKey, RlView, Tracer};

impl<S: Scheme> Hosts<S> {
    #[inline]
    pub(crate) fn rl(&mut self, id: u32) -> &mut RateLimiter<S::Rl, S::Ext> {
        self.rls[id as usize].as_mut().expect("live RL ids point at RLs")
    }

    /// Queues a generated frame in RL `id`, or drops it (an RP drop) when the
    /// RLQ is full. Returns whether it was queued.
    pub(crate) fn rl_enqueue<T: Tracer<S>>(&mut self, id: u32, frame: Frame<S::Ext>, ctx: &mut Ctx<S, T>) -> bool {
        let now = ctx.now;
        let rl = self.rls[id as usize].as_mut().expect("live");
        let s = rl.station as usize;
        if rl.bytes + frame.len as u64 > self.stations[s].rlq_bytes {
            if T::ON {
                let site = station_site!(self, ctx, s);
                ctx.tracer
                    .frame(&ctx.scheme, site, Kind::Drop, Reason::RlqFull, &frame, Some(rl.bytes));
            }
            self.stations[s].dropped_rl += 1;
            ctx.stats.count(now, crate::stats::DROPPED_RL);
            return false;
        }
        rl.bytes += frame.len as u64;
        if T::ON {
            let site = station_site!(self, ctx, s);
            ctx.tracer
                .frame(&ctx.scheme, site, Kind::Enqueue, Reason::Rlq, &frame, Some(rl.bytes));
        }
        rl.queue.push_back(frame);
        let (tr, bytes) = (rl.trace, rl.bytes);
        self.rps[s].queued += 1;
        self.trace_rl_bytes(tr, bytes, ctx);
        true
    }

    /// Picks the next data frame of station `s` round-robin over the NIC FIFO
    /// (of its port `port`, `p`) and the RLs whose head may leave now;
    /// schedules a wake-up for the earliest RL that may leave later.
    pub(crate) fn station_next_data<T: Tracer<S>>(
        &mut self,
        s: usize,
        port: PortId,
        p: &mut Port<S::Ext>,
        ctx: &mut Ctx<S, T>,
    ) -> Option<Frame<S::Ext>> {
        let mut earliest = Time::MAX;
        let fifo_empty = p.data.is_empty();
        let order = self.rps[s].live.order(self.rps[s].rr);
        for (i, &(mut lo, hi)) in order.iter().enumerate() {
            if i == 1 {
                if let Some(f) = p.data.pop_front() {
                    self.rps[s].rr = RrPos::From(0);
                    if self.rps[s].in_order {
                        // One of the frames an RL of its flow waits for has left.
                        if let Some(id) = self.rps[s].by_key.get(f.dst) {
                            let rl = self.rl(id);
                            rl.ahead = rl.ahead.saturating_sub(1);
                        }
                    }
                    return Some(f);
                }
            }
            while let Some((q, id)) = self.rps[s].live.next_ready(lo, hi) {
                lo = q + 1;
                match self.rl_next_data(s, q, id, p, fifo_empty, ctx) {
                    Pick::Frame(f) => return Some(f),
                    Pick::At(t) => earliest = earliest.min(t),
                    Pick::Nothing => {}
                }
            }
        }
        if earliest != Time::MAX {
            wake_port_at(port, p, earliest, ctx);
        }
        None
    }

    /// RL `id` (ring number `q`) of station `s` offers its next frame.
    fn rl_next_data<T: Tracer<S>>(
        &mut self,
        s: usize,
        q: u64,
        id: u32,
        p: &mut Port<S::Ext>,
        fifo_empty: bool,
        ctx: &mut Ctx<S, T>,
    ) -> Pick<S::Ext> {
        let now = ctx.now;
        if self.rls[id as usize].as_ref().expect("live").flow != NO_FLOW {
            return match self.flow_frame(s, id, p, ctx) {
                FlowPick::Frame(f) => {
                    self.rps[s].rr = self.rps[s].live.after(q);
                    Pick::Frame(f)
                }
                FlowPick::At(t) => Pick::At(t),
                FlowPick::Nothing => {
                    // Every frame sent or the window full: only an acknowledgement,
                    // a timeout or its scheme (`after_rate_change`) changes that.
                    self.rps[s].live.park(q);
                    Pick::Nothing
                }
            };
        }
        let rp = &mut self.rps[s];
        let rl = self.rls[id as usize].as_mut().expect("live");
        if rl.queue.is_empty() || (rl.ahead > 0 && !fifo_empty) {
            // Empty, or (in order) its flow's older frames are still in the
            // NIC FIFO, which this round serves.
            return Pick::Nothing;
        }
        let at = rl.next_release.max(rl.core.stopped_until);
        if at > now {
            return Pick::At(at);
        }
        let windowed = rl.core.window_bytes != u64::MAX;
        if windowed && rl.core.inflight_bytes + rl.queue[0].len as u64 > rl.core.window_bytes {
            return Pick::Nothing; // the window is full: its acknowledgements will wake the port
        }
        let mut f = rl.queue.pop_front().expect("non-empty");
        rp.queued -= 1;
        rl.bytes -= f.len as u64;
        f.cpid = rl.tag;
        if windowed {
            rl.core.inflight_bytes += f.len as u64;
        }
        rl.last_release = now;
        rl.last_len = f.len;
        let rate_before = rl.core.rate_bps;
        let timer = ctx.scheme.rp_on_send(&mut rl.core, &mut rl.state, &mut f, now, &mut rp.rng);
        rl.next_release = now + pace_ps(f.len, rl.core.rate_bps);
        let rate_changed = rl.core.rate_bps != rate_before;
        rp.rr = rp.live.after(q);
        let (tr, bytes, rate) = (rl.trace, rl.bytes, rl.core.rate_bps);
        // The frame now occupies the NIC like any frame being sent.
        p.data_bytes += f.len as u64;
        self.trace_rl_bytes(tr, bytes, ctx);
        self.set_rl_timer(id, timer, ctx);
        if rate_changed {
            self.trace_rl_rate(tr, rate, ctx);
        }
        if T::ON {
            self.trace_rl(id, Reason::None, ctx);
        }
        self.maybe_release(id, ctx);
        Pick::Frame(f)
    }

    /// A notification reached station `s` (after its processing time).
    pub(crate) fn rp_receive<T: Tracer<S>>(&mut self, s: usize, note: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let cpid = note.cpid;
        let slows = ctx.scheme.slows(&note.ext);
        let now = ctx.now;
        self.rps[s].notifications += 1;
        let id = if note.flow != NO_FLOW {
            // About a transport flow: its own RL, while its sender runs.
            match self.tp.flows[note.flow as usize].rl {
                NO_RL => return,
                id => id,
            }
        } else {
            match self.open_loop_rl(s, note, ctx, fabric) {
                Some(id) => id,
                None => return,
            }
        };
        if slows {
            // The CP that last slowed the RL is the one that may raise it (BCN rule 4).
            self.rl(id).tag = cpid;
            if note.flow == NO_FLOW && self.rps[s].scope == RlScope::Cp && note.about() != NO_NODE {
                // Map (or re-map to the newer CP) the flow the notification is about.
                self.rps[s].flow_map.insert(note.about(), id);
            }
        }
        let rp = &mut self.rps[s];
        let rl = self.rls[id as usize].as_mut().expect("live");
        let timer = ctx
            .scheme
            .rp_on_note(&mut rl.core, &mut rl.state, &note.ext, cpid, now, &mut rp.rng);
        self.after_rate_change(id, timer, ctx, fabric);
    }

    /// The RL an open-loop notification acts on (`station.rl_scope`),
    /// created if the notification asks for one; `None`: nothing to act on.
    fn open_loop_rl<T: Tracer<S>>(&mut self, s: usize, note: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &Fabric<S>) -> Option<u32> {
        let cpid = note.cpid;
        let key = match self.rps[s].scope {
            RlScope::Flow if note.about() == NO_NODE => return None, // names no flow: nothing to act on
            RlScope::Flow => note.about(),
            RlScope::Cp => cpid,
        };
        if let Some(id) = self.rps[s].by_key.get(key) {
            return Some(id);
        }
        if !ctx.scheme.creates_rl(&note.ext) {
            return None;
        }
        if self.free_rls.is_empty() && self.rls.len() > crate::engine::queue::MAX_INDEX as usize {
            // RL ids index timer events; the run fails in `finish`
            // rather than go on without this RL.
            ctx.overflow = true;
            return None;
        }
        Some(self.create_rl(s, key, cpid, ctx, fabric))
    }

    fn create_rl<T: Tracer<S>>(&mut self, s: usize, key: u32, cpid: u32, ctx: &mut Ctx<S, T>, fabric: &Fabric<S>) -> u32 {
        let now = ctx.now;
        let port = self.stations[s].port;
        let line = fabric.ports[port as usize].nominal_rate_bps as f64;
        let mut core = RlCore {
            prio: self.stations[s].priority,
            ..RlCore::at_line_rate(line)
        };
        let (state, timer) = ctx.scheme.new_rl(&mut core, now);
        let trace = self.rl_trace_for(s, key, ctx, fabric);
        let mut rl = RateLimiter::new(s, key, cpid, NO_FLOW, core, state, now, trace);
        if self.rps[s].in_order {
            rl.ahead = fabric.ports[port as usize].data.iter().filter(|f| f.dst == key).count() as u32;
        }
        let id = self.insert_rl(rl);
        let rp = &mut self.rps[s];
        let q = rp.live.push(id);
        rp.by_key.insert(key, id);
        self.rl(id).seq = q;
        self.set_rl_timer(id, timer, ctx);
        if T::ON {
            self.trace_rl(id, Reason::Created, ctx);
        }
        id
    }

    /// Puts `rl` in the slab; returns its id.
    pub(crate) fn insert_rl(&mut self, rl: RateLimiter<S::Rl, S::Ext>) -> u32 {
        match self.free_rls.pop() {
            Some(id) => {
                self.rls[id as usize] = Some(rl);
                id
            }
            None => {
                self.rls.push(Some(rl));
                (self.rls.len() - 1) as u32
            }
        }
    }

    fn rl_trace_for<T: Tracer<S>>(&mut self, s: usize, key: u32, ctx: &Ctx<S, T>, fabric: &Fabric<S>) -> Option<usize> {
        let target = match self.rps[s].scope {
            RlScope::Flow => fabric.nodes[key as usize].name.clone(),
            RlScope::Cp if key == NO_CPID => "-".to_string(),
            RlScope::Cp => fabric.ports[key as usize - 1].name.clone(),
        };
        self.rl_trace_named(s, target, ctx, fabric)
    }

    /// The trace of the RLs of station `s` named `STATION|target`, if traced.
    pub(crate) fn rl_trace_named<T: Tracer<S>>(&mut self, s: usize, target: String, ctx: &Ctx<S, T>, fabric: &Fabric<S>) -> Option<usize> {
        let key = format!("{}|{}", fabric.nodes[s].name, target);
        if let Some(&i) = self.rl_trace_index.get(&key) {
            return Some(i);
        }
        if let Some(only) = &self.trace_rls {
            if !only.contains(&key) {
                return None;
            }
        }
        if self.rl_traces.len() >= MAX_RL_TRACES {
            return None;
        }
        let mut rate = QueueTrace::new(0);
        // Before the RL exists its flows are unlimited: line rate.
        let line = fabric.ports[self.stations[s].port as usize].nominal_rate_bps;
        rate.update(0, line);
        rate.update(ctx.stats.bin_now(), line);
        self.rl_traces.push(RlTrace {
            key: key.clone(),
            rate,
            bytes: QueueTrace::new(0),
            window: None,
        });
        self.rl_trace_index.insert(key, self.rl_traces.len() - 1);
        Some(self.rl_traces.len() - 1)
    }

    /// A traced RL's rate changed.
    #[inline]
    pub(crate) fn trace_rl_rate<T: Tracer<S>>(&mut self, trace: Option<usize>, rate_bps: f64, ctx: &Ctx<S, T>) {
        if let Some(t) = trace {
            let b = ctx.stats.bin_now();
            self.rl_traces[t].rate.update(b, rate_bps as u64);
        }
    }

    #[inline]
    fn trace_rl_bytes<T: Tracer<S>>(&mut self, trace: Option<usize>, bytes: u64, ctx: &Ctx<S, T>) {
        if let Some(t) = trace {
            let b = ctx.stats.bin_now();
            self.rl_traces[t].bytes.update(b, bytes);
        }
    }

    pub(crate) fn set_rl_timer<T: Tracer<S>>(&mut self, id: u32, timer: Option<Time>, ctx: &mut Ctx<S, T>) {
        let Some(at) = timer else { return };
        self.rl(id).timer_at = at;
        if at != Time::MAX {
            ctx.schedule(at, EV_RL_TIMER, id);
        }
    }

    pub(crate) fn on_rl_timer<T: Tracer<S>>(&mut self, id: u32, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let now = ctx.now;
        let Some(rl) = self.rls[id as usize].as_mut() else { return };
        if rl.timer_at != now {
            return; // stale: superseded, cancelled, or the RL was released
        }
        rl.timer_at = Time::MAX;
        let rp = &mut self.rps[rl.station as usize];
        let timer = ctx.scheme.rp_on_timer(&mut rl.core, &mut rl.state, now, &mut rp.rng);
        self.after_rate_change(id, timer, ctx, fabric);
    }

    /// The scheme changed RL `id`: re-pace its head frame, record the rate,
    /// release it if it is back at line rate and empty, and let the link pick
    /// up whatever is now eligible.
    pub(crate) fn after_rate_change<T: Tracer<S>>(&mut self, id: u32, timer: Option<Time>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        self.set_rl_timer(id, timer, ctx);
        let rl = self.rl(id);
        rl.next_release = rl.last_release + pace_ps(rl.last_len, rl.core.rate_bps);
        let (tr, rate, s) = (rl.trace, rl.core.rate_bps, rl.station as usize);
        if rl.flow != NO_FLOW {
            // An acknowledgement, a timeout or the scheme moved the flow: it may send again.
            let q = rl.seq;
            self.rps[s].live.unpark(q, id);
        }
        self.trace_rl_rate(tr, rate, ctx);
        if T::ON {
            self.trace_rl(id, Reason::None, ctx);
        }
        self.maybe_release(id, ctx);
        let port = self.stations[s].port;
        fabric.try_start(port, ctx, self);
    }

    fn maybe_release<T: Tracer<S>>(&mut self, id: u32, ctx: &mut Ctx<S, T>) {
        let now = ctx.now;
        let rl = self.rl(id);
        if rl.flow != NO_FLOW // a flow's RL lives until its last acknowledgement
            || rl.core.rate_bps < rl.core.line_rate_bps
            || !rl.queue.is_empty()
            || rl.core.stopped_until > now
            || rl.core.inflight_bytes > 0
        {
            return;
        }
        let s = rl.station as usize;
        self.remove_rl(s, id, ctx);
    }

    /// Frees RL `id` of station `s` (its pending timer becomes stale).
    pub(crate) fn remove_rl<T: Tracer<S>>(&mut self, s: usize, id: u32, ctx: &mut Ctx<S, T>) {
        if T::ON {
            self.trace_rl(id, Reason::Released, ctx);
        }
        let rl = self.rl(id);
        let (tr, line, q, flow) = (rl.trace, rl.core.line_rate_bps, rl.seq, rl.flow);
        self.rls[id as usize] = None;
        self.free_rls.push(id);
        let rp = &mut self.rps[s];
        // The round robin stays where it was (at this RL: the next one).
        rp.live.remove(q);
        if flow == NO_FLOW {
            // A flow's RL is in neither map.
            rp.by_key.remove_id(id);
            rp.flow_map.remove_id(id);
        }
        if let Some(t) = tr {
            let b = ctx.stats.bin_now();
            self.rl_traces[t].rate.update(b, line as u64);
            self.rl_traces[t].bytes.update(b, 0);
        }
    }

    /// RL `id` as it is now, to the trace (which keeps the changes; a
    /// released RL is at line rate).
    pub(crate) fn trace_rl<T: Tracer<S>>(&mut self, id: u32, reason: Reason, ctx: &mut Ctx<S, T>) {
        let rl = self.rls[id as usize].as_ref().expect("live");
        let s = rl.station as usize;
        let src = s as u32;
        let key = if rl.flow != NO_FLOW || self.rps[s].scope == RlScope::Flow {
            RlKey::Flow { src, dst: rl.key }
        } else {
            RlKey::Cp { src, cpid: rl.key }
        };
        let released = reason == Reason::Released;
        let view = RlView {
            id,
            key,
            flow: rl.flow,
            rate_bps: if released { rl.core.line_rate_bps } else { rl.core.rate_bps },
            window_bytes: if released { u64::MAX } else { rl.core.window_bytes },
        };
        let site = station_site!(self, ctx, s);
        ctx.tracer.rl_state(site, view, reason);
    }
}

/// Wakes `port` (`p`) at `at` unless a wake-up at or before it is pending.
pub(crate) fn wake_port_at<S: Scheme, T: Tracer<S>>(port: PortId, p: &mut Port<S::Ext>, at: Time, ctx: &mut Ctx<S, T>) {
    if p.wake_at <= ctx.now || at < p.wake_at {
        p.wake_at = at;
        ctx.schedule(at, EV_WAKE, port);
    }
}

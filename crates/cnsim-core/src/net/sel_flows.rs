//! The stations' transport flows under a selective transport
//! ([`Scheme::SELECTIVE`]: UET): the sender's frames through its RL, the
//! receiver's selective acknowledgements and NACKs of trimmed frames, the
//! sender's reaction to them, the retransmission timer. The two ends'
//! state machines are net::sack's; this is where they meet the network
//! (flows.rs holds the go-back-N transport these replace).

use super::ctx::{Ctx, EV_FLOW_RTO};
use super::fabric::Fabric;
use super::hosts::{station_site, Hosts};
use super::port::Port;
use super::rl::{FlowPick, NO_RL};
use super::sack::{SelRto, SelSender, TrimReply};
use crate::engine::Time;
use crate::frame::{Frame, FrameKind};
use crate::scheme::{AckKind, AckView, SackFields, Scheme};
use crate::trace::{Kind, Reason, Tracer};

impl<S: Scheme> Hosts<S> {
    /// The next frame of flow RL `id` at station `s` (its port `p`): a lost
    /// one first, else the next new one, if its window lets it leave now.
    pub(crate) fn sel_flow_frame<T: Tracer<S>>(
        &mut self,
        s: usize,
        id: u32,
        p: &mut Port<S::Ext>,
        ctx: &mut Ctx<S, T>,
    ) -> FlowPick<S::Ext> {
        let now = ctx.now;
        let fb = ctx.run.frame_bytes;
        let rto = self.tp.sel_cfg.rto_ps;
        let rl = self.rls[id as usize].as_mut().expect("live");
        let flow = rl.flow;
        let fl = &mut self.tp.flows[flow as usize];
        let sel = &mut self.tp.sel[flow as usize];
        let Some((psn, resent)) = sel.tx.next_psn(fl.n_frames) else {
            return FlowPick::Nothing;
        };
        let at = rl.next_release.max(rl.core.stopped_until);
        if at > now {
            return FlowPick::At(at);
        }
        let len = fl.frame_len(psn, fb);
        let window = rl.core.window_bytes;
        if window != u64::MAX && rl.core.inflight_bytes + len as u64 > window {
            return FlowPick::Nothing; // its acknowledgements will wake the port
        }
        if !ctx.scheme.sack_gate(&rl.state) {
            return FlowPick::Nothing; // no credit: a PULL will wake the port
        }
        let mut f = Frame::data(now, fl.src, fl.dst, len);
        f.prio = fl.prio;
        f.flow = flow;
        f.cpid = rl.tag;
        f.seq = psn;
        sel.inflight += len as i64;
        rl.core.inflight_bytes = sel.inflight.max(0) as u64;
        // An acknowledgement asked for at once: a retransmission, the last
        // new frame, or the frame that fills the window.
        let ar = resent || (psn + 1 == fl.n_frames) || (window != u64::MAX && rl.core.inflight_bytes + len as u64 >= window);
        ctx.scheme.sack_stamp(&mut f.ext, ar, resent);
        if let Some(t) = sel.tx.sent(psn, len, now, rto) {
            ctx.schedule(t, EV_FLOW_RTO, flow);
        }
        if resent {
            fl.retransmitted += 1;
        }
        fl.snd_max = sel.tx.sent_max();
        fl.snd_nxt = fl.snd_max;
        let still = sel.tx.has_pending(fl.n_frames);
        rl.last_release = now;
        rl.last_len = len;
        rl.core.backlog_bytes = fl.bytes(sel.tx.sent_max(), fl.n_frames, fb) + sel.tx.rtx_bytes();
        let rp = &mut self.rps[s];
        rl.core.nic_flows = rp.flow_pending;
        let rate_before = rl.core.rate_bps;
        // The scheme's part: the frame's entropy (its path), its pacing.
        let timer = ctx.scheme.rp_on_send(&mut rl.core, &mut rl.state, &mut f, now, &mut rp.rng);
        rl.next_release = now + super::rl::pace_ps(len, rl.core.rate_bps);
        let (trace, rate) = (rl.trace, rl.core.rate_bps);
        if !still {
            rp.flow_pending -= 1;
        }
        p.data_bytes += len as u64;
        self.set_rl_timer(id, timer, ctx);
        if rate != rate_before {
            self.trace_rl_rate(trace, rate, ctx);
        }
        self.count_generated(s as u32, f.dst, ctx);
        if T::ON {
            let site = station_site!(self, ctx, s);
            let kind = if resent { Kind::Retransmit } else { Kind::Generate };
            ctx.tracer.frame(&ctx.scheme, site, kind, Reason::None, &f, None);
            self.trace_rl(id, Reason::None, ctx);
        }
        FlowPick::Frame(f)
    }

    /// A data frame of a flow reached its destination station `s`: kept
    /// (in order or beyond a gap), acknowledged when due.
    pub(crate) fn sel_receive<T: Tracer<S>>(&mut self, s: usize, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let ack_bytes = self.tp.sel_cfg.ack_bytes;
        let fl = &mut self.tp.flows[f.flow as usize];
        let sel = &mut self.tp.sel[f.flow as usize];
        let (ce, ar) = ctx.scheme.sack_flags(&f.ext);
        let urgent = ce || ar;
        let got = sel.rx.on_data(f.seq, f.len, ce, ar, fl.n_frames, ack_bytes);
        fl.rcv_nxt = sel.rx.cum();
        if !got.duplicate && !self.tp.sinks.is_empty() {
            let target = ctx.scheme.sack_pull_target(&f.ext);
            if self.tp.sinks[f.flow as usize].target(target) {
                self.request_pull(s, f.flow, ctx);
            }
        }
        let fl = &mut self.tp.flows[f.flow as usize];
        if got.held {
            self.tp.counts.held += 1;
            if T::ON {
                let site = station_site!(self, ctx, s);
                ctx.tracer.frame(&ctx.scheme, site, Kind::Hold, Reason::OutOfOrder, f, None);
            }
        }
        if got.finished {
            fl.finish = ctx.now;
            if T::ON {
                let site = station_site!(self, ctx, s);
                ctx.tracer.flow(site, Kind::FlowEnd, fl.view(f.flow, None));
            }
            if self.tp.deps.is_some() {
                self.release_dependents(f.flow, ctx);
            }
        }
        if got.ack {
            let cum = self.tp.sel[f.flow as usize].rx.cum();
            self.sel_emit(s, f, FrameKind::Ack, cum, urgent, got.duplicate, ctx, fabric);
        }
    }

    /// A trimmed frame's header reached its destination station `s`: NACKed
    /// at once (acknowledged if its data was here after all).
    pub(crate) fn transport_trimmed<T: Tracer<S>>(&mut self, s: usize, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        if !S::SELECTIVE || f.flow as usize >= self.tp.sel.len() {
            return;
        }
        if !self.tp.sinks.is_empty() {
            // The sender will send it again: it needs credit.
            let target = ctx.scheme.sack_pull_target(&f.ext);
            let sink = &mut self.tp.sinks[f.flow as usize];
            let join = sink.target(target) || !std::mem::replace(&mut sink.in_pull, true);
            if join {
                self.request_pull(s, f.flow, ctx);
            }
        }
        let sel = &mut self.tp.sel[f.flow as usize];
        match sel.rx.on_trimmed(f.seq) {
            TrimReply::Nack => self.sel_emit(s, f, FrameKind::Nack, f.seq, true, false, ctx, fabric),
            TrimReply::Ack => {
                let cum = sel.rx.cum();
                self.sel_emit(s, f, FrameKind::Ack, cum, true, true, ctx, fabric)
            }
        }
    }

    /// Station `s` answers `data` (a data frame or a trimmed one) with an
    /// ACK (`seq`: its cumulative point) or a NACK (`seq`: the trimmed
    /// frame), with its selective acknowledgement from `data`'s PSN
    /// (`urgent`: from the PSN itself).
    #[allow(clippy::too_many_arguments)]
    fn sel_emit<T: Tracer<S>>(
        &mut self,
        s: usize,
        data: &Frame<S::Ext>,
        kind: FrameKind,
        seq: u32,
        urgent: bool,
        duplicate: bool,
        ctx: &mut Ctx<S, T>,
        fabric: &mut Fabric<S>,
    ) {
        let rx = &self.tp.sel[data.flow as usize].rx;
        let (base, bits) = rx.sack(data.seq, urgent);
        let sack = SackFields {
            base,
            bits,
            recvd_bytes: rx.recvd(),
            rtx: false,
            last_hop: data.kind == FrameKind::Trimmed && data.cpid == 1,
        };
        let ext = ctx.scheme.sack_ack(&data.ext, &sack);
        // born: the data frame's send time, echoed for the sender's RTT sample.
        let mut a = Frame::note(data.born, data.dst, data.src, data.dst, 0, ctx.run.ctrl_bytes, ext);
        a.kind = kind;
        a.flow = data.flow;
        a.seq = seq;
        a.cpid = data.seq;
        a.entropy = data.entropy;
        if T::ON {
            let site = station_site!(self, ctx, s);
            let what = if kind == FrameKind::Nack { Kind::NackTx } else { Kind::AckTx };
            let why = if duplicate { Reason::Duplicate } else { Reason::None };
            ctx.tracer.frame(&ctx.scheme, site, what, why, &a, None);
        }
        if kind == FrameKind::Nack {
            self.tp.counts.nacks += 1;
        } else {
            self.tp.counts.acks += 1;
        }
        let port = self.stations[s].port;
        fabric.send_control(port, a, ctx, self);
    }

    /// An ACK or a NACK reached the flow's sender.
    pub(crate) fn sel_ack<T: Tracer<S>>(&mut self, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let now = ctx.now;
        let fb = ctx.run.frame_bytes;
        let fl = &mut self.tp.flows[f.flow as usize];
        let id = fl.rl;
        if id == NO_RL {
            return; // the sender has finished
        }
        let info = ctx.scheme.sack_of(&f.ext);
        let sel = &mut self.tp.sel[f.flow as usize];
        let n = fl.n_frames;
        let was = sel.tx.has_pending(n);
        let (kind, bytes, rtt, done) = if f.kind == FrameKind::Nack {
            let Some((len, rtt)) = sel.tx.on_nack(f.seq, now) else {
                return; // acknowledged or handled before: nothing to do
            };
            sel.inflight -= len as i64;
            (AckKind::Nack, len as u64, rtt, false)
        } else {
            let o = sel
                .tx
                .on_ack(f.seq, info.base, info.bits, info.recvd_bytes, f.cpid, info.rtx, now, n);
            sel.inflight += o.recovered as i64 - o.newly as i64;
            (AckKind::Ack, o.newly, o.rtt.unwrap_or(0), o.done)
        };
        fl.snd_una = sel.tx.cum();
        let view = AckView {
            kind,
            acked_bytes: bytes,
            rtt_ps: rtt,
            una_bytes: fl.bytes(0, fl.snd_una, fb),
            nxt_bytes: fl.bytes(0, sel.tx.sent_max(), fb),
            mss: fb,
            hops: fl.hops,
            base_rtt_ps: fl.base_rtt_ps,
            entropy: f.entropy,
        };
        let now_pending = sel.tx.has_pending(n);
        let inflight = sel.inflight.max(0) as u64;
        let s = fl.src as usize;
        match (was, now_pending) {
            (false, true) => self.rps[s].flow_pending += 1,
            (true, false) => self.rps[s].flow_pending -= 1,
            _ => {}
        }
        let rl = self.rls[id as usize].as_mut().expect("live");
        rl.core.inflight_bytes = inflight;
        let rp = &mut self.rps[s];
        let timer = ctx.scheme.rp_on_ack(&mut rl.core, &mut rl.state, &view, &f.ext, now, &mut rp.rng);
        if let Some(t) = rl.trace {
            let window = rl.core.window_bytes;
            self.trace_window(t, window, ctx);
        }
        if done {
            self.tp.sel[f.flow as usize].tx = SelSender::new();
            self.finish_sender(f.flow, ctx);
            let port = self.stations[s].port;
            fabric.try_start(port, ctx, self);
            return;
        }
        self.after_rate_change(id, timer, ctx, fabric);
    }

    /// The retransmission timer of `flow` fired: its oldest outstanding
    /// frame, if out for a whole RTO, is sent again.
    pub(crate) fn sel_rto<T: Tracer<S>>(&mut self, flow: u32, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let now = ctx.now;
        let fb = ctx.run.frame_bytes;
        let rto = self.tp.sel_cfg.rto_ps;
        let fl = &mut self.tp.flows[flow as usize];
        let id = fl.rl;
        if id == NO_RL {
            return;
        }
        let sel = &mut self.tp.sel[flow as usize];
        let was = sel.tx.has_pending(fl.n_frames);
        let len = match sel.tx.on_timer(now, rto) {
            SelRto::Stale => return,
            SelRto::Rearm(t) => {
                ctx.schedule(t, EV_FLOW_RTO, flow);
                return;
            }
            SelRto::Fired { psn, len, next } => {
                if let Some(t) = next {
                    ctx.schedule(t, EV_FLOW_RTO, flow);
                }
                if T::ON {
                    let s = fl.src as usize;
                    let site = station_site!(self, ctx, s);
                    ctx.tracer.flow(site, Kind::Rto, fl.view(flow, Some(psn)));
                }
                len
            }
        };
        self.tp.counts.timeouts += 1;
        let fl = &mut self.tp.flows[flow as usize];
        fl.timeouts += 1;
        let sel = &mut self.tp.sel[flow as usize];
        sel.inflight -= len as i64;
        let inflight = sel.inflight.max(0) as u64;
        let s = fl.src as usize;
        if !was {
            self.rps[s].flow_pending += 1;
        }
        let view = AckView {
            kind: AckKind::Timeout,
            acked_bytes: len as u64,
            rtt_ps: 0,
            una_bytes: fl.bytes(0, fl.snd_una, fb),
            nxt_bytes: fl.bytes(0, fl.snd_max, fb),
            mss: fb,
            hops: fl.hops,
            base_rtt_ps: fl.base_rtt_ps,
            entropy: 0,
        };
        let rl = self.rls[id as usize].as_mut().expect("live");
        rl.core.inflight_bytes = inflight;
        let rp = &mut self.rps[s];
        let timer = ctx
            .scheme
            .rp_on_ack(&mut rl.core, &mut rl.state, &view, &S::Ext::default(), now, &mut rp.rng);
        self.after_rate_change(id, timer, ctx, fabric);
    }

    /// Flow `flow` wants credit from its receiver, station `s`: it joins
    /// the station's pull pacer, which starts now if it was idle.
    fn request_pull<T: Tracer<S>>(&mut self, s: usize, flow: u32, ctx: &mut Ctx<S, T>) {
        if self.tp.pacers[s].request(flow) {
            ctx.schedule(ctx.now, super::ctx::EV_WATCHDOG, super::ctx::POLL_PULL + s as u32);
        }
    }

    /// Station `s`'s pull pacer's event: the next PULL, and the next event
    /// as many quanta of its line rate later as it granted.
    pub(crate) fn pull_event<T: Tracer<S>>(&mut self, s: usize, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let Some(c) = self.tp.sel_cfg.credit else { return };
        let tp = &mut self.tp;
        let Some(pull) = tp.pacers[s].next(&mut tp.sinks, c.per_pull, c.most_slow) else {
            return;
        };
        let wait = (pull.wait_quanta as f64 * tp.quantum_ps[s]).round() as Time;
        ctx.schedule(ctx.now + wait.max(1), super::ctx::EV_WATCHDOG, super::ctx::POLL_PULL + s as u32);
        let fl = &tp.flows[pull.flow as usize];
        let ext = ctx.scheme.sack_pull(pull.latest);
        let mut n = Frame::note(ctx.now, s as u32, fl.src, s as u32, 0, ctx.run.ctrl_bytes, ext);
        n.flow = pull.flow;
        n.entropy = tp.sinks[pull.flow as usize].next_entropy();
        let port = self.stations[s].port;
        fabric.send_control(port, n, ctx, self);
    }
}

//! The stations' transport flows at work (the flow's state machine is
//! transport.rs's): arrivals and starts, the sender's frames leaving
//! through its RL, ACKs and NACKs, the retransmission timeout, flow records.

use super::ctx::{Ctx, EV_FLOW_ARRIVAL, EV_FLOW_RTO, EV_FLOW_START};
use super::deps::{Deps, DepsError};
use super::fabric::Fabric;
use super::hosts::{station_site, Hosts};
use super::node::NodeKind;
use super::port::Port;
use super::rl::{FlowPick, RateLimiter, NO_RL};
use super::transport::*;
use crate::config::{fail, ConfigError, SimConfig};
use crate::engine::queue::MAX_INDEX;
use crate::engine::Time;
use crate::frame::{Frame, FrameKind};
use crate::scheme::{AckKind, RlCore, Scheme};
use crate::stats::{FlowRecord, QueueTrace, TransportCounters};
use crate::trace::{Kind, Reason, Tracer};
use std::collections::BTreeMap;

impl<S: Scheme> Hosts<S> {
    /// Resolves the configuration's flows and arrival processes; schedules
    /// the first events. Returns the paths flows may take: one per distinct
    /// (base RTT, hops), named by the first flow (source, destination) on it.
    pub(crate) fn transport_init<T: Tracer<S>>(
        &mut self,
        cfg: &SimConfig,
        ctx: &mut Ctx<S, T>,
        fabric: &Fabric<S>,
    ) -> Result<FlowPaths, ConfigError> {
        let t = &cfg.transport;
        let station = |what: String, name: &str| -> Result<u32, ConfigError> {
            let n = *fabric
                .node_by_name
                .get(name)
                .ok_or_else(|| ConfigError::new(what.as_str(), format!("unknown node '{name}'")))?;
            match fabric.nodes[n as usize].kind {
                NodeKind::Station(s) => Ok(s),
                NodeKind::Bridge(_) => fail(what, format!("'{name}' is a bridge; flows run between stations")),
            }
        };
        let frame_bytes = ctx.run.frame_bytes;
        let mut flows = Vec::with_capacity(t.flows.len());
        for (i, f) in t.flows.iter().enumerate() {
            let src = station(format!("flows[{i}].src"), &f.src)?;
            let dst = station(format!("flows[{i}].dst"), &f.dst)?;
            let mut flow = Flow::new(src, dst, f.size_bytes, f.start_ps, frame_bytes, t.header_bytes);
            flow.prio = cfg.stations[src as usize].priority;
            flows.push(flow);
        }
        let mut gens = Vec::new();
        for (i, a) in t.arrivals.iter().enumerate() {
            let members: Vec<u32> = a
                .stations
                .iter()
                .map(|n| station(format!("workload: arrivals[{i}]"), n))
                .collect::<Result<_, _>>()?;
            let name = |s: u32| fabric.nodes[s as usize].name.clone();
            gens.extend(FlowGen::for_arrivals(a, i, &members, name, ctx.run.seed, ctx.run.duration));
        }
        if flows.len() > MAX_INDEX as usize || gens.len() > MAX_INDEX as usize {
            return fail("flows", format!("more than {MAX_INDEX} flows or arrival processes"));
        }
        let ctrl = ctx.run.ctrl_bytes;
        // Every pair that may carry a flow must be routable.
        let mut paths = BTreeMap::new();
        if fabric.router.source_free() {
            // Paths from a station depend on its link and its first hop, not
            // on the station itself: one pair per (class, class) of stations
            // that share them (a fabric of 6,144 hosts on 384 leaves asks
            // 147,456 pairs, not 37.7 million). A class's first member stands
            // for it, so the pair named is the first one in station order.
            for a in &t.arrivals {
                let members: Vec<u32> = a.stations.iter().map(|n| station("workload".into(), n)).collect::<Result<_, _>>()?;
                let classes = station_classes(fabric, &members);
                for src in &classes {
                    for dst in &classes {
                        let (s, d) = (src[0], dst[0]);
                        let d = if s != d {
                            d
                        } else if let Some(&other) = dst.get(1) {
                            other
                        } else {
                            continue; // a class of one station: no flow to itself
                        };
                        let (hops, rtt) = fabric.path_info(s, d, frame_bytes, ctrl)?;
                        paths.entry((rtt, hops)).or_insert((s, d));
                    }
                }
            }
        } else {
            // Explicit routes may depend on the source: every pair.
            for g in &gens {
                for &d in g.dests.iter().filter(|&&d| d != g.station) {
                    let (hops, rtt) = fabric.path_info(g.station, d, frame_bytes, ctrl)?;
                    paths.entry((rtt, hops)).or_insert((g.station, d));
                }
            }
        }
        let after: Vec<(&[u32], Time)> = t.flows.iter().map(|f| (f.after.as_slice(), f.after_delay_ps)).collect();
        let gates: Vec<(&[u32], Time)> = t.gates.iter().map(|g| (g.after.as_slice(), g.delay_ps)).collect();
        let deps = Deps::new(&after, &gates).map_err(|e| match e {
            DepsError::NoSuchFlow { flow, after } => ConfigError::new(
                format!("flows[{flow}].after"),
                format!("no flow {after}; there are {}", t.flows.len()),
            ),
            DepsError::IdleGate { gate } => ConfigError::new(format!("gates[{gate}].after"), "a gate must wait for something"),
            DepsError::Cycle(c) => {
                let named: Vec<String> = c.iter().map(|i| format!("flows[{i}]")).collect();
                ConfigError::new(
                    format!("flows[{}].after", c[0]),
                    format!("a cycle: {} (each waits for the next)", named.join(" -> ")),
                )
            }
        })?;
        let mut pending = 0;
        for (i, f) in flows.iter_mut().enumerate() {
            (f.hops, f.base_rtt_ps) = fabric.path_info(f.src, f.dst, frame_bytes, ctrl)?;
            paths.entry((f.base_rtt_ps, f.hops)).or_insert((f.src, f.dst));
            if deps.as_ref().is_some_and(|d| d.waits(i)) {
                pending += 1; // started when what it waits for has been received
            } else if f.start < ctx.run.duration {
                ctx.schedule(f.start, EV_FLOW_START, i as u32);
                pending += 1;
            }
        }
        let mut live = 0;
        for (g, gen) in gens.iter_mut().enumerate() {
            if let Some(first) = gen.first_arrival() {
                ctx.schedule(first, EV_FLOW_ARRIVAL, g as u32);
                live += 1;
            }
        }
        self.tp = Transport {
            flows,
            gens,
            header_bytes: t.header_bytes,
            ack_every: t.ack_every,
            rto_ps: t.rto_ps,
            end_when_done: t.end_when_done,
            active: 0,
            pending_starts: pending,
            gens_live: live,
            counts: TransportCounters::default(),
            deps: deps.map(Box::new),
            jobs: t.plan.as_ref().map(|plan| Box::new(jobs_state(plan, t, cfg, fabric))),
            sel_cfg: Default::default(),
            sel: Vec::new(),
            pacers: Vec::new(),
            quantum_ps: Vec::new(),
            sinks: Vec::new(),
        };
        Ok(paths)
    }

    /// Flow `done` was received whole: the flows waiting for it that now
    /// wait for nothing start after their delay (not before their own
    /// start); one that would start after the run never does.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_dependents<T: Tracer<S>>(&mut self, done: u32, ctx: &mut Ctx<S, T>) {
        let Some(deps) = self.tp.deps.as_mut() else { return };
        for (j, at) in deps.received(done as usize, ctx.now) {
            let f = &mut self.tp.flows[j as usize];
            let at = at.max(f.start);
            if at < ctx.run.duration {
                f.start = at;
                ctx.schedule(at, EV_FLOW_START, j);
            } else {
                self.tp.pending_starts -= 1;
            }
        }
    }

    /// A flow given one by one starts.
    pub(crate) fn on_flow_start<T: Tracer<S>>(&mut self, id: u32, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        self.tp.pending_starts -= 1;
        self.start_flow(id, ctx, fabric);
    }

    /// The next Poisson arrival at generator `g`: a new flow starts now.
    pub(crate) fn on_flow_arrival<T: Tracer<S>>(&mut self, g: u32, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        let now = ctx.now;
        let gen = &mut self.tp.gens[g as usize];
        let (dst, size, next) = gen.next_flow(now);
        let src = gen.station;
        if self.tp.flows.len() >= MAX_INDEX as usize {
            // Flow ids index events: more cannot be named. The run fails in
            // `finish`; this process stops rather than go on drawing flows.
            ctx.overflow = true;
            self.tp.gens_live -= 1;
            return;
        }
        match next {
            Some(next) => ctx.schedule(next, EV_FLOW_ARRIVAL, g),
            None => self.tp.gens_live -= 1,
        }
        let mut f = Flow::new(src, dst, size, now, ctx.run.frame_bytes, self.tp.header_bytes);
        f.prio = self.stations[src as usize].priority;
        (f.hops, f.base_rtt_ps) = fabric
            .path_info(src, dst, ctx.run.frame_bytes, ctx.run.ctrl_bytes)
            .unwrap_or((0, 0));
        self.tp.flows.push(f);
        if S::SELECTIVE {
            self.tp.sel.push(super::sack::SelFlow::new());
            if self.tp.sel_cfg.credit.is_some() {
                self.tp.sinks.push(Default::default());
            }
        }
        self.start_flow((self.tp.flows.len() - 1) as u32, ctx, fabric);
    }

    fn start_flow<T: Tracer<S>>(&mut self, id: u32, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        if self.free_rls.is_empty() && self.rls.len() > MAX_INDEX as usize {
            ctx.overflow = true;
            return;
        }
        let now = ctx.now;
        let s = self.tp.flows[id as usize].src as usize;
        let port = self.stations[s].port;
        let line = fabric.ports[port as usize].nominal_rate_bps as f64;
        let mut core = RlCore {
            base_rtt_ps: self.tp.flows[id as usize].base_rtt_ps,
            prio: self.tp.flows[id as usize].prio,
            ..RlCore::at_line_rate(line)
        };
        let (state, timer) = ctx.scheme.new_rl(&mut core, now);
        let dst = self.tp.flows[id as usize].dst;
        // A flow's sender is traced only when asked for by name (`SRC|DST`;
        // the flows between one pair share the series): a flow run has
        // thousands of senders.
        let trace = if self.trace_rls.is_some() {
            let target = fabric.nodes[dst as usize].name.clone();
            self.rl_trace_named(s, target, ctx, fabric)
        } else {
            None
        };
        let (rate, window) = (core.rate_bps, core.window_bytes);
        let rl = RateLimiter::new(s, dst, 0, id, core, state, now, trace);
        self.trace_rl_rate(trace, rate, ctx);
        if let Some(t) = trace {
            self.trace_window(t, window, ctx);
        }
        let rl_id = self.insert_rl(rl);
        let q = self.rps[s].live.push(rl_id);
        self.rls[rl_id as usize].as_mut().expect("just inserted").seq = q;
        self.rps[s].flow_pending += 1;
        self.tp.flows[id as usize].rl = rl_id;
        self.tp.active += 1;
        self.set_rl_timer(rl_id, timer, ctx);
        if T::ON {
            let site = station_site!(self, ctx, s);
            let view = self.tp.flows[id as usize].view(id, None);
            ctx.tracer.flow(site, Kind::FlowStart, view);
            self.trace_rl(rl_id, Reason::Created, ctx);
        }
        fabric.try_start(port, ctx, self);
    }

    /// The next frame of flow RL `id` at station `s` (its port `p`), if its
    /// pacing and window let one leave now.
    pub(crate) fn flow_frame<T: Tracer<S>>(&mut self, s: usize, id: u32, p: &mut Port<S::Ext>, ctx: &mut Ctx<S, T>) -> FlowPick<S::Ext> {
        if S::SELECTIVE {
            return self.sel_flow_frame(s, id, p, ctx);
        }
        let now = ctx.now;
        let fb = ctx.run.frame_bytes;
        let rl = self.rls[id as usize].as_mut().expect("live");
        let fl = &mut self.tp.flows[rl.flow as usize];
        if fl.snd_nxt >= fl.n_frames {
            return FlowPick::Nothing;
        }
        let at = rl.next_release.max(rl.core.stopped_until);
        if at > now {
            return FlowPick::At(at);
        }
        let len = fl.frame_len(fl.snd_nxt, fb);
        if rl.core.window_bytes != u64::MAX && rl.core.inflight_bytes + len as u64 > rl.core.window_bytes {
            return FlowPick::Nothing; // its acknowledgements will wake the port
        }
        let mut f = Frame::data(now, fl.src, fl.dst, len);
        f.prio = fl.prio;
        f.flow = rl.flow;
        f.cpid = rl.tag;
        let sent = fl.take_next(now, self.tp.rto_ps);
        f.seq = sent.seq;
        let flow = rl.flow;
        rl.core.inflight_bytes += len as u64;
        rl.last_release = now;
        rl.last_len = len;
        let rp = &mut self.rps[s];
        let rate_before = rl.core.rate_bps;
        let timer = ctx.scheme.rp_on_send(&mut rl.core, &mut rl.state, &mut f, now, &mut rp.rng);
        rl.next_release = now + super::rl::pace_ps(len, rl.core.rate_bps);
        let (trace, rate) = (rl.trace, rl.core.rate_bps);
        if sent.all_sent {
            rp.flow_pending -= 1;
        }
        if let Some(rto_at) = sent.arm_rto {
            ctx.schedule(rto_at, EV_FLOW_RTO, flow);
        }
        p.data_bytes += len as u64;
        self.set_rl_timer(id, timer, ctx);
        if rate != rate_before {
            self.trace_rl_rate(trace, rate, ctx);
        }
        self.count_generated(s as u32, f.dst, ctx);
        if T::ON {
            let site = station_site!(self, ctx, s);
            let kind = if sent.resent { Kind::Retransmit } else { Kind::Generate };
            ctx.tracer.frame(&ctx.scheme, site, kind, Reason::None, &f, None);
            self.trace_rl(id, Reason::None, ctx);
        }
        FlowPick::Frame(f)
    }

    /// A data frame of a flow reached its destination station `s`.
    pub(crate) fn transport_receive<T: Tracer<S>>(&mut self, s: usize, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        if S::SELECTIVE {
            self.sel_receive(s, f, ctx, fabric);
            return;
        }
        let fl = &mut self.tp.flows[f.flow as usize];
        let got = fl.receive(f.seq, ctx.now, self.tp.ack_every);
        if T::ON && got.finished {
            let site = station_site!(self, ctx, s);
            ctx.tracer.flow(site, Kind::FlowEnd, fl.view(f.flow, None));
        }
        if got.finished && self.tp.deps.is_some() {
            self.release_dependents(f.flow, ctx);
        }
        if got.discarded {
            self.tp.counts.discarded += 1;
            if T::ON {
                let site = station_site!(self, ctx, s);
                ctx.tracer.frame(&ctx.scheme, site, Kind::Discard, Reason::OutOfOrder, f, None);
            }
        }
        match got.reply {
            Some(Reply::Ack(seq)) => self.emit_ack(s, f, FrameKind::Ack, seq, false, ctx, fabric),
            Some(Reply::Nack(seq)) => self.emit_ack(s, f, FrameKind::Nack, seq, false, ctx, fabric),
            Some(Reply::Duplicate(seq)) => self.emit_ack(s, f, FrameKind::Ack, seq, true, ctx, fabric),
            None => {}
        }
    }

    /// Station `s` acknowledges `data` (`kind`: ACK or NACK, `seq` the next
    /// frame expected; `duplicate`: `data` was already received).
    #[allow(clippy::too_many_arguments)]
    fn emit_ack<T: Tracer<S>>(
        &mut self,
        s: usize,
        data: &Frame<S::Ext>,
        kind: FrameKind,
        seq: u32,
        duplicate: bool,
        ctx: &mut Ctx<S, T>,
        fabric: &mut Fabric<S>,
    ) {
        let echo = ctx.scheme.ack_echo(&data.ext);
        // born: the data frame's send time, echoed for the sender's RTT sample.
        let mut a = Frame::note(data.born, data.dst, data.src, data.dst, 0, ctx.run.ctrl_bytes, echo);
        a.kind = kind;
        a.flow = data.flow;
        a.seq = seq;
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

    /// An ACK or NACK reached the flow's sender.
    pub(crate) fn transport_ack<T: Tracer<S>>(&mut self, f: &Frame<S::Ext>, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        if S::SELECTIVE {
            self.sel_ack(f, ctx, fabric);
            return;
        }
        let now = ctx.now;
        let fb = ctx.run.frame_bytes;
        let fl = &mut self.tp.flows[f.flow as usize];
        let id = fl.rl;
        if id == NO_RL {
            return; // the sender has finished
        }
        let kind = if f.kind == FrameKind::Nack { AckKind::Nack } else { AckKind::Ack };
        let effect = fl.on_ack(f.seq, kind == AckKind::Nack, now, self.tp.rto_ps);
        let s = fl.src as usize;
        match effect.pending {
            1 => self.rps[s].flow_pending += 1,
            -1 => self.rps[s].flow_pending -= 1,
            _ => {}
        }
        let view = fl.ack_view(kind, fl.bytes(effect.old_una, fl.snd_una, fb), now.saturating_sub(f.born), fb);
        let inflight = fl.bytes(fl.snd_una, fl.snd_nxt, fb);
        let finished = fl.snd_una == fl.n_frames;
        let rl = self.rls[id as usize].as_mut().expect("live");
        rl.core.inflight_bytes = inflight;
        let rp = &mut self.rps[s];
        let timer = ctx.scheme.rp_on_ack(&mut rl.core, &mut rl.state, &view, &f.ext, now, &mut rp.rng);
        if let Some(t) = rl.trace {
            let window = rl.core.window_bytes;
            self.trace_window(t, window, ctx);
        }
        if finished {
            self.finish_sender(f.flow, ctx);
            let port = self.stations[s].port;
            fabric.try_start(port, ctx, self);
            return;
        }
        self.after_rate_change(id, timer, ctx, fabric);
    }

    /// A traced sender's window (window schemes only: `u64::MAX` is none).
    pub(crate) fn trace_window<T: Tracer<S>>(&mut self, t: usize, window: u64, ctx: &Ctx<S, T>) {
        if window == u64::MAX {
            return;
        }
        let b = ctx.stats.bin_now();
        self.rl_traces[t].window.get_or_insert_with(|| QueueTrace::new(0)).update(b, window);
    }

    /// The flow's last frame is acknowledged: its RL goes.
    pub(crate) fn finish_sender<T: Tracer<S>>(&mut self, flow: u32, ctx: &mut Ctx<S, T>) {
        let fl = &mut self.tp.flows[flow as usize];
        fl.acked = ctx.now;
        let id = std::mem::replace(&mut fl.rl, NO_RL);
        fl.rto_deadline = Time::MAX;
        let s = fl.src as usize;
        if let Some(t) = self.rls[id as usize].as_ref().and_then(|rl| rl.trace) {
            if let Some(w) = &mut self.rl_traces[t].window {
                // The sender is gone: no window until the pair's next flow.
                w.update(ctx.stats.bin_now(), 0);
            }
        }
        self.remove_rl(s, id, ctx);
        self.tp.active -= 1;
        if self.tp.end_when_done && self.tp.done() && !ctx.run.open_loop {
            ctx.run.stop_at = ctx.now + 1;
        }
    }

    /// The retransmission timer of `flow` fired.
    pub(crate) fn on_flow_rto<T: Tracer<S>>(&mut self, flow: u32, ctx: &mut Ctx<S, T>, fabric: &mut Fabric<S>) {
        if S::SELECTIVE {
            self.sel_rto(flow, ctx, fabric);
            return;
        }
        let now = ctx.now;
        let fb = ctx.run.frame_bytes;
        let fl = &mut self.tp.flows[flow as usize];
        let pending_again = match fl.on_rto(now) {
            Rto::Stale => return,
            Rto::Rearm(at) => {
                ctx.schedule(at, EV_FLOW_RTO, flow);
                return;
            }
            Rto::Fired { pending_again } => pending_again,
        };
        self.tp.counts.timeouts += 1;
        let s = fl.src as usize;
        if T::ON {
            let site = station_site!(self, ctx, s);
            ctx.tracer.flow(site, Kind::Rto, fl.view(flow, Some(fl.snd_una)));
        }
        if pending_again {
            self.rps[s].flow_pending += 1;
        }
        let id = fl.rl;
        let view = fl.ack_view(AckKind::Timeout, 0, 0, fb);
        let rl = self.rls[id as usize].as_mut().expect("live");
        rl.core.inflight_bytes = 0;
        let rp = &mut self.rps[s];
        let timer = ctx
            .scheme
            .rp_on_ack(&mut rl.core, &mut rl.state, &view, &S::Ext::default(), now, &mut rp.rng);
        self.after_rate_change(id, timer, ctx, fabric);
    }

    /// The per-flow records of the run.
    pub(crate) fn flow_records(&self, fabric: &Fabric<S>, frame_bytes: u32, sprayed: bool) -> Vec<FlowRecord> {
        // One shared name per node: millions of records over a few thousand hosts.
        let names: Vec<std::sync::Arc<str>> = fabric.nodes.iter().map(|n| std::sync::Arc::from(n.name.as_str())).collect();
        self.tp
            .flows
            .iter()
            .map(|f| FlowRecord {
                src: names[f.src as usize].clone(),
                dst: names[f.dst as usize].clone(),
                size_bytes: f.size,
                start_ps: f.start,
                finish_ps: f.finish,
                acked_ps: f.acked,
                ideal_fct_ps: fabric.ideal_fct(f, frame_bytes, sprayed),
                retransmitted: f.retransmitted,
                timeouts: f.timeouts,
                hops: f.hops,
            })
            .collect()
    }
}

/// The results' view of the run's collective jobs: each job flow's tag,
/// each rank's payload rate (its line rate x the payload share of a full
/// frame).
fn jobs_state<S: Scheme>(
    plan: &crate::collective::Plan,
    t: &crate::config::TransportConfig,
    cfg: &SimConfig,
    fabric: &Fabric<S>,
) -> JobsState {
    let tags = t
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.tag.map(|tag| (i as u32, tag)))
        .collect();
    let share = (cfg.frame_bytes - t.header_bytes) as f64 / cfg.frame_bytes as f64;
    let payload_bps = plan
        .jobs
        .iter()
        .map(|j| {
            j.hosts
                .iter()
                .map(|h| {
                    let n = fabric.node_by_name[h.as_str()];
                    fabric.ports[fabric.nodes[n as usize].ports[0] as usize].nominal_rate_bps as f64 * share
                })
                .collect()
        })
        .collect();
    JobsState {
        plan: plan.clone(),
        tags,
        payload_bps,
    }
}

/// `members` (stations) grouped by what a path's hops and base RTT depend
/// on at either end where routes do not depend on the source: the node at
/// the far end of the station's link and the link's parameters both ways
/// (rates, delays, the latency and processing time at each end). Classes in
/// order of their first member, members in order.
fn station_classes<S: Scheme>(fabric: &Fabric<S>, members: &[u32]) -> Vec<Vec<u32>> {
    type Key = (u32, u64, Time, [Time; 3], u64, Time, [Time; 3]);
    let mut index: BTreeMap<Key, usize> = BTreeMap::new();
    let mut classes: Vec<Vec<u32>> = Vec::new();
    for &s in members {
        let out = &fabric.ports[fabric.nodes[s as usize].ports[0] as usize];
        let back = &fabric.ports[out.reverse as usize];
        let key = (
            out.peer,
            out.nominal_rate_bps,
            out.delay_ps,
            out.rx_extra_ps,
            back.nominal_rate_bps,
            back.delay_ps,
            back.rx_extra_ps,
        );
        let i = *index.entry(key).or_insert_with(|| {
            classes.push(Vec::new());
            classes.len() - 1
        });
        classes[i].push(s);
    }
    classes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::serialization_ps;
    use rand::Rng;

    #[test]
    fn cdf_sampling_interpolates_and_its_mean_matches() {
        let cdf = [(1000.0, 0.0), (2000.0, 0.5), (10000.0, 1.0)];
        assert_eq!(sample_cdf(&cdf, 0.0), 1000);
        assert_eq!(sample_cdf(&cdf, 0.25), 1500);
        assert_eq!(sample_cdf(&cdf, 0.75), 6000);
        assert_eq!(sample_cdf(&cdf, 1.0), 10000);
        assert!((cdf_mean(&cdf) - (0.5 * 1500.0 + 0.5 * 6000.0)).abs() < 1e-9);
        let mut rng = crate::engine::rng::stream(1, "t");
        let n = 200_000;
        let m: f64 = (0..n).map(|_| sample_cdf(&cdf, rng.gen::<f64>()) as f64).sum::<f64>() / n as f64;
        assert!((m / cdf_mean(&cdf) - 1.0).abs() < 0.01, "{m}");
    }

    /// The closed form against the frame-by-frame recursion it replaces.
    #[test]
    fn the_pipeline_formula_matches_frame_by_frame_store_and_forward() {
        let mut rng = crate::engine::rng::stream(5, "pipe");
        for _ in 0..300 {
            let h = rng.gen_range(1..6);
            let hops: Vec<(u64, Time)> = (0..h)
                .map(|_| (rng.gen_range(1..100u64) * 1_000_000_000, rng.gen_range(0..3_000_000)))
                .collect();
            let full = 1500;
            let size = rng.gen_range(1..200_000u64);
            let f = Flow::new(0, 1, size, 0, full as u32, 0);
            let mut done = vec![0 as Time; h];
            let mut arrive = 0;
            for k in 0..f.n_frames {
                let len = f.frame_len(k, full as u32) as u64;
                let mut t = 0;
                for (j, &(rate, extra)) in hops.iter().enumerate() {
                    done[j] = t.max(done[j]) + serialization_ps(len, rate);
                    t = done[j] + extra;
                }
                arrive = t;
            }
            assert_eq!(pipeline_ps(&hops, f.n_frames, full, f.last_len as u64), arrive, "{hops:?} {size}");
        }
    }

    #[test]
    fn a_flow_is_cut_into_full_frames_and_a_remainder() {
        let f = Flow::new(0, 1, 4000, 0, 1500, 0);
        assert_eq!((f.n_frames, f.last_len), (3, 1000));
        assert_eq!(f.bytes(0, 3, 1500), 4000);
        assert_eq!(f.bytes(1, 3, 1500), 2500);
        assert_eq!(f.bytes(0, 2, 1500), 3000);
        let g = Flow::new(0, 1, 3000, 0, 1500, 0);
        assert_eq!((g.n_frames, g.last_len), (2, 1500));
        let h = Flow::new(0, 1, 1, 0, 1500, 0);
        assert_eq!((h.n_frames, h.last_len, h.bytes(0, 1, 1500)), (1, 1, 1));
    }

    /// With headers, frames carry frame_bytes - header_bytes of the flow
    /// each, and the last its rest plus a header: the Ultra Ethernet
    /// reference's 2,000,000 B in 4,150-byte packets with 64-byte headers
    /// is 489 full packets and one of 2,010 bytes.
    #[test]
    fn headers_take_their_bytes_from_every_frame() {
        let f = Flow::new(0, 1, 2_000_000, 0, 4150, 64);
        assert_eq!((f.n_frames, f.last_len), (490, 2010));
        assert_eq!(f.bytes(0, 490, 4150), 489 * 4150 + 2010);
        let g = Flow::new(0, 1, 4086 * 3, 0, 4150, 64);
        assert_eq!((g.n_frames, g.last_len), (3, 4150));
    }
}

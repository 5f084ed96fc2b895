//! The simulator's side of transport flows (net/transport.rs): arrivals,
//! starts, the sender's frames, ACKs and NACKs, go-back-N and the
//! retransmission timeout, flow records. Kept apart from transport.rs,
//! which holds the flows themselves, so that they sit below the simulator.

use super::port::PortId;
use super::rl::{station_site, FlowPick, RateLimiter, NO_RL};
use super::sim::{NetSim, EV_FLOW_ARRIVAL, EV_FLOW_RTO, EV_FLOW_START};
use super::topology::{NodeKind, NO_ROUTE};
use super::transport::*;
use crate::config::{fail, BufferMode, ConfigError, SimConfig};
use crate::engine::queue::MAX_INDEX;
use crate::engine::time::serialization_ps;
use crate::engine::Time;
use crate::frame::{Frame, FrameKind};
use crate::scheme::{AckKind, NetView, PathView, RlCore, Scheme};
use crate::stats::QueueTrace;
use crate::stats::{FlowRecord, TransportCounters};
use crate::trace::{Kind, Reason, Site, Tracer};
use std::collections::BTreeMap;

impl<S: Scheme, T: Tracer<S>> NetSim<S, T> {
    /// Resolves the configuration's flows and arrival processes; schedules
    /// the first events. Returns the paths flows may take: one per distinct
    /// (base RTT, hops), named by the first flow (source, destination) on it.
    pub(crate) fn transport_init(&mut self, cfg: &SimConfig) -> Result<FlowPaths, ConfigError> {
        let t = &cfg.transport;
        let station = |what: String, name: &str| -> Result<u16, ConfigError> {
            let n = *self
                .net
                .node_by_name
                .get(name)
                .ok_or_else(|| ConfigError::new(what.as_str(), format!("unknown node '{name}'")))?;
            match self.net.nodes[n as usize].kind {
                NodeKind::Station(s) => Ok(s as u16),
                NodeKind::Bridge(_) => fail(what, format!("'{name}' is a bridge; flows run between stations")),
            }
        };
        let mut flows = Vec::with_capacity(t.flows.len());
        for (i, f) in t.flows.iter().enumerate() {
            let src = station(format!("flows[{i}].src"), &f.src)?;
            let dst = station(format!("flows[{i}].dst"), &f.dst)?;
            flows.push(Flow::new(src, dst, f.size_bytes, f.start_ps, self.frame_bytes));
        }
        let mut gens = Vec::new();
        for (i, a) in t.arrivals.iter().enumerate() {
            let members: Vec<u16> = a
                .stations
                .iter()
                .map(|n| station(format!("workload: arrivals[{i}]"), n))
                .collect::<Result<_, _>>()?;
            let name = |s: u16| self.net.station_name(s as usize).to_string();
            gens.extend(FlowGen::for_arrivals(a, i, &members, name, self.seed, self.duration));
        }
        if flows.len() > MAX_INDEX as usize || gens.len() > MAX_INDEX as usize {
            return fail("flows", format!("more than {MAX_INDEX} flows or arrival processes"));
        }
        // Every pair that may carry a flow must be routable.
        let mut paths = BTreeMap::new();
        for g in &gens {
            for &d in g.dests.iter().filter(|&&d| d != g.station) {
                let (hops, rtt) = self.path_info(g.station, d)?;
                paths.entry((rtt, hops)).or_insert((g.station, d));
            }
        }
        let mut pending = 0;
        for (i, f) in flows.iter_mut().enumerate() {
            (f.hops, f.base_rtt_ps) = self.path_info(f.src, f.dst)?;
            paths.entry((f.base_rtt_ps, f.hops)).or_insert((f.src, f.dst));
            if f.start < self.duration {
                self.q.push(f.start, EV_FLOW_START, i as u32);
                pending += 1;
            }
        }
        let mut live = 0;
        for (g, gen) in gens.iter_mut().enumerate() {
            if let Some(first) = gen.first_arrival() {
                self.q.push(first, EV_FLOW_ARRIVAL, g as u32);
                live += 1;
            }
        }
        self.tp = Transport {
            flows,
            gens,
            ack_every: t.ack_every,
            rto_ps: t.rto_ps,
            end_when_done: t.end_when_done,
            active: 0,
            pending_starts: pending,
            gens_live: live,
            counts: TransportCounters::default(),
        };
        Ok(paths)
    }

    /// What a scheme checks its parameters against: the slowest sender's
    /// line rate and the flows' paths (from [`Self::transport_init`]).
    pub(crate) fn network_view(&self, paths: FlowPaths) -> NetView {
        let mut senders: Vec<usize> = (0..self.n_stations).filter(|&s| self.net.stations[s].load > 0.0).collect();
        senders.extend(self.tp.flows.iter().map(|f| f.src as usize));
        senders.extend(self.tp.gens.iter().map(|g| g.station as usize));
        let slowest = senders
            .into_iter()
            .map(|s| (self.net.ports[self.net.stations[s].port as usize].nominal_rate_bps, s))
            .min();
        let name = |s: u16| self.net.station_name(s as usize).to_string();
        let cp_queue_bytes = (0..self.net.ports.len())
            .filter(|&p| self.cps[p].is_some())
            .filter_map(|p| match self.net.nodes[self.net.ports[p].owner as usize].kind {
                NodeKind::Bridge(b) => {
                    let br = &self.net.bridges[b as usize];
                    let bytes = br.buffer_bytes as f64;
                    let inputs = self.net.nodes[br.node as usize].ports.len().saturating_sub(1).max(1) as f64;
                    Some(match br.buffer_mode {
                        BufferMode::PerOutput | BufferMode::Shared => bytes,
                        BufferMode::PerInput => bytes * inputs,
                        BufferMode::Dynamic => bytes * br.dt_alpha / (1.0 + br.dt_alpha),
                        BufferMode::Infinite => f64::INFINITY,
                    })
                }
                NodeKind::Station(_) => None,
            })
            .fold(0.0, f64::max);
        NetView {
            min_line_rate_bps: slowest.map_or(0.0, |(r, _)| r as f64),
            slowest_sender: slowest.map_or_else(String::new, |(_, s)| name(s as u16)),
            cp_queue_bytes,
            paths: paths
                .into_iter()
                .map(|((base_rtt_ps, hops), (src, dst))| PathView {
                    flow: format!("{}->{}", name(src), name(dst)),
                    base_rtt_ps,
                    hops,
                })
                .collect(),
        }
    }

    /// The ports a frame from station `src` to station `dst` leaves by, in order.
    pub(crate) fn path_of(&self, src: u16, dst: u16) -> Result<Vec<PortId>, ConfigError> {
        let mut path = vec![self.net.stations[src as usize].port];
        loop {
            let last = &self.net.ports[*path.last().expect("non-empty") as usize];
            match self.net.nodes[last.peer as usize].kind {
                NodeKind::Station(s) if s as u16 == dst => return Ok(path),
                NodeKind::Station(_) => break,
                NodeKind::Bridge(b) => {
                    let out = self.net.router.next_hop(b, src, dst);
                    if out == NO_ROUTE || path.len() > self.net.ports.len() {
                        break;
                    }
                    path.push(out);
                }
            }
        }
        fail(
            "flows",
            format!(
                "no route from '{}' to '{}'",
                self.net.station_name(src as usize),
                self.net.station_name(dst as usize)
            ),
        )
    }

    /// Links from `src` to `dst`, and the base RTT: a full data frame
    /// there and a control frame (its ACK) back, each hop's serialisation,
    /// propagation and receiving-node latency.
    pub(crate) fn path_info(&self, src: u16, dst: u16) -> Result<(u32, Time), ConfigError> {
        use super::port::{WIRE_DATA, WIRE_NOTE};
        let path = self.path_of(src, dst)?;
        let mut rtt = 0;
        for &p in &path {
            let there = &self.net.ports[p as usize];
            let back = &self.net.ports[there.reverse as usize];
            rtt += serialization_ps(self.frame_bytes as u64, there.nominal_rate_bps) + there.delay_ps + there.rx_extra_ps[WIRE_DATA];
            rtt += serialization_ps(self.ctrl_bytes as u64, back.nominal_rate_bps) + back.delay_ps + back.rx_extra_ps[WIRE_NOTE];
        }
        Ok((path.len() as u32, rtt))
    }

    /// The flow alone on the empty network: store and forward of its frames
    /// at each hop's nominal rate, plus each hop's propagation delay and the
    /// receiving node's latency; the time its last frame arrives.
    pub(crate) fn ideal_fct(&self, f: &Flow) -> Time {
        let path = self.path_of(f.src, f.dst).expect("checked at start");
        let hops: Vec<(u64, Time)> = path
            .iter()
            .map(|&p| {
                let p = &self.net.ports[p as usize];
                (p.nominal_rate_bps, p.delay_ps + p.rx_extra_ps[super::port::WIRE_DATA])
            })
            .collect();
        pipeline_ps(&hops, f.n_frames, self.frame_bytes as u64, f.last_len as u64)
    }

    /// A flow given one by one starts.
    pub(crate) fn on_flow_start(&mut self, id: u32) {
        self.tp.pending_starts -= 1;
        self.start_flow(id);
    }

    /// The next Poisson arrival at generator `g`: a new flow starts now.
    pub(crate) fn on_flow_arrival(&mut self, g: u32) {
        let now = self.now;
        let gen = &mut self.tp.gens[g as usize];
        let (dst, size, next) = gen.next_flow(now);
        let src = gen.station;
        if self.tp.flows.len() >= MAX_INDEX as usize {
            // Flow ids index events: more cannot be named. The run fails in
            // `finish`; this process stops rather than go on drawing flows.
            self.rl_overflow = true;
            self.tp.gens_live -= 1;
            return;
        }
        match next {
            Some(next) => self.q.push(next, EV_FLOW_ARRIVAL, g),
            None => self.tp.gens_live -= 1,
        }
        let mut f = Flow::new(src, dst, size, now, self.frame_bytes);
        (f.hops, f.base_rtt_ps) = self.path_info(src, dst).unwrap_or((0, 0));
        self.tp.flows.push(f);
        self.start_flow((self.tp.flows.len() - 1) as u32);
    }

    fn start_flow(&mut self, id: u32) {
        if self.free_rls.is_empty() && self.rls.len() > MAX_INDEX as usize {
            self.rl_overflow = true;
            return;
        }
        let now = self.now;
        let s = self.tp.flows[id as usize].src as usize;
        let port = self.net.stations[s].port;
        let line = self.net.ports[port as usize].nominal_rate_bps as f64;
        let mut core = RlCore {
            base_rtt_ps: self.tp.flows[id as usize].base_rtt_ps,
            ..RlCore::at_line_rate(line)
        };
        let (state, timer) = self.scheme.new_rl(&mut core, now);
        let dst = self.tp.flows[id as usize].dst;
        // A flow's sender is traced only when asked for by name (`SRC|DST`;
        // the flows between one pair share the series): a flow run has
        // thousands of senders.
        let trace = if self.trace_rls.is_some() {
            let target = self.net.station_name(dst as usize).to_string();
            self.rl_trace_named(s, target)
        } else {
            None
        };
        let (rate, window) = (core.rate_bps, core.window_bytes);
        let rl = RateLimiter::new(s, dst, 0, id, core, state, now, trace);
        self.trace_rl_rate(trace, rate);
        if let Some(t) = trace {
            self.trace_window(t, window);
        }
        let rl_id = self.insert_rl(rl);
        let q = self.rps[s].live.push(rl_id);
        self.rls[rl_id as usize].as_mut().expect("just inserted").seq = q;
        self.rps[s].flow_pending += 1;
        self.tp.flows[id as usize].rl = rl_id;
        self.tp.active += 1;
        self.set_rl_timer(rl_id, timer);
        if T::ON {
            let site = self.station_site(s);
            let view = self.tp.flows[id as usize].view(id, None);
            self.tracer.flow(site, Kind::FlowStart, view);
            self.trace_rl(rl_id, Reason::Created);
        }
        self.try_start(port);
    }

    /// The next frame of flow RL `id` at station `s`, if its pacing and
    /// window let one leave now.
    pub(crate) fn flow_frame(&mut self, s: usize, id: u32, port: PortId) -> FlowPick<S::Ext> {
        let now = self.now;
        let fb = self.frame_bytes;
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
        f.flow = rl.flow;
        f.seq = fl.snd_nxt;
        f.cpid = rl.tag;
        let resent = fl.snd_nxt < fl.snd_max;
        if resent {
            fl.retransmitted += 1;
        }
        fl.snd_nxt += 1;
        fl.snd_max = fl.snd_max.max(fl.snd_nxt);
        let all_sent = fl.snd_nxt == fl.n_frames;
        let arm = fl.rto_event == Time::MAX;
        fl.rto_deadline = fl.rto_deadline.min(now + self.tp.rto_ps);
        if arm {
            fl.rto_event = fl.rto_deadline;
        }
        let (flow, rto_at) = (rl.flow, fl.rto_event);
        rl.core.inflight_bytes += len as u64;
        rl.last_release = now;
        rl.last_len = len;
        let rp = &mut self.rps[s];
        let rate_before = rl.core.rate_bps;
        let timer = self.scheme.rp_on_send(&mut rl.core, &mut rl.state, &mut f, now, &mut rp.rng);
        rl.next_release = now + super::rl::pace_ps(len, rl.core.rate_bps);
        let (trace, rate) = (rl.trace, rl.core.rate_bps);
        if all_sent {
            rp.flow_pending -= 1;
        }
        if arm {
            self.q.push(rto_at, EV_FLOW_RTO, flow);
        }
        self.net.ports[port as usize].data_bytes += len as u64;
        self.set_rl_timer(id, timer);
        if rate != rate_before {
            self.trace_rl_rate(trace, rate);
        }
        self.count_generated(s as u32, f.dst);
        if T::ON {
            let site = self.station_site(s);
            let kind = if resent { Kind::Retransmit } else { Kind::Generate };
            self.tracer.frame(&self.scheme, site, kind, Reason::None, &f, None);
            self.trace_rl(id, Reason::None);
        }
        FlowPick::Frame(f)
    }

    /// A data frame of a flow reached its destination station `s`.
    pub(crate) fn transport_receive(&mut self, s: usize, f: &Frame<S::Ext>) {
        let now = self.now;
        let fl = &mut self.tp.flows[f.flow as usize];
        if f.seq == fl.rcv_nxt {
            fl.rcv_nxt += 1;
            fl.unacked += 1;
            fl.nack_for = u32::MAX;
            let last = fl.rcv_nxt == fl.n_frames;
            if last {
                fl.finish = now;
                if T::ON {
                    let site = station_site!(self, s);
                    self.tracer.flow(site, Kind::FlowEnd, fl.view(f.flow, None));
                }
            }
            if fl.unacked >= self.tp.ack_every || last {
                fl.unacked = 0;
                let seq = fl.rcv_nxt;
                self.emit_ack(s, f, FrameKind::Ack, seq, false);
            }
        } else if f.seq > fl.rcv_nxt {
            self.tp.counts.discarded += 1;
            if T::ON {
                let site = station_site!(self, s);
                self.tracer.frame(&self.scheme, site, Kind::Discard, Reason::OutOfOrder, f, None);
            }
            if fl.nack_for != fl.rcv_nxt {
                fl.nack_for = fl.rcv_nxt;
                let seq = fl.rcv_nxt;
                self.emit_ack(s, f, FrameKind::Nack, seq, false);
            }
        } else {
            // A duplicate (sent again after a timeout): acknowledge what we have.
            let seq = fl.rcv_nxt;
            self.emit_ack(s, f, FrameKind::Ack, seq, true);
        }
    }

    /// Station `s` acknowledges `data` (`kind`: ACK or NACK, `seq` the next
    /// frame expected; `duplicate`: `data` was already received).
    fn emit_ack(&mut self, s: usize, data: &Frame<S::Ext>, kind: FrameKind, seq: u32, duplicate: bool) {
        let echo = self.scheme.ack_echo(&data.ext);
        // born: the data frame's send time, echoed for the sender's RTT sample.
        let mut a = Frame::note(data.born, data.dst, data.src, data.dst, 0, self.ctrl_bytes, echo);
        a.kind = kind;
        a.flow = data.flow;
        a.seq = seq;
        if T::ON {
            let site = self.station_site(s);
            let what = if kind == FrameKind::Nack { Kind::NackTx } else { Kind::AckTx };
            let why = if duplicate { Reason::Duplicate } else { Reason::None };
            self.tracer.frame(&self.scheme, site, what, why, &a, None);
        }
        if kind == FrameKind::Nack {
            self.tp.counts.nacks += 1;
        } else {
            self.tp.counts.acks += 1;
        }
        let port = self.net.stations[s].port;
        self.settle(port);
        self.net.ports[port as usize].ctrl.push_back(a);
        self.try_start(port);
    }

    /// An ACK or NACK reached the flow's sender.
    pub(crate) fn transport_ack(&mut self, f: &Frame<S::Ext>) {
        let now = self.now;
        let fb = self.frame_bytes;
        let fl = &mut self.tp.flows[f.flow as usize];
        let id = fl.rl;
        if id == NO_RL {
            return; // the sender has finished
        }
        let kind = if f.kind == FrameKind::Nack { AckKind::Nack } else { AckKind::Ack };
        let cum = f.seq.min(fl.n_frames);
        let old_una = fl.snd_una;
        let was_all_sent = fl.snd_nxt == fl.n_frames;
        if cum > fl.snd_una {
            fl.snd_una = cum;
            fl.rto_deadline = now + self.tp.rto_ps;
        }
        // After going back, acknowledgements of the frames sent before can
        // overtake the new sending position.
        fl.snd_nxt = fl.snd_nxt.max(fl.snd_una);
        if kind == AckKind::Nack {
            fl.snd_nxt = fl.snd_una; // go back N
        }
        if fl.snd_una == fl.snd_nxt {
            fl.rto_deadline = Time::MAX;
        }
        let s = fl.src as usize;
        let now_all_sent = fl.snd_nxt == fl.n_frames;
        if was_all_sent && !now_all_sent {
            self.rps[s].flow_pending += 1;
        } else if !was_all_sent && now_all_sent {
            self.rps[s].flow_pending -= 1;
        }
        let view = fl.ack_view(kind, fl.bytes(old_una, fl.snd_una, fb), now.saturating_sub(f.born), fb);
        let inflight = fl.bytes(fl.snd_una, fl.snd_nxt, fb);
        let finished = fl.snd_una == fl.n_frames;
        let rl = self.rls[id as usize].as_mut().expect("live");
        rl.core.inflight_bytes = inflight;
        let rp = &mut self.rps[s];
        let timer = self.scheme.rp_on_ack(&mut rl.core, &mut rl.state, &view, &f.ext, now, &mut rp.rng);
        if let Some(t) = rl.trace {
            let window = rl.core.window_bytes;
            self.trace_window(t, window);
        }
        if finished {
            self.finish_sender(f.flow);
            let port = self.net.stations[s].port;
            self.try_start(port);
            return;
        }
        self.after_rate_change(id, timer);
    }

    /// A traced sender's window (window schemes only: `u64::MAX` is none).
    fn trace_window(&mut self, t: usize, window: u64) {
        if window == u64::MAX {
            return;
        }
        let b = self.stats.bin_now();
        self.rl_traces[t].window.get_or_insert_with(|| QueueTrace::new(0)).update(b, window);
    }

    /// The flow's last frame is acknowledged: its RL goes.
    fn finish_sender(&mut self, flow: u32) {
        let fl = &mut self.tp.flows[flow as usize];
        let id = std::mem::replace(&mut fl.rl, NO_RL);
        fl.rto_deadline = Time::MAX;
        let s = fl.src as usize;
        if let Some(t) = self.rls[id as usize].as_ref().and_then(|rl| rl.trace) {
            if let Some(w) = &mut self.rl_traces[t].window {
                // The sender is gone: no window until the pair's next flow.
                w.update(self.stats.bin_now(), 0);
            }
        }
        self.remove_rl(s, id);
        self.tp.active -= 1;
        if self.tp.end_when_done && self.tp.done() && !self.open_loop {
            self.stop_at = self.now + 1;
        }
    }

    /// The retransmission timer of `flow` fired.
    pub(crate) fn on_flow_rto(&mut self, flow: u32) {
        let now = self.now;
        let fb = self.frame_bytes;
        let fl = &mut self.tp.flows[flow as usize];
        if fl.rto_event != now {
            return;
        }
        fl.rto_event = Time::MAX;
        if fl.rl == NO_RL || fl.rto_deadline == Time::MAX {
            return;
        }
        if now < fl.rto_deadline {
            fl.rto_event = fl.rto_deadline; // progress moved it: wait again
            self.q.push(fl.rto_deadline, EV_FLOW_RTO, flow);
            return;
        }
        // Nothing acknowledged for a whole RTO: go back to the first unacknowledged frame.
        fl.timeouts += 1;
        self.tp.counts.timeouts += 1;
        if T::ON {
            let site = station_site!(self, fl.src as usize);
            self.tracer.flow(site, Kind::Rto, fl.view(flow, Some(fl.snd_una)));
        }
        let s = fl.src as usize;
        if fl.snd_nxt == fl.n_frames {
            self.rps[s].flow_pending += 1;
        }
        fl.snd_nxt = fl.snd_una;
        fl.rto_deadline = Time::MAX; // re-armed by the next frame sent
        let id = fl.rl;
        let view = fl.ack_view(AckKind::Timeout, 0, 0, fb);
        let rl = self.rls[id as usize].as_mut().expect("live");
        rl.core.inflight_bytes = 0;
        let rp = &mut self.rps[s];
        let timer = self
            .scheme
            .rp_on_ack(&mut rl.core, &mut rl.state, &view, &S::Ext::default(), now, &mut rp.rng);
        self.after_rate_change(id, timer);
    }

    /// The per-flow records of the run.
    pub(crate) fn flow_records(&self) -> Vec<FlowRecord> {
        self.tp
            .flows
            .iter()
            .map(|f| FlowRecord {
                src: self.net.station_name(f.src as usize).to_string(),
                dst: self.net.station_name(f.dst as usize).to_string(),
                size_bytes: f.size,
                start_ps: f.start,
                finish_ps: f.finish,
                ideal_fct_ps: self.ideal_fct(f),
                retransmitted: f.retransmitted,
                timeouts: f.timeouts,
                hops: f.hops,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::star_config;
    use crate::config::{ArrivalConfig, FlowConfig};
    use crate::engine::{PS_PER_MS, PS_PER_US};
    use crate::net::sim::Sim;
    use crate::stats::RunResult;
    use rand::Rng;

    /// `n` senders S1..Sn and the sink D of the star, every source silent;
    /// flows of `size` bytes from each sender to D at `start`.
    fn incast(n: usize, size: u64, pause: bool, buffer: u64) -> SimConfig {
        let mut cfg = star_config(n, 0.0, 50 * PS_PER_MS, 0);
        cfg.events.clear();
        cfg.pause.enabled = pause;
        for b in &mut cfg.bridges {
            b.buffer_bytes = buffer;
        }
        cfg.transport.flows = (1..=n)
            .map(|i| FlowConfig {
                src: format!("S{i}"),
                dst: "D".into(),
                size_bytes: size,
                start_ps: 10 * PS_PER_US,
            })
            .collect();
        cfg
    }

    fn run(cfg: &SimConfig, seed: u64) -> RunResult {
        Sim::new(cfg, seed).unwrap().run().unwrap()
    }

    #[test]
    fn a_lone_flow_completes_in_exactly_its_ideal_time() {
        for size in [1, 1499, 1500, 1501, 64_000, 1_000_000] {
            let cfg = incast(1, size, false, 150_000);
            let r = run(&cfg, 0);
            let f = &r.transport.flows[0];
            assert_ne!(f.finish_ps, Time::MAX, "size {size}");
            assert_eq!(f.finish_ps - f.start_ps, f.ideal_fct_ps, "size {size}: slowdown exactly 1");
            assert_eq!(f.hops, 3);
            assert_eq!((f.retransmitted, r.transport.counts.nacks), (0, 0));
            // The run ends when the flow is done (its last ACK is back).
            assert!(r.end_ps < 5 * PS_PER_MS, "{}", r.end_ps);
        }
    }

    #[test]
    fn with_pause_an_incast_loses_nothing_and_every_flow_completes() {
        let mut cfg = incast(8, 500_000, true, 150_000);
        cfg.pause.xoff_bytes = 100_000;
        cfg.pause.xon_bytes = 80_000;
        let r = run(&cfg, 0);
        assert_eq!(r.frames.counts.dropped_cp + r.frames.dropped_rp, 0);
        assert!(r.transport.flows.iter().all(|f| f.finish_ps != Time::MAX));
        assert_eq!(
            (r.transport.counts.nacks, r.transport.counts.timeouts, r.transport.counts.discarded),
            (0, 0, 0)
        );
        // Eight flows share the sink's 10 Gbit/s: the last ends no sooner than 4 MB at line rate.
        let last = r.transport.flows.iter().map(|f| f.finish_ps).max().unwrap();
        assert!(last - 10 * PS_PER_US >= 8 * 500_000 * 8 * 100);
        assert_eq!(r.frames.counts.generated, r.frames.counts.delivered + r.frames.in_flight);
    }

    #[test]
    fn without_pause_drops_are_recovered_and_every_byte_arrives() {
        // A 30 KB buffer cannot hold eight line-rate senders: frames drop,
        // receivers NACK the gaps, senders go back N.
        let mut cfg = incast(8, 300_000, false, 30_000);
        for (i, f) in cfg.transport.flows.iter_mut().enumerate() {
            f.start_ps += i as Time * 777_000; // not in lockstep
        }
        let r = run(&cfg, 0);
        assert!(r.frames.counts.dropped_cp > 0, "the incast overflows the buffer");
        assert!(r.transport.counts.nacks > 0);
        for f in &r.transport.flows {
            assert_ne!(f.finish_ps, Time::MAX, "{f:?}");
            assert!(f.finish_ps - f.start_ps >= f.ideal_fct_ps);
        }
        assert!(r.transport.flows.iter().map(|f| f.retransmitted).sum::<u32>() > 0);
        // Conservation: every frame sent (retransmissions included) is delivered, dropped or in flight.
        assert_eq!(
            r.frames.counts.generated,
            r.frames.counts.delivered + r.frames.counts.dropped_cp + r.frames.in_flight
        );
    }

    #[test]
    fn a_tail_loss_is_recovered_by_the_timeout() {
        // One flow, its last link stopped while the flow is on the way: the
        // frames beyond the bridge's buffer drop and no later frame reveals
        // the gap, so only the RTO can recover them.
        let mut cfg = incast(1, 30_000, false, 150_000);
        let link_cut = |at_ps, rate_bps| crate::config::EventConfig::LinkRate {
            at_ps,
            from: "B0".into(),
            to: "D".into(),
            rate_bps,
        };
        cfg.bridges.iter_mut().for_each(|b| b.buffer_bytes = 3_000);
        cfg.events.push(link_cut(10 * PS_PER_US + 2 * PS_PER_US, 0));
        cfg.events.push(link_cut(200 * PS_PER_US, 10_000_000_000));
        cfg.transport.rto_ps = 500 * PS_PER_US;
        let r = run(&cfg, 0);
        let f = &r.transport.flows[0];
        assert!(r.frames.counts.dropped_cp > 0);
        assert_ne!(f.finish_ps, Time::MAX);
        assert!(f.timeouts >= 1, "{f:?}");
    }

    #[test]
    fn poisson_arrivals_follow_their_rate_and_repeat_with_the_seed() {
        let mut cfg = star_config(4, 0.0, 20 * PS_PER_MS, 0);
        cfg.events.clear();
        cfg.transport.end_when_done = false;
        let stations: Vec<String> = ["S1", "S2", "S3", "S4", "D"].iter().map(|s| s.to_string()).collect();
        cfg.transport.arrivals = vec![ArrivalConfig {
            stations,
            rate_per_s: 10_000.0,
            cdf: vec![(1000.0, 0.0), (20_000.0, 1.0)],
            start_ps: 0,
            end_ps: 10 * PS_PER_MS,
        }];
        let a = run(&cfg, 3);
        // 5 stations x 10,000/s x 10 ms = 500 expected.
        let n = a.transport.flows.len() as f64;
        assert!((n - 500.0).abs() < 4.0 * 500f64.sqrt(), "{n}");
        assert!(a.transport.flows.iter().all(|f| f.src != f.dst && f.start_ps < 10 * PS_PER_MS));
        assert!(a.transport.flows.iter().all(|f| f.finish_ps != Time::MAX));
        let b = run(&cfg, 3);
        assert_eq!(
            serde_json::to_string(&a.transport).unwrap(),
            serde_json::to_string(&b.transport).unwrap()
        );
        let c = run(&cfg, 4);
        assert_ne!(
            serde_json::to_string(&a.transport).unwrap(),
            serde_json::to_string(&c.transport).unwrap()
        );
    }

    fn arrivals(rate_per_s: f64, stations: &[&str]) -> SimConfig {
        let mut cfg = star_config(4, 0.0, 20 * PS_PER_MS, 0);
        cfg.events.clear();
        cfg.transport.arrivals = vec![ArrivalConfig {
            stations: stations.iter().map(|s| s.to_string()).collect(),
            rate_per_s,
            cdf: vec![(1.0, 0.0), (1.0, 1.0)],
            start_ps: 0,
            end_ps: 10 * PS_PER_MS,
        }];
        cfg
    }

    fn refusal(cfg: &SimConfig) -> String {
        match Sim::new(cfg, 0) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_station_named_twice_in_arrivals_is_refused() {
        let e = refusal(&arrivals(1000.0, &["S1", "S2", "S2"]));
        assert!(e.starts_with("workload.hosts: 'S2' is listed twice"), "{e}");
    }

    /// A rate that would draw more flows than event indices can name is
    /// refused before anything runs (it used to run for minutes first).
    #[test]
    fn an_arrival_rate_past_what_the_engine_indexes_is_refused() {
        for rate in [1e300, 1e9] {
            let e = refusal(&arrivals(rate, &["S1", "S2", "D"]));
            assert!(e.starts_with("workload: arrivals[0] would start about"), "{e}");
        }
        // Just below: accepted (not run: it would start 4 M flows).
        let ok = (crate::engine::queue::MAX_INDEX as f64 - 1.0) / 3.0 / 0.01;
        assert!(Sim::new(&arrivals(ok, &["S1", "S2", "D"]), 0).is_ok());
    }

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
            let f = Flow::new(0, 1, size, 0, full as u32);
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
        let f = Flow::new(0, 1, 4000, 0, 1500);
        assert_eq!((f.n_frames, f.last_len), (3, 1000));
        assert_eq!(f.bytes(0, 3, 1500), 4000);
        assert_eq!(f.bytes(1, 3, 1500), 2500);
        assert_eq!(f.bytes(0, 2, 1500), 3000);
        let g = Flow::new(0, 1, 3000, 0, 1500);
        assert_eq!((g.n_frames, g.last_len), (2, 1500));
        let h = Flow::new(0, 1, 1, 0, 1500);
        assert_eq!((h.n_frames, h.last_len, h.bytes(0, 1, 1500)), (1, 1, 1));
    }

    /// A DCTCP flow alone on a path as fast as its own link never fills its
    /// window: cwnd validation keeps the window from growing on every ACK
    /// (to megabytes after 5 ms), so flows joining later meet a queue DCTCP
    /// holds near K, not the first flow's inflated window in the buffer.
    #[test]
    fn a_dctcp_window_grows_only_while_it_limits_the_flow() {
        use crate::scheme::dctcp::DctcpParams;
        let late_fct = |cwnd_validation: bool| {
            let mut cfg = incast(3, 0, false, 4_000_000);
            let p = DctcpParams {
                cwnd_validation,
                ..DctcpParams::default()
            };
            cfg.scheme = crate::config::SchemeConfig::of("dctcp", &p);
            let flow = |src: &str, size_bytes: u64, start_ps: Time| FlowConfig {
                src: src.into(),
                dst: "D".into(),
                size_bytes,
                start_ps,
            };
            cfg.transport.flows = vec![
                flow("S1", 20_000_000, 0),
                flow("S2", 2_000_000, 5 * PS_PER_MS),
                flow("S3", 30_000, 5 * PS_PER_MS + 500 * PS_PER_US),
            ];
            let r = run(&cfg, 0);
            assert_eq!(r.frames.counts.dropped_cp, 0);
            assert!(r.transport.flows.iter().all(|f| f.finish_ps != Time::MAX));
            let late = &r.transport.flows[2];
            late.finish_ps - late.start_ps
        };
        // The queue near K (78 us) and the new flow's alpha of 1 halving its
        // window each RTT: about 7 RTTs of 90 us (measured 590 us).
        let fct = late_fct(true);
        assert!(fct < PS_PER_MS, "the 30 KB flow took {} us", fct / PS_PER_US);
        // Growing S1's window by every ACK: 2,411 us.
        let fct = late_fct(false);
        assert!(fct > 2 * PS_PER_MS, "the 30 KB flow took {} us", fct / PS_PER_US);
    }
}

//! Building a simulation: the network of a config, every engine check that
//! needs the built network (routes, traces, flows), the statistics, and the
//! scheme chosen once per run (`build`: schemes are type parameters, so the
//! per-frame path has no dynamic dispatch).

use super::port::{Port, PortId, NO_PEER_BRIDGE, NO_TRACE};
use super::rl::StationRp;
use super::sim::*;
use super::topology::{Dest, Network, NodeKind};
use super::transport::Transport;
use crate::config::{fail, BufferMode, ConfigError, EventConfig, RoutingConfig, SimConfig};
use crate::engine::queue::EventQueue;
use crate::engine::rng::stream;
use crate::engine::Time;
use crate::scheme::{AnyScheme, Scheme};
use crate::stats::{QueueHist, QueueTrace, Stats, TransportCounters};
use crate::trace::record::{TraceNet, TracePlan};
use crate::trace::{NoTrace, Recorder, TraceOutput, Tracer};
use std::collections::BTreeMap;

/// The simulation of `cfg` for run `seed`, with the scheme it names; with
/// `out`, recording the trace the config asks for there (one more
/// instantiation per scheme: the untraced one has no hook at all).
pub(crate) fn build(cfg: &SimConfig, seed: u64, out: Option<&TraceOutput>) -> Result<Box<dyn Run>, ConfigError> {
    let scheme = AnyScheme::from_config(&cfg.scheme)?;
    Ok(match out.filter(|_| cfg.trace.records()) {
        Some(out) => crate::with_scheme!(scheme, s => Box::new(NetSim::with_tracer(cfg, seed, s, |plan, net| {
            Recorder::new(plan, net, out, seed)
        })?) as Box<dyn Run>),
        None => crate::with_scheme!(scheme, s => Box::new(NetSim::new(cfg, seed, s)?) as Box<dyn Run>),
    })
}

/// For each port, the output of the bridge at its far end when that bridge
/// forwards every data frame the moment it arrives, so that the arrival can
/// be computed when the frame is sent, with no event of its own. That holds
/// for a bridge with exactly two ports (what enters one leaves by the
/// other), no CP on either, a private buffer per output (`per_output`,
/// `per_input`, `infinite`: an empty queue admits any frame), an output at
/// least as fast as the input and neither rate ever changed by a scenario
/// event, and an untraced output: frames then arrive at least one
/// serialisation apart and find the output idle. The caller also requires a
/// network in which no control frame can use the output (no PAUSE, a scheme
/// that never notifies, no transport flows). Frames leave as they would have
/// at the same instants; only the order in which equal-time events were
/// scheduled can differ, which the tests show leaves results identical.
fn express_ports<E: Copy + Default>(net: &Network<E>, has_cp: &[bool], rate_changes: &[PortId]) -> Vec<PortId> {
    (0..net.ports.len())
        .map(|p| {
            let port = &net.ports[p];
            let b = port.peer_bridge;
            if b == NO_PEER_BRIDGE {
                return NO_EXPRESS;
            }
            let node = &net.nodes[port.peer as usize];
            if node.ports.len() != 2 || node.ports.iter().any(|&q| has_cp[q as usize]) {
                return NO_EXPRESS;
            }
            if !matches!(
                net.bridges[b as usize].buffer_mode,
                BufferMode::PerOutput | BufferMode::PerInput | BufferMode::Infinite
            ) {
                return NO_EXPRESS;
            }
            let out = if node.ports[0] == port.reverse {
                node.ports[1]
            } else {
                node.ports[0]
            };
            let o = &net.ports[out as usize];
            let fixed = !rate_changes.contains(&(p as PortId)) && !rate_changes.contains(&out);
            if fixed && o.rate_bps >= port.rate_bps && o.rate_bps > 0 && o.trace == NO_TRACE {
                out
            } else {
                NO_EXPRESS
            }
        })
        .collect()
}

impl<S: Scheme> NetSim<S> {
    /// Builds the network of `cfg` for run `seed`, untraced; every
    /// configuration error (the trace's included) is reported here, before
    /// anything runs.
    pub fn new(cfg: &SimConfig, seed: u64, scheme: S) -> Result<NetSim<S>, ConfigError> {
        NetSim::with_tracer(cfg, seed, scheme, |_, _| Ok(NoTrace))
    }
}

impl<S: Scheme, T: Tracer<S>> NetSim<S, T> {
    /// Builds the network of `cfg` for run `seed`, traced by the tracer
    /// `tracer` makes from the checked trace config and the network's names.
    pub fn with_tracer(
        cfg: &SimConfig,
        seed: u64,
        scheme: S,
        tracer: impl FnOnce(TracePlan, TraceNet) -> Result<T, ConfigError>,
    ) -> Result<NetSim<S, T>, ConfigError> {
        let mut net = Network::<S::Ext>::build(cfg, seed)?;
        let n_st = net.n_stations();
        let mut cp_on: Vec<bool> = net
            .ports
            .iter()
            .map(|p| matches!(net.nodes[p.owner as usize].kind, NodeKind::Bridge(b) if net.bridges[b as usize].cp))
            .collect();
        if !cfg.cp_ports.is_empty() {
            cp_on.iter_mut().for_each(|x| *x = false);
            for name in &cfg.cp_ports {
                let p = name
                    .split_once("->")
                    .and_then(|(a, b)| net.port_by_name(a.trim(), b.trim()))
                    .ok_or_else(|| ConfigError::new("cp_ports", format!("no link direction '{name}'")))?;
                if !matches!(net.nodes[net.ports[p as usize].owner as usize].kind, NodeKind::Bridge(_)) {
                    return fail("cp_ports", format!("'{name}' is a station's port; CPs are bridge output ports"));
                }
                cp_on[p as usize] = true;
            }
        }
        let cps: Vec<Option<S::Cp>> = net
            .ports
            .iter()
            .zip(&cp_on)
            .map(|(p, &on)| on.then(|| scheme.new_cp(stream(seed, &format!("{}/cp", p.name)))))
            .collect();
        let has_cp: Vec<bool> = cps.iter().map(Option::is_some).collect();
        let rps = (0..n_st)
            .map(|s| {
                let st = &net.stations[s];
                StationRp::new(st.rl_scope, st.rl_order, stream(seed, &format!("{}/rp", net.station_name(s))))
            })
            .collect();
        if net.ports.len() >= u16::MAX as usize {
            return fail(
                "nodes",
                format!("{n_st} stations / {} ports is more than the engine indexes", net.ports.len()),
            );
        }
        for p in 0..net.ports.len() {
            let owner = net.ports[p].owner as usize;
            let peer = net.ports[p].peer as usize;
            net.ports[p].peer_is_station = matches!(net.nodes[peer].kind, NodeKind::Station(_));
            if let NodeKind::Bridge(b) = net.nodes[peer].kind {
                net.ports[p].peer_bridge = b;
            }
            net.ports[p].lazy_ok = match net.nodes[owner].kind {
                NodeKind::Station(_) => true,
                NodeKind::Bridge(b) => {
                    // Admission then reads only this port's own accounting, which `settle` brings up to date.
                    !cfg.pause.enabled
                        && matches!(
                            net.bridges[b as usize].buffer_mode,
                            BufferMode::PerOutput | BufferMode::PerInput | BufferMode::Infinite
                        )
                }
            };
        }

        // Flows that can exist; traced when few enough (counted first: a
        // large fabric has millions).
        let n_flows: usize = net
            .stations
            .iter()
            .filter(|st| st.load > 0.0)
            .map(|st| match &st.dest {
                Dest::Fixed(_) => 1,
                Dest::Uniform | Dest::Hotspot { .. } => n_st - 1,
                Dest::Weighted { stations, .. } => stations.len(),
            })
            .sum();
        let mut flows = Vec::new();
        for (s, st) in net.stations.iter().enumerate().filter(|_| n_flows <= cfg.max_traced_flows) {
            if st.load <= 0.0 {
                continue;
            }
            match &st.dest {
                Dest::Fixed(d) => flows.push((s, *d as usize)),
                Dest::Uniform | Dest::Hotspot { .. } => flows.extend((0..n_st).filter(|&d| d != s).map(|d| (s, d))),
                Dest::Weighted { stations, .. } => flows.extend(stations.iter().map(|&d| (s, d as usize))),
            }
        }
        flows.sort_unstable();
        flows.dedup();
        let traced: &[(usize, usize)] = if flows.len() <= cfg.max_traced_flows { &flows } else { &[] };
        let windows: Vec<(Time, Time)> = cfg.windows.iter().map(|w| (w.start_ps, w.end_ps)).collect();
        let mut stats = Stats::new(
            cfg.duration_ps,
            cfg.bin_ps,
            windows,
            n_st,
            net.ports.len(),
            traced,
            cfg.per_flow,
            cfg.max_series_keys,
        );
        stats.track_order = cfg.per_flow && (cfg.routing == RoutingConfig::Ecmp || cfg.scheme.name != "nocm");

        for name in &cfg.trace_ports {
            let (a, b) = name
                .split_once("->")
                .ok_or_else(|| ConfigError::new("trace.ports", format!("'{name}' is not of the form FROM->TO")))?;
            let p = net
                .port_by_name(a.trim(), b.trim())
                .ok_or_else(|| ConfigError::new("trace.ports", format!("no link direction '{name}'")))?;
            if net.ports[p as usize].trace == NO_TRACE {
                net.ports[p as usize].trace = stats.queue_traces.len() as u32;
                stats.queue_traces.push(QueueTrace::new(p));
                let measure = (cfg.windows[0].start_ps, cfg.windows[0].end_ps);
                stats.queue_hists.push(QueueHist::new(p, cfg.frame_bytes as u64, measure));
            }
        }

        let mut q = EventQueue::with_capacity(4 * net.ports.len() + net.stations.len() + cfg.events.len() + 16);
        let mut actions = Vec::with_capacity(cfg.events.len());
        let mut timed: Vec<(Time, usize)> = Vec::new();
        for (i, e) in cfg.events.iter().enumerate() {
            let at = e.at_ps();
            let action = match e {
                EventConfig::Start { node, .. } | EventConfig::Stop { node, .. } => {
                    let n = *net
                        .node_by_name
                        .get(node)
                        .ok_or_else(|| ConfigError::new(format!("events[{i}].node"), format!("unknown node '{node}'")))?;
                    let NodeKind::Station(s) = net.nodes[n as usize].kind else {
                        return fail(
                            format!("events[{i}].node"),
                            format!("'{node}' is a bridge; only stations have sources"),
                        );
                    };
                    if matches!(e, EventConfig::Start { .. }) {
                        Action::Start(s)
                    } else {
                        Action::Stop(s)
                    }
                }
                EventConfig::LinkRate { from, to, rate_bps, .. } => {
                    let p = net
                        .port_by_name(from, to)
                        .ok_or_else(|| ConfigError::new(format!("events[{i}]"), format!("no link direction '{from}->{to}'")))?;
                    Action::LinkRate(p, *rate_bps)
                }
            };
            actions.push(action);
            if at < cfg.duration_ps {
                timed.push((at, i));
            }
        }
        let quiet = !S::NOTIFIES && !cfg.pause.enabled && cfg.transport.flows.is_empty() && cfg.transport.arrivals.is_empty();
        let express = if quiet {
            let rate_changes: Vec<PortId> = actions
                .iter()
                .filter_map(|a| match a {
                    Action::LinkRate(p, _) => Some(*p),
                    _ => None,
                })
                .collect();
            express_ports(&net, &has_cp, &rate_changes)
        } else {
            vec![NO_EXPRESS; net.ports.len()]
        };
        if quiet && !S::NP_EVENTS && !S::CP_ON_DEQUEUE {
            // Bridge ports into stations that only count what they receive,
            // at fixed rates: nothing observes their departures but the
            // statistics, which take explicit times. They drain lazily.
            for p in 0..net.ports.len() {
                let port = &net.ports[p];
                let rate_changed = actions.iter().any(|a| matches!(a, Action::LinkRate(q, _) if *q as usize == p));
                if port.lazy_ok
                    && port.peer_is_station
                    && !rate_changed
                    && matches!(net.nodes[port.owner as usize].kind, NodeKind::Bridge(_))
                {
                    net.ports[p].drain_lazy = true;
                }
            }
        }
        // Equal times apply in list order: the queue breaks ties by push order.
        timed.sort_by_key(|&(t, i)| (t, i));
        for (t, i) in timed {
            q.push(t, EV_SCENARIO, i as u32);
        }

        let open_loop = net.stations.iter().any(|st| st.load > 0.0);
        let has_flows = !(cfg.transport.flows.is_empty() && cfg.transport.arrivals.is_empty());
        let trace_net = TraceNet {
            names: crate::io::events::EventNames {
                nodes: net.nodes.iter().map(|n| n.name.clone()).collect(),
                ports: net.ports.iter().map(|p| p.name.clone()).collect(),
            },
            n_stations: n_st,
            port_owner: net.ports.iter().map(|p| p.owner).collect(),
            ctrl_bytes: cfg.control_frame_bytes as u16,
            pfc: has_flows,
        };
        let plan = TracePlan::check(&cfg.trace, &trace_net)?;
        let tracer = tracer(plan, trace_net)?;
        let mut sim = NetSim {
            scheme,
            tracer,
            cps,
            rps,
            rls: Vec::new(),
            free_rls: Vec::new(),
            rl_overflow: false,
            prefetch: q.is_calendar() && net.ports.len() * std::mem::size_of::<Port<S::Ext>>() > PREFETCH_MIN_BYTES,
            express,
            rl_traces: Vec::new(),
            rl_trace_index: BTreeMap::new(),
            trace_rls: cfg.trace_rls.clone(),
            nps: (0..n_st).map(|_| Vec::new()).collect(),
            n_stations: n_st,
            now: 0,
            duration: cfg.duration_ps,
            seed,
            frame_bytes: cfg.frame_bytes,
            ctrl_bytes: cfg.control_frame_bytes as u16,
            q,
            net,
            stats,
            pause: cfg.pause.clone(),
            measure: (cfg.windows[0].start_ps, cfg.windows[0].end_ps),
            actions,
            sink_events: S::NP_EVENTS || !(cfg.transport.flows.is_empty() && cfg.transport.arrivals.is_empty()),
            window_names: cfg.windows.iter().map(|w| w.name.clone()).collect(),
            wall_s: 0.0,
            finished: false,
            tp: Transport {
                flows: Vec::new(),
                gens: Vec::new(),
                ack_every: 1,
                rto_ps: Time::MAX,
                end_when_done: false,
                active: 0,
                pending_starts: 0,
                gens_live: 0,
                counts: TransportCounters::default(),
            },
            open_loop,
            stop_at: Time::MAX,
            warnings: Vec::new(),
        };
        let paths = sim.transport_init(cfg)?;
        let view = sim.network_view(paths);
        sim.warnings = sim.scheme.check_network(&view)?;
        Ok(sim)
    }
}

impl Sim {
    /// Builds the network and scheme of `cfg` for run `seed`; every
    /// configuration error is reported here, before anything runs.
    pub fn new(cfg: &SimConfig, seed: u64) -> Result<Sim, ConfigError> {
        if cfg.fidelity == crate::flow::Fidelity::Flow {
            return Ok(Sim::from_run(Box::new(crate::flow::FlowSim::new(cfg, seed)?)));
        }
        Ok(Sim::from_run(build(cfg, seed, None)?))
    }

    /// As `new`, recording the trace the config asks for (`cfg.trace`:
    /// events.parquet, pcapng captures) into `out`; a config that asks for
    /// none builds the untraced simulation.
    pub fn with_trace(cfg: &SimConfig, seed: u64, out: &TraceOutput) -> Result<Sim, ConfigError> {
        if cfg.fidelity == crate::flow::Fidelity::Flow {
            // No frames to trace: the flow-level model says so in its warnings.
            return Sim::new(cfg, seed);
        }
        Ok(Sim::from_run(build(cfg, seed, Some(out))?))
    }
}

//! Building a simulation: the network of a config, every engine check that
//! needs the built network (routes, traces, flows), the statistics, and the
//! scheme chosen once per run (`build`: schemes are type parameters, so the
//! per-frame path has no dynamic dispatch).

use super::ctx::{Action, Ctx, RunSpec, EV_SCENARIO, EV_WATCHDOG, POLL_DEADLOCK};
use super::fabric::{Fabric, NO_EXPRESS};
use super::hosts::Hosts;
use super::port::{Port, PortId, NO_PEER_BRIDGE, NO_TRACE};
use super::rl::StationRp;
use super::station::Dest;
use super::topology::{Network, NodeKind};
use super::transport::{FlowPaths, Transport};
use super::trim::Trimming;
use crate::config::{fail, BufferMode, ConfigError, EventConfig, RoutingConfig, SimConfig};
use crate::engine::queue::EventQueue;
use crate::engine::rng::stream;
use crate::engine::Time;
use crate::scheme::{NetView, PathView, Scheme};
use crate::stats::{QueueHist, QueueTrace, Stats, TransportCounters};
use crate::trace::record::{TraceNet, TracePlan};
use crate::trace::Tracer;
use std::collections::BTreeMap;

/// Bytes of port state above which the event loop prefetches (half the L2
/// cache of this project's machines: below it the ports stay cached and the
/// hints cost more than they save, about 5% at 64 hosts).
pub(crate) const PREFETCH_MIN_BYTES: usize = 1 << 20;

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
pub(crate) fn express_ports<E: Copy + Default>(net: &Network<E>, has_cp: &[bool], rate_changes: &[PortId]) -> Vec<PortId> {
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

/// The elements of one run, built and checked: what [`NetSim`] is made of
/// (`NetSim::new` / `with_tracer` take it over).
///
/// [`NetSim`]: super::sim::NetSim
pub(crate) struct Assembled<S: Scheme, T: Tracer<S>> {
    pub ctx: Ctx<S, T>,
    pub fabric: Fabric<S>,
    pub hosts: Hosts<S>,
    pub actions: Vec<Action>,
    pub warnings: Vec<String>,
    pub prefetch: bool,
}

/// Builds the network of `cfg` for run `seed` with `scheme`, traced by
/// the tracer `tracer` makes from the checked trace config and the
/// network's names; every configuration error is reported here.
pub(crate) fn assemble<S: Scheme, T: Tracer<S>>(
    cfg: &SimConfig,
    seed: u64,
    scheme: S,
    tracer: impl FnOnce(TracePlan, TraceNet) -> Result<T, ConfigError>,
) -> Result<Assembled<S, T>, ConfigError> {
    {
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
            .map(|(p, &on)| {
                on.then(|| {
                    // The port's own profile, else its bridge's (else the scheme's).
                    let own = cfg.port_overrides.iter().find(|o| o.port == p.name).and_then(|o| o.red);
                    let red = own.or(match net.nodes[p.owner as usize].kind {
                        NodeKind::Bridge(b) => {
                            let b = &cfg.bridges[b as usize];
                            // A profile written for one rate, scaled to this port's.
                            b.red.map(|r| match b.red_ref_bps {
                                Some(reference) => r.scaled(p.nominal_rate_bps as f64 / reference),
                                None => r,
                            })
                        }
                        _ => None,
                    });
                    let into_station = matches!(net.nodes[p.peer as usize].kind, NodeKind::Station(_));
                    scheme.new_cp_at(stream(seed, &format!("{}/cp", p.name)), red, into_station)
                })
            })
            .collect();
        let has_cp: Vec<bool> = cps.iter().map(Option::is_some).collect();
        let mut red_warned = red_warnings(cfg, S::MARKS_ECN, &cp_on, &net);
        let rps = (0..n_st)
            .map(|s| {
                let st = &net.stations[s];
                StationRp::new(st.rl_scope, st.rl_order, stream(seed, &format!("{}/rp", net.station_name(s))))
            })
            .collect();
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
        // A scale_buffers event under a scheme whose CP has no thresholds to scale.
        let mut scaled_warned = false;
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
                EventConfig::LinkRate {
                    from,
                    to,
                    rate_bps,
                    scale_buffers,
                    ..
                } => {
                    let p = net
                        .port_by_name(from, to)
                        .ok_or_else(|| ConfigError::new(format!("events[{i}]"), format!("no link direction '{from}->{to}'")))?;
                    if *scale_buffers {
                        // The queue scaled is a bridge's own output queue.
                        let NodeKind::Bridge(b) = net.nodes[net.ports[p as usize].owner as usize].kind else {
                            return fail(
                                format!("events[{i}].scale_buffers"),
                                format!("'{from}' is a station: its NIC has no bridge queue to scale (name a bridge's link direction)"),
                            );
                        };
                        let mode = net.bridges[b as usize].buffer_mode;
                        if mode != BufferMode::PerOutput {
                            return fail(
                                format!("events[{i}].scale_buffers"),
                                format!(
                                    "bridge '{from}' has buffer_mode = {}: only a per_output queue is a port's own to scale",
                                    serde_json::to_value(mode).unwrap_or_default()
                                ),
                            );
                        }
                        net.bridges[b as usize].port_caps = true;
                        scaled_warned |= !S::SCALES_CP;
                    }
                    Action::LinkRate(p, *rate_bps, *scale_buffers)
                }
                EventConfig::PfcStorm { node, priority, on, .. } => {
                    let s = net
                        .node_by_name
                        .get(node)
                        .and_then(|&n| match net.nodes[n as usize].kind {
                            NodeKind::Station(s) => Some(s),
                            NodeKind::Bridge(_) => None,
                        })
                        .ok_or_else(|| ConfigError::new(format!("events[{i}].node"), format!("'{node}' is not a station")))?;
                    Action::PfcStorm(net.stations[s as usize].port, *priority, *on)
                }
                EventConfig::LinkState { a, b, up, .. } => {
                    let p = net
                        .port_by_name(a, b)
                        .ok_or_else(|| ConfigError::new(format!("events[{i}]"), format!("no link between '{a}' and '{b}'")))?;
                    Action::LinkState(p, *up)
                }
            };
            actions.push(action);
            if at < cfg.duration_ps {
                timed.push((at, i));
            }
        }
        let storms = cfg
            .events
            .iter()
            .any(|e| matches!(e, EventConfig::PfcStorm { .. } | EventConfig::LinkState { .. }));
        let quiet = !S::NOTIFIES && !cfg.pause.enabled && !storms && cfg.transport.flows.is_empty() && cfg.transport.arrivals.is_empty();
        let express = if quiet {
            let rate_changes: Vec<PortId> = actions
                .iter()
                .filter_map(|a| match a {
                    Action::LinkRate(p, ..) => Some(*p),
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
                let rate_changed = actions.iter().any(|a| matches!(a, Action::LinkRate(q, ..) if *q as usize == p));
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
        let watchdog = cfg.pause.enabled && cfg.pause.mode == crate::config::PauseMode::Pfc && cfg.pause.watchdog;
        if watchdog {
            for p in net.ports.iter_mut().filter(|p| p.pfc_in.is_some()) {
                p.watchdog = Some(Box::default());
            }
            let first = crate::engine::time::ms_to_ps(cfg.pause.watchdog_poll_ms).max(1);
            if first < cfg.duration_ps {
                q.push(first, EV_WATCHDOG, 0);
            }
        }
        if cfg.pause.enabled && cfg.pause.mode == crate::config::PauseMode::Pfc && cfg.pause.deadlock_detector {
            let first = crate::engine::time::ms_to_ps(cfg.pause.deadlock_poll_ms).max(1);
            if first < cfg.duration_ps {
                q.push(first, EV_WATCHDOG, POLL_DEADLOCK);
            }
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
        let prefetch = q.is_calendar() && net.ports.len() * std::mem::size_of::<Port<S::Ext>>() > PREFETCH_MIN_BYTES;
        let mut ctx = Ctx {
            now: 0,
            q,
            stats,
            scheme,
            tracer,
            run: RunSpec {
                duration: cfg.duration_ps,
                stop_at: Time::MAX,
                measure: (cfg.windows[0].start_ps, cfg.windows[0].end_ps),
                seed,
                frame_bytes: cfg.frame_bytes,
                ctrl_bytes: cfg.control_frame_bytes as u16,
                sink_events: S::NP_EVENTS || !(cfg.transport.flows.is_empty() && cfg.transport.arrivals.is_empty()),
                open_loop,
            },
            overflow: false,
        };
        let Network {
            nodes,
            stations,
            bridges,
            ports,
            router,
            node_by_name,
        } = net;
        let mut fabric = Fabric {
            nodes,
            ports,
            bridges,
            cps,
            router,
            express,
            pause: cfg.pause.clone(),
            pfc_frames: [0; 8],
            watchdog_storms: [0; 8],
            watchdog_drops: [0; 8],
            deadlock: Default::default(),
            reroute: None,
            buffer_drops: [0; 8],
            headroom_drops: [0; 8],
            lossless: if cfg.pause.enabled && cfg.pause.mode == crate::config::PauseMode::Pfc {
                cfg.pause.lossless_mask()
            } else {
                0
            },
            pfc_on: cfg.pause.enabled && cfg.pause.mode == crate::config::PauseMode::Pfc,
            watchdog_drop: cfg.pause.watchdog && cfg.pause.watchdog_action == crate::config::WatchdogAction::Drop,
            plain: false,
            trim: None,
            n_stations: n_st,
            node_by_name,
        };
        fabric.plain = !(fabric.pfc_on
            || fabric.watchdog_drop
            || fabric.bridges.iter().any(|b| b.buffer_mode == BufferMode::Mmu)
            || fabric.ports.iter().any(|p| p.multiclass));
        if cfg.events.iter().any(|e| matches!(e, EventConfig::LinkState { .. })) {
            fabric.keep_routing(&cfg.routing, seed, &cfg.routes);
        }
        let mut hosts = Hosts {
            stations,
            rps,
            rls: Vec::new(),
            free_rls: Vec::new(),
            nps: (0..n_st).map(|_| Vec::new()).collect(),
            rl_traces: Vec::new(),
            rl_trace_index: BTreeMap::new(),
            trace_rls: cfg.trace_rls.clone(),
            tp: Transport {
                flows: Vec::new(),
                gens: Vec::new(),
                header_bytes: 0,
                ack_every: 1,
                rto_ps: Time::MAX,
                end_when_done: false,
                active: 0,
                pending_starts: 0,
                gens_live: 0,
                counts: TransportCounters::default(),
                deps: None,
                jobs: None,
                sel_cfg: Default::default(),
                sel: Vec::new(),
                pacers: Vec::new(),
                quantum_ps: Vec::new(),
                sinks: Vec::new(),
            },
        };
        let paths = hosts.transport_init(cfg, &mut ctx, &fabric)?;
        let view = network_view(cfg, &fabric, &hosts, paths);
        ctx.scheme.fit_network(&view);
        if S::SELECTIVE {
            let sel = ctx.scheme.selective();
            if let Some(q) = sel.queue_bytes {
                for b in fabric.bridges.iter_mut().filter(|b| b.buffer_mode == BufferMode::PerOutput) {
                    b.buffer_bytes = q;
                }
                if cfg.pause.enabled && cfg.pause.xoff_bytes >= q {
                    red_warned.push(format!(
                        "pause.xoff_bytes = {} is not below the scheme's queue of {q} bytes (uet.queue_bdp): the queue fills before PAUSE is sent, so frames are trimmed or dropped on a paused fabric",
                        cfg.pause.xoff_bytes
                    ));
                }
            }
            let lines: Vec<f64> = hosts
                .stations
                .iter()
                .map(|st| fabric.ports[st.port as usize].nominal_rate_bps as f64)
                .collect();
            hosts.tp.selective(sel, &lines);
            if S::TRIMS {
                fabric.trim = Some(Box::new(Trimming::new(sel, fabric.ports.len(), stream(seed, "trim"))));
            }
        }
        let mut warnings = ctx.scheme.check_network(&view)?;
        warnings.extend(pfc_warnings(cfg));
        warnings.extend(headroom_warnings(cfg));
        warnings.extend(red_warned);
        if scaled_warned {
            warnings.push(format!(
                "events: scale_buffers scales the queues only: scheme '{}' marks no ECN between two queue thresholds to scale (uet does)",
                cfg.scheme.name
            ));
        }
        Ok(Assembled {
            ctx,
            fabric,
            hosts,
            actions,
            warnings,
            prefetch,
        })
    }
}

/// What a scheme checks its parameters against: the slowest sender's
/// line rate and the flows' paths (from `Hosts::transport_init`).
fn network_view<S: Scheme>(cfg: &SimConfig, fabric: &Fabric<S>, hosts: &Hosts<S>, paths: FlowPaths) -> NetView {
    let mut senders: Vec<usize> = (0..fabric.n_stations).filter(|&s| hosts.stations[s].load > 0.0).collect();
    senders.extend(hosts.tp.flows.iter().map(|f| f.src as usize));
    senders.extend(hosts.tp.gens.iter().map(|g| g.station as usize));
    let slowest = senders
        .into_iter()
        .map(|s| (fabric.ports[hosts.stations[s].port as usize].nominal_rate_bps, s))
        .min();
    let name = |s: u32| fabric.nodes[s as usize].name.clone();
    let cp_queue_bytes = (0..fabric.ports.len())
        .filter(|&p| fabric.cps[p].is_some())
        .filter_map(|p| match fabric.nodes[fabric.ports[p].owner as usize].kind {
            NodeKind::Bridge(b) => {
                let br = &fabric.bridges[b as usize];
                let bytes = br.buffer_bytes as f64;
                let inputs = fabric.nodes[br.node as usize].ports.len().saturating_sub(1).max(1) as f64;
                Some(match br.buffer_mode {
                    BufferMode::PerOutput | BufferMode::Shared => bytes,
                    BufferMode::PerInput => bytes * inputs,
                    BufferMode::Dynamic => bytes * br.dt_alpha / (1.0 + br.dt_alpha),
                    BufferMode::Infinite => f64::INFINITY,
                    // At most the whole buffer (a queue is capped by thresholds below it).
                    BufferMode::Mmu => bytes,
                })
            }
            NodeKind::Station(_) => None,
        })
        .fold(0.0, f64::max);
    NetView {
        min_line_rate_bps: slowest.map_or(0.0, |(r, _)| r as f64),
        slowest_sender: slowest.map_or_else(String::new, |(_, s)| name(s as u32)),
        cp_queue_bytes,
        paths: paths
            .into_iter()
            .map(|((base_rtt_ps, hops), (src, dst))| PathView {
                flow: format!("{}->{}", name(src), name(dst)),
                base_rtt_ps,
                hops,
            })
            .collect(),
        frame_bytes: cfg.frame_bytes,
        header_bytes: cfg.transport.header_bytes,
        ctrl_bytes: cfg.control_frame_bytes,
    }
}

/// A port's headroom (`[[ports]]`) on a bridge without an MMU: legal, and
/// ignored.
fn headroom_warnings(cfg: &SimConfig) -> Vec<String> {
    cfg.port_overrides
        .iter()
        .enumerate()
        .filter(|(_, o)| o.headroom.is_some())
        .filter_map(|(i, o)| {
            let from = o.port.split_once("->").map(|(a, _)| a)?;
            let b = cfg.bridges.iter().find(|b| b.name == from)?;
            (b.buffer_mode != BufferMode::Mmu).then(|| {
                format!(
                    "ports[{i}].headroom_bytes: bridge {from}'s buffer_mode is not \"mmu\": a headroom is kept by mmu buffers only; ignored"
                )
            })
        })
        .collect()
}

/// A RED profile that marks nothing: the scheme marks no ECN, a port's
/// profile is not on a CP port, or no bridge with a profile has one.
fn red_warnings<E>(cfg: &SimConfig, marks_ecn: bool, cp_on: &[bool], net: &Network<E>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, o) in cfg.port_overrides.iter().enumerate().filter(|(_, o)| o.red.is_some()) {
        if !marks_ecn {
            out.push(format!(
                "ports[{i}].ecn_kmin_bytes / ecn_kmax_bytes: the scheme marks no ECN; the RED profile is ignored"
            ));
        } else if !net.ports.iter().zip(cp_on).any(|(p, &on)| on && p.name == o.port) {
            out.push(format!(
                "ports[{i}].ecn_kmin_bytes / ecn_kmax_bytes: {} is not a CP port, so nothing is marked there",
                o.port
            ));
        }
    }
    let with_red: Vec<usize> = (0..cfg.bridges.len()).filter(|&b| cfg.bridges[b].red.is_some()).collect();
    let Some(&first) = with_red.first() else {
        return out;
    };
    let name = &cfg.bridges[first].name;
    if !marks_ecn {
        out.push(format!(
            "bridge {name}: ecn_kmin_bytes / ecn_kmax_bytes: the scheme marks no ECN; the RED profile is ignored"
        ));
        return out;
    }
    let is_cp = |b: usize| {
        net.ports
            .iter()
            .zip(cp_on)
            .any(|(p, &on)| on && matches!(net.nodes[p.owner as usize].kind, NodeKind::Bridge(x) if x as usize == b))
    };
    if !with_red.iter().any(|&b| is_cp(b)) {
        out.push(format!(
            "bridge {name}: ecn_kmin_bytes / ecn_kmax_bytes: no bridge with a RED profile has a CP port (cp = false), so nothing is marked"
        ));
    }
    out
}

/// PFC settings that are legal but pause nothing: said once per run.
fn pfc_warnings(cfg: &SimConfig) -> Vec<String> {
    use crate::config::PauseMode;
    let p = &cfg.pause;
    if !(p.enabled && p.mode == PauseMode::Pfc) {
        if let Some(i) = cfg.events.iter().position(|e| matches!(e, EventConfig::PfcStorm { .. })) {
            return vec![format!(
                "events[{i}]: a pfc_storm while PFC is off (it needs pause.mode = \"pfc\" and pause on): its PFC frames are ignored"
            )];
        }
    }
    if p.mode != PauseMode::Pfc {
        return Vec::new();
    }
    if !p.enabled {
        return vec!["pause.mode = \"pfc\" while pause.enabled = false: nothing is paused".into()];
    }
    let lossless = p.lossless_mask();
    let mut out = Vec::new();
    if !cfg.stations.iter().any(|s| lossless & (1 << s.priority) != 0) {
        out.push(format!(
            "pause.mode = \"pfc\": no station sends at a lossless priority (pause.lossless = {:?}): nothing is paused",
            p.lossless
        ));
    }
    for (i, e) in cfg.events.iter().enumerate() {
        if let EventConfig::PfcStorm { priority, on: true, .. } = e {
            if lossless & (1 << priority) == 0 {
                out.push(format!(
                    "events[{i}]: a pfc_storm on priority {priority}, which is not lossless (pause.lossless = {:?}): ports honour PFC for lossless priorities only, nothing is paused",
                    p.lossless
                ));
            }
        }
    }
    out
}

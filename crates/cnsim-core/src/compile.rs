//! The scenario compiled: the scenario as the user wrote it (the user's
//! units: ms, us, Gbit/s; a node's unset keys; the sources' start and stop
//! times; the hotspot), read and expanded by the front end (its topology
//! generated, its workload's flows planned), resolved into the engine's
//! configuration ([`SimConfig`]: integer picoseconds, bit/s, bytes,
//! explicit events and windows). The unit conversions, the defaults a node
//! takes from its section and every derived choice (the traced ports,
//! per-flow counters) are made here, once; the front end does no unit
//! arithmetic.
//!
//! Numbers are rounded half to even, as the front end rounded them before
//! this module existed, so that every run is the run it was.

use crate::config::{
    BridgeConfig, BufferMode, ClassScheme, DestConfig, EventConfig, LinkConfig, NicFull, PauseConfig, PauseMode, PauseTrigger, RlOrder,
    RlScope, RouteConfig, RoutingConfig, SchedulerConfig, SchemeConfig, SimConfig, StationConfig, TraceConfig, TransportConfig,
    WatchdogAction, WindowConfig,
};
use crate::engine::{Time, PS_PER_MS, PS_PER_US};
use crate::error::{fail, ConfigError};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// Propagation delay of a metre of cable (`links.cable_m`), picoseconds.
pub const CABLE_PS_PER_M: f64 = 5_000.0;

/// Stations up to which `stats.per_flow = "auto"` keeps per-flow counters.
pub const PER_FLOW_AUTO_STATIONS: usize = 256;
pub use crate::config::MAX_TRACED_FLOWS;

/// What the front end hands the compiler: the scenario as read (its
/// sections in the user's units; keys the compiler does not read are
/// ignored) and what the front end resolved from it (the routing function,
/// the scheme's table, the workload's flows).
#[derive(Debug, Deserialize)]
pub struct Input {
    pub scenario: Written,
    pub routing: RoutingConfig,
    pub scheme: SchemeConfig,
    /// A second scheme for some priorities (a workload's own `scheme`).
    #[serde(default)]
    pub class_scheme: Option<ClassScheme>,
    #[serde(default)]
    pub transport: Option<TransportConfig>,
}

/// The scenario's sections the engine configuration is made from.
#[derive(Debug, Deserialize)]
pub struct Written {
    pub duration_ms: f64,
    pub bin_us: f64,
    pub measure: Span,
    /// `[windows.NAME]`, in the file's order.
    #[serde(deserialize_with = "in_order")]
    pub windows: Vec<(String, Span)>,
    pub defaults: Defaults,
    pub station: StationSection,
    pub bridge: BridgeSection,
    pub pause: PauseSection,
    pub hotspot: Option<Hotspot>,
    pub trace: Trace,
    pub stats: Stats,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    #[serde(default)]
    pub events: Vec<Event>,
    #[serde(default)]
    pub routes: Vec<Route>,
    /// `[[ports]]`: bridge ports with their own scheduler.
    #[serde(default)]
    pub ports: Vec<PortEntry>,
    #[serde(default)]
    pub cp_ports: Vec<String>,
    /// Which model answers (`fidelity`; crate::flow).
    #[serde(default)]
    pub fidelity: crate::flow::params::Fidelity,
}

#[derive(Debug, Deserialize)]
pub struct Span {
    pub start_ms: f64,
    pub end_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct Defaults {
    pub frame_bytes: u32,
    pub control_frame_bytes: u32,
    pub link_rate_gbps: f64,
    pub link_delay_us: f64,
}

#[derive(Debug, Deserialize)]
pub struct StationSection {
    pub nic_buffer_bytes: u64,
    pub rlq_bytes: u64,
    pub processing_us: f64,
    pub rl_scope: RlScope,
    pub nic_full: NicFull,
    pub rl_order: RlOrder,
    pub priority: u8,
}

#[derive(Debug, Deserialize)]
pub struct BridgeSection {
    pub buffer_mode: BufferMode,
    pub buffer_bytes: u64,
    pub latency_us: f64,
    pub dt_alpha: f64,
    pub strict_priorities: Vec<u8>,
    pub ets_weights: [u32; 8],
    pub reserve_bytes: u64,
    pub ingress_alpha: f64,
    pub egress_alpha: f64,
    pub headroom_bytes: crate::config::Headroom,
    pub xon_offset_bytes: u64,
    pub ingress_alpha_ref_gbps: Option<f64>,
    pub ecn_kmin_bytes: Option<f64>,
    pub ecn_kmax_bytes: Option<f64>,
    pub ecn_pmax: f64,
    pub ecn_ref_gbps: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct PauseSection {
    pub enabled: bool,
    pub trigger: PauseTrigger,
    pub xoff_bytes: u64,
    pub xon_bytes: u64,
    pub quanta: u16,
    pub mode: PauseMode,
    pub lossless: Vec<u8>,
    pub watchdog: bool,
    pub watchdog_detection_ms: f64,
    pub watchdog_restoration_ms: f64,
    pub watchdog_poll_ms: f64,
    pub watchdog_action: WatchdogAction,
    pub deadlock_detector: bool,
    pub deadlock_poll_ms: f64,
}

#[derive(Debug, Deserialize)]
pub struct Hotspot {
    pub node: String,
    pub rate_gbps: f64,
    pub start_ms: f64,
    pub end_ms: f64,
}

#[derive(Debug, Deserialize)]
pub struct Trace {
    pub ports: Option<Vec<String>>,
    pub rate_limiters: Option<Vec<String>>,
    pub events: Vec<String>,
    pub event_nodes: Vec<String>,
    pub event_ports: Vec<String>,
    pub event_flows: Vec<String>,
    pub from_ms: f64,
    pub to_ms: Option<f64>,
    pub max_rows: u64,
    pub pcap: Vec<String>,
    pub snaplen: u32,
    pub pcap_max_bytes: u64,
}

#[derive(Debug, Deserialize)]
pub struct Stats {
    pub per_flow: PerFlow,
    pub max_series_keys: usize,
}

/// `stats.per_flow`: a switch, or `"auto"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum PerFlow {
    Set(bool),
    Auto(String),
}

#[derive(Debug, Deserialize)]
pub struct Node {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub load: f64,
    #[serde(default)]
    pub dest: Option<Dest>,
    #[serde(default)]
    pub start_ms: f64,
    pub stop_ms: Option<f64>,
    #[serde(default)]
    pub cp: bool,
    pub ports: Option<u32>,
    pub nic_buffer_bytes: Option<u64>,
    pub rlq_bytes: Option<u64>,
    pub processing_us: Option<f64>,
    pub buffer_mode: Option<BufferMode>,
    pub buffer_bytes: Option<u64>,
    pub latency_us: Option<f64>,
    pub priority: Option<u8>,
    pub strict_priorities: Option<Vec<u8>>,
    pub ets_weights: Option<[u32; 8]>,
}

/// A station's `dest` as the front end read it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Dest {
    /// A station's name, or `uniform`.
    Name(String),
    /// `{hotspot = NAME, fraction = F}`.
    Hotspot { hotspot: String, fraction: f64 },
    /// A table of weights, in the file's order.
    Weights(#[serde(deserialize_with = "in_order")] Vec<(String, f64)>),
}

#[derive(Debug, Deserialize)]
pub struct Link {
    pub a: String,
    pub b: String,
    pub rate_gbps: Option<f64>,
    pub delay_us: Option<f64>,
    #[serde(default)]
    pub cable_m: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct Event {
    pub at_ms: f64,
    pub action: String,
    pub node: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub rate_gbps: Option<f64>,
    pub priority: Option<u8>,
    pub until_ms: Option<f64>,
    #[serde(default)]
    pub scale_buffers: bool,
}

#[derive(Debug, Deserialize)]
pub struct PortEntry {
    pub port: String,
    pub strict_priorities: Option<Vec<u8>>,
    pub ets_weights: Option<[u32; 8]>,
    #[serde(default)]
    pub headroom_bytes: Option<crate::config::Headroom>,
    #[serde(default)]
    pub ecn_kmin_bytes: Option<f64>,
    #[serde(default)]
    pub ecn_kmax_bytes: Option<f64>,
    #[serde(default)]
    pub ecn_pmax: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct Route {
    pub bridge: String,
    pub dst: String,
    pub via: String,
}

/// `[[ports]]` resolved: each port's bridge's scheduler with the port's
/// own keys laid over it.
fn port_overrides(ports: &[PortEntry], bridges: &[BridgeConfig]) -> Result<Vec<crate::config::PortOverride>, ConfigError> {
    ports
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let from = e.port.split_once("->").map(|(a, _)| a);
            let Some(b) = bridges.iter().find(|b| Some(b.name.as_str()) == from) else {
                return crate::error::fail(
                    format!("ports[{i}].port"),
                    format!("'{}' is not an output port FROM->TO of a bridge", e.port),
                );
            };
            // The RED keys' rules, before the two thresholds become one profile.
            if e.ecn_kmin_bytes.is_some() || e.ecn_kmax_bytes.is_some() || e.ecn_pmax.is_some() {
                let serde_json::Value::Object(red) = serde_json::json!({
                    "port": e.port, "ecn_kmin_bytes": e.ecn_kmin_bytes, "ecn_kmax_bytes": e.ecn_kmax_bytes, "ecn_pmax": e.ecn_pmax,
                }) else {
                    unreachable!()
                };
                crate::sections::port().check(&format!("ports[{i}]"), &red)?;
            }
            let red = e
                .ecn_kmin_bytes
                .zip(e.ecn_kmax_bytes)
                .map(|(kmin_bytes, kmax_bytes)| crate::scheme::Red {
                    kmin_bytes,
                    kmax_bytes,
                    pmax: e.ecn_pmax.or(b.red.map(|r| r.pmax)).unwrap_or(1.0),
                });
            Ok(crate::config::PortOverride {
                port: e.port.clone(),
                scheduler: SchedulerConfig {
                    strict: e.strict_priorities.clone().unwrap_or_else(|| b.scheduler.strict.clone()),
                    ets_weights: e.ets_weights.unwrap_or(b.scheduler.ets_weights),
                },
                headroom: e.headroom_bytes,
                red,
            })
        })
        .collect()
}

/// A table read as (key, value) pairs in its order (a JSON object or a
/// Python dict), or a list of pairs.
fn in_order<'de, D, V>(d: D) -> Result<Vec<(String, V)>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Pairs<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> Visitor<'de> for Pairs<V> {
        type Value = Vec<(String, V)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a table")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(kv) = m.next_entry()? {
                out.push(kv);
            }
            Ok(out)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(kv) = s.next_element()? {
                out.push(kv);
            }
            Ok(out)
        }
    }
    d.deserialize_any(Pairs(std::marker::PhantomData))
}

/// `v` x `scale` to the nearest whole unit, half to even.
fn whole(v: f64, scale: f64) -> u64 {
    (v * scale).round_ties_even() as u64
}

/// Milliseconds to picoseconds.
pub fn ms_to_ps(ms: f64) -> Time {
    whole(ms, PS_PER_MS as f64)
}

/// Microseconds to picoseconds.
pub fn us_to_ps(us: f64) -> Time {
    whole(us, PS_PER_US as f64)
}

/// Gbit/s to bit/s.
pub fn gbps_to_bps(gbps: f64) -> u64 {
    whole(gbps, 1e9)
}

impl Written {
    /// The ports whose queues are traced: `trace.ports`, else `cp_ports`,
    /// else every output port of a `cp = true` bridge while there are at
    /// most `stats.max_series_keys` of them (a large fabric names its own).
    pub fn traced_ports(&self) -> Vec<String> {
        if let Some(p) = &self.trace.ports {
            return p.clone();
        }
        if !self.cp_ports.is_empty() {
            return self.cp_ports.clone();
        }
        let cp: std::collections::HashSet<&str> = self
            .nodes
            .iter()
            .filter(|n| n.kind == "bridge" && n.cp)
            .map(|n| n.name.as_str())
            .collect();
        let ports: Vec<String> = self
            .links
            .iter()
            .flat_map(|l| [(&l.a, &l.b), (&l.b, &l.a)])
            .filter(|(x, _)| cp.contains(x.as_str()))
            .map(|(x, y)| format!("{x}->{y}"))
            .collect();
        if ports.len() <= self.stats.max_series_keys {
            ports
        } else {
            vec![]
        }
    }

    /// Whether the run keeps per-flow counters (`stats.per_flow`; auto: on
    /// up to [`PER_FLOW_AUTO_STATIONS`] stations).
    pub fn per_flow(&self) -> bool {
        match self.stats.per_flow {
            PerFlow::Set(on) => on,
            PerFlow::Auto(_) => self.nodes.iter().filter(|n| n.kind == "station").count() <= PER_FLOW_AUTO_STATIONS,
        }
    }
}

/// The engine configuration of a scenario (`input`), unchecked: `Sim::new`
/// and `check_config` check it.
pub fn resolve(input: Input) -> Result<SimConfig, ConfigError> {
    let Input {
        scenario: w,
        routing,
        scheme,
        class_scheme,
        mut transport,
    } = input;
    if let Some(t) = transport.as_mut() {
        if let Some(m) = t.matrix.take() {
            matrix_flows(&m, &mut t.flows)?;
        }
    }
    let dur = w.duration_ms;
    // The RED profile's keys are written together: their rules are checked
    // here, before the two become one profile (or none).
    let br = &w.bridge;
    if br.ecn_kmin_bytes.is_some() || br.ecn_kmax_bytes.is_some() || br.ecn_ref_gbps.is_some() {
        let serde_json::Value::Object(red) = serde_json::json!({
            "ecn_kmin_bytes": br.ecn_kmin_bytes, "ecn_kmax_bytes": br.ecn_kmax_bytes, "ecn_pmax": br.ecn_pmax,
            "ecn_ref_gbps": br.ecn_ref_gbps,
        }) else {
            unreachable!()
        };
        crate::sections::bridge().check("bridge", &red)?;
    }
    let mut windows = vec![WindowConfig {
        name: "measure".into(),
        start_ps: ms_to_ps(w.measure.start_ms),
        end_ps: ms_to_ps(w.measure.end_ms.unwrap_or(dur)),
    }];
    for (name, s) in &w.windows {
        windows.push(WindowConfig {
            name: name.clone(),
            start_ps: ms_to_ps(s.start_ms),
            end_ps: ms_to_ps(s.end_ms.unwrap_or(dur)),
        });
    }
    if let Some(h) = &w.hotspot {
        if !w.windows.iter().any(|(n, _)| n == "hotspot") && h.start_ms < dur {
            windows.push(WindowConfig {
                name: "hotspot".into(),
                start_ps: ms_to_ps(h.start_ms.min(dur)),
                end_ps: ms_to_ps(h.end_ms.min(dur)),
            });
        }
    }
    let (st, br) = (&w.station, &w.bridge);
    let mut stations = Vec::new();
    let mut bridges = Vec::new();
    let mut events = Vec::new();
    for n in &w.nodes {
        if n.kind == "station" {
            let dest = match &n.dest {
                None => DestConfig::Uniform,
                Some(Dest::Name(s)) if s == "uniform" => DestConfig::Uniform,
                Some(Dest::Name(s)) => DestConfig::Fixed { node: s.clone() },
                Some(Dest::Hotspot { hotspot, fraction }) => DestConfig::Hotspot {
                    node: hotspot.clone(),
                    fraction: *fraction,
                },
                Some(Dest::Weights(w)) => DestConfig::Weighted { weights: w.clone() },
            };
            stations.push(StationConfig {
                name: n.name.clone(),
                load: n.load,
                dest,
                nic_buffer_bytes: n.nic_buffer_bytes.unwrap_or(st.nic_buffer_bytes),
                rlq_bytes: n.rlq_bytes.unwrap_or(st.rlq_bytes),
                processing_ps: us_to_ps(n.processing_us.unwrap_or(st.processing_us)),
                rl_scope: st.rl_scope,
                nic_full: st.nic_full,
                rl_order: st.rl_order,
                priority: n.priority.unwrap_or(st.priority),
            });
            if n.load > 0.0 {
                events.push(EventConfig::Start {
                    at_ps: ms_to_ps(n.start_ms),
                    node: n.name.clone(),
                });
                if let Some(stop) = n.stop_ms {
                    events.push(EventConfig::Stop {
                        at_ps: ms_to_ps(stop),
                        node: n.name.clone(),
                    });
                }
            }
        } else {
            let buffer_mode = n.buffer_mode.unwrap_or(br.buffer_mode);
            bridges.push(BridgeConfig {
                name: n.name.clone(),
                buffer_mode,
                buffer_bytes: n.buffer_bytes.unwrap_or(br.buffer_bytes),
                latency_ps: us_to_ps(n.latency_us.unwrap_or(br.latency_us)),
                cp: n.cp,
                ports: n.ports,
                dt_alpha: if buffer_mode == BufferMode::Dynamic { br.dt_alpha } else { 1.0 },
                scheduler: SchedulerConfig {
                    strict: n.strict_priorities.clone().unwrap_or_else(|| br.strict_priorities.clone()),
                    ets_weights: n.ets_weights.unwrap_or(br.ets_weights),
                },
                mmu: crate::config::MmuConfig {
                    reserve_bytes: br.reserve_bytes,
                    ingress_alpha: br.ingress_alpha,
                    egress_alpha: br.egress_alpha,
                    headroom: br.headroom_bytes,
                    xon_offset_bytes: br.xon_offset_bytes,
                    alpha_ref_bps: br.ingress_alpha_ref_gbps.map(|g| g * 1e9),
                },
                red_ref_bps: br.ecn_ref_gbps.map(|g| g * 1e9),
                red: br
                    .ecn_kmin_bytes
                    .zip(br.ecn_kmax_bytes)
                    .map(|(kmin_bytes, kmax_bytes)| crate::scheme::Red {
                        kmin_bytes,
                        kmax_bytes,
                        pmax: br.ecn_pmax,
                    }),
            });
        }
    }
    if let Some(t) = transport.as_mut() {
        if !t.jobs.is_empty() {
            let names: Vec<String> = stations.iter().map(|s| s.name.clone()).collect();
            let jobs = std::mem::take(&mut t.jobs);
            let max = crate::engine::queue::MAX_INDEX as usize;
            let plan = crate::collective::expand(&jobs, &names, &mut t.flows, &mut t.gates, max)?;
            crate::collective::resolve_gates(&mut t.flows, &mut t.gates);
            t.plan = Some(plan);
        }
    }
    if let Some(t) = &transport {
        workload_priorities(t, &w.nodes, &mut stations)?;
    }
    let d = &w.defaults;
    // A cable length is the written link's own: its rules (not with
    // delay_us) are checked here, before it becomes a delay.
    for l in w.links.iter().filter(|l| l.cable_m.is_some()) {
        let serde_json::Value::Object(written) = serde_json::json!({
            "a": l.a, "b": l.b, "rate_gbps": l.rate_gbps, "delay_us": l.delay_us, "cable_m": l.cable_m,
        }) else {
            unreachable!()
        };
        crate::sections::link().check(&format!("links.{}-{}", l.a, l.b), &written)?;
    }
    let links: Vec<LinkConfig> = w
        .links
        .iter()
        .map(|l| LinkConfig {
            a: l.a.clone(),
            b: l.b.clone(),
            rate_bps: gbps_to_bps(l.rate_gbps.unwrap_or(d.link_rate_gbps)),
            delay_ps: match l.cable_m {
                // 5 ns per metre: light at about 2/3 c in fibre or copper.
                Some(m) => (m * CABLE_PS_PER_M).round() as Time,
                None => us_to_ps(l.delay_us.unwrap_or(d.link_delay_us)),
            },
        })
        .collect();
    if let Some(h) = &w.hotspot {
        // The hot station's one link: its rate drops for the hotspot and comes back.
        let Some(l) = w.links.iter().find(|l| l.a == h.node || l.b == h.node) else {
            return crate::error::fail("hotspot.node", format!("'{}' has no link", h.node));
        };
        let up = if l.a == h.node { &l.b } else { &l.a };
        let rate = l.rate_gbps.unwrap_or(d.link_rate_gbps);
        for (at, gbps) in [(h.start_ms, h.rate_gbps), (h.end_ms, rate)] {
            events.push(EventConfig::LinkRate {
                at_ps: ms_to_ps(at),
                from: up.clone(),
                to: h.node.clone(),
                rate_bps: gbps_to_bps(gbps),
                scale_buffers: false,
            });
        }
    }
    for (i, e) in w.events.iter().enumerate() {
        let missing = |what: &str| ConfigError::new(format!("events[{i}].{what}"), "required parameter is missing");
        let at_ps = ms_to_ps(e.at_ms);
        let event = match e.action.as_str() {
            "link_rate" => EventConfig::LinkRate {
                at_ps,
                from: e.from.clone().ok_or_else(|| missing("from"))?,
                to: e.to.clone().ok_or_else(|| missing("to"))?,
                rate_bps: gbps_to_bps(e.rate_gbps.unwrap_or(0.0)),
                scale_buffers: e.scale_buffers,
            },
            "start" => EventConfig::Start {
                at_ps,
                node: e.node.clone().ok_or_else(|| missing("node"))?,
            },
            "stop" => EventConfig::Stop {
                at_ps,
                node: e.node.clone().ok_or_else(|| missing("node"))?,
            },
            "pfc_storm" => {
                let node = e.node.clone().ok_or_else(|| missing("node"))?;
                let priority = e.priority.ok_or_else(|| missing("priority"))?;
                events.push(EventConfig::PfcStorm {
                    at_ps,
                    node: node.clone(),
                    priority,
                    on: true,
                });
                match e.until_ms {
                    Some(until) => EventConfig::PfcStorm {
                        at_ps: ms_to_ps(until),
                        node,
                        priority,
                        on: false,
                    },
                    None => continue,
                }
            }
            "link_down" => {
                let (a, b) = (
                    e.from.clone().ok_or_else(|| missing("from"))?,
                    e.to.clone().ok_or_else(|| missing("to"))?,
                );
                events.push(EventConfig::LinkState {
                    at_ps,
                    a: a.clone(),
                    b: b.clone(),
                    up: false,
                });
                match e.until_ms {
                    Some(until) => EventConfig::LinkState {
                        at_ps: ms_to_ps(until),
                        a,
                        b,
                        up: true,
                    },
                    None => continue,
                }
            }
            other => return crate::error::fail(format!("events[{i}].action"), format!("'{other}' is not an action")),
        };
        events.push(event);
    }
    let t = &w.trace;
    let trace = if t.events.is_empty() && t.pcap.is_empty() {
        TraceConfig::default()
    } else {
        TraceConfig {
            events: t.events.clone(),
            event_nodes: t.event_nodes.clone(),
            event_ports: t.event_ports.clone(),
            event_flows: t.event_flows.clone(),
            from_ps: ms_to_ps(t.from_ms),
            to_ps: t.to_ms.map_or(Time::MAX, ms_to_ps),
            max_rows: t.max_rows,
            pcap: t.pcap.clone(),
            snaplen: t.snaplen,
            pcap_max_bytes: t.pcap_max_bytes,
        }
    };
    let port_overrides = port_overrides(&w.ports, &bridges)?;
    Ok(SimConfig {
        duration_ps: ms_to_ps(dur),
        bin_ps: us_to_ps(w.bin_us),
        windows,
        frame_bytes: d.frame_bytes,
        control_frame_bytes: d.control_frame_bytes,
        max_traced_flows: MAX_TRACED_FLOWS,
        per_flow: w.per_flow(),
        max_series_keys: w.stats.max_series_keys,
        trace_ports: w.traced_ports(),
        trace_rls: w.trace.rate_limiters.clone(),
        stations,
        bridges,
        links,
        events,
        pause: PauseConfig {
            enabled: w.pause.enabled,
            trigger: w.pause.trigger,
            xoff_bytes: w.pause.xoff_bytes,
            xon_bytes: w.pause.xon_bytes,
            quanta: w.pause.quanta,
            mode: w.pause.mode,
            lossless: w.pause.lossless.clone(),
            watchdog: w.pause.watchdog,
            watchdog_detection_ms: w.pause.watchdog_detection_ms,
            watchdog_restoration_ms: w.pause.watchdog_restoration_ms,
            watchdog_poll_ms: w.pause.watchdog_poll_ms,
            watchdog_action: w.pause.watchdog_action,
            deadlock_detector: w.pause.deadlock_detector,
            deadlock_poll_ms: w.pause.deadlock_poll_ms,
        },
        trace,
        routing,
        routes: w
            .routes
            .iter()
            .map(|r| RouteConfig {
                bridge: r.bridge.clone(),
                dst: r.dst.clone(),
                via: r.via.clone(),
            })
            .collect(),
        port_overrides,
        cp_ports: w.cp_ports.clone(),
        transport: transport.unwrap_or_default(),
        scheme,
        class_scheme,
        fidelity: w.fidelity,
        flow: Default::default(),
    })
}

/// A workload's `priority` is its sending stations' (a station's NIC sends
/// one priority): set on them, refused where a station would send two or
/// its node says otherwise.
/// The flows of connection matrix `m` (io::matrix), after `flows`: node i
/// is `m.hosts[i]`, its triggers become dependencies. Errors name
/// `workload.file` and the line.
fn matrix_flows(m: &crate::config::MatrixConfig, flows: &mut Vec<crate::config::FlowConfig>) -> Result<(), ConfigError> {
    use crate::io::matrix;
    let at = "workload.file";
    let text = std::fs::read_to_string(&m.path).map_err(|e| ConfigError::new(at, format!("'{}' cannot be read ({e})", m.file)))?;
    let where_ = |line: usize| {
        if line == 0 {
            format!("'{}'", m.file)
        } else {
            format!("'{}' line {line}", m.file)
        }
    };
    let mx = matrix::parse(&text).map_err(|e| ConfigError::new(at, format!("{}: {}", where_(e.line), e.what)))?;
    if mx.nodes as usize != m.hosts.len() {
        return fail(
            at,
            format!(
                "'{}' has Nodes {}; the workload has {} hosts (the fabric's stations, or workload.hosts): node i is the i-th of them",
                m.file,
                mx.nodes,
                m.hosts.len()
            ),
        );
    }
    if mx.failures > 0 {
        return fail(
            at,
            format!(
                "'{}': failure lines (link failures) are not read; give them as [[events]] link_down or link_rate",
                m.file
            ),
        );
    }
    let deps = matrix::dependencies(&mx).map_err(|e| ConfigError::new(at, format!("{}: {}", where_(e.line), e.what)))?;
    let first = flows.len() as u32;
    let names: Vec<std::sync::Arc<str>> = m.hosts.iter().map(|h| std::sync::Arc::from(h.as_str())).collect();
    for (c, after) in mx.connections.iter().zip(deps) {
        flows.push(crate::config::FlowConfig {
            src: names[c.src as usize].clone(),
            dst: names[c.dst as usize].clone(),
            size_bytes: c.size,
            start_ps: m.start_ps.saturating_add(c.start_us.map_or(0, us_to_ps)),
            priority: m.priority,
            after: after.into_iter().map(|a| a + first).collect(),
            after_delay_ps: 0,
            tag: None,
        });
    }
    Ok(())
}

fn workload_priorities(t: &TransportConfig, nodes: &[Node], stations: &mut [StationConfig]) -> Result<(), ConfigError> {
    use std::collections::BTreeMap;
    let mut set: BTreeMap<&str, (u8, String)> = BTreeMap::new();
    // Built on the first workload with a priority (most have none).
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut station_index: BTreeMap<String, usize> = BTreeMap::new();
    let senders = t
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.priority.map(|p| (&*f.src, p, format!("transport.flows[{i}].priority"))));
    let arrivals = t.arrivals.iter().enumerate().flat_map(|(i, a)| {
        a.priority.into_iter().flat_map(move |p| {
            a.stations
                .iter()
                .map(move |s| (s.as_str(), p, format!("transport.arrivals[{i}].priority")))
        })
    });
    for (name, prio, at) in senders.chain(arrivals) {
        if let Some((was, by)) = set.get(name) {
            if *was != prio {
                return fail(
                    at,
                    format!("{prio} for station {name}, which {by} gives priority {was}: a station's NIC sends one priority; give the workloads hosts of their own"),
                );
            }
            continue;
        }
        if index.is_empty() {
            index = nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
            station_index = stations.iter().enumerate().map(|(i, s)| (s.name.clone(), i)).collect();
        }
        if let Some(n) = index.get(name).map(|&i| &nodes[i]) {
            if let Some(own) = n.priority.filter(|&own| own != prio) {
                return fail(
                    at,
                    format!("{prio} for station {name}, whose node sets priority {own}: a station's NIC sends one priority"),
                );
            }
        }
        if let Some(&i) = station_index.get(name) {
            stations[i].priority = prio;
        }
        set.insert(name, (prio, at));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_round_half_to_even_as_the_front_end_did() {
        assert_eq!(ms_to_ps(1.5), 1_500_000_000);
        assert_eq!(us_to_ps(0.0000025), 2); // 2.5 ps: half to even
        assert_eq!(us_to_ps(0.0000035), 4);
        assert_eq!(gbps_to_bps(10.0), 10_000_000_000);
        assert_eq!(gbps_to_bps(1e-9), 1);
    }

    #[test]
    fn weights_keep_their_order() {
        let d: Dest = serde_json::from_str(r#"{"B": 3.0, "A": 1.0}"#).unwrap();
        // serde_json's map is sorted; a Python dict arrives in its own order.
        assert!(matches!(d, Dest::Weights(w) if w.len() == 2));
        let d: Dest = serde_json::from_str(r#"[["B", 3.0], ["A", 1.0]]"#).unwrap();
        assert!(matches!(d, Dest::Weights(w) if w[0].0 == "B"));
    }
}

//! The resolved engine configuration (docs/engine-interface.md): what the
//! Python layer produces from a scenario file, in engine units (integer
//! picoseconds, bit/s, bytes). Unknown fields are rejected so that a typo in
//! the resolver cannot silently fall back to a default.

use crate::engine::{Time, PS_PER_MS, PS_PER_S, PS_PER_US};
pub use crate::flow_control::{AutoWord, Headroom, MmuConfig, PauseConfig, PauseMode, PauseTrigger, SchedulerConfig, WatchdogAction};
use crate::params::{num, Table};
use crate::transport_config::max_time;
pub use crate::transport_config::{ArrivalConfig, ClassScheme, FlowConfig, MatrixConfig, TransportConfig};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub use crate::error::{fail, ConfigError};
pub use crate::scheme::params::SchemeConfig;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Run length.
    pub duration_ps: Time,
    /// Width of the time-series bins.
    pub bin_ps: Time,
    /// Measurement windows; `windows[0]` is the scenario's measure window.
    pub windows: Vec<WindowConfig>,
    /// Data frame length on the wire (bytes).
    #[serde(default = "default_frame_bytes")]
    pub frame_bytes: u32,
    /// Control frame (PAUSE, CNM) length on the wire (bytes).
    #[serde(default = "default_control_frame_bytes")]
    pub control_frame_bytes: u32,
    /// Per-flow time series are kept only when the scenario has at most this many flows.
    #[serde(default = "default_max_traced_flows")]
    pub max_traced_flows: usize,
    pub stations: Vec<StationConfig>,
    pub bridges: Vec<BridgeConfig>,
    pub links: Vec<LinkConfig>,
    #[serde(default)]
    pub events: Vec<EventConfig>,
    pub pause: PauseConfig,
    /// Ports (`"FROM->TO"`) whose queue length is recorded as a time series.
    #[serde(default)]
    pub trace_ports: Vec<String>,
    /// Rate limiters (`"STATION|FROM->TO"`, the station and its CP port) whose
    /// rate and RLQ series are recorded; `None`: every one (at most 256).
    #[serde(default)]
    pub trace_rls: Option<Vec<String>>,
    /// The event trace (events.parquet) and packet captures (pcapng):
    /// recorded only by a run given somewhere to write them (`Sim::with_trace`).
    #[serde(default)]
    pub trace: TraceConfig,
    /// The routing function (net/routing.rs).
    #[serde(default)]
    pub routing: RoutingConfig,
    /// Explicit next hops that override the routing function.
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
    /// Bridge ports with their own settings (`[[ports]]`), resolved over
    /// their bridge's.
    #[serde(default)]
    pub port_overrides: Vec<PortOverride>,
    /// Per-flow counters (src x dst) besides the per-source and
    /// per-destination ones; the Python layer turns them on for small fabrics.
    #[serde(default = "default_true")]
    pub per_flow: bool,
    /// A family of per-key time series (per destination, per link direction,
    /// per port paused) is recorded only when it has at most this many keys.
    #[serde(default = "default_max_series_keys")]
    pub max_series_keys: usize,
    /// When not empty: CP detection on exactly these bridge ports
    /// (`"FROM->TO"`), overriding the bridges' `cp` flags.
    #[serde(default)]
    pub cp_ports: Vec<String>,
    /// Flows with sizes, carried by the transport (net/transport.rs).
    #[serde(default)]
    pub transport: TransportConfig,
    pub scheme: SchemeConfig,
    /// A second scheme for some priorities (scheme/dual.rs); `scheme` runs
    /// every other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_scheme: Option<ClassScheme>,
    /// Which model answers the scenario: every frame, or the flow-level
    /// model (flow/mod.rs), which runs `flow`'s settings.
    #[serde(default)]
    pub fidelity: crate::flow::params::Fidelity,
    #[serde(default)]
    pub flow: crate::flow::params::FlowParams,
}

/// The event trace and the packet captures (docs/looking-at-frames.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Event kinds recorded in events.parquet (`all`: every kind); empty: no event trace.
    #[serde(default)]
    pub events: Vec<String>,
    /// Only events at these nodes / ports (`FROM->TO`) / flows (`SRC|DST`); empty: all.
    #[serde(default)]
    pub event_nodes: Vec<String>,
    #[serde(default)]
    pub event_ports: Vec<String>,
    #[serde(default)]
    pub event_flows: Vec<String>,
    /// Events and captured frames in [from_ps, to_ps).
    #[serde(default)]
    pub from_ps: Time,
    #[serde(default = "max_time")]
    pub to_ps: Time,
    /// events.parquet stops at this many rows.
    #[serde(default = "default_max_rows")]
    pub max_rows: u64,
    /// Ports (`FROM->TO`) whose frames are captured, one pcapng file each.
    #[serde(default)]
    pub pcap: Vec<String>,
    /// Bytes of each frame a capture keeps (default: whole frames).
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// The captures of one seed stop at this many bytes, all ports together.
    #[serde(default = "default_pcap_max_bytes")]
    pub pcap_max_bytes: u64,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            events: vec![],
            event_nodes: vec![],
            event_ports: vec![],
            event_flows: vec![],
            from_ps: 0,
            to_ps: Time::MAX,
            max_rows: default_max_rows(),
            pcap: vec![],
            snaplen: default_snaplen(),
            pcap_max_bytes: default_pcap_max_bytes(),
        }
    }
}

impl TraceConfig {
    /// Whether the config asks for anything to be recorded.
    pub fn records(&self) -> bool {
        !self.events.is_empty() || !self.pcap.is_empty()
    }
}

/// A declared default (`table`'s `key`), as a whole number: serde's
/// defaults read the declaration, so each default is written once.
fn declared(table: crate::params::Table, key: &str) -> u64 {
    table.defaults()[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{}.{key} is declared a whole number", table.name))
}

/// The declared default (`sections::trace`).
fn default_max_rows() -> u64 {
    declared(crate::sections::trace(), "max_rows")
}
/// The declared default (`sections::trace`): whole frames.
fn default_snaplen() -> u32 {
    declared(crate::sections::trace(), "snaplen") as u32
}
/// The declared default (`sections::trace`): captures per seed.
pub fn default_pcap_max_bytes() -> u64 {
    declared(crate::sections::trace(), "pcap_max_bytes")
}

/// The declared default (`sections::defaults`).
fn default_frame_bytes() -> u32 {
    declared(crate::sections::defaults(), "frame_bytes") as u32
}
/// The declared default (`sections::defaults`).
fn default_control_frame_bytes() -> u32 {
    declared(crate::sections::defaults(), "control_frame_bytes") as u32
}
/// Per-flow time series only when the scenario has at most this many flows.
pub const MAX_TRACED_FLOWS: usize = 64;
fn default_max_traced_flows() -> usize {
    MAX_TRACED_FLOWS
}
fn default_true() -> bool {
    true
}
/// The declared default (`sections::stats`).
fn default_max_series_keys() -> usize {
    crate::sections::stats().defaults()["max_series_keys"]
        .as_u64()
        .expect("stats.max_series_keys is declared an integer") as usize
}

/// How bridges choose among equal-cost next hops (net/routing.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RoutingConfig {
    /// The lowest-numbered port.
    #[default]
    ShortestPath,
    /// A per-flow hash (seed, bridge, source, destination).
    Ecmp,
    /// Destination-mod-k up-ports of a k-ary n-tree.
    Fattree { k: u32 },
}

/// Most time-series bins a run records per series (`sections::top`'s rule).
pub const MAX_BINS: u64 = crate::sections::MAX_BINS as u64;
/// Longest run, and longest delay of any kind: 1e9 ms (11.6 simulated
/// days), so that sums of times stay far inside the u64 clock.
pub const MAX_TIME_PS: u64 = 1_000_000_000_000_000_000;
/// Largest buffer or threshold: 1 TiB (declared once, `crate::params`).
pub use crate::params::MAX_BYTES;
/// Fastest link: 1 Pbit/s (`params::MAX_GBPS` in bit/s).
pub const MAX_RATE_BPS: u64 = (crate::params::MAX_GBPS * 1e9) as u64;

/// At `bridge`, frames for station `dst` leave towards neighbour `via`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    pub bridge: String,
    pub dst: String,
    pub via: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowConfig {
    pub name: String,
    pub start_ps: Time,
    pub end_ps: Time,
}

/// An end station: a Bernoulli traffic source, a NIC and (with a scheme) its
/// reaction points.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StationConfig {
    pub name: String,
    /// Probability of a frame per slot (one frame time at the link rate).
    #[serde(default)]
    pub load: f64,
    #[serde(default)]
    pub dest: DestConfig,
    /// NIC transmit buffer (bytes).
    pub nic_buffer_bytes: u64,
    /// Capacity of each rate-limiter queue (bytes).
    pub rlq_bytes: u64,
    /// Delay before a received notification is applied.
    pub processing_ps: Time,
    /// Which rate limiter a notification acts on (one per flow, or one per CP).
    #[serde(default)]
    pub rl_scope: RlScope,
    /// What the source does with a frame for the NIC FIFO when it is full
    /// (which only PAUSE or a stopped link makes happen).
    #[serde(default)]
    pub nic_full: NicFull,
    /// How the link orders a rate-limited flow's frames against its frames
    /// already in the NIC FIFO when its RL was created.
    #[serde(default)]
    pub rl_order: RlOrder,
    /// 802.1p priority of the station's data frames (0-7).
    #[serde(default = "default_priority")]
    pub priority: u8,
}

fn default_priority() -> u8 {
    crate::frame::DATA_PRIORITY
}

/// The order of a flow's frames when its RL is created while frames of it
/// wait in the NIC FIFO (docs/calibration.md, "The station under PAUSE").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RlOrder {
    /// schemes.md: the link serves the FIFO and the RLQs round-robin, so the
    /// RLQ may send frames of the flow ahead of its older frames in the FIFO.
    #[default]
    RoundRobin,
    /// A new RL (per-flow scope) sends nothing until the frames its flow had
    /// in the FIFO have left: a flow's frames are never reordered.
    InOrder,
}

/// Which rate limiter a notification acts on (docs/calibration.md, "Multi-hop
/// congestion under PAUSE").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RlScope {
    /// One RL per flow (source, destination), fed by every CP on its path.
    #[default]
    Flow,
    /// One RL per CPID; a flow follows the CP that last slowed it.
    Cp,
}

/// What a source does with a frame for a full NIC FIFO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicFull {
    /// The generator defers: the frame is not generated (counted as deferred); nothing is lost.
    #[default]
    Defer,
    /// The NIC drops the frame (an RP drop, counted as `dropped_nic`).
    Drop,
}

/// How a source picks each frame's destination.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DestConfig {
    /// Uniform over every other station.
    #[default]
    Uniform,
    /// Always the same station.
    Fixed { node: String },
    /// Proportional to the weights (station name, weight).
    Weighted { weights: Vec<(String, f64)> },
    /// `fraction` of the frames to `node`, the others uniform over every
    /// other station (the hot station itself sends uniformly).
    Hotspot { node: String, fraction: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferMode {
    /// Each output port owns `buffer_bytes`.
    PerOutput,
    /// Each output buffer is partitioned per input port: `buffer_bytes` for
    /// every (output, input) pair (the CN-SIM bridge model).
    PerInput,
    /// The whole switch shares `buffer_bytes`.
    Shared,
    /// Shared, with dynamic thresholds (Choudhury and Hahne): an output
    /// queue may hold at most `dt_alpha` x the buffer still free.
    Dynamic,
    /// A shared-buffer switch (`net::mmu`): reserve, shared pool and
    /// headroom per (ingress port, priority), egress thresholds for the
    /// lossy priorities.
    Mmu,
    /// No limit.
    Infinite,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeConfig {
    pub name: String,
    pub buffer_mode: BufferMode,
    #[serde(default)]
    pub buffer_bytes: u64,
    /// Store-and-forward latency added after a frame is fully received.
    pub latency_ps: Time,
    /// Congestion-point detection on this bridge's output ports.
    #[serde(default)]
    pub cp: bool,
    /// Number of ports; more links than this is an error (None: unlimited).
    #[serde(default)]
    pub ports: Option<u32>,
    /// `dynamic` buffers: the share alpha of the free buffer a queue may take.
    #[serde(default = "default_dt_alpha")]
    pub dt_alpha: f64,
    /// How each output port chooses among its data classes (802.1Qaz).
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// `mmu` buffers: the shared-buffer switch's settings.
    #[serde(default)]
    pub mmu: MmuConfig,
    /// The bridge's own RED profile for ECN marking at every queue of its
    /// CPs, replacing the scheme's (None: the scheme's).
    #[serde(default)]
    pub red: Option<crate::scheme::Red>,
    /// The port rate `red` is written for (bit/s): a CP port of rate R
    /// marks at its thresholds x R / this (None: as written at every port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub red_ref_bps: Option<f64>,
}

/// The declared default (`sections::bridge`).
fn default_dt_alpha() -> f64 {
    crate::sections::bridge().defaults()["dt_alpha"]
        .as_f64()
        .expect("dt_alpha is declared a number")
}

/// A full-duplex link; both directions start at `rate_bps`.
/// One bridge port's own settings (`[[ports]]`): its scheduler, its
/// bridge's with the port's own keys laid over it, and (`mmu` buffers) its
/// headroom as an ingress, if not its bridge's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortOverride {
    /// The output port, `FROM->TO`.
    pub port: String,
    pub scheduler: SchedulerConfig,
    #[serde(default)]
    pub headroom: Option<Headroom>,
    /// This port's own RED profile (None: its bridge's, or the scheme's).
    #[serde(default)]
    pub red: Option<crate::scheme::Red>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub a: String,
    pub b: String,
    pub rate_bps: u64,
    pub delay_ps: Time,
}

/// A timed scenario event. Events at equal times apply in list order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum EventConfig {
    /// Turn a station's source on.
    Start { at_ps: Time, node: String },
    /// Turn a station's source off.
    Stop { at_ps: Time, node: String },
    /// Change the rate of one link direction (0 stops it); `scale_buffers`:
    /// its queue, header queue and ECN thresholds follow the rate (scaled
    /// by the new rate over the link's configured one), as the Ultra
    /// Ethernet reference degrades a link.
    LinkRate {
        at_ps: Time,
        from: String,
        to: String,
        rate_bps: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        scale_buffers: bool,
    },
    /// A station's NIC starts (`on`) or stops sending PFC frames that pause
    /// `priority` on its link.
    PfcStorm { at_ps: Time, node: String, priority: u8, on: bool },
    /// The link between `a` and `b` goes down (`up` false: both directions
    /// stop and routes are recomputed around it) or comes back up.
    LinkState { at_ps: Time, a: String, b: String, up: bool },
}

impl EventConfig {
    pub fn at_ps(&self) -> Time {
        match self {
            EventConfig::Start { at_ps, .. }
            | EventConfig::Stop { at_ps, .. }
            | EventConfig::LinkRate { at_ps, .. }
            | EventConfig::PfcStorm { at_ps, .. }
            | EventConfig::LinkState { at_ps, .. } => *at_ps,
        }
    }
}

impl SimConfig {
    /// A config of this topology with the engine's defaults: 100 us bins, the
    /// whole run as the measure window, 1500 / 64-byte frames, PAUSE off, no
    /// traces or explicit routes, no congestion management.
    pub fn new(
        duration_ps: Time,
        stations: Vec<StationConfig>,
        bridges: Vec<BridgeConfig>,
        links: Vec<LinkConfig>,
        events: Vec<EventConfig>,
    ) -> SimConfig {
        SimConfig {
            duration_ps,
            bin_ps: 100 * crate::engine::PS_PER_US,
            windows: vec![WindowConfig {
                name: "measure".into(),
                start_ps: 0,
                end_ps: duration_ps,
            }],
            frame_bytes: default_frame_bytes(),
            control_frame_bytes: default_control_frame_bytes(),
            max_traced_flows: default_max_traced_flows(),
            stations,
            bridges,
            links,
            events,
            pause: PauseConfig::default(),
            trace_ports: vec![],
            trace_rls: None,
            trace: TraceConfig::default(),
            routing: RoutingConfig::ShortestPath,
            routes: vec![],
            port_overrides: vec![],
            per_flow: true,
            max_series_keys: default_max_series_keys(),
            cp_ports: vec![],
            transport: TransportConfig::default(),
            scheme: SchemeConfig::nocm(),
            class_scheme: None,
            fidelity: Default::default(),
            flow: Default::default(),
        }
    }

    /// Parse the JSON produced by the Python resolver (or a hand-written
    /// config): an error names the field where it happened.
    pub fn from_json(s: &str) -> Result<Self, ConfigError> {
        let de = &mut serde_json::Deserializer::from_str(s);
        serde_path_to_error::deserialize(de).map_err(|e| ConfigError::at("", e))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("config serialises")
    }

    /// Checks that need no topology (the network builder checks the rest).
    pub fn validate_scalars(&self) -> Result<(), ConfigError> {
        // The run's length and bins against the top level's declaration
        // (`sections::top`: ranges, at most MAX_BINS bins), in the user's units.
        let ms = |ps: Time| ps as f64 / PS_PER_MS as f64;
        let Value::Object(top) = json!({"duration_ms": ms(self.duration_ps), "bin_us": self.bin_ps as f64 / PS_PER_US as f64}) else {
            unreachable!()
        };
        crate::sections::top().check("", &top)?;
        if self.windows.is_empty() {
            return fail("measure", "at least the measure window is required");
        }
        // Each window against its declaration (`sections::measure`,
        // `sections::window`: ranges, start_ms < end_ms), then inside the run.
        for (i, w) in self.windows.iter().enumerate() {
            let (table, label) = if i == 0 {
                (crate::sections::measure(), "measure".to_string())
            } else {
                (crate::sections::window(), format!("windows.{}", w.name))
            };
            let Value::Object(values) = json!({"start_ms": ms(w.start_ps), "end_ms": ms(w.end_ps)}) else {
                unreachable!()
            };
            table.check(&label, &values)?;
            if w.end_ps > self.duration_ps {
                // A window past the end may be the run's length at fault: name both.
                return fail(
                    format!("{label}.end_ms / duration_ms"),
                    format!(
                        "{} / {} not allowed; expected a window inside the run (end_ms <= duration_ms)",
                        num(ms(w.end_ps)),
                        num(ms(self.duration_ps))
                    ),
                );
            }
        }
        self.check_sections()?;
        // Times, rates and sizes within the engine's integer units, so no sum
        // of them can overflow (the Python layer declares the same limits).
        let time = |v: Time, what: String| {
            if v > MAX_TIME_PS {
                fail(what, format!("{v} ps is not allowed; expected at most {MAX_TIME_PS} ps"))
            } else {
                Ok(())
            }
        };
        let size = |v: u64, what: String| {
            if v > MAX_BYTES {
                fail(what, format!("{v} is not allowed; expected at most {MAX_BYTES} bytes"))
            } else {
                Ok(())
            }
        };
        // Each link against its declaration (`sections::link`), in the user's units.
        let link = crate::sections::link();
        for l in &self.links {
            let Value::Object(values) = json!({
                "a": l.a,
                "b": l.b,
                "rate_gbps": l.rate_bps as f64 / 1e9,
                "delay_us": l.delay_ps as f64 / PS_PER_US as f64,
            }) else {
                unreachable!()
            };
            link.check(&format!("links.{}-{}", l.a, l.b), &values)?;
        }
        let route = crate::sections::route();
        for (i, r) in self.routes.iter().enumerate() {
            let Value::Object(values) = json!(r) else { unreachable!() };
            route.check(&format!("routes[{i}]"), &values)?;
        }
        // Each port's scheduler against `[[ports]]`'s declaration.
        let port = crate::sections::port();
        for (i, p) in self.port_overrides.iter().enumerate() {
            let Value::Object(values) = json!({
                "port": p.port,
                "strict_priorities": p.scheduler.strict,
                "ets_weights": p.scheduler.ets_weights,
                "headroom_bytes": p.headroom,
                "ecn_kmin_bytes": p.red.map(|r| r.kmin_bytes),
                "ecn_kmax_bytes": p.red.map(|r| r.kmax_bytes),
                "ecn_pmax": p.red.map(|r| r.pmax),
            }) else {
                unreachable!()
            };
            port.check(&format!("ports[{i}]"), &values)?;
        }
        // Each event against its declaration (`sections::event`), in the
        // user's units. The list holds the sources' and the hotspot's events
        // too, so `i` is the place in this list; the scenario's own events are
        // checked as written first (`sections::check_written`), where a rate
        // below 1 bit/s is still visible.
        let event = crate::sections::event();
        for (i, e) in self.events.iter().enumerate() {
            let values = match e {
                EventConfig::Start { at_ps, node } => json!({"at_ms": ms(*at_ps), "action": "start", "node": node}),
                EventConfig::Stop { at_ps, node } => json!({"at_ms": ms(*at_ps), "action": "stop", "node": node}),
                EventConfig::LinkRate {
                    at_ps,
                    from,
                    to,
                    rate_bps,
                    scale_buffers,
                } => json!({
                    "at_ms": ms(*at_ps),
                    "action": "link_rate",
                    "from": from,
                    "to": to,
                    "rate_gbps": *rate_bps as f64 / 1e9,
                    "scale_buffers": scale_buffers,
                }),
                EventConfig::PfcStorm { at_ps, node, priority, .. } => {
                    json!({"at_ms": ms(*at_ps), "action": "pfc_storm", "node": node, "priority": priority})
                }
                EventConfig::LinkState { at_ps, a, b, .. } => json!({"at_ms": ms(*at_ps), "action": "link_down", "from": a, "to": b}),
            };
            let Value::Object(values) = values else { unreachable!() };
            event.check(&format!("events[{i}]"), &values)?;
        }
        let t = &self.transport;
        // The transport's own keys against `[workload]`'s declaration
        // (`sections::workload`), in the user's units; the workload as
        // written is checked before it is resolved (`sections::check_written`).
        let Value::Object(values) = json!({
            "header_bytes": t.header_bytes,
            "ack_every": t.ack_every,
            "rto_us": t.rto_ps as f64 / PS_PER_US as f64,
            "end_when_done": t.end_when_done,
        }) else {
            unreachable!()
        };
        crate::sections::workload()
            .only(&["header_bytes", "ack_every", "rto_us", "end_when_done"])
            .check("transport", &values)?;
        if t.header_bytes >= self.frame_bytes {
            return fail(
                "workload.header_bytes",
                format!(
                    "{} is not allowed; expected less than defaults.frame_bytes ({}): each frame must carry some of its flow",
                    t.header_bytes, self.frame_bytes
                ),
            );
        }
        // The flows and arrivals are what the workload resolves to (the
        // Python layer's generated flows, up to millions: checked here in
        // engine units by hand, not by a table each), and a hand-written
        // config's: their sizes, times and CDF within the engine's units.
        for (i, f) in t.flows.iter().enumerate() {
            if f.size_bytes == 0 {
                return fail(format!("flows[{i}].size_bytes"), "0 is not allowed; expected at least 1 byte");
            }
            size(f.size_bytes, format!("flows[{i}].size_bytes"))?;
            time(f.start_ps, format!("flows[{i}].start_ms"))?;
            if f.src == f.dst {
                return fail(format!("flows[{i}]"), format!("src and dst are both '{}'", f.src));
            }
        }
        for (i, a) in t.arrivals.iter().enumerate() {
            if !(a.rate_per_s > 0.0 && a.rate_per_s.is_finite()) {
                return fail(
                    "workload.load",
                    format!("arrivals[{i}] rate {} flows/s is not allowed; expected > 0", a.rate_per_s),
                );
            }
            if a.stations.len() < 2 {
                return fail("workload", format!("arrivals[{i}] need at least 2 stations"));
            }
            let mut seen = std::collections::HashSet::new();
            if let Some(twice) = a.stations.iter().find(|s| !seen.insert(s.as_str())) {
                return fail(
                    "workload.hosts",
                    format!("'{twice}' is listed twice (arrivals[{i}].stations); each host takes part once"),
                );
            }
            check_cdf(&a.cdf).map_err(|e| ConfigError::new("workload.cdf", e.to_string()))?;
            // Flow ids index events: a process expected to draw more flows
            // than that would run for ever before failing.
            let secs = a.end_ps.min(self.duration_ps).saturating_sub(a.start_ps) as f64 / PS_PER_S as f64;
            let expected = a.rate_per_s * a.stations.len() as f64 * secs;
            // The packet model names flows by event index; the flow-level
            // model goes further (`sections::MAX_FLOWS`).
            let most = match self.fidelity {
                crate::flow::params::Fidelity::Packet => crate::engine::queue::MAX_INDEX as f64,
                crate::flow::params::Fidelity::Flow => crate::sections::MAX_FLOWS,
            };
            if expected > most {
                return fail("workload", format!("arrivals[{i}] would start about {expected:.3e} flows ({} flows/s at each of {} stations for {secs} s), more than the engine indexes ({most}); lower workload.load or the arrival window", a.rate_per_s, a.stations.len()));
            }
        }
        // A station's load against a node's declaration (`sections::node`);
        // its destinations are a kind the declaration does not interpret
        // (read by the Python layer), so their resolved form is checked here.
        let load = crate::sections::node().only(&["load"]);
        for s in &self.stations {
            let Value::Object(values) = json!({ "load": s.load }) else {
                unreachable!()
            };
            load.check(&format!("nodes.{}", s.name), &values)?;
            if let DestConfig::Weighted { weights } = &s.dest {
                if weights.is_empty()
                    || weights.iter().any(|(_, w)| !(*w >= 0.0 && w.is_finite()))
                    || weights.iter().all(|(_, w)| *w == 0.0)
                {
                    return fail(format!("nodes.{}.dest", s.name), "weights must be >= 0, finite and not all 0");
                }
            }
        }
        // Fat-tree routing's arity against the generator's declaration.
        if let RoutingConfig::Fattree { k } = self.routing {
            let Value::Object(values) = json!({ "k": k }) else { unreachable!() };
            crate::sections::topology_fattree().only(&["k"]).check("routing", &values)?;
        }
        // A bridge's cp and ports against a node's declaration.
        let own = crate::sections::node().only(&["cp", "ports"]);
        for b in &self.bridges {
            let Value::Object(values) = json!({"cp": b.cp, "ports": b.ports}) else {
                unreachable!()
            };
            own.check(&format!("nodes.{}", b.name), &values)?;
        }
        Ok(())
    }
}

impl SimConfig {
    /// The sections declared in [`crate::sections`], checked against their
    /// declarations (ranges, choices, rules): `[pause]`, `[stats]`, `[defaults]`, and
    /// each station's and bridge's parameters, named `nodes.NAME.key` when a
    /// node may set the key itself, else by their section (`bridge.dt_alpha`).
    fn check_sections(&self) -> Result<(), ConfigError> {
        use crate::sections;
        check(&sections::pause(), "pause", "pause", json!(self.pause))?;
        // per_flow arrives resolved (auto decided by the Python layer).
        check(
            &sections::stats(),
            "stats",
            "stats",
            json!({"per_flow": self.per_flow, "max_series_keys": self.max_series_keys}),
        )?;
        check(
            &sections::defaults(),
            "defaults",
            "defaults",
            json!({"frame_bytes": self.frame_bytes, "control_frame_bytes": self.control_frame_bytes}),
        )?;
        let (station, bridge) = (sections::station(), sections::bridge());
        for s in &self.stations {
            let values = json!({
                "nic_buffer_bytes": s.nic_buffer_bytes,
                "rlq_bytes": s.rlq_bytes,
                "processing_us": s.processing_ps as f64 / PS_PER_US as f64,
                "rl_scope": s.rl_scope,
                "nic_full": s.nic_full,
                "rl_order": s.rl_order,
                "priority": s.priority,
            });
            check(&station, &format!("nodes.{}", s.name), "station", values)?;
        }
        for b in &self.bridges {
            let values = json!({
                "buffer_mode": b.buffer_mode,
                "buffer_bytes": b.buffer_bytes,
                "latency_us": b.latency_ps as f64 / PS_PER_US as f64,
                "dt_alpha": b.dt_alpha,
                "strict_priorities": b.scheduler.strict,
                "ets_weights": b.scheduler.ets_weights,
                "ecn_kmin_bytes": b.red.map(|r| r.kmin_bytes),
                "ecn_kmax_bytes": b.red.map(|r| r.kmax_bytes),
                "ecn_pmax": b.red.map_or(1.0, |r| r.pmax),
            });
            check(&bridge, &format!("nodes.{}", b.name), "bridge", values)?;
        }
        Ok(())
    }
}

/// `values` checked against `table`: its per-node keys named under
/// `node_label`, the others under `label`.
fn check(table: &Table, node_label: &str, label: &str, values: Value) -> Result<(), ConfigError> {
    let Value::Object(all) = values else {
        unreachable!("a section serialises to a table")
    };
    let (node, rest): (Map<String, Value>, Map<String, Value>) = all.into_iter().partition(|(k, _)| table.per_node.contains(&k.as_str()));
    table.check(node_label, &node)?;
    table.check(label, &rest).map(|_| ())
}

/// An empirical CDF: at least two points, sizes >= 0 bytes (drawn sizes are
/// at least 1) and at most
/// [`MAX_BYTES`], both columns non-decreasing, probabilities from >= 0 up to
/// exactly 1.
pub fn check_cdf(cdf: &[(f64, f64)]) -> Result<(), String> {
    if cdf.len() < 2 {
        return Err("at least two (size, probability) points are needed".into());
    }
    for (i, &(s, p)) in cdf.iter().enumerate() {
        if !(s >= 0.0 && s <= MAX_BYTES as f64) {
            return Err(format!("point {i}: size {s} is not within 0..={MAX_BYTES} bytes"));
        }
        if !(0.0..=1.0).contains(&p) {
            return Err(format!("point {i}: probability {p} is not within 0..=1"));
        }
        if i > 0 && (s < cdf[i - 1].0 || p < cdf[i - 1].1) {
            return Err(format!("point {i}: sizes and probabilities must not decrease"));
        }
    }
    if cdf[cdf.len() - 1].1 != 1.0 {
        return Err("the last probability must be 1".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections;

    #[test]
    /// (Here, not in sections.rs: the declarations sit below the config.)
    fn the_engine_defaults_are_the_declared_ones() {
        let p = PauseConfig::default();
        let d = sections::pause().defaults();
        assert_eq!(
            (p.xoff_bytes, p.xon_bytes, p.quanta as u64),
            (
                d["xoff_bytes"].as_u64().unwrap(),
                d["xon_bytes"].as_u64().unwrap(),
                d["quanta"].as_u64().unwrap()
            )
        );
        assert_eq!(sections::defaults().defaults()["frame_bytes"], 1500);
        let c = SimConfig::new(1, vec![], vec![], vec![], vec![]);
        assert_eq!(json!(c.max_series_keys), sections::stats().defaults()["max_series_keys"]);
    }
}

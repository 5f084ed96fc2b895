//! The transport's part of the engine configuration (re-exported by
//! config.rs): flows given one by one, Poisson arrivals, a connection
//! matrix to read, and the transport's settings.

use crate::engine::{Time, PS_PER_US};
use crate::scheme::params::SchemeConfig;
use serde::{Deserialize, Serialize};

/// A declared default (`table`'s `key`), as a whole number.
fn declared(table: crate::params::Table, key: &str) -> u64 {
    table.defaults()[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{}.{key} is declared a whole number", table.name))
}

/// Flows and their transport: flows given one by one and Poisson arrivals
/// with sizes from an empirical CDF; acknowledgements, go-back-N and a
/// retransmission timeout (net/transport.rs).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportConfig {
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// A connection matrix's flows (`workload.kind = "matrix"`), which the
    /// compiler reads into `flows` (compile.rs; io::matrix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<MatrixConfig>,
    #[serde(default)]
    pub arrivals: Vec<ArrivalConfig>,
    /// Collective jobs as written (`[[jobs]]`, checked against their
    /// declarations), which the compiler turns into `flows` and `gates`
    /// (collective.rs), and the plan it made of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<crate::collective::plan::GateConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::collective::plan::Plan>,
    /// Bytes of each data frame that are headers, not the flow's payload
    /// (`workload.header_bytes`; 0: a flow's size is its bytes on the wire).
    #[serde(default)]
    pub header_bytes: u32,
    /// The receiver acknowledges every `ack_every` frames in order (and the last).
    #[serde(default = "default_ack_every")]
    pub ack_every: u32,
    /// Retransmission timeout: go back to the first unacknowledged frame
    /// when nothing was acknowledged for this long.
    #[serde(default = "default_rto_ps")]
    pub rto_ps: Time,
    /// The run ends once every flow has finished and none will arrive
    /// (and no open-loop source is active).
    #[serde(default = "default_true")]
    pub end_when_done: bool,
}

/// A connection matrix to read (io::matrix): its file, and which station
/// each of its nodes is.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// The file as the scenario names it (messages say so) and its path.
    pub file: String,
    pub path: String,
    /// Node i of the matrix is station `hosts[i]`.
    pub hosts: Vec<String>,
    /// Its flows start this much after their own start.
    #[serde(default)]
    pub start_ps: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            flows: vec![],
            matrix: None,
            arrivals: vec![],
            jobs: vec![],
            gates: vec![],
            plan: None,
            header_bytes: 0,
            ack_every: default_ack_every(),
            rto_ps: default_rto_ps(),
            end_when_done: true,
        }
    }
}

/// The declared default (`sections::workload`).
fn default_ack_every() -> u32 {
    declared(crate::sections::workload(), "ack_every") as u32
}
/// The declared default (`sections::workload`'s `rto_us`), in picoseconds.
fn default_rto_ps() -> Time {
    let us = crate::sections::workload().defaults()["rto_us"]
        .as_f64()
        .expect("rto_us is declared a number");
    (us * PS_PER_US as f64).round_ties_even() as Time
}

/// One flow: `size_bytes` from `src` to `dst`, starting at `start_ps`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// The source and destination stations' names; shared, not copied, by
    /// the flows of one host (a collective plans millions of flows over a
    /// few thousand hosts).
    pub src: std::sync::Arc<str>,
    pub dst: std::sync::Arc<str>,
    pub size_bytes: u64,
    #[serde(default)]
    pub start_ps: Time,
    /// The 802.1p priority of the flow's data: its source station's, set so
    /// (none: the station's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    /// The flows (indices into `flows`) this one waits for: it starts when
    /// each has been received whole, `after_delay_ps` later, and not before
    /// `start_ps` (net::deps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<u32>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub after_delay_ps: Time,
    /// A collective's flow: which collective, step and ranks (collective.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<crate::collective::plan::FlowTag>,
}

fn is_zero(t: &Time) -> bool {
    *t == 0
}

/// The scheme of some priorities when a run holds two (`SimConfig::class_scheme`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassScheme {
    /// The 802.1p priorities (0-7) whose frames and flows this scheme runs.
    pub priorities: Vec<u8>,
    pub scheme: SchemeConfig,
}

/// Poisson flow arrivals at each of `stations` (`rate_per_s` flows per
/// second each, from `start_ps` to `end_ps`), to a destination drawn
/// uniformly among the other `stations`, with sizes from the piecewise-
/// linear CDF `cdf` (pairs of size in bytes and cumulative probability).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalConfig {
    pub stations: Vec<String>,
    pub rate_per_s: f64,
    pub cdf: Vec<(f64, f64)>,
    #[serde(default)]
    pub start_ps: Time,
    #[serde(default = "max_time")]
    pub end_ps: Time,
    /// The 802.1p priority of the flows the stations start: theirs, set so
    /// (none: the stations' own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
}

pub(crate) fn max_time() -> Time {
    Time::MAX
}

fn default_true() -> bool {
    true
}

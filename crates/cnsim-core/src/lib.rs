//! cnsim core: a packet-level simulator of congestion management in
//! data-center Ethernet (IEEE 802.3x PAUSE, 802.1Qau BCN / ECM / QCN).
//!
//! Layout (data flows one way):
//! - [`engine`]: time, the event queue and random-number streams; knows
//!   nothing of networks.
//! - [`compile`]: the scenario as the user wrote it (the front end's
//!   reading) resolved into the engine configuration, once per run.
//! - [`config`]: the resolved engine configuration (engine units: integer
//!   picoseconds, bit/s, bytes), validated once when a [`Sim`] is built.
//! - [`frame`]: the frame every layer moves (the scheme's extension opaque).
//! - [`net`]: ports, stations, bridges, PAUSE and the simulation loop.
//! - [`scheme`]: congestion-management schemes (CP and RP roles), one file each.
//! - [`stats`]: statistics recorded in fixed bins and windows, and the
//!   [`RunResult`] computed from them at the end of a run.
//! - [`trace`]: the event trace hook (a no-op unless a run records a trace)
//!   and the recording tracer; [`io`]: the files it writes (events.parquet,
//!   pcapng captures with the frames' headers).
//! - [`flow`]: the flow-level model (`fidelity = "flow"`): the same
//!   scenario answered per flow, from per-link fluids and packet runs.
//! - [`fluid`]: mean-field fluid models of BCN and QCN on one bottleneck.
//! - [`io`]: result tables and time series written as Parquet; [`outputs`]:
//!   the results directory's files, columns and series, declared once.
//! - [`bench`]: the reference workloads of `cnsim bench` and criterion.

pub mod bench;
pub mod class_stats;
pub mod collective;
pub mod columns;
pub mod compile;
pub mod config;
pub mod engine;
pub mod error;
pub mod flow;
pub mod flow_control;
pub mod fluid;
pub mod frame;
pub mod generators;
pub mod io;
pub mod net;
pub mod outputs;
pub mod params;
pub mod scheme;
pub mod sections;
pub mod stats;
pub mod trace;
pub mod transport_config;
pub mod workloads;

pub use config::{ConfigError, SimConfig};
pub use net::sim::Sim;
pub use stats::RunResult;

/// Version of the engine, reported in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

// The end-to-end tests in crates/cnsim-core/tests/ use the crate as a user
// would (`cnsim_core::...`, public items only) but are compiled into the
// library's own test binary (`autotests = false`): separate integration
// tests would build the whole crate a second time, without cfg(test), which
// cost CI a minute and a half.
#[cfg(test)]
extern crate self as cnsim_core;
#[cfg(test)]
#[path = "../tests"]
mod end_to_end {
    mod dual;
    mod faults;
    mod mmu;
    mod network;
    mod properties;
    mod red;
    mod scheme_params;
    mod timely;
    mod trace;
    mod uet;
}

//! What the outside world drives a run through, whichever model answers
//! (the packet engine's `NetSim`, the flow-level model's `FlowSim`).

use crate::config::{ConfigError, SimConfig};
use crate::engine::Time;
use crate::stats::RunResult;

/// How a packet run is made (`net::sim::build`): the flow-level model runs
/// the packet engine on links of its own, and is handed this by `Sim::new`,
/// which chooses between the models (so the flow-level model uses no
/// module that uses it).
pub type PacketRuns = fn(&SimConfig, u64) -> Result<Box<dyn Run>, ConfigError>;

/// A run of any scheme, as the outside world drives it.
pub trait Run: Send {
    /// Runs events for about `wall` of wall-clock time, or to the run's
    /// end: the packet engine looks at the clock every `DEADLINE_EVERY` events (net/sim.rs), so
    /// a caller driving a run in steps (progress, a Ctrl-C) gets control
    /// back within about `wall` whatever the workload. Where a step ends
    /// never changes a result: events are only ever taken in order.
    /// Returns true once the run has reached its end.
    fn run_for(&mut self, wall: std::time::Duration) -> bool;
    /// Runs every event strictly before `t` (capped at the run's end); true
    /// once the run reached its end.
    fn run_until(&mut self, t: Time) -> bool;
    /// Closes statistics, checks frame conservation and builds the results.
    fn finish(&mut self) -> Result<RunResult, String>;
    fn now(&self) -> Time;
    fn duration(&self) -> Time;
    fn is_finished(&self) -> bool;
    /// Warnings found while the simulation was built (one line each).
    fn warnings(&self) -> &[String];
}

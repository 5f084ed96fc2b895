//! The plan of a run's collective jobs, as the engine configuration holds
//! it (transport_config.rs): gates, each job flow's tag, the collectives in
//! order. Plain data: collective/mod.rs makes it, the network and the
//! metrics read it.

use crate::engine::Time;
use serde::{Deserialize, Serialize};

/// A point of the dependency graph with no traffic: it passes when what it
/// waits for is done, `delay_ps` later (net::deps).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    pub after: Vec<u32>,
    #[serde(default)]
    pub delay_ps: Time,
}

/// Which collective, step and ranks a flow belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowTag {
    pub collective: u32,
    pub step: u32,
    pub src_rank: u32,
    pub dst_rank: u32,
}

/// One collective of one iteration of one job, as planned.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveInfo {
    pub job: u32,
    pub iteration: u32,
    pub phase: u32,
    pub collective: String,
    pub algorithm: String,
    pub ranks: u32,
    pub size_bytes: u64,
    /// Steps of the algorithm (ring all-reduce: 2(n - 1)).
    pub steps: u32,
}

/// The jobs of a run as planned: their names and hosts per rank, and their
/// collectives in order (job, iteration, phase).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub jobs: Vec<JobInfo>,
    pub collectives: Vec<CollectiveInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobInfo {
    pub name: String,
    /// Rank i's host.
    pub hosts: Vec<String>,
    pub iterations: u32,
    pub start_ps: Time,
}

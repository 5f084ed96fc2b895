//! The flow-level model's settings (engine config `fidelity`, `flow`): a
//! leaf, so that the configuration names them without using the model.

use serde::{Deserialize, Serialize};

/// Which model answers a scenario.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// Every frame (the packet engine).
    #[default]
    Packet,
    /// Flows (this module).
    Flow,
}

/// How the flow-level model combines its parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowModel {
    /// Per-link fluid plus corrections from per-link packet runs (above).
    #[default]
    Decomposed,
    /// One max-min fair fluid over the whole fabric, floored at the idle
    /// FCT: the classic baseline, without queueing.
    Maxmin,
}

/// The flow-level model's settings (engine config `flow`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowParams {
    #[serde(default)]
    pub model: FlowModel,
    /// Flows each tier of links (same ends' distance from the hosts, same
    /// rate) should have in its representatives' packet runs: the sample its
    /// corrections are drawn from (more representatives: a finer tail, a
    /// slower run).
    #[serde(default = "default_samples")]
    pub samples: u32,
    /// Representative links per tier at least (when the tier has that many).
    #[serde(default = "default_min_reps")]
    pub min_reps_per_tier: u32,
    /// Host links' shares from one fluid of every flow over its two host
    /// links (else from each host link's own fluid).
    #[serde(default = "default_true")]
    pub joint_host_links: bool,
}

fn default_true() -> bool {
    true
}

fn default_samples() -> u32 {
    2000
}
fn default_min_reps() -> u32 {
    4
}

impl Default for FlowParams {
    fn default() -> Self {
        FlowParams {
            model: FlowModel::default(),
            samples: default_samples(),
            min_reps_per_tier: default_min_reps(),
            joint_host_links: true,
        }
    }
}

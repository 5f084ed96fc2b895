//! A run's counters per 802.1p priority and the PFC deadlock detector's
//! findings: part of its run-wide counters (`stats::RunCounters`), in the
//! runs that have more than one priority in use or PFC.

use crate::engine::Time;
use serde::Serialize;

/// What the PFC deadlock detector found (`net::deadlock`): distinct
/// deadlocked cycles, when the first was found (none: null) and its ports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeadlockCounters {
    pub deadlocks: u64,
    pub deadlock_at_ps: Option<Time>,
    pub deadlock_cycle: String,
}

/// Per 802.1p priority, in a run with more than one priority in use or with
/// PFC: PFC frames sent naming it, and the time it was paused inside the
/// measure window, summed over the link directions (a station's or a
/// single-class port's pause counts for the priority of its data).
/// Serialised as flat counters `pfc_frames_priority_P`, `paused_ps_priority_P`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PriorityCounters {
    pub pfc_frames: [u64; 8],
    pub paused_ps: [Time; 8],
    /// The PFC watchdog: queues stormed, and frames it dropped.
    pub watchdog_storms: [u64; 8],
    pub watchdog_drops: [u64; 8],
    /// Frames a bridge's buffer refused (egress thresholds and every other
    /// limit), and lossless frames lost for want of headroom (`mmu`).
    pub buffer_drops: [u64; 8],
    pub headroom_drops: [u64; 8],
    /// `mmu` buffers: the most headroom one (port, priority) ever held, bytes.
    pub headroom_peak_bytes: [u64; 8],
}

impl Serialize for PriorityCounters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(56))?;
        for (name, values) in [
            ("pfc_frames", &self.pfc_frames),
            ("paused_ps", &self.paused_ps),
            ("watchdog_storms", &self.watchdog_storms),
            ("watchdog_drops", &self.watchdog_drops),
            ("buffer_drops", &self.buffer_drops),
            ("headroom_drops", &self.headroom_drops),
            ("headroom_peak_bytes", &self.headroom_peak_bytes),
        ] {
            for (p, v) in values.iter().enumerate() {
                m.serialize_entry(&format!("{name}_priority_{p}"), v)?;
            }
        }
        m.end()
    }
}

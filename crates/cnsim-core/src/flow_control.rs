//! Flow control and transmission selection as a run is configured: 802.3x
//! PAUSE or 802.1Qbb PFC (`[pause]`, with the PFC watchdog) and a bridge
//! port's scheduler among its eight priorities (`bridge.strict_priorities`,
//! `bridge.ets_weights`), each default the declaration's (`sections`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A port's transmission selection among the eight data classes
/// (`bridge.strict_priorities`, `bridge.ets_weights`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerConfig {
    /// Priorities served by strict priority, ahead of the ETS classes.
    pub strict: Vec<u8>,
    /// ETS weights of priorities 0-7.
    pub ets_weights: [u32; 8],
}

impl Default for SchedulerConfig {
    /// The declared defaults (`sections::bridge`).
    fn default() -> SchedulerConfig {
        let d = crate::sections::bridge().defaults();
        let ints = |k: &str| -> Vec<i64> { d[k].as_array().expect("declared a list").iter().filter_map(Value::as_i64).collect() };
        let w = ints("ets_weights");
        SchedulerConfig {
            strict: ints("strict_priorities").into_iter().map(|p| p as u8).collect(),
            ets_weights: std::array::from_fn(|i| w[i] as u32),
        }
    }
}

/// A shared-buffer switch's settings (`buffer_mode = "mmu"`; the
/// `bridge.*` keys of the same names, in bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MmuConfig {
    pub reserve_bytes: u64,
    pub ingress_alpha: f64,
    pub egress_alpha: f64,
    pub headroom: Headroom,
    pub xon_offset_bytes: u64,
    /// The port rate `ingress_alpha` is for (bit/s): an ingress port k
    /// doublings faster gets `ingress_alpha` x 2^k, at most 1 (None: the
    /// same alpha at every port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha_ref_bps: Option<f64>,
}

impl MmuConfig {
    /// The dynamic-threshold alpha of an ingress port of `rate_bps`.
    pub fn ingress_alpha_at(&self, rate_bps: f64) -> f64 {
        let Some(reference) = self.alpha_ref_bps else {
            return self.ingress_alpha;
        };
        // As the HPCC artifact's shift: one doubling of alpha per halving
        // of the rate that is still above the reference, never past 1.
        let (mut alpha, mut rate) = (self.ingress_alpha, rate_bps);
        while rate > reference && alpha * 2.0 <= 1.0 {
            alpha *= 2.0;
            rate /= 2.0;
        }
        alpha
    }
}

/// `bridge.headroom_bytes`: bytes, or `auto` (per port, from its link).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Headroom {
    Bytes(u64),
    Auto(AutoWord),
}

/// The word `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoWord {
    Auto,
}

impl Default for MmuConfig {
    /// The declared defaults (`sections::bridge`).
    fn default() -> MmuConfig {
        let d = crate::sections::bridge().defaults();
        let int = |k: &str| d[k].as_u64().expect("declared an integer");
        let float = |k: &str| d[k].as_f64().expect("declared a number");
        MmuConfig {
            reserve_bytes: int("reserve_bytes"),
            ingress_alpha: float("ingress_alpha"),
            egress_alpha: float("egress_alpha"),
            headroom: serde_json::from_value(d["headroom_bytes"].clone()).expect("declared bytes or auto"),
            xon_offset_bytes: int("xon_offset_bytes"),
            alpha_ref_bps: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseTrigger {
    /// From the bridge's buffer mode: `output_queue` for per_output and
    /// infinite, `partition` for per_input, `ingress` for shared.
    Auto,
    /// An output queue at XOFF pauses every ingress port with frames in it.
    OutputQueue,
    /// Bytes held per ingress port at XOFF pause that port.
    Ingress,
    /// A per-input partition of an output buffer at XOFF pauses its input;
    /// the input resumes when every partition holding it is back at XON.
    Partition,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseConfig {
    pub enabled: bool,
    pub trigger: PauseTrigger,
    pub xoff_bytes: u64,
    pub xon_bytes: u64,
    /// pause_time of an XOFF, in quanta of 512 bit times.
    #[serde(default = "default_quanta")]
    pub quanta: u16,
    /// 802.3x PAUSE, or 802.1Qbb PFC for the `lossless` priorities.
    #[serde(default)]
    pub mode: PauseMode,
    #[serde(default = "default_lossless")]
    pub lossless: Vec<u8>,
    /// The PFC watchdog (declared in `sections::pause`, in its units).
    #[serde(default)]
    pub watchdog: bool,
    #[serde(default = "default_watchdog_ms")]
    pub watchdog_detection_ms: f64,
    #[serde(default = "default_restoration_ms")]
    pub watchdog_restoration_ms: f64,
    #[serde(default = "default_watchdog_poll_ms")]
    pub watchdog_poll_ms: f64,
    #[serde(default)]
    pub watchdog_action: WatchdogAction,
    /// The deadlock detector (declared in `sections::pause`).
    #[serde(default = "default_true")]
    pub deadlock_detector: bool,
    #[serde(default = "default_deadlock_poll_ms")]
    pub deadlock_poll_ms: f64,
}

fn default_true() -> bool {
    true
}

fn default_deadlock_poll_ms() -> f64 {
    crate::sections::pause().defaults()["deadlock_poll_ms"]
        .as_f64()
        .expect("declared a number")
}

/// What a stormed queue does (`pause.watchdog_action`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogAction {
    /// Its frames, and those that arrive for it, are dropped.
    #[default]
    Drop,
    /// It ignores PFC and sends.
    Forward,
}

fn default_watchdog_ms() -> f64 {
    crate::sections::pause().defaults()["watchdog_detection_ms"]
        .as_f64()
        .expect("declared a number")
}

fn default_restoration_ms() -> f64 {
    crate::sections::pause().defaults()["watchdog_restoration_ms"]
        .as_f64()
        .expect("declared a number")
}

fn default_watchdog_poll_ms() -> f64 {
    crate::sections::pause().defaults()["watchdog_poll_ms"]
        .as_f64()
        .expect("declared a number")
}

/// `pause.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseMode {
    /// IEEE 802.3x: every data frame on the link.
    #[default]
    Pause,
    /// IEEE 802.1Qbb: per priority, the lossless ones only.
    Pfc,
}

impl PauseConfig {
    /// The lossless priorities as a bit set (PFC's class-enable vector).
    pub fn lossless_mask(&self) -> u8 {
        self.lossless.iter().fold(0, |m, &p| m | 1 << (p & 7))
    }
}

/// The declared default (`sections::pause`).
fn default_lossless() -> Vec<u8> {
    let d = crate::sections::pause().defaults();
    d["lossless"]
        .as_array()
        .expect("declared a list")
        .iter()
        .filter_map(Value::as_u64)
        .map(|p| p as u8)
        .collect()
}

/// The declared default (`sections::pause`).
fn default_quanta() -> u16 {
    crate::sections::pause().defaults()["quanta"]
        .as_u64()
        .expect("pause.quanta is declared a whole number") as u16
}

impl Default for PauseConfig {
    /// The declared defaults (`sections::pause`).
    fn default() -> Self {
        serde_json::from_value(Value::Object(crate::sections::pause().defaults())).expect("the [pause] declaration matches PauseConfig")
    }
}

#[cfg(test)]
mod tests {
    use super::MmuConfig;

    /// The HPCC artifact's PFC alpha: 1/8 at the NIC's rate, one shift less
    /// per doubling above it, never past 1.
    #[test]
    fn ingress_alpha_doubles_per_doubling_of_the_port_rate() {
        let mut m = MmuConfig {
            ingress_alpha: 0.125,
            ..MmuConfig::default()
        };
        assert_eq!(m.ingress_alpha_at(400e9), 0.125, "no reference: one alpha");
        m.alpha_ref_bps = Some(100e9);
        assert_eq!(m.ingress_alpha_at(100e9), 0.125);
        assert_eq!(m.ingress_alpha_at(25e9), 0.125);
        assert_eq!(m.ingress_alpha_at(200e9), 0.25);
        assert_eq!(m.ingress_alpha_at(400e9), 0.5);
        assert_eq!(m.ingress_alpha_at(300e9), 0.5, "above 200: a second doubling");
        assert_eq!(m.ingress_alpha_at(800e9), 1.0);
        assert_eq!(m.ingress_alpha_at(3200e9), 1.0, "at most 1");
    }
}

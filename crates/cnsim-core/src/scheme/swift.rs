//! Swift (Kumar et al., "Swift: Delay is Simple and Effective for
//! Congestion Control in the Datacenter", SIGCOMM 2020): a delay-target
//! window scheme for transport flows. No switch support.
//!
//! - Target delay = base_target + hops x per_hop (the path's links) + flow
//!   scaling: alpha / sqrt(cwnd) + beta', clamped to [0, fs_range], with
//!   alpha and beta' such that the term is fs_range at fs_min_cwnd and 0 at
//!   fs_max_cwnd (fewer frames in flight per flow: a higher target).
//! - The base target follows the topology **[derived]**: by default it is
//!   the flow's own base RTT (the path's real per-hop delays, there and
//!   back) plus `queue_target_us` of queueing, so the target clears the
//!   path's delay wherever the flow runs (the paper scales the target by the
//!   topology for the same reason; its fabric's hops cost about a
//!   microsecond, which a fixed base target of tens of us covers, links of
//!   25 us do not). `base_target_us` set to a value is the paper's fixed
//!   base target instead; the engine warns when it leaves a flow's target
//!   below the flow's base RTT (the flow then never sees a delay below its
//!   target and its window falls to the floor).
//! - Per ACK, the delay being its RTT: below target cwnd += ai x acked / cwnd
//!   (ai x acked below one frame); above, at most once per RTT, cwnd = cwnd x
//!   max(1 - beta (delay - target) / delay, 1 - max_mdf).
//! - A NACK cuts by max_mdf (once per RTT), so does a timeout; `retx_reset`
//!   timeouts in a row set cwnd to its floor.
//! - cwnd in frames; below one frame the flow keeps one frame in flight and is
//!   paced at cwnd x MSS / RTT.
//!
//! Defaults: ai 1 frame, beta 0.8, max_mdf 0.5 (the paper); 15 us of
//! queueing above the base RTT, 1 us per hop, fs_range 25 us between 0.1 and
//! 100 frames, first window one BDP of the flow's path **[assumed]**.

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{AckKind, AckView, NetView, PathView, Red, RlCore, Scheme, num_us};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// Swift parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwiftParams {
    pub base_target_us: f64,
    pub queue_target_us: f64,
    pub per_hop_us: f64,
    pub fs_range_us: f64,
    pub fs_min_cwnd: f64,
    pub fs_max_cwnd: f64,
    pub ai: f64,
    pub beta: f64,
    pub max_mdf: f64,
    pub min_cwnd: f64,
    pub max_cwnd: f64,
    pub retx_reset: u32,
}

/// The `[swift]` table.
pub fn table() -> Table {
    Table::new("swift", "Swift parameters (Kumar et al., SIGCOMM 2020); for transport flows")
        .float(
            "base_target_us",
            0.0,
            Range::ge(0.0),
            "fixed base target delay (us; 0: derived per flow, its base RTT + queue_target_us)",
        )
        .float(
            "queue_target_us",
            15.0,
            Range::ge(0.0),
            "[assumed] with a derived base target: the queueing delay allowed above the flow's base RTT (us)",
        )
        .float(
            "per_hop_us",
            1.0,
            Range::ge(0.0),
            "[assumed] target added per link of the path (us)",
        )
        .float(
            "fs_range_us",
            25.0,
            Range::ge(0.0),
            "[assumed] flow scaling: most added to the target, at fs_min_cwnd (us; 0: off)",
        )
        .float(
            "fs_min_cwnd",
            0.1,
            Range::gt(0.0),
            "[assumed] flow scaling: window of the full range (frames)",
        )
        .float(
            "fs_max_cwnd",
            100.0,
            Range::gt(0.0),
            "[assumed] flow scaling: window of none (frames)",
        )
        .float("ai", 1.0, Range::gt(0.0), "additive increase per RTT (frames)")
        .float("beta", 0.8, Range::gt(0.0).le(1.0), "multiplicative decrease factor")
        .float("max_mdf", 0.5, Range::gt(0.0).lt(1.0), "largest decrease of one cut")
        .float(
            "min_cwnd",
            0.001,
            Range::gt(0.0),
            "smallest window (frames; below 1 the flow is paced)",
        )
        .float("max_cwnd", 1000.0, Range::gt(0.0), "largest window (frames)")
        .int(
            "retx_reset",
            5,
            Range::ge(1.0),
            "[assumed] timeouts in a row after which the window drops to min_cwnd (before: cut by max_mdf)",
        )
        .rule(&["fs_min_cwnd", "fs_max_cwnd"], "fs_min_cwnd < fs_max_cwnd", |v| {
            v.f("fs_min_cwnd") < v.f("fs_max_cwnd")
        })
        .rule(&["min_cwnd", "max_cwnd"], "min_cwnd <= max_cwnd", |v| {
            v.f("min_cwnd") <= v.f("max_cwnd")
        })
}

impl Default for SwiftParams {
    fn default() -> Self {
        table().default_params()
    }
}

/// Sender state of one flow.
#[derive(Debug, Clone)]
pub struct SwiftRl {
    /// Window (frames).
    pub cwnd: f64,
    pub last_decrease: Option<Time>,
    pub rtt_ps: Time,
    /// Retransmission timeouts since the last acknowledgement.
    pub timeouts: u32,
}

pub struct Swift {
    p: SwiftParams,
}

impl Swift {
    pub fn from_config(s: &SchemeConfig) -> Result<Swift, ConfigError> {
        Ok(Swift {
            p: table().parse(s.table(), &s.params)?,
        })
    }

    pub fn new(p: SwiftParams) -> Result<Swift, ConfigError> {
        Swift::from_config(&SchemeConfig::of("swift", &p))
    }

    /// The base target (us) of a flow whose base RTT is `base_rtt_ps`.
    pub fn base_target_us(&self, base_rtt_ps: Time) -> f64 {
        let p = &self.p;
        if p.base_target_us > 0.0 {
            p.base_target_us
        } else {
            base_rtt_ps as f64 / 1e6 + p.queue_target_us
        }
    }

    /// The target delay (us) of a flow over `hops` links whose base RTT is
    /// `base_rtt_ps`, with window `cwnd`.
    pub fn target_us(&self, hops: u32, base_rtt_ps: Time, cwnd: f64) -> f64 {
        let p = &self.p;
        let fs = if p.fs_range_us > 0.0 {
            let alpha = p.fs_range_us / (1.0 / p.fs_min_cwnd.sqrt() - 1.0 / p.fs_max_cwnd.sqrt());
            let beta = -alpha / p.fs_max_cwnd.sqrt();
            (alpha / cwnd.sqrt() + beta).clamp(0.0, p.fs_range_us)
        } else {
            0.0
        };
        self.base_target_us(base_rtt_ps) + hops as f64 * p.per_hop_us + fs
    }

    fn can_decrease(rl: &SwiftRl, now: Time) -> bool {
        rl.last_decrease.is_none_or(|t| now.saturating_sub(t) >= rl.rtt_ps)
    }

    /// Window and pacing from cwnd.
    fn apply(&self, core: &mut RlCore, rl: &SwiftRl, mss: u32) {
        let cwnd = rl.cwnd.max(self.p.min_cwnd).min(self.p.max_cwnd);
        if cwnd >= 1.0 {
            core.window_bytes = (cwnd * mss as f64) as u64;
            core.rate_bps = core.line_rate_bps;
        } else {
            // Below one frame: one frame in flight, paced at cwnd frames per RTT.
            core.window_bytes = mss as u64;
            let rtt_s = rl.rtt_ps.max(1) as f64 / 1e12;
            core.rate_bps = (cwnd * mss as f64 * 8.0 / rtt_s).min(core.line_rate_bps);
        }
    }
}

impl Scheme for Swift {
    type Ext = ();
    type Cp = ();
    type Np = ();
    type Rl = SwiftRl;

    fn new_cp(&self, _rng: Stream, _red: Option<Red>) {}

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (SwiftRl, Option<Time>) {
        // One BDP of the path to start (1,500-byte frames until the first ACK).
        let bdp = core.line_rate_bps / 8.0 * core.base_rtt_ps as f64 / 1e12 / 1500.0;
        let rl = SwiftRl {
            cwnd: bdp.max(1.0).min(self.p.max_cwnd),
            last_decrease: None,
            rtt_ps: core.base_rtt_ps,
            timeouts: 0,
        };
        core.window_bytes = (rl.cwnd * 1500.0) as u64;
        (rl, None)
    }

    fn rp_on_ack(&self, core: &mut RlCore, rl: &mut SwiftRl, ack: &AckView, _echo: &(), now: Time, _rng: &mut Stream) -> Option<Time> {
        let p = &self.p;
        match ack.kind {
            AckKind::Timeout => {
                rl.timeouts += 1;
                if rl.timeouts >= p.retx_reset {
                    rl.cwnd = p.min_cwnd;
                } else {
                    rl.cwnd *= 1.0 - p.max_mdf;
                }
            }
            AckKind::Nack => {
                if Self::can_decrease(rl, now) {
                    rl.cwnd *= 1.0 - p.max_mdf;
                    rl.last_decrease = Some(now);
                }
            }
            AckKind::Ack => {
                rl.timeouts = 0;
                rl.rtt_ps = ack.rtt_ps;
                let delay = ack.rtt_ps as f64 / 1e6;
                let acked = ack.acked_bytes as f64 / ack.mss as f64;
                let target = self.target_us(ack.hops, ack.base_rtt_ps, rl.cwnd);
                if delay < target {
                    rl.cwnd += if rl.cwnd >= 1.0 { p.ai * acked / rl.cwnd } else { p.ai * acked };
                } else if Self::can_decrease(rl, now) {
                    rl.cwnd *= (1.0 - p.beta * (delay - target) / delay).max(1.0 - p.max_mdf);
                    rl.last_decrease = Some(now);
                }
            }
        }
        rl.cwnd = rl.cwnd.max(p.min_cwnd).min(p.max_cwnd);
        self.apply(core, rl, ack.mss);
        None
    }

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        let p = &self.p;
        // Only a fixed base target can sit below a path's delay; the worst
        // flow is the one whose target clears its base RTT by the least.
        let worst = net.paths.iter().filter(|_| p.base_target_us > 0.0).min_by(|a, b| {
            let slack = |x: &PathView| self.target_us(x.hops, x.base_rtt_ps, p.fs_max_cwnd) - x.base_rtt_ps as f64 / 1e6;
            slack(a).total_cmp(&slack(b))
        });
        let mut warnings = Vec::new();
        if let Some(w) = worst {
            let target = self.target_us(w.hops, w.base_rtt_ps, p.fs_max_cwnd);
            let base = w.base_rtt_ps as f64 / 1e6;
            if target <= base {
                warnings.push(format!(
                    "swift.base_target_us = {} us gives flow {} a target of {} us ({} hops x swift.per_hop_us = {} us), not above its base RTT of {} us: \
                     its window falls to the floor (0 derives the base target from each flow's base RTT)",
                    num_us(p.base_target_us),
                    w.flow,
                    num_us(target),
                    w.hops,
                    num_us(p.per_hop_us),
                    num_us(base)
                ));
            }
        }
        Ok(warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(rtt_us: f64, hops: u32) -> AckView {
        AckView {
            kind: AckKind::Ack,
            acked_bytes: 1500,
            rtt_ps: (rtt_us * 1e6) as Time,
            una_bytes: 0,
            nxt_bytes: 0,
            mss: 1500,
            hops,
            base_rtt_ps: 10_000_000,
            entropy: 0,
        }
    }

    #[test]
    fn the_target_grows_with_hops_and_with_fewer_frames_in_flight() {
        let s = Swift::new(SwiftParams::default()).unwrap();
        // A 10 us base RTT: 10 + 15 us of queueing + 2 hops x 1 us.
        let rtt = 10_000_000;
        assert!((s.target_us(2, rtt, 100.0) - 27.0).abs() < 1e-9, "no flow scaling at fs_max_cwnd");
        assert!((s.target_us(2, rtt, 0.1) - 52.0).abs() < 1e-9, "the full range at fs_min_cwnd");
        assert!(s.target_us(4, rtt, 10.0) > s.target_us(2, rtt, 10.0));
        assert!(s.target_us(2, rtt, 1.0) > s.target_us(2, rtt, 10.0));
        // The base target follows the path: 100 us more of base RTT, 100 us more of target.
        assert!((s.target_us(2, rtt + 100_000_000, 100.0) - 127.0).abs() < 1e-9);
        // A fixed base target does not.
        let fixed = Swift::new(SwiftParams {
            base_target_us: 25.0,
            ..SwiftParams::default()
        })
        .unwrap();
        assert_eq!(fixed.target_us(2, rtt, 100.0), fixed.target_us(2, rtt + 100_000_000, 100.0));
    }

    #[test]
    fn below_target_the_window_grows_above_it_it_is_cut_once_per_rtt() {
        let s = Swift::new(SwiftParams {
            fs_range_us: 0.0,
            ..SwiftParams::default()
        })
        .unwrap();
        let mut rng = crate::engine::rng::stream(0, "t");
        let mut c = RlCore {
            base_rtt_ps: 10_000_000,
            ..RlCore::at_line_rate(10e9)
        };
        let (mut rl, _) = s.new_rl(&mut c, 0);
        let w0 = rl.cwnd;
        s.rp_on_ack(&mut c, &mut rl, &ack(20.0, 2), &(), 0, &mut rng);
        assert!((rl.cwnd - (w0 + 1.0 / w0)).abs() < 1e-12);
        // Delay 54 us against a 27 us target: x max(1 - 0.8 x 27 / 54, 0.5) = 0.6.
        let w = rl.cwnd;
        s.rp_on_ack(&mut c, &mut rl, &ack(54.0, 2), &(), 1_000_000, &mut rng);
        assert!((rl.cwnd - 0.6 * w).abs() < 1e-12);
        s.rp_on_ack(&mut c, &mut rl, &ack(54.0, 2), &(), 2_000_000, &mut rng);
        assert!((rl.cwnd - 0.6 * w).abs() < 1e-12, "not twice in one RTT");
        assert_eq!(c.window_bytes, (rl.cwnd * 1500.0) as u64);
        // Far below one frame: one frame in flight, paced.
        for k in 0..40 {
            s.rp_on_ack(&mut c, &mut rl, &ack(500.0, 2), &(), 1_000_000_000 * (k + 1), &mut rng);
        }
        assert!(rl.cwnd < 1.0);
        assert_eq!(c.window_bytes, 1500);
        assert!((c.rate_bps - rl.cwnd * 1500.0 * 8.0 / 500e-6).abs() < 1.0);
    }
}

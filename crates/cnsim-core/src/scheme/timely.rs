//! TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the
//! Datacenter", SIGCOMM 2015): a rate scheme for transport flows driven by
//! the RTT its acknowledgements measure. No switch support.
//!
//! Once per `update_bytes` acknowledged (the paper's completion event of a
//! segment) and at most once per RTT **[assumed]** (not before the bytes
//! sent at the last update are acknowledged: at a 10 Gbit/s line rate a
//! 16 KB segment completes every 13 us, and without it one queue of
//! hundreds of us would be reacted to dozens of times), with the latest RTT
//! sample:
//!
//! - rtt_diff = (1 - alpha) rtt_diff + alpha (rtt - previous rtt); the
//!   gradient is rtt_diff / min_rtt;
//! - rtt < T_low: R += delta; rtt > T_high: R = R (1 - beta (1 - T_high / rtt));
//! - otherwise, `rule = "original"`: gradient <= 0: R += N delta (N = 5 after
//!   five such updates in a row, hyperactive increase, else 1); gradient > 0:
//!   R = R (1 - beta gradient);
//! - `rule = "patched"` (Zhu et al., "ECN or Delay: Lessons Learnt from
//!   Analysis of DCQCN and TIMELY", CoNEXT 2016, the corrected rule of the
//!   same analysis): w = 0 for gradient <= -1/4, 2 gradient + 1/2 between,
//!   1 from 1/4; R = delta (1 - w) + R (1 - beta w (rtt - rtt_ref) / rtt_ref).
//!   Its fixed point is unique (every flow at the rate where delta = beta R
//!   (rtt - rtt_ref) / rtt_ref, the same for flows sharing a bottleneck); the
//!   original's is not (any split with a flat RTT).
//!
//! Defaults from the paper at 10 Gbit/s: alpha 0.875, beta 0.8, delta
//! 10 Mbit/s, T_low 50 us, T_high 500 us, min RTT 20 us, segments of 16 KB.

use super::params::{Range, Table};
use super::{AckKind, AckView, RlCore, Scheme};
use crate::config::{ConfigError, SchemeConfig};
use crate::engine::rng::Stream;
use crate::engine::Time;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelyRule {
    Original,
    Patched,
}

/// TIMELY parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelyParams {
    pub rule: TimelyRule,
    pub alpha: f64,
    pub beta: f64,
    pub delta_mbps: f64,
    pub t_low_us: f64,
    pub t_high_us: f64,
    pub min_rtt_us: f64,
    pub rtt_ref_us: f64,
    pub update_bytes: f64,
    pub hai_after: u32,
    pub min_rate_mbps: f64,
    pub init_rate_gbps: f64,
}

/// The `[timely]` table.
pub fn table() -> Table {
    Table::new("timely", "TIMELY parameters (Mittal et al., SIGCOMM 2015); for transport flows")
        .choice(
            "rule",
            &["original", "patched"],
            "original",
            "rate rule: original (gradient only) or patched (Zhu et al. 2016, unique fixed point)",
        )
        .float("alpha", 0.875, Range::gt(0.0).le(1.0), "EWMA weight of the new RTT difference")
        .float("beta", 0.8, Range::gt(0.0).le(1.0), "multiplicative decrease factor")
        .float("delta_mbps", 10.0, Range::gt(0.0), "additive increase step delta (Mbit/s)")
        .float("t_low_us", 50.0, Range::ge(0.0), "below this RTT: increase regardless (us)")
        .float("t_high_us", 500.0, Range::gt(0.0), "above this RTT: decrease regardless (us)")
        .float("min_rtt_us", 20.0, Range::gt(0.0), "the RTT the gradient is normalised by (us)")
        .float(
            "rtt_ref_us",
            50.0,
            Range::gt(0.0),
            "[assumed] patched rule: the reference RTT the flows settle near (us)",
        )
        .float(
            "update_bytes",
            0.0,
            Range::ge(0.0),
            "[assumed] also at least this many bytes acknowledged between updates (the paper's 16-64 KB segment; 0: once per RTT)",
        )
        .int(
            "hai_after",
            5,
            Range::ge(1.0),
            "hyperactive increase (5 delta) after this many negative gradients in a row",
        )
        .float("min_rate_mbps", 10.0, Range::gt(0.0), "[assumed] rate floor (Mbit/s)")
        .float(
            "init_rate_gbps",
            0.0,
            Range::ge(0.0),
            "a flow's first rate (Gbit/s; 0: the line rate, capped at it)",
        )
        .rule(&["t_low_us", "t_high_us"], "t_low_us < t_high_us", |v| {
            v.f("t_low_us") < v.f("t_high_us")
        })
}

impl Default for TimelyParams {
    fn default() -> Self {
        table().default_params()
    }
}

/// Sender state of one flow.
#[derive(Debug, Clone, Default)]
pub struct TimelyRl {
    pub prev_rtt_us: Option<f64>,
    pub rtt_diff_us: f64,
    /// Updates in a row with a negative gradient.
    pub negative: u32,
    pub acked: f64,
    /// No update before the flow's acknowledged bytes pass this: what was
    /// sent at the last update (one reaction per RTT to the same queue).
    pub next_update: u64,
}

pub struct Timely {
    p: TimelyParams,
}

impl Timely {
    pub fn from_config(s: &SchemeConfig) -> Result<Timely, ConfigError> {
        Ok(Timely {
            p: table().parse(s.table(), &s.params)?,
        })
    }

    pub fn new(p: TimelyParams) -> Result<Timely, ConfigError> {
        Timely::from_config(&SchemeConfig::of("timely", &p))
    }

    pub fn params(&self) -> &TimelyParams {
        &self.p
    }

    /// One rate update with RTT sample `rtt` (us).
    pub fn update(&self, core: &mut RlCore, rl: &mut TimelyRl, rtt: f64) {
        let p = &self.p;
        let delta = p.delta_mbps * 1e6;
        let Some(prev) = rl.prev_rtt_us.replace(rtt) else {
            return; // the first sample only sets the reference
        };
        rl.rtt_diff_us = (1.0 - p.alpha) * rl.rtt_diff_us + p.alpha * (rtt - prev);
        let g = rl.rtt_diff_us / p.min_rtt_us;
        let r = core.rate_bps;
        let next = if rtt < p.t_low_us {
            r + delta
        } else if rtt > p.t_high_us {
            r * (1.0 - p.beta * (1.0 - p.t_high_us / rtt))
        } else {
            match p.rule {
                TimelyRule::Original if g <= 0.0 => {
                    rl.negative += 1;
                    let n = if rl.negative >= p.hai_after { 5.0 } else { 1.0 };
                    r + n * delta
                }
                TimelyRule::Original => {
                    rl.negative = 0;
                    r * (1.0 - p.beta * g)
                }
                TimelyRule::Patched => {
                    let w = if g <= -0.25 {
                        0.0
                    } else if g >= 0.25 {
                        1.0
                    } else {
                        2.0 * g + 0.5
                    };
                    let error = (rtt - p.rtt_ref_us) / p.rtt_ref_us;
                    delta * (1.0 - w) + r * (1.0 - p.beta * w * error)
                }
            }
        };
        core.rate_bps = next.clamp(p.min_rate_mbps * 1e6, core.line_rate_bps);
    }
}

impl Scheme for Timely {
    type Ext = ();
    type Cp = ();
    type Np = ();
    type Rl = TimelyRl;

    fn new_cp(&self, _rng: Stream) {}

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (TimelyRl, Option<Time>) {
        if self.p.init_rate_gbps > 0.0 {
            core.rate_bps = (self.p.init_rate_gbps * 1e9).clamp(self.p.min_rate_mbps * 1e6, core.line_rate_bps);
        }
        (TimelyRl::default(), None)
    }

    fn rp_on_ack(&self, core: &mut RlCore, rl: &mut TimelyRl, ack: &AckView, _echo: &(), _now: Time, _rng: &mut Stream) -> Option<Time> {
        if ack.kind != AckKind::Ack {
            return None;
        }
        rl.acked += ack.acked_bytes as f64;
        if rl.prev_rtt_us.is_some() && (rl.acked < self.p.update_bytes || ack.una_bytes < rl.next_update) {
            return None;
        }
        rl.acked = 0.0;
        rl.next_update = ack.nxt_bytes;
        self.update(core, rl, ack.rtt_ps as f64 / 1e6);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timely(rule: TimelyRule) -> Timely {
        Timely::new(TimelyParams {
            rule,
            ..TimelyParams::default()
        })
        .unwrap()
    }

    #[test]
    fn the_rate_follows_the_rtt_gradient_and_the_thresholds() {
        let t = timely(TimelyRule::Original);
        let mut c = RlCore {
            rate_bps: 5e9,
            ..RlCore::at_line_rate(10e9)
        };
        let mut rl = TimelyRl::default();
        t.update(&mut c, &mut rl, 100.0);
        assert_eq!(c.rate_bps, 5e9, "the first sample only sets the reference");
        // RTT rising by 20 us: gradient alpha x 20 / 20 = 0.875, R x (1 - 0.8 x 0.875).
        t.update(&mut c, &mut rl, 120.0);
        assert!((c.rate_bps - 5e9 * (1.0 - 0.8 * 0.875)).abs() < 1.0);
        // Below T_low: + delta.
        let r = c.rate_bps;
        t.update(&mut c, &mut rl, 40.0);
        assert!((c.rate_bps - (r + 10e6)).abs() < 1.0);
        // Above T_high: R (1 - beta (1 - T_high / rtt)).
        let r = c.rate_bps;
        t.update(&mut c, &mut rl, 1000.0);
        assert!((c.rate_bps - r * (1.0 - 0.8 * 0.5)).abs() < 1.0);
    }

    #[test]
    fn hyperactive_increase_after_five_negative_gradients() {
        let t = timely(TimelyRule::Original);
        let mut c = RlCore {
            rate_bps: 1e9,
            ..RlCore::at_line_rate(10e9)
        };
        let mut rl = TimelyRl::default();
        let mut rtt = 400.0;
        t.update(&mut c, &mut rl, rtt);
        let mut steps = vec![];
        for _ in 0..6 {
            rtt -= 10.0;
            let r = c.rate_bps;
            t.update(&mut c, &mut rl, rtt);
            steps.push(((c.rate_bps - r) / 1e6).round());
        }
        assert_eq!(steps, vec![10.0, 10.0, 10.0, 10.0, 50.0, 50.0]);
    }

    #[test]
    fn the_patched_rule_holds_a_flat_rtt_at_the_reference() {
        // A flat RTT (gradient 0, w = 1/2) at rtt_ref leaves R + delta / 2;
        // above it R falls, below it R rises: one rate per RTT.
        let t = timely(TimelyRule::Patched);
        for (rtt, up) in [(60.0, false), (50.0, true), (45.0, true)] {
            let mut c = RlCore {
                rate_bps: 5e9,
                ..RlCore::at_line_rate(10e9)
            };
            let mut rl = TimelyRl {
                prev_rtt_us: Some(rtt),
                ..TimelyRl::default()
            };
            t.update(&mut c, &mut rl, rtt);
            assert_eq!(c.rate_bps > 5e9, up, "rtt {rtt}");
        }
    }
}

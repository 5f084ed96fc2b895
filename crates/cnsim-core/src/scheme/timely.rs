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
//! A NACK or a timeout sends the flow back to its first unacknowledged frame
//! (go-back-N): the bytes it had sent at the last update will be sent again,
//! at whatever rate it has now, so the once-per-RTT gate is moved back to
//! what is in flight after going back. Without that a flow cut to the floor
//! just before a loss waited for its whole former window to be resent at
//! 10 Mbit/s (300 ms for 260 frames) before it could update again.
//!
//! Thresholds follow the flow's path **[derived]**: the paper's values (T_low
//! 50 us, T_high 500 us, min RTT 20 us) are for its fabric's 20 us minimum
//! RTT, so by default min RTT is the flow's base RTT and T_low / T_high sit
//! the paper's 30 / 480 us of queueing above it (`min_rtt_us`, `t_low_us`,
//! `t_high_us` set to a value override it; 0: derived). On a path of 100 us
//! the paper's absolute T_low is never reached and one or two us of RTT noise
//! reads, over its 20 us, as a gradient of 0.05-0.1.
//!
//! Defaults from the paper at 10 Gbit/s: alpha 0.875, beta 0.8, delta
//! 10 Mbit/s, segments of 16 KB.

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{AckKind, AckView, NetView, Red, RlCore, Scheme, check_floor, num_us};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::error::ConfigError;
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
    pub window: bool,
    pub window_follows_rate: bool,
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
        .float(
            "t_low_us",
            0.0,
            Range::ge(0.0),
            "below this RTT: increase regardless (us; 0: the flow's base RTT + 30 us, the paper's 50 - 20 us)",
        )
        .float(
            "t_high_us",
            0.0,
            Range::ge(0.0),
            "above this RTT: decrease regardless (us; 0: the flow's base RTT + 480 us, the paper's 500 - 20 us)",
        )
        .float(
            "min_rtt_us",
            0.0,
            Range::ge(0.0),
            "the RTT the gradient is normalised by (us; 0: the flow's base RTT; the paper: 20)",
        )
        .float(
            "rtt_ref_us",
            0.0,
            Range::ge(0.0),
            "[assumed] patched rule: the reference RTT the flows settle near (us; 0: the flow's T_low)",
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
        .flag(
            "window",
            false,
            "besides the rate, a window of one BDP in flight (line rate x the flow's base RTT): TIMELY+w of HPCC's evaluation (Li et al., SIGCOMM 2019)",
        )
        .flag(
            "window_follows_rate",
            false,
            "with window: the window is one BDP x the current rate / the line rate (the HPCC artifact's VAR_WIN, which its TIMELY+w runs), not a fixed BDP",
        )
        .rule(&["t_low_us", "t_high_us"], "t_low_us < t_high_us (when both are set)", |v| {
            v.f("t_low_us") == 0.0 || v.f("t_high_us") == 0.0 || v.f("t_low_us") < v.f("t_high_us")
        })
}

impl Default for TimelyParams {
    fn default() -> Self {
        table().default_params()
    }
}

impl TimelyParams {
    /// The paper's absolute thresholds (min RTT 20, T_low 50, T_high 500,
    /// rtt_ref 50 us) and a first rate of 1 Gbit/s: the setting of the
    /// two-flow studies (Zhu et al. 2016), whatever the path.
    pub fn paper() -> TimelyParams {
        TimelyParams {
            min_rtt_us: PAPER_MIN_RTT_US,
            t_low_us: PAPER_MIN_RTT_US + T_LOW_QUEUE_US,
            t_high_us: PAPER_MIN_RTT_US + T_HIGH_QUEUE_US,
            rtt_ref_us: PAPER_MIN_RTT_US + T_LOW_QUEUE_US,
            init_rate_gbps: 1.0,
            ..TimelyParams::default()
        }
    }
}

/// The paper's thresholds less its 20 us minimum RTT: what the derived
/// T_low and T_high add to a flow's base RTT (us).
pub const T_LOW_QUEUE_US: f64 = 30.0;
pub const T_HIGH_QUEUE_US: f64 = 480.0;
/// The paper's minimum RTT, for a flow whose base RTT is unknown (us).
pub const PAPER_MIN_RTT_US: f64 = 20.0;

/// A flow's RTT thresholds (us): the parameters, or derived from its base RTT.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thresholds {
    pub min_rtt_us: f64,
    pub t_low_us: f64,
    pub t_high_us: f64,
    pub rtt_ref_us: f64,
}

/// Sender state of one flow.
#[derive(Debug, Clone, Default)]
pub struct TimelyRl {
    pub th: Thresholds,
    pub prev_rtt_us: Option<f64>,
    pub rtt_diff_us: f64,
    /// Updates in a row with a negative gradient.
    pub negative: u32,
    pub acked: f64,
    /// No update before the flow's acknowledged bytes pass this: what was
    /// sent at the last update (one reaction per RTT to the same queue).
    pub next_update: u64,
    /// The flow's BDP (bytes) when it has a window.
    pub bdp_bytes: u64,
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

    /// The thresholds of a flow whose base RTT is `base_rtt_ps` (0: unknown).
    pub fn thresholds(&self, base_rtt_ps: Time) -> Thresholds {
        let p = &self.p;
        let base = if base_rtt_ps > 0 {
            base_rtt_ps as f64 / 1e6
        } else {
            PAPER_MIN_RTT_US
        };
        let or = |given: f64, derived: f64| if given > 0.0 { given } else { derived };
        let t_low_us = or(p.t_low_us, base + T_LOW_QUEUE_US);
        Thresholds {
            min_rtt_us: or(p.min_rtt_us, base),
            t_low_us,
            t_high_us: or(p.t_high_us, base + T_HIGH_QUEUE_US),
            rtt_ref_us: or(p.rtt_ref_us, t_low_us),
        }
    }

    /// The rate floor on a link of `line_bps` (the engine refuses a floor
    /// above a sender's line rate; `min` keeps this total regardless).
    fn floor_bps(&self, line_bps: f64) -> f64 {
        (self.p.min_rate_mbps * 1e6).min(line_bps)
    }

    /// One rate update with RTT sample `rtt` (us).
    /// With a window following the rate: the window for the rate now.
    fn follow_rate(&self, core: &mut RlCore, rl: &TimelyRl) {
        if self.p.window_follows_rate && rl.bdp_bytes > 0 {
            core.window_bytes = ((rl.bdp_bytes as f64 * core.rate_bps / core.line_rate_bps) as u64).max(1);
        }
    }

    pub fn update(&self, core: &mut RlCore, rl: &mut TimelyRl, rtt: f64) {
        let p = &self.p;
        let th = rl.th;
        let delta = p.delta_mbps * 1e6;
        let Some(prev) = rl.prev_rtt_us.replace(rtt) else {
            return; // the first sample only sets the reference
        };
        rl.rtt_diff_us = (1.0 - p.alpha) * rl.rtt_diff_us + p.alpha * (rtt - prev);
        let g = rl.rtt_diff_us / th.min_rtt_us;
        let r = core.rate_bps;
        let next = if rtt < th.t_low_us {
            r + delta
        } else if rtt > th.t_high_us {
            r * (1.0 - p.beta * (1.0 - th.t_high_us / rtt))
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
                    let error = (rtt - th.rtt_ref_us) / th.rtt_ref_us;
                    delta * (1.0 - w) + r * (1.0 - p.beta * w * error)
                }
            }
        };
        // max then min, not clamp: a NaN rate (none is expected) becomes the floor, never a panic.
        core.rate_bps = next.max(self.floor_bps(core.line_rate_bps)).min(core.line_rate_bps);
    }
}

impl Scheme for Timely {
    type Ext = ();
    type Cp = ();
    type Np = ();
    type Rl = TimelyRl;

    fn new_cp(&self, _rng: Stream, _red: Option<Red>) {}

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (TimelyRl, Option<Time>) {
        if self.p.init_rate_gbps > 0.0 {
            core.rate_bps = (self.p.init_rate_gbps * 1e9)
                .max(self.floor_bps(core.line_rate_bps))
                .min(core.line_rate_bps);
        }
        let mut rl = TimelyRl {
            th: self.thresholds(core.base_rtt_ps),
            ..TimelyRl::default()
        };
        if self.p.window && core.base_rtt_ps > 0 {
            rl.bdp_bytes = ((core.line_rate_bps / 8.0 * core.base_rtt_ps as f64 / 1e12) as u64).max(1);
            core.window_bytes = rl.bdp_bytes;
            self.follow_rate(core, &rl);
        }
        (rl, None)
    }

    fn rp_on_ack(&self, core: &mut RlCore, rl: &mut TimelyRl, ack: &AckView, _echo: &(), _now: Time, _rng: &mut Stream) -> Option<Time> {
        if ack.kind != AckKind::Ack {
            // Go-back-N: the frames in flight are sent again; wait for what
            // is in flight now, not for the old window resent at this rate.
            rl.next_update = rl.next_update.min(ack.nxt_bytes);
            return None;
        }
        rl.acked += ack.acked_bytes as f64;
        if rl.prev_rtt_us.is_some() && (rl.acked < self.p.update_bytes || ack.una_bytes < rl.next_update) {
            return None;
        }
        rl.acked = 0.0;
        rl.next_update = ack.nxt_bytes;
        self.update(core, rl, ack.rtt_ps as f64 / 1e6);
        self.follow_rate(core, rl);
        None
    }

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        let p = &self.p;
        check_floor("timely.min_rate_mbps", p.min_rate_mbps, net)?;
        let mut warnings = Vec::new();
        let Some(worst) = net.longest_path() else {
            return Ok(warnings);
        };
        let base_us = worst.base_rtt_ps as f64 / 1e6;
        let below = |name: &str, v: f64, what: &str| {
            format!(
                "timely.{name} = {} us is below flow {}'s base RTT of {} us: {what}",
                num_us(v),
                worst.flow,
                num_us(base_us)
            )
        };
        if p.t_high_us > 0.0 && p.t_high_us <= base_us {
            warnings.push(below(
                "t_high_us",
                p.t_high_us,
                "every RTT it measures cuts its rate (0 derives T_high from the base RTT)",
            ));
        } else if p.t_low_us > 0.0 && p.t_low_us <= base_us {
            warnings.push(below(
                "t_low_us",
                p.t_low_us,
                "it never measures an RTT below T_low (0 derives T_low from the base RTT)",
            ));
        }
        let short = net.shortest_path().unwrap_or(worst);
        let th = self.thresholds(short.base_rtt_ps);
        if p.t_low_us > 0.0 && p.t_high_us == 0.0 && p.t_low_us >= th.t_high_us {
            warnings.push(format!(
                "timely.t_low_us = {} us is not below flow {}'s T_high of {} us (its base RTT + {T_HIGH_QUEUE_US} us): the gradient band is empty",
                num_us(p.t_low_us),
                short.flow,
                num_us(th.t_high_us)
            ));
        }
        if p.rule == TimelyRule::Patched && p.rtt_ref_us > 0.0 && p.rtt_ref_us <= base_us {
            warnings.push(below(
                "rtt_ref_us",
                p.rtt_ref_us,
                "the patched rule cuts its rate at every RTT it measures (0: the flow's T_low)",
            ));
        }
        if p.min_rtt_us > 0.0 && p.min_rtt_us < base_us / 2.0 {
            warnings.push(format!(
                "timely.min_rtt_us = {} us is under half of flow {}'s base RTT of {} us: its RTT noise reads as a steep gradient (0: the base RTT)",
                num_us(p.min_rtt_us),
                worst.flow,
                num_us(base_us)
            ));
        }
        Ok(warnings)
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

    /// A flow whose base RTT is the paper's 20 us: its derived thresholds
    /// are the paper's (min RTT 20, T_low 50, T_high 500, rtt_ref 50 us).
    fn rl_on_20us(t: &Timely) -> TimelyRl {
        let rl = TimelyRl {
            th: t.thresholds(20_000_000),
            ..TimelyRl::default()
        };
        assert_eq!(
            rl.th,
            Thresholds {
                min_rtt_us: 20.0,
                t_low_us: 50.0,
                t_high_us: 500.0,
                rtt_ref_us: 50.0
            }
        );
        rl
    }

    #[test]
    fn the_rate_follows_the_rtt_gradient_and_the_thresholds() {
        let t = timely(TimelyRule::Original);
        let mut c = RlCore {
            rate_bps: 5e9,
            ..RlCore::at_line_rate(10e9)
        };
        let mut rl = rl_on_20us(&t);
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
        let mut rl = rl_on_20us(&t);
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
                ..rl_on_20us(&t)
            };
            t.update(&mut c, &mut rl, rtt);
            assert_eq!(c.rate_bps > 5e9, up, "rtt {rtt}");
        }
    }

    fn ack(kind: AckKind, rtt_us: f64, una: u64, nxt: u64) -> AckView {
        AckView {
            kind,
            acked_bytes: if kind == AckKind::Ack { 1500 } else { 0 },
            rtt_ps: (rtt_us * 1e6) as Time,
            una_bytes: una,
            nxt_bytes: nxt,
            mss: 1500,
            hops: 2,
            base_rtt_ps: 20_000_000,
            entropy: 0,
        }
    }

    /// One update per RTT: not before the bytes sent at the last update are
    /// acknowledged. A NACK sends the flow back to its first unacknowledged
    /// frame, and the gate with it: the next ACK updates, however far the
    /// flow had sent before (at the floor, resending a former window of 260
    /// frames took 300 ms, the rate frozen all along).
    #[test]
    fn going_back_n_moves_the_update_gate_back() {
        let t = timely(TimelyRule::Original);
        let mut rng = crate::engine::rng::stream(0, "t");
        let mut c = RlCore {
            base_rtt_ps: 20_000_000,
            ..RlCore::at_line_rate(10e9)
        };
        let (mut rl, _) = t.new_rl(&mut c, 0);
        assert_eq!(rl.th.t_low_us, 50.0, "derived from the 20 us base RTT");
        t.rp_on_ack(&mut c, &mut rl, &ack(AckKind::Ack, 30.0, 1500, 400 * 1500), &(), 0, &mut rng);
        assert_eq!(rl.next_update, 400 * 1500);
        // Within the RTT: no update, whatever the sample.
        t.rp_on_ack(&mut c, &mut rl, &ack(AckKind::Ack, 300.0, 3000, 401 * 1500), &(), 0, &mut rng);
        assert_eq!(c.rate_bps, 10e9);
        // A NACK: the flow goes back to frame 2; the next ACK updates.
        t.rp_on_ack(&mut c, &mut rl, &ack(AckKind::Nack, 0.0, 3000, 3000), &(), 0, &mut rng);
        assert_eq!(rl.next_update, 3000);
        t.rp_on_ack(&mut c, &mut rl, &ack(AckKind::Ack, 30.0, 4500, 4500), &(), 0, &mut rng);
        assert_eq!(c.rate_bps, 10e9, "below T_low: + delta, at the line rate");
        assert_eq!(rl.prev_rtt_us, Some(30.0), "updated");
        // A timeout does the same.
        rl.next_update = 1 << 40;
        t.rp_on_ack(&mut c, &mut rl, &ack(AckKind::Timeout, 0.0, 4500, 4500), &(), 0, &mut rng);
        assert_eq!(rl.next_update, 4500);
    }

    /// The thresholds follow the flow's base RTT unless set.
    #[test]
    fn the_thresholds_follow_the_base_rtt_unless_set() {
        let t = timely(TimelyRule::Original);
        let th = t.thresholds(104_000_000);
        assert_eq!(
            (th.min_rtt_us, th.t_low_us, th.t_high_us, th.rtt_ref_us),
            (104.0, 134.0, 584.0, 134.0)
        );
        let t = Timely::new(TimelyParams {
            t_low_us: 60.0,
            min_rtt_us: 25.0,
            ..TimelyParams::default()
        })
        .unwrap();
        let th = t.thresholds(104_000_000);
        assert_eq!((th.min_rtt_us, th.t_low_us, th.t_high_us, th.rtt_ref_us), (25.0, 60.0, 584.0, 60.0));
    }
}

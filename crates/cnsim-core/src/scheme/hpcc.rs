//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM
//! 2019): window and rate from in-band network telemetry, for transport
//! flows.
//!
//! - Every bridge port (CP) stamps a data frame as it leaves: the queue it
//!   leaves behind (bytes), the bytes the port has sent, the time, its rate
//!   (INT). At most
//!   [`MAX_HOPS`] hops are recorded.
//! - The receiver echoes the stamps in the ACK.
//! - The sender (the paper's Algorithm 1): per link i of the path, from the
//!   previous stamps, txRate = delta tx bytes / delta time and u_i =
//!   min(qlen, previous qlen) / (B T) + txRate / B; U follows the largest u
//!   with weight tau / T (tau its time difference, at most T); W = Wc / (U /
//!   eta) + W_AI when U >= eta or after `max_stage` increases, else Wc +
//!   W_AI; Wc takes W once per RTT (the first ACK beyond the bytes sent at
//!   the last such update). Rate R = W / T; W bounds the bytes in flight.
//!
//! T is the flow's base RTT (a full frame there and its ACK back on the
//! empty path). Defaults from the paper: eta 0.95, maxStage 5; W_AI from an
//! additive rate step R_AI = 50 Mbit/s (W_AI = R_AI T) **[assumed]**.

use super::params::SchemeConfig;
use super::params::{Range, Table};
use super::{AckKind, AckView, QueueView, Red, RlCore, Scheme};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::error::ConfigError;
use crate::frame::Frame;
use serde::{Deserialize, Serialize};

/// Hops a frame records.
pub const MAX_HOPS: usize = 5;

/// HPCC parameters, in the units of their names; declared in [`table`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HpccParams {
    pub eta: f64,
    pub max_stage: u32,
    pub r_ai_mbps: f64,
}

/// The `[hpcc]` table.
pub fn table() -> Table {
    Table::new("hpcc", "HPCC parameters (Li et al., SIGCOMM 2019); for transport flows")
        .float("eta", 0.95, Range::gt(0.0).le(1.0), "target utilisation eta")
        .int("max_stage", 5, Range::ge(0.0), "additive increases before a multiplicative update")
        .float(
            "r_ai_mbps",
            50.0,
            Range::ge(0.0),
            "[assumed] additive increase as a rate, W_AI = R_AI x T (Mbit/s)",
        )
}

impl Default for HpccParams {
    fn default() -> Self {
        table().default_params()
    }
}

/// One hop's telemetry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    pub qlen: u32,
    pub tx_bytes: u64,
    pub ts: Time,
    /// The port's rate (Mbit/s).
    pub rate_mbps: u32,
}

/// HPCC's frame extension: the telemetry of the hops a data frame crossed
/// (echoed by its ACK).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HpccExt {
    pub n: u8,
    pub hops: [IntHop; MAX_HOPS],
}

/// Sender state of one flow.
#[derive(Debug, Clone)]
pub struct HpccRl {
    pub u: f64,
    pub wc: f64,
    pub stage: u32,
    /// The next reference update of Wc when the acknowledged bytes pass this.
    pub next_update: u64,
    pub last: HpccExt,
    pub started: bool,
}

pub struct Hpcc {
    p: HpccParams,
}

impl Hpcc {
    pub fn from_config(s: &SchemeConfig) -> Result<Hpcc, ConfigError> {
        Ok(Hpcc {
            p: table().parse(s.table(), &s.params)?,
        })
    }

    pub fn new(p: HpccParams) -> Result<Hpcc, ConfigError> {
        Hpcc::from_config(&SchemeConfig::of("hpcc", &p))
    }

    /// The paper's MeasureInflight: the normalised inflight U after `int`.
    fn measure(&self, rl: &mut HpccRl, int: &HpccExt, t_ps: f64) -> f64 {
        let mut u = 0.0;
        let mut tau = t_ps;
        let n = int.n.min(rl.last.n) as usize;
        for i in 0..n {
            let (now, before) = (&int.hops[i], &rl.last.hops[i]);
            let b = now.rate_mbps as f64 * 1e6 / 8.0; // bytes per second
            let dt = now.ts.saturating_sub(before.ts) as f64;
            if dt <= 0.0 || b <= 0.0 {
                continue;
            }
            let tx_rate = now.tx_bytes.saturating_sub(before.tx_bytes) as f64 / (dt / 1e12);
            let ui = now.qlen.min(before.qlen) as f64 / (b * t_ps / 1e12) + tx_rate / b;
            if ui > u {
                u = ui;
                tau = dt;
            }
        }
        let tau = tau.min(t_ps);
        rl.u = (1.0 - tau / t_ps) * rl.u + tau / t_ps * u;
        rl.u
    }
}

impl Scheme for Hpcc {
    type Ext = HpccExt;
    type Cp = ();
    type Np = ();
    type Rl = HpccRl;
    const CP_ON_DEQUEUE: bool = true;

    fn new_cp(&self, _rng: Stream, _red: Option<Red>) {}

    /// INT: the port stamps the frame as it leaves.
    fn cp_on_dequeue(&self, _cp: &mut (), frame: &mut Frame<HpccExt>, q: QueueView, _cpid: u32) {
        // The queue the frame leaves behind (QueueView counts the frame itself).
        let qlen = q.bytes.saturating_sub(frame.len as u64);
        let e = &mut frame.ext;
        if (e.n as usize) < MAX_HOPS {
            e.hops[e.n as usize] = IntHop {
                qlen: qlen.min(u32::MAX as u64) as u32,
                tx_bytes: q.tx_bytes,
                ts: q.now,
                rate_mbps: (q.rate_bps / 1_000_000).min(u32::MAX as u64) as u32,
            };
            e.n += 1;
        }
    }

    fn new_rl(&self, core: &mut RlCore, _now: Time) -> (HpccRl, Option<Time>) {
        // The paper's start: line rate, a window of one BDP (B x T).
        let bdp = core.line_rate_bps / 8.0 * core.base_rtt_ps as f64 / 1e12;
        if bdp > 0.0 {
            core.window_bytes = bdp as u64;
        }
        let rl = HpccRl {
            u: 0.0,
            wc: bdp,
            stage: 0,
            next_update: 0,
            last: HpccExt::default(),
            started: false,
        };
        (rl, None)
    }

    fn rp_on_ack(&self, core: &mut RlCore, rl: &mut HpccRl, ack: &AckView, echo: &HpccExt, _now: Time, _rng: &mut Stream) -> Option<Time> {
        if ack.kind != AckKind::Ack || ack.base_rtt_ps == 0 {
            return None;
        }
        let t = ack.base_rtt_ps as f64;
        let bdp = core.line_rate_bps / 8.0 * t / 1e12; // bytes
        if !rl.started {
            rl.started = true;
            rl.wc = bdp;
            rl.last = *echo;
            rl.next_update = ack.nxt_bytes;
            return None;
        }
        let w_ai = self.p.r_ai_mbps * 1e6 / 8.0 * t / 1e12;
        let u = self.measure(rl, echo, t);
        let update_wc = ack.una_bytes > rl.next_update;
        let w = if u >= self.p.eta || rl.stage >= self.p.max_stage {
            if update_wc {
                rl.stage = 0;
            }
            rl.wc / (u / self.p.eta) + w_ai
        } else {
            if update_wc {
                rl.stage += 1;
            }
            rl.wc + w_ai
        };
        // Within [1 MSS, B x T]; a path whose BDP is under one frame (a slow
        // link, a short RTT) keeps one frame in flight. max then min, not
        // clamp: bounds from the topology must not be able to panic.
        let w = w.min(bdp).max(ack.mss as f64);
        if update_wc {
            rl.wc = w;
            rl.next_update = ack.nxt_bytes;
        }
        rl.last = *echo;
        core.window_bytes = w as u64;
        core.rate_bps = (w * 8.0 / (t / 1e12)).min(core.line_rate_bps);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_port_stamps_its_queue_bytes_time_and_rate() {
        let h = Hpcc::new(HpccParams::default()).unwrap();
        let mut f: Frame<HpccExt> = Frame::data(0, 0, 1, 1500);
        for i in 0..7u64 {
            let q = QueueView {
                bytes: 1000 * i,
                rate_bps: 10_000_000_000,
                tx_bytes: 5 * i,
                now: 7 * i,
            };
            h.cp_on_dequeue(&mut (), &mut f, q, 1);
        }
        assert_eq!(f.ext.n as usize, MAX_HOPS, "at most MAX_HOPS hops");
        assert!(
            std::mem::size_of::<Frame<HpccExt>>() <= 168,
            "five hops of telemetry on a 40-byte frame"
        );
        assert_eq!(
            f.ext.hops[2],
            IntHop {
                qlen: 500,
                tx_bytes: 10,
                ts: 14,
                rate_mbps: 10_000
            }
        );
    }

    #[test]
    fn a_busy_link_with_a_queue_shrinks_the_window_an_idle_one_grows_it() {
        let h = Hpcc::new(HpccParams::default()).unwrap();
        let mut rng = crate::engine::rng::stream(0, "t");
        let t_ps = 10_000_000u64; // T = 10 us; BDP at 10 Gbit/s = 12,500 B
        let ack = |una, nxt| AckView {
            kind: AckKind::Ack,
            acked_bytes: 1500,
            rtt_ps: t_ps,
            una_bytes: una,
            nxt_bytes: nxt,
            mss: 1500,
            hops: 1,
            base_rtt_ps: t_ps,
            entropy: 0,
        };
        let int = |qlen: u32, tx: u64, ts: Time| {
            let mut hops = [IntHop::default(); MAX_HOPS];
            hops[0] = IntHop {
                qlen,
                tx_bytes: tx,
                ts,
                rate_mbps: 10_000,
            };
            HpccExt { n: 1, hops }
        };
        for (qlen, rate_frac, shrinks) in [(25_000u32, 1.0, true), (0, 0.5, false)] {
            let mut c = RlCore {
                base_rtt_ps: t_ps,
                ..RlCore::at_line_rate(10e9)
            };
            let (mut rl, _) = h.new_rl(&mut c, 0);
            assert_eq!(c.window_bytes, 12_500, "one BDP to start");
            h.rp_on_ack(&mut c, &mut rl, &ack(1500, 15_000), &int(qlen, 0, 0), 0, &mut rng);
            assert_eq!(rl.wc, 12_500.0);
            // One T later: the link sent rate_frac x 12,500 B and holds qlen.
            let tx = (12_500.0 * rate_frac) as u64;
            h.rp_on_ack(&mut c, &mut rl, &ack(16_500, 30_000), &int(qlen, tx, t_ps), 0, &mut rng);
            // U = qlen / BDP + rate_frac: 3.0 (shrink by eta / 3) or 0.5 (add W_AI).
            let expect = if shrinks { 12_500.0 / (3.0 / 0.95) + 62.5 } else { 12_500.0 };
            assert!((c.window_bytes as f64 - expect).abs() < 1.0, "{} vs {expect}", c.window_bytes);
            // R = W / T.
            assert!((c.rate_bps / (c.window_bytes as f64 * 8.0 / 1e-5) - 1.0).abs() < 1e-3);
        }
    }

    /// A path whose BDP is under one frame (0.5 Gbit/s x 10 us = 625 B):
    /// the window stays at one frame (the bounds of its clamp used to cross
    /// and panic).
    #[test]
    fn a_bdp_under_one_frame_keeps_one_frame_in_flight() {
        let h = Hpcc::new(HpccParams::default()).unwrap();
        let mut rng = crate::engine::rng::stream(0, "t");
        let mut c = RlCore {
            base_rtt_ps: 10_000_000,
            ..RlCore::at_line_rate(0.5e9)
        };
        let (mut rl, _) = h.new_rl(&mut c, 0);
        let ack = AckView {
            kind: AckKind::Ack,
            acked_bytes: 1500,
            rtt_ps: 12_000_000,
            una_bytes: 1500,
            nxt_bytes: 3000,
            mss: 1500,
            hops: 2,
            base_rtt_ps: 10_000_000,
            entropy: 0,
        };
        for k in 0..3 {
            h.rp_on_ack(&mut c, &mut rl, &ack, &HpccExt::default(), k, &mut rng);
        }
        assert_eq!(c.window_bytes, 1500);
    }
}

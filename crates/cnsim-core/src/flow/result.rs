//! A flow-level run's results in the packet engine's form: flow records,
//! per-link, per-node and per-window bytes (each flow's bytes spread evenly
//! over its lifetime: the model has no finer timing), the aggregate
//! throughput series.

use super::fabric::Fabric;
use super::flows::Flows;
use crate::config::SimConfig;
use crate::engine::Time;
use crate::net::topology::NodeKind;
use crate::stats::{self, FlowRecord, FrameCounters, FrameCounts, RunResult, TransportCounters, TransportResult};

/// What the results are made of.
pub(super) struct Model<'a> {
    pub cfg: &'a SimConfig,
    pub seed: u64,
    pub fabric: &'a Fabric,
    pub flows: &'a Flows,
    pub ideal: &'a [Time],
    pub events: u64,
    pub wall_s: f64,
    pub build_s: f64,
}

/// The flows' records and the run's results: `fct(f)` is flow f's FCT
/// (ps; infinite: not finished by some link).
pub(super) fn build_result(r: &Model<'_>, fct: impl Fn(usize) -> f64) -> RunResult {
    let cfg = &r.cfg;
    let duration = cfg.duration_ps;
    let fb = cfg.frame_bytes as u64;
    let n = r.flows.len();
    let finish: Vec<Time> = (0..n)
        .map(|f| {
            let end = r.flows.start[f] as f64 + fct(f);
            if end.is_finite() && end <= duration as f64 {
                end.round() as Time
            } else {
                Time::MAX
            }
        })
        .collect();
    let all_done = finish.iter().all(|&t| t != Time::MAX);
    let end_ps = if cfg.transport.end_when_done && all_done && n > 0 {
        (finish.iter().copied().max().unwrap_or(0) + 1).min(duration)
    } else {
        duration
    };
    // Bytes delivered: a flow's spread evenly over its lifetime (the
    // model has no finer timing); a flow still running at the end, its
    // share up to then.
    let windows: Vec<(Time, Time)> = cfg.windows.iter().map(|w| (w.start_ps.min(end_ps), w.end_ps.min(end_ps))).collect();
    let nw = windows.len();
    let n_st = r.fabric.n_stations();
    let n_ports = r.fabric.n_ports();
    let mut win_bytes = vec![0u64; nw];
    let mut port_bytes = vec![0u64; n_ports * nw];
    let mut port_frames = vec![0u64; n_ports];
    let mut from = vec![0u64; n_st * nw];
    let mut to = vec![0u64; n_st * nw];
    let mut delivered_frames = 0u64;
    let mut generated_frames = 0u64;
    let mut delivered_from = vec![0u64; n_st];
    // Per station: frames its flows sent, frames delivered to it (the
    // node table adds up to the run's totals, as the packet model's does).
    let mut sent = vec![0u64; n_st];
    let mut received = vec![0u64; n_st];
    let bin = cfg.bin_ps.max(1);
    let n_bins = end_ps.div_ceil(bin) as usize;
    let mut agg = vec![0.0f64; n_bins];
    for (f, &done_at) in finish.iter().enumerate() {
        let start = r.flows.start[f];
        if start >= end_ps {
            continue;
        }
        let size = r.flows.size[f];
        let frames = size.div_ceil(fb).max(1);
        generated_frames += frames;
        let est = r.flows.start[f] as f64 + fct(f);
        let stop = if done_at != Time::MAX { done_at } else { end_ps };
        let span = (est - start as f64).max(1.0);
        let part = |a: Time, b: Time| -> u64 {
            let (a, b) = (a.max(start), b.min(stop));
            if b <= a || !span.is_finite() {
                0
            } else {
                (size as f64 * (b - a) as f64 / span).round().min(size as f64) as u64
            }
        };
        let done = part(start, stop);
        let (s, d) = (r.flows.src[f] as usize, r.flows.dst[f] as usize);
        sent[s] += frames;
        if finish[f] != Time::MAX {
            delivered_frames += frames;
            delivered_from[s] += frames;
            received[d] += frames;
        } else {
            delivered_frames += done / fb;
            delivered_from[s] += done / fb;
            received[d] += done / fb;
        }
        for (w, &(a, b)) in windows.iter().enumerate() {
            let x = part(a, b);
            win_bytes[w] += x;
            from[s * nw + w] += x;
            to[d * nw + w] += x;
            for &p in r.flows.path(f as u32) {
                port_bytes[p as usize * nw + w] += x;
            }
        }
        for &p in r.flows.path(f as u32) {
            port_frames[p as usize] += frames;
        }
        if span.is_finite() && stop > start {
            let rate = size as f64 / span; // bytes per ps
            let mut t = start;
            while t < stop {
                let b = (t / bin) as usize;
                let next = ((b as Time + 1) * bin).min(stop);
                if b < n_bins {
                    agg[b] += rate * (next - t) as f64;
                }
                t = next;
            }
        }
    }
    let widths: Vec<f64> = (0..n_bins).map(|b| (end_ps - b as Time * bin).min(bin) as f64).collect();
    let agg_gbps: Vec<f64> = agg.iter().zip(&widths).map(|(&x, &w)| x * 8.0 / w * 1e3).collect();
    let counts = FrameCounters {
        generated: generated_frames,
        delivered: delivered_frames,
        ..FrameCounters::default()
    };
    let records: Vec<FlowRecord> = (0..n)
        .map(|f| FlowRecord {
            src: r.fabric.station_name(r.flows.src[f]).into(),
            dst: r.fabric.station_name(r.flows.dst[f]).into(),
            size_bytes: r.flows.size[f],
            start_ps: r.flows.start[f],
            finish_ps: finish[f],
            // The flow-level model has no acknowledgements.
            acked_ps: Time::MAX,
            ideal_fct_ps: r.ideal[f],
            retransmitted: 0,
            timeouts: 0,
            hops: (r.flows.path_off[f + 1] - r.flows.path_off[f]),
        })
        .collect();
    let net = &r.fabric.net;
    let links = net
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (a, b) = p.name.split_once("->").expect("port names are FROM->TO");
            stats::LinkResult {
                name: p.name.clone(),
                from: a.to_string(),
                to: b.to_string(),
                rate_bps: p.nominal_rate_bps,
                bytes: (0..nw).map(|w| port_bytes[i * nw + w]).collect(),
                frames: port_frames[i],
                can_pause: cfg.pause.enabled && matches!(net.nodes[p.peer as usize].kind, NodeKind::Bridge(_)),
                paused_ever: false,
                paused_ps: 0,
                pause_frames: 0,
                control_frames: 0,
            }
        })
        .collect();
    let nodes = net
        .nodes
        .iter()
        .map(|nd| match nd.kind {
            NodeKind::Station(s) => {
                let s = s as usize;
                stats::NodeResult {
                    name: nd.name.clone(),
                    kind: "station",
                    generated: sent[s],
                    delivered: received[s],
                    dropped_cp: 0,
                    dropped_rp: 0,
                    dropped_rl: 0,
                    dropped_nic: 0,
                    deferred: 0,
                    notifications: 0,
                    delivered_from: delivered_from[s],
                    bytes_from: (0..nw).map(|w| from[s * nw + w]).collect(),
                    bytes_to: (0..nw).map(|w| to[s * nw + w]).collect(),
                }
            }
            NodeKind::Bridge(_) => stats::NodeResult {
                name: nd.name.clone(),
                kind: "bridge",
                generated: 0,
                delivered: 0,
                dropped_cp: 0,
                dropped_rp: 0,
                dropped_rl: 0,
                dropped_nic: 0,
                deferred: 0,
                notifications: 0,
                delivered_from: 0,
                bytes_from: Vec::new(),
                bytes_to: Vec::new(),
            },
        })
        .collect();
    RunResult {
        seed: r.seed,
        end_ps,
        bin_ps: bin,
        n_bins,
        frames: FrameCounts::new(counts, generated_frames - delivered_frames),
        priorities: None,
        deadlock: None,
        engine: stats::EngineFigures {
            events: r.events,
            wall_s: r.wall_s,
            build_s: r.build_s,
        },
        windows: cfg
            .windows
            .iter()
            .zip(&windows)
            .enumerate()
            .map(|(w, (c, &(a, b)))| stats::WindowResult {
                name: c.name.clone(),
                start_ps: a,
                end_ps: b,
                generated: 0,
                delivered: 0,
                dropped_cp: 0,
                dropped_rp: 0,
                deferred: 0,
                delivered_bytes: win_bytes[w],
            })
            .collect(),
        flows: Vec::new(),
        links,
        nodes,
        transport: TransportResult {
            flows: records,
            counts: TransportCounters::default(),
        },
        queue_hists: Vec::new(),
        collectives: Vec::new(),
        iterations: Vec::new(),
        collective_ranks: Vec::new(),
        series: vec![stats::Series {
            series: "aggregate_throughput".into(),
            key: "all".into(),
            values: agg_gbps,
        }],
        trace: None,
    }
}

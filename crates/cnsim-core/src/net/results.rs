//! The results of a finished run: the raw counters the statistics kept,
//! assembled into [`RunResult`] tables once, when the run ends. Nothing is
//! derived here beyond the binned series' units: throughput, time paused,
//! overhead and every other metric are `cnsim.metrics`'s.

use super::ctx::Ctx;
use super::fabric::Fabric;
use super::hosts::Hosts;
use super::node::NodeKind;
use crate::engine::Time;
use crate::scheme::Scheme;
use crate::stats::{self, FrameCounts, RunResult, Stats};
use crate::trace::Tracer;

/// Wall-clock seconds of a run, for the engine's figures.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Wall {
    /// Building and checking the network (`NetSim::new`).
    pub build_s: f64,
    /// Running events.
    pub run_s: f64,
}

/// The results of a run whose statistics (in `ctx`) are closed and whose
/// frames are counted (`frames`), with its wall times (`wall`);
/// `window_names` name the statistics' windows in order.
pub(crate) fn build_result<S: Scheme, T: Tracer<S>>(
    ctx: &Ctx<S, T>,
    fabric: &Fabric<S>,
    hosts: &Hosts<S>,
    window_names: &[String],
    wall: Wall,
    frames: FrameCounts,
) -> RunResult {
    Results {
        ctx,
        fabric,
        hosts,
        window_names,
        wall,
    }
    .build(frames)
}

struct Results<'a, S: Scheme, T: Tracer<S>> {
    ctx: &'a Ctx<S, T>,
    fabric: &'a Fabric<S>,
    hosts: &'a Hosts<S>,
    window_names: &'a [String],
    wall: Wall,
}

impl<S: Scheme, T: Tracer<S>> Results<'_, S, T> {
    fn station_name(&self, s: usize) -> &str {
        &self.fabric.nodes[s].name
    }

    /// The per-priority counters, in a run with more than one priority or
    /// with PFC.
    fn priority_counters(&self) -> Option<stats::PriorityCounters> {
        let net = &self.fabric;
        let pfc = net.pause.enabled && net.pause.mode == crate::config::PauseMode::Pfc;
        if !pfc && !net.ports.iter().any(|p| p.multiclass) && net.bridges.iter().all(|b| b.mmu.is_none()) {
            return None;
        }
        let mut c = stats::PriorityCounters {
            pfc_frames: net.pfc_frames,
            watchdog_storms: net.watchdog_storms,
            watchdog_drops: net.watchdog_drops,
            buffer_drops: net.buffer_drops,
            headroom_drops: net.headroom_drops,
            ..Default::default()
        };
        for m in net.bridges.iter().filter_map(|b| b.mmu.as_deref()) {
            for (peak, &h) in c.headroom_peak_bytes.iter_mut().zip(&m.headroom_peak) {
                *peak = (*peak).max(h);
            }
        }
        for p in &net.ports {
            match p.classes.as_ref() {
                Some(q) if p.multiclass => {
                    for (sum, t) in c.paused_ps.iter_mut().zip(q.paused_ps_window) {
                        *sum += t;
                    }
                }
                _ => c.paused_ps[(p.data_prio & 7) as usize] += p.paused_ps_window,
            }
        }
        Some(c)
    }

    fn build(&self, frames: FrameCounts) -> RunResult {
        let s = &self.ctx.stats;
        let net = &self.fabric;
        let hosts = &self.hosts;
        let n_st = net.n_stations;
        let nw = s.windows.len();

        let mut flows = Vec::new();
        for src in (0..n_st).filter(|_| s.per_flow) {
            for dst in 0..n_st {
                let f = src * n_st + dst;
                if s.flow_generated[f] == 0 && s.flow_delivered[f] == 0 {
                    continue;
                }
                flows.push(stats::FlowResult {
                    src: self.station_name(src).to_string(),
                    dst: self.station_name(dst).to_string(),
                    generated: s.flow_generated[f],
                    delivered: s.flow_delivered[f],
                    bytes: (0..nw).map(|w| s.flow_win_bytes[w * n_st * n_st + f]).collect(),
                });
            }
        }

        let links = net
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (from, to) = p.name.split_once("->").expect("port names are FROM->TO");
                stats::LinkResult {
                    name: p.name.clone(),
                    from: from.to_string(),
                    to: to.to_string(),
                    rate_bps: p.nominal_rate_bps,
                    bytes: (0..nw)
                        .map(|w| {
                            if w < stats::INLINE_WINDOWS {
                                p.win_bytes[w]
                            } else {
                                s.link_win_bytes[w * net.ports.len() + i]
                            }
                        })
                        .collect(),
                    frames: p.frames_sent,
                    can_pause: net.pause.enabled && matches!(net.nodes[p.peer as usize].kind, NodeKind::Bridge(_)),
                    paused_ever: p.paused_ever,
                    paused_ps: p.paused_ps_window,
                    pause_frames: p.pause_frames,
                    control_frames: p.cnm_frames,
                }
            })
            .collect();

        let nodes = net
            .nodes
            .iter()
            .map(|n| match n.kind {
                NodeKind::Station(i) => {
                    let st = &hosts.stations[i as usize];
                    let into = net.ports[st.port as usize].reverse;
                    stats::NodeResult {
                        name: n.name.clone(),
                        kind: "station",
                        generated: st.generated,
                        delivered: net.ports[into as usize].frames_delivered,
                        dropped_cp: 0,
                        dropped_rp: st.dropped_rl + st.dropped_nic,
                        dropped_rl: st.dropped_rl,
                        dropped_nic: st.dropped_nic,
                        deferred: st.deferred,
                        notifications: hosts.rps[i as usize].notifications,
                        delivered_from: s.src_rec[i as usize * (1 + nw)],
                        bytes_from: (0..nw).map(|w| s.src_rec[i as usize * (1 + nw) + 1 + w]).collect(),
                        bytes_to: (0..nw).map(|w| s.dst_win_bytes[i as usize * nw + w]).collect(),
                    }
                }
                NodeKind::Bridge(i) => stats::NodeResult {
                    name: n.name.clone(),
                    kind: "bridge",
                    generated: 0,
                    delivered: 0,
                    dropped_cp: net.bridges[i as usize].dropped_cp,
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

        let end = self.ctx.run.duration;
        let records = hosts.flow_records(net, self.ctx.run.frame_bytes, self.ctx.scheme.sprays());
        let jobs = match hosts.tp.jobs.as_deref() {
            Some(j) => {
                let times: Vec<crate::collective::metrics::FlowTimes> = j
                    .tags
                    .iter()
                    .map(|&(i, tag)| {
                        let f = &records[i as usize];
                        crate::collective::metrics::FlowTimes {
                            tag,
                            start_ps: f.start_ps,
                            finish_ps: f.finish_ps,
                        }
                    })
                    .collect();
                crate::collective::metrics::results(&j.plan, &times, &j.payload_bps)
            }
            None => Default::default(),
        };
        RunResult {
            seed: self.ctx.run.seed,
            end_ps: end,
            bin_ps: s.bin_ps,
            n_bins: s.bins_reached(end),
            frames,
            priorities: self.priority_counters(),
            deadlock: {
                let (net, p) = (&self.fabric, &self.fabric.pause);
                (p.enabled && p.mode == crate::config::PauseMode::Pfc && p.deadlock_detector).then(|| stats::DeadlockCounters {
                    deadlocks: net.deadlock.count,
                    deadlock_at_ps: net.deadlock.first_at,
                    deadlock_cycle: net.deadlock.first_cycle.clone(),
                })
            },
            engine: stats::EngineFigures {
                events: self.ctx.q.popped(),
                wall_s: self.wall.run_s,
                build_s: self.wall.build_s,
            },
            windows: self.window_results(),
            flows,
            links,
            nodes,
            queue_hists: s
                .queue_hists
                .iter()
                .map(|h| (net.ports[h.port as usize].name.clone(), h.width, h.time_ps.clone()))
                .collect(),
            collectives: jobs.collectives,
            iterations: jobs.iterations,
            collective_ranks: jobs.ranks,
            transport: stats::TransportResult {
                flows: records,
                counts: {
                    let mut c = hosts.tp.counts;
                    if let Some(tr) = net.trim.as_ref() {
                        c.trimmed = tr.trimmed;
                        c.header_drops = tr.header_drops;
                    }
                    c
                },
            },
            series: self.build_series(),
            trace: None,
        }
    }

    fn window_results(&self) -> Vec<stats::WindowResult> {
        let stats = &self.ctx.stats;
        let end = self.ctx.run.duration;
        self.window_names
            .iter()
            .zip(&stats.windows)
            .zip(&stats.win_counts)
            .zip(&stats.agg_win_bytes)
            .map(|(((n, &(a, b)), c), &bytes)| stats::WindowResult {
                name: n.clone(),
                // A run that ended when its last flow finished ends its windows there.
                start_ps: a.min(end),
                end_ps: b.min(end),
                generated: c[0],
                delivered: c[1],
                dropped_cp: c[2],
                dropped_rp: c[3],
                deferred: c[4],
                delivered_bytes: bytes,
            })
            .collect()
    }

    fn build_series(&self) -> Vec<stats::Series> {
        let s = &self.ctx.stats;
        let net = &self.fabric;
        let end = self.ctx.run.duration;
        let nb = s.bins_reached(end);
        // Bin widths (the last bin may be short).
        let widths: Vec<Time> = (0..nb).map(|b| (end - b as Time * s.bin_ps).min(s.bin_ps)).collect();
        let gbps = |bytes: &[u64]| -> Vec<f64> { bytes.iter().zip(&widths).map(|(&x, &w)| Stats::gbps(x, w)).collect() };
        let mut out = vec![stats::Series {
            series: "aggregate_throughput".into(),
            key: "all".into(),
            values: gbps(&s.agg_bins.series(0, nb)),
        }];
        for d in (0..net.n_stations).filter(|_| s.dest_series) {
            if s.dest_bins.any(d) {
                out.push(stats::Series {
                    series: "delivered_throughput".into(),
                    key: self.station_name(d).into(),
                    values: gbps(&s.dest_bins.series(d, nb)),
                });
            }
        }
        let n_st = net.n_stations;
        let mut slots: Vec<(u32, usize)> = s
            .flow_slot
            .iter()
            .enumerate()
            .filter(|(_, &sl)| sl != stats::NO_SLOT)
            .map(|(f, &sl)| (sl, f))
            .collect();
        slots.sort_unstable();
        for (sl, f) in slots {
            let bins = s.flow_bins.series(sl as usize, nb);
            let key = format!("{}->{}", self.station_name(f / n_st), self.station_name(f % n_st));
            out.push(stats::Series {
                series: "flow_throughput".into(),
                key,
                values: gbps(&bins),
            });
        }
        for (i, p) in net.ports.iter().enumerate().filter(|_| s.link_series) {
            out.push(stats::Series {
                series: "link_throughput".into(),
                key: p.name.clone(),
                values: gbps(&s.link_bins.series(i, nb)),
            });
        }
        for t in &s.queue_traces {
            let name = &net.ports[t.port as usize].name;
            out.push(stats::Series {
                series: "queue_bytes".into(),
                key: name.clone(),
                values: t.end.clone(),
            });
            out.push(stats::Series {
                series: "queue_bytes_max".into(),
                key: name.clone(),
                values: t.max.clone(),
            });
        }
        for t in &self.hosts.rl_traces {
            out.push(stats::Series {
                series: "rl_rate".into(),
                key: t.key.clone(),
                values: t.rate.end.iter().map(|r| r / 1e9).collect(),
            });
            out.push(stats::Series {
                series: "rlq_bytes".into(),
                key: t.key.clone(),
                values: t.bytes.end.clone(),
            });
            if let Some(w) = &t.window {
                out.push(stats::Series {
                    series: "rl_window_bytes".into(),
                    key: t.key.clone(),
                    values: w.end.clone(),
                });
            }
        }
        for p in &net.ports {
            if let Some(bins) = &p.paused_bins {
                let v = (0..nb)
                    .map(|b| bins.get(b).copied().unwrap_or(0.0) * s.bin_ps as f64 / widths[b] as f64)
                    .collect();
                out.push(stats::Series {
                    series: "paused_fraction".into(),
                    key: p.name.clone(),
                    values: v,
                });
            }
        }
        out
    }
}

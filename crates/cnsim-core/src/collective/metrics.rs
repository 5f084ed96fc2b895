//! What a run's collectives achieved, from their flows' records: per
//! collective its completion time, algbw and busbw (NCCL's formulas), the
//! ratio to its ideal time on an idle fabric, its slowest rank and the step
//! in which that rank lost most, the most senders one receiver had at once;
//! per job iteration the step time; per collective and rank when the rank
//! began and was done (the report's per-rank timeline).

use super::{bus_factor, FlowTag, Plan};
use crate::columns::Column;
use crate::engine::Time;
use serde::Serialize;

/// One collective's figures (`collectives.parquet`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CollectiveResult {
    pub job: String,
    pub iteration: u32,
    pub phase: u32,
    pub collective: String,
    pub algorithm: String,
    pub ranks: u32,
    pub size_bytes: u64,
    pub flows: u64,
    /// From its first flow's start to its last flow's arrival
    /// (`Time::MAX` when some flow did not finish inside the run).
    pub start_ps: Time,
    pub end_ps: Time,
    /// Completion time (us; NaN when unfinished).
    pub time_us: f64,
    /// size / time, and NCCL's bus bandwidth (Gbit/s).
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// The bandwidth-bound ideal time on an idle fabric: factor x size /
    /// the ranks' slowest payload rate (us), and time / ideal.
    pub ideal_us: f64,
    pub vs_ideal: f64,
    /// The payload rate the ideal assumes (Gbit/s): the slowest rank's line
    /// rate times the payload share of a full frame.
    pub payload_gbps: f64,
    /// The rank done last, and the step in which it lost most against an
    /// even share of the ideal time, and that loss (us).
    pub slowest_rank: u32,
    pub slowest_step: u32,
    pub slowest_step_lost_us: f64,
    /// The most distinct senders with a flow of this collective in flight
    /// to one receiver at once (of the flows that finished).
    pub max_senders: u32,
}

/// One iteration of one job (`iterations.parquet`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IterationResult {
    pub job: String,
    pub iteration: u32,
    /// From the previous iteration's end (the job's start for the first) to
    /// the end of its last collective (`Time::MAX`: unfinished).
    pub start_ps: Time,
    pub end_ps: Time,
    pub step_time_us: f64,
}

/// One rank's part in one collective (`collective_ranks.parquet`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankResult {
    pub job: String,
    pub iteration: u32,
    pub phase: u32,
    pub rank: u32,
    pub host: String,
    /// Its first flow's start and its last flow's arrival, in or out
    /// (`Time::MAX` both: no flow, every peer on its own host; `end_ps`
    /// alone: unfinished).
    pub start_ps: Time,
    pub end_ps: Time,
}

/// What a run's jobs achieved: per collective, per job iteration, per
/// collective and rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobResults {
    pub collectives: Vec<CollectiveResult>,
    pub iterations: Vec<IterationResult>,
    pub ranks: Vec<RankResult>,
}

/// A flow's figures the metrics read.
#[derive(Debug, Clone, Copy)]
pub struct FlowTimes {
    pub tag: FlowTag,
    pub start_ps: Time,
    pub finish_ps: Time,
}

/// The collectives' and iterations' figures of `plan`, from its flows
/// (`flows`, any order) and each job's rank payload rates (`payload_bps`,
/// per job per rank: line rate x payload share of a frame).
pub fn results(plan: &Plan, flows: &[FlowTimes], payload_bps: &[Vec<f64>]) -> JobResults {
    let mut by_collective: Vec<Vec<FlowTimes>> = vec![Vec::new(); plan.collectives.len()];
    for f in flows {
        by_collective[f.tag.collective as usize].push(*f);
    }
    let mut out = Vec::with_capacity(plan.collectives.len());
    let mut ranks = Vec::new();
    for (c, info) in plan.collectives.iter().enumerate() {
        let fl = &by_collective[c];
        let job = &plan.jobs[info.job as usize];
        let n = info.ranks as usize;
        let start = fl.iter().map(|f| f.start_ps).min().unwrap_or(Time::MAX);
        let end = fl.iter().map(|f| f.finish_ps).max().unwrap_or(Time::MAX);
        let done = end != Time::MAX && start != Time::MAX;
        let time_ps = if done { end - start } else { 0 };
        let time_us = if done { time_ps as f64 / 1e6 } else { f64::NAN };
        let rate = payload_bps[info.job as usize].iter().copied().fold(f64::INFINITY, f64::min);
        let factor = bus_factor(&info.collective, info.ranks);
        let ideal_us = factor * info.size_bytes as f64 * 8.0 / rate * 1e6;
        let algbw = if done && time_ps > 0 {
            info.size_bytes as f64 * 8.0 / (time_ps as f64 / 1e12) / 1e9
        } else {
            f64::NAN
        };
        // Per rank: when it was done (its last flow in or out), and per
        // step when its last incoming flow of that step arrived.
        let mut rank_done = vec![0 as Time; n];
        let mut rank_began = vec![Time::MAX; n];
        let steps = info.steps.max(1) as usize;
        let mut step_end = vec![vec![0 as Time; steps]; n];
        for f in fl {
            let (s, d) = (f.tag.src_rank as usize, f.tag.dst_rank as usize);
            rank_done[s] = rank_done[s].max(f.finish_ps);
            rank_done[d] = rank_done[d].max(f.finish_ps);
            rank_began[s] = rank_began[s].min(f.start_ps);
            rank_began[d] = rank_began[d].min(f.start_ps);
            let k = (f.tag.step as usize).min(steps - 1);
            step_end[d][k] = step_end[d][k].max(f.finish_ps);
        }
        let slowest = (0..n).max_by_key(|&r| (rank_done[r], std::cmp::Reverse(r))).unwrap_or(0);
        for r in 0..n {
            let none = rank_began[r] == Time::MAX;
            ranks.push(RankResult {
                job: job.name.clone(),
                iteration: info.iteration,
                phase: info.phase,
                rank: r as u32,
                host: job.hosts.get(r).cloned().unwrap_or_default(),
                start_ps: rank_began[r],
                end_ps: if none { Time::MAX } else { rank_done[r] },
            });
        }
        let share_ps = ideal_us * 1e6 / steps as f64;
        let mut last = start;
        let mut worst = (0usize, f64::NEG_INFINITY);
        for (k, &e) in step_end[slowest].iter().enumerate() {
            if e == 0 {
                continue; // no flow into it in this step
            }
            let lost = e.saturating_sub(last) as f64 - share_ps;
            if lost > worst.1 {
                worst = (k, lost);
            }
            last = last.max(e);
        }
        out.push(CollectiveResult {
            job: job.name.clone(),
            iteration: info.iteration,
            phase: info.phase,
            collective: info.collective.clone(),
            algorithm: info.algorithm.clone(),
            ranks: info.ranks,
            size_bytes: info.size_bytes,
            flows: fl.len() as u64,
            start_ps: start,
            end_ps: end,
            time_us,
            algbw_gbps: algbw,
            busbw_gbps: algbw * factor,
            ideal_us,
            vs_ideal: time_us / ideal_us,
            payload_gbps: rate / 1e9,
            slowest_rank: slowest as u32,
            slowest_step: worst.0 as u32,
            slowest_step_lost_us: if worst.1.is_finite() { worst.1 / 1e6 } else { f64::NAN },
            max_senders: max_senders(fl),
        });
    }
    let mut iterations = Vec::new();
    for (j, job) in plan.jobs.iter().enumerate() {
        let mut begin = job.start_ps;
        for it in 0..job.iterations {
            let end = plan
                .collectives
                .iter()
                .zip(&out)
                .filter(|(i, _)| i.job as usize == j && i.iteration == it)
                .map(|(_, r)| r.end_ps)
                .max()
                .unwrap_or(Time::MAX);
            let done = end != Time::MAX && begin != Time::MAX;
            iterations.push(IterationResult {
                job: job.name.clone(),
                iteration: it,
                start_ps: begin,
                end_ps: end,
                step_time_us: if done { (end - begin) as f64 / 1e6 } else { f64::NAN },
            });
            begin = end;
        }
    }
    JobResults {
        collectives: out,
        iterations,
        ranks,
    }
}

/// The most distinct senders with a flow in flight to one receiver at
/// once (started, not yet received; of the flows that finished).
fn max_senders(flows: &[FlowTimes]) -> u32 {
    // (receiver, time, +1 start / -1 end, sender): ends sort before starts
    // at one instant, so a flow ending as the next starts does not overlap it.
    let mut ev: Vec<(u32, Time, i32, u32)> = Vec::with_capacity(flows.len() * 2);
    for f in flows.iter().filter(|f| f.finish_ps != Time::MAX) {
        ev.push((f.tag.dst_rank, f.start_ps, 1, f.tag.src_rank));
        ev.push((f.tag.dst_rank, f.finish_ps, -1, f.tag.src_rank));
    }
    ev.sort_unstable();
    let mut active: std::collections::BTreeMap<u32, i32> = std::collections::BTreeMap::new();
    let (mut best, mut at) = (0usize, u32::MAX);
    for (d, _, delta, src) in ev {
        if d != at {
            (at, active) = (d, std::collections::BTreeMap::new());
        }
        let n = active.entry(src).or_insert(0);
        *n += delta;
        if *n == 0 {
            active.remove(&src);
        }
        best = best.max(active.len());
    }
    best as u32
}

/// The collectives', iterations' and ranks' rows as columns (outputs.rs:
/// `collectives`, `iterations`, `collective_ranks`).
pub fn tables(c: &[CollectiveResult], it: &[IterationResult], rk: &[RankResult]) -> Vec<(&'static str, Vec<(String, Column)>)> {
    let s = |g: &dyn Fn(&CollectiveResult) -> String| Column::Str(c.iter().map(g).collect());
    let u = |g: &dyn Fn(&CollectiveResult) -> u64| Column::U64(c.iter().map(g).collect());
    let f = |g: &dyn Fn(&CollectiveResult) -> f64| Column::F64(c.iter().map(g).collect());
    let collectives = vec![
        ("job".into(), s(&|x| x.job.clone())),
        ("iteration".into(), u(&|x| x.iteration as u64)),
        ("phase".into(), u(&|x| x.phase as u64)),
        ("collective".into(), s(&|x| x.collective.clone())),
        ("algorithm".into(), s(&|x| x.algorithm.clone())),
        ("ranks".into(), u(&|x| x.ranks as u64)),
        ("size_bytes".into(), u(&|x| x.size_bytes)),
        ("flows".into(), u(&|x| x.flows)),
        ("start_ps".into(), u(&|x| x.start_ps)),
        ("end_ps".into(), u(&|x| x.end_ps)),
        ("time_us".into(), f(&|x| x.time_us)),
        ("algbw_gbps".into(), f(&|x| x.algbw_gbps)),
        ("busbw_gbps".into(), f(&|x| x.busbw_gbps)),
        ("payload_gbps".into(), f(&|x| x.payload_gbps)),
        ("ideal_us".into(), f(&|x| x.ideal_us)),
        ("vs_ideal".into(), f(&|x| x.vs_ideal)),
        ("slowest_rank".into(), u(&|x| x.slowest_rank as u64)),
        ("slowest_step".into(), u(&|x| x.slowest_step as u64)),
        ("slowest_step_lost_us".into(), f(&|x| x.slowest_step_lost_us)),
        ("max_senders".into(), u(&|x| x.max_senders as u64)),
    ];
    let iterations = vec![
        ("job".into(), Column::Str(it.iter().map(|x| x.job.clone()).collect())),
        ("iteration".into(), Column::U64(it.iter().map(|x| x.iteration as u64).collect())),
        ("start_ps".into(), Column::U64(it.iter().map(|x| x.start_ps).collect())),
        ("end_ps".into(), Column::U64(it.iter().map(|x| x.end_ps).collect())),
        ("step_time_us".into(), Column::F64(it.iter().map(|x| x.step_time_us).collect())),
    ];
    let ranks = vec![
        ("job".into(), Column::Str(rk.iter().map(|x| x.job.clone()).collect())),
        ("iteration".into(), Column::U64(rk.iter().map(|x| x.iteration as u64).collect())),
        ("phase".into(), Column::U64(rk.iter().map(|x| x.phase as u64).collect())),
        ("rank".into(), Column::U64(rk.iter().map(|x| x.rank as u64).collect())),
        ("host".into(), Column::Str(rk.iter().map(|x| x.host.clone()).collect())),
        ("start_ps".into(), Column::U64(rk.iter().map(|x| x.start_ps).collect())),
        ("end_ps".into(), Column::U64(rk.iter().map(|x| x.end_ps).collect())),
    ];
    vec![
        ("collectives", collectives),
        ("iterations", iterations),
        ("collective_ranks", ranks),
    ]
}

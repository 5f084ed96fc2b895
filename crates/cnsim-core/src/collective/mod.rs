//! Collective jobs (`[[jobs]]`): ranks placed on hosts run phases (compute,
//! then a collective) for a number of iterations. A collective becomes
//! flows that wait for flows (net::deps), as NCCL schedules it:
//!
//! - **ring all-reduce**: the buffer in n segments; 2(n - 1) steps, in step
//!   k rank r sends segment (r - k) mod n to r + 1 (reduce-scatter, then
//!   all-gather), each segment in chunks; chunk c of a step waits for
//!   chunk c of the step before it arriving at the sender, and for the
//!   sender's chunk `chunks_in_flight` before it (the pipeline);
//! - **tree all-reduce**: NCCL's double binary tree: half the chunks go up
//!   and down a binary tree over the ranks in order, half over the ranks
//!   in reverse; a chunk goes up once it has come from every child and
//!   down once it reached the root (or came down to the sender);
//! - **all-gather / reduce-scatter**: the ring's n - 1 steps;
//! - **broadcast**: a pipelined chain from the root along the ring;
//! - **all-to-all**: pairwise (round r: rank i and its peer exchange; a
//!   round waits for the rank's exchange `chunks_in_flight` rounds before)
//!   or shift (round r: i sends to i + r once its own send that many
//!   rounds before arrived: ranks drift apart and meet at receivers, the
//!   self-synchronisation).
//!
//! A rank enters a phase when every flow of its previous phase from or to
//! it has been received, plus the phase's compute time: a gate per rank
//! and phase. The plan keeps, per flow, which collective, step and ranks it
//! belongs to, for the metrics (`metrics.rs`).

pub mod metrics;
pub mod plan;
pub mod section;

use crate::engine::{Time, PS_PER_MS, PS_PER_US};
use crate::error::{fail, ConfigError};
use crate::transport_config::FlowConfig;
pub use plan::{CollectiveInfo, FlowTag, GateConfig, JobInfo, Plan};
use section::{JobSpec, PhaseSpec, COLLECTIVES};

/// A node index that names a gate while flows are still being added:
/// resolved to `flows.len() + gate` once every flow is known.
pub const GATE_BIT: u32 = 1 << 31;

/// NCCL's bus-bandwidth factor of a collective over n ranks
/// (nccl-tests doc/PERFORMANCE.md): busbw = algbw x factor.
pub fn bus_factor(collective: &str, n: u32) -> f64 {
    let n = n as f64;
    match collective {
        "allreduce" => 2.0 * (n - 1.0) / n,
        "allgather" | "reducescatter" | "alltoall" => (n - 1.0) / n,
        _ => 1.0,
    }
}

/// The flows and gates of `jobs` (checked against their declarations),
/// added after `flows` and `gates`, ranks placed on `stations` (every
/// station's name, in order). Node indices of gates carry [`GATE_BIT`]
/// until [`resolve_gates`].
pub fn expand(
    jobs: &[serde_json::Value],
    stations: &[String],
    flows: &mut Vec<FlowConfig>,
    gates: &mut Vec<GateConfig>,
    max_flows: usize,
) -> Result<Plan, ConfigError> {
    let mut plan = Plan::default();
    let mut names = std::collections::BTreeSet::new();
    for (j, raw) in jobs.iter().enumerate() {
        let at = format!("jobs[{j}]");
        let serde_json::Value::Object(map) = raw else {
            return fail(at, "expected a table");
        };
        let spec: JobSpec = section::jobs().parse(&at, map)?;
        let name = spec.name.clone().unwrap_or_else(|| format!("job{j}"));
        if !names.insert(name.clone()) {
            return fail(format!("{at}.name"), format!("'{name}' names two jobs"));
        }
        let hosts = place(&spec, stations, &at)?;
        let phases: Vec<PhaseSpec> = spec
            .phases
            .iter()
            .enumerate()
            .map(|(p, raw)| {
                let at = format!("{at}.phases[{p}]");
                let serde_json::Value::Object(map) = raw else {
                    return fail(at, "expected a table");
                };
                let ph: PhaseSpec = section::phases().parse(&at, map)?;
                check_phase(&ph, spec.ranks, &at)?;
                Ok(ph)
            })
            .collect::<Result<_, _>>()?;
        if phases.is_empty() {
            return fail(format!("{at}.phases"), "a job needs at least one phase");
        }
        let start_ps = (spec.start_ms * PS_PER_MS as f64).round() as Time;
        // One shared name per host, cloned (a count) into each of its flows.
        let names: Vec<std::sync::Arc<str>> = hosts.iter().map(|h| std::sync::Arc::from(h.as_str())).collect();
        let mut b = Builder {
            flows,
            gates,
            hosts: &names,
            priority: spec.priority,
            entry: vec![None; spec.ranks as usize],
            start_ps,
            touched: vec![Vec::new(); spec.ranks as usize],
        };
        // Counted before anything is made: a job of a million ranks is
        // refused at once, not after filling memory.
        let per_iteration: f64 = phases.iter().map(|ph| planned_flows(ph, spec.ranks)).sum();
        let expected = b.flows.len() as f64 + per_iteration * spec.iterations as f64;
        if expected > max_flows as f64 {
            return fail(
                format!("{at}.ranks"),
                format!(
                    "the job would make about {expected:.3e} flows, more than {max_flows} (the packet model's most): fewer ranks, iterations or chunks (a larger chunk_bytes)"
                ),
            );
        }
        for it in 0..spec.iterations {
            for (p, ph) in phases.iter().enumerate() {
                let c = plan.collectives.len() as u32;
                let algorithm = ph.algorithm.clone().unwrap_or_else(|| default_algorithm(&ph.collective).into());
                let steps = b.collective(c, ph, &algorithm)?;
                if b.flows.len() > max_flows {
                    return fail(
                        format!("{at}.iterations"),
                        format!(
                            "the jobs make more than {max_flows} flows (workload.max_flows) by iteration {it}: fewer ranks, iterations or chunks (a larger chunk_bytes)"
                        ),
                    );
                }
                plan.collectives.push(CollectiveInfo {
                    job: j as u32,
                    iteration: it,
                    phase: p as u32,
                    collective: ph.collective.clone(),
                    algorithm,
                    ranks: spec.ranks,
                    size_bytes: ph.size_bytes,
                    steps,
                });
                // The next phase's compute starts at each rank when it is done with this one.
                let next_compute = phases[(p + 1) % phases.len()].compute_us;
                b.close_phase((next_compute * PS_PER_US as f64).round() as Time);
            }
        }
        plan.jobs.push(JobInfo {
            name,
            hosts,
            iterations: spec.iterations,
            start_ps,
        });
    }
    Ok(plan)
}

/// Gate node indices (`GATE_BIT | g`) become `flows + g` in every flow's and
/// gate's `after`.
pub fn resolve_gates(flows: &mut [FlowConfig], gates: &mut [GateConfig]) {
    let n = flows.len() as u32;
    let fix = |a: &mut u32| {
        if *a & GATE_BIT != 0 {
            *a = n + (*a & !GATE_BIT);
        }
    };
    for f in flows.iter_mut() {
        f.after.iter_mut().for_each(fix);
    }
    for g in gates.iter_mut() {
        g.after.iter_mut().for_each(fix);
    }
}

/// How many flows a phase makes over `ranks` (at most: flows between
/// ranks of one host are not made).
fn planned_flows(ph: &PhaseSpec, ranks: u32) -> f64 {
    let n = ranks as f64;
    let chunks = |bytes: f64| (bytes / ph.chunk_bytes.max(1) as f64).ceil().max(1.0);
    match ph.collective.as_str() {
        "alltoall" => n * (n - 1.0),
        "broadcast" => (n - 1.0) * chunks(ph.size_bytes as f64),
        "allreduce" if ph.algorithm.as_deref() == Some("tree") => 2.0 * (n - 1.0) * chunks(ph.size_bytes as f64),
        "allreduce" => 2.0 * (n - 1.0) * n * chunks(ph.size_bytes as f64 / n),
        _ => (n - 1.0) * n * chunks(ph.size_bytes as f64 / n),
    }
}

fn default_algorithm(collective: &str) -> &'static str {
    COLLECTIVES.iter().find(|(c, _)| *c == collective).map_or("ring", |(_, a)| a[0])
}

fn check_phase(ph: &PhaseSpec, ranks: u32, at: &str) -> Result<(), ConfigError> {
    if let Some(a) = &ph.algorithm {
        let allowed = COLLECTIVES.iter().find(|(c, _)| *c == ph.collective).map_or(&[][..], |(_, a)| a);
        if !allowed.contains(&a.as_str()) {
            return fail(
                format!("{at}.algorithm"),
                format!(
                    "'{a}' is not an algorithm of {}; expected one of: {}",
                    ph.collective,
                    allowed.join(", ")
                ),
            );
        }
    }
    if ph.collective == "broadcast" && ph.root >= ranks {
        return fail(
            format!("{at}.root"),
            format!("rank {} does not exist (ranks 0 to {})", ph.root, ranks - 1),
        );
    }
    Ok(())
}

/// Rank i's host, by the job's placement.
fn place(spec: &JobSpec, stations: &[String], at: &str) -> Result<Vec<String>, ConfigError> {
    let pool: Vec<String> = match &spec.hosts {
        Some(h) => {
            for name in h {
                if !stations.contains(name) {
                    return fail(format!("{at}.hosts"), format!("'{name}' is not a station of the topology"));
                }
            }
            h.clone()
        }
        None => stations.to_vec(),
    };
    let n = spec.ranks as usize;
    if pool.is_empty() {
        return fail(format!("{at}.hosts"), "no host to place ranks on");
    }
    if spec.placement == "listed" {
        if spec.hosts.is_none() || pool.len() != n {
            return fail(
                format!("{at}.hosts"),
                format!(
                    "placement = \"listed\" needs one host per rank ({n}); {} given",
                    spec.hosts.as_ref().map_or(0, |h| h.len())
                ),
            );
        }
        if !spec.allow_shared_hosts {
            let mut seen = std::collections::BTreeSet::new();
            if let Some(d) = pool.iter().find(|h| !seen.insert(h.as_str())) {
                return fail(
                    format!("{at}.hosts"),
                    format!("'{d}' is listed for two ranks; set allow_shared_hosts = true to place ranks together"),
                );
            }
        }
        return Ok(pool);
    }
    if n > pool.len() && !spec.allow_shared_hosts {
        return fail(
            format!("{at}.ranks"),
            format!(
                "{n} ranks on {} hosts; each rank needs a host of its own, or set allow_shared_hosts = true",
                pool.len()
            ),
        );
    }
    let mut order = pool;
    if spec.placement == "random" {
        use rand::seq::SliceRandom;
        let mut rng = crate::engine::rng::stream(spec.placement_seed, "placement");
        order.shuffle(&mut rng);
    }
    Ok((0..n).map(|i| order[i % order.len()].clone()).collect())
}

/// Adds one job's flows and gates.
struct Builder<'a> {
    flows: &'a mut Vec<FlowConfig>,
    gates: &'a mut Vec<GateConfig>,
    hosts: &'a [std::sync::Arc<str>],
    priority: Option<u8>,
    /// Per rank: the gate it passes to enter the current phase (None: the
    /// job's first, which starts at `start_ps`).
    entry: Vec<Option<u32>>,
    start_ps: Time,
    /// Per rank: the nodes of the current phase from or to it.
    touched: Vec<Vec<u32>>,
}

/// A planned transfer: a flow, or (ranks sharing a host) the node that
/// stands for it, or nothing to wait for.
type Node = Option<u32>;

impl Builder<'_> {
    /// `size` bytes from rank `src` to rank `dst`, after `after` (and the
    /// sender's entry into the phase); returns its node.
    fn send(&mut self, tag: FlowTag, size: u64, after: &[Node]) -> Node {
        let (src, dst) = (tag.src_rank as usize, tag.dst_rank as usize);
        let mut wait: Vec<u32> = after.iter().flatten().copied().collect();
        wait.extend(self.entry[src]);
        wait.sort_unstable();
        wait.dedup();
        let node = if self.hosts[src] == self.hosts[dst] {
            // Two ranks of one host: no flow; a gate carries what it waited for.
            if wait.is_empty() {
                return None;
            }
            self.gates.push(GateConfig { after: wait, delay_ps: 0 });
            GATE_BIT | (self.gates.len() as u32 - 1)
        } else {
            let first = self.entry[src].is_none();
            self.flows.push(FlowConfig {
                src: self.hosts[src].clone(),
                dst: self.hosts[dst].clone(),
                size_bytes: size,
                start_ps: if first { self.start_ps } else { 0 },
                priority: self.priority,
                after: wait,
                after_delay_ps: 0,
                tag: Some(tag),
            });
            self.flows.len() as u32 - 1
        };
        self.touched[src].push(node);
        self.touched[dst].push(node);
        Some(node)
    }

    /// Every rank's gate into the next phase: what it sent and received in
    /// this one, then `compute_ps`.
    fn close_phase(&mut self, compute_ps: Time) {
        for r in 0..self.touched.len() {
            let mut after = std::mem::take(&mut self.touched[r]);
            after.extend(self.entry[r]);
            if after.is_empty() {
                continue; // nothing from or to it yet (every peer on its host)
            }
            self.gates.push(GateConfig {
                after,
                delay_ps: compute_ps,
            });
            self.entry[r] = Some(GATE_BIT | (self.gates.len() as u32 - 1));
        }
    }

    /// Adds collective `c`; returns its number of steps.
    fn collective(&mut self, c: u32, ph: &PhaseSpec, algorithm: &str) -> Result<u32, ConfigError> {
        let n = self.hosts.len() as u32;
        if self.entry.iter().all(|e| e.is_none()) {
            // The job's first phase: its compute before the first flows.
            self.start_ps = self.start_ps.saturating_add((ph.compute_us * PS_PER_US as f64).round() as Time);
        }
        let steps = match (ph.collective.as_str(), algorithm) {
            ("allreduce", "ring") => self.ring(c, n, ph, 2 * (n - 1)),
            ("allreduce", "tree") => self.tree(c, n, ph),
            ("allgather", _) | ("reducescatter", _) => self.ring(c, n, ph, n - 1),
            ("broadcast", _) => self.broadcast(c, n, ph),
            ("alltoall", "shift") => self.alltoall(c, n, ph, false),
            ("alltoall", _) => self.alltoall(c, n, ph, true),
            (other, a) => unreachable!("{other} / {a} passed check_phase"),
        };
        Ok(steps)
    }

    /// Ring steps: in step k rank r sends segment (r - k) mod n to r + 1,
    /// in chunks pipelined.
    fn ring(&mut self, c: u32, n: u32, ph: &PhaseSpec, steps: u32) -> u32 {
        let segments = split(ph.size_bytes, n as u64);
        // prev[r][chunk]: the node that brought chunk `chunk` of the current
        // segment to rank r in the step before.
        let mut prev: Vec<Vec<Node>> = vec![Vec::new(); n as usize];
        for k in 0..steps {
            let mut now: Vec<Vec<Node>> = vec![Vec::new(); n as usize];
            for r in 0..n {
                let seg = ((r + n * 2 - k % n) % n) as usize;
                let chunks = split_by(segments[seg], ph.chunk_bytes);
                let to = (r + 1) % n;
                let mut sent: Vec<Node> = Vec::with_capacity(chunks.len());
                for (i, &size) in chunks.iter().enumerate() {
                    let mut after: Vec<Node> = Vec::with_capacity(2);
                    if let Some(&p) = prev[r as usize].get(i) {
                        after.push(p);
                    }
                    if i >= ph.chunks_in_flight as usize {
                        after.push(sent[i - ph.chunks_in_flight as usize]);
                    }
                    let tag = FlowTag {
                        collective: c,
                        step: k,
                        src_rank: r,
                        dst_rank: to,
                    };
                    sent.push(self.send(tag, size, &after));
                }
                now[to as usize] = sent;
            }
            prev = now;
        }
        steps
    }

    /// A pipelined chain from the root along the ring.
    fn broadcast(&mut self, c: u32, n: u32, ph: &PhaseSpec) -> u32 {
        let chunks = split_by(ph.size_bytes, ph.chunk_bytes);
        let mut prev: Vec<Node> = Vec::new();
        for h in 0..n - 1 {
            let (r, to) = ((ph.root + h) % n, (ph.root + h + 1) % n);
            let mut sent: Vec<Node> = Vec::with_capacity(chunks.len());
            for (i, &size) in chunks.iter().enumerate() {
                let mut after: Vec<Node> = prev.get(i).copied().into_iter().collect();
                if i >= ph.chunks_in_flight as usize {
                    after.push(sent[i - ph.chunks_in_flight as usize]);
                }
                sent.push(self.send(
                    FlowTag {
                        collective: c,
                        step: h,
                        src_rank: r,
                        dst_rank: to,
                    },
                    size,
                    &after,
                ));
            }
            prev = sent;
        }
        n - 1
    }

    /// NCCL's double binary tree: the chunks alternate between a binary
    /// tree over positions 0..n (rank = position) and one over the ranks in
    /// reverse (rank = n - 1 - position). Steps: the levels up, then down.
    fn tree(&mut self, c: u32, n: u32, ph: &PhaseSpec) -> u32 {
        let depth = |mut p: u32| {
            let mut d = 0;
            while p > 0 {
                p = (p - 1) / 2;
                d += 1;
            }
            d
        };
        let levels = depth(n - 1);
        let chunks = split_by(ph.size_bytes, ph.chunk_bytes);
        let w = ph.chunks_in_flight as usize;
        for tree in 0..2u32 {
            let rank = |p: u32| if tree == 0 { p } else { n - 1 - p };
            let mine: Vec<u64> = chunks.iter().skip(tree as usize).step_by(2).copied().collect();
            if mine.is_empty() {
                continue;
            }
            // up[p][i]: chunk i reduced at p and sent to its parent.
            let mut up: Vec<Vec<Node>> = vec![Vec::new(); n as usize];
            for p in (1..n).rev() {
                let parent = (p - 1) / 2;
                for (i, &size) in mine.iter().enumerate() {
                    let mut after: Vec<Node> = [2 * p + 1, 2 * p + 2]
                        .iter()
                        .filter(|&&ch| ch < n)
                        .map(|&ch| up[ch as usize][i])
                        .collect();
                    if i >= w {
                        after.push(up[p as usize][i - w]);
                    }
                    let tag = FlowTag {
                        collective: c,
                        step: levels - depth(p),
                        src_rank: rank(p),
                        dst_rank: rank(parent),
                    };
                    let node = self.send(tag, size, &after);
                    up[p as usize].push(node);
                }
            }
            // down[p][i]: chunk i, fully reduced, arrived at p.
            let mut down: Vec<Vec<Node>> = vec![Vec::new(); n as usize];
            for p in 1..n {
                let parent = (p - 1) / 2;
                for (i, &size) in mine.iter().enumerate() {
                    let mut after: Vec<Node> = if parent == 0 {
                        [1u32, 2].iter().filter(|&&ch| ch < n).map(|&ch| up[ch as usize][i]).collect()
                    } else {
                        vec![down[parent as usize][i]]
                    };
                    if i >= w {
                        after.push(down[p as usize][i - w]);
                    }
                    let tag = FlowTag {
                        collective: c,
                        step: levels + depth(p) - 1,
                        src_rank: rank(parent),
                        dst_rank: rank(p),
                    };
                    let node = self.send(tag, size, &after);
                    down[p as usize].push(node);
                }
            }
        }
        2 * levels
    }

    /// All-to-all in n - 1 rounds of S / n per pair; a rank's round waits
    /// for its round `chunks_in_flight` before it (pairwise: its send and
    /// its receive there; shift: its send).
    fn alltoall(&mut self, c: u32, n: u32, ph: &PhaseSpec, pairwise: bool) -> u32 {
        let per_pair = split(ph.size_bytes, n as u64);
        let pow2 = n.is_power_of_two();
        let w = ph.chunks_in_flight as usize;
        // Per round, per rank: what it sent and what it received.
        let mut sent: Vec<Vec<Node>> = Vec::with_capacity(n as usize);
        let mut got: Vec<Vec<Node>> = Vec::with_capacity(n as usize);
        for round in 1..n {
            let mut sent_now = vec![None; n as usize];
            let mut got_now = vec![None; n as usize];
            let back = (round as usize).checked_sub(w + 1);
            for i in 0..n {
                let to = if pairwise && pow2 { i ^ round } else { (i + round) % n };
                let after: Vec<Node> = match back {
                    Some(b) if pairwise => vec![sent[b][i as usize], got[b][i as usize]],
                    Some(b) => vec![sent[b][i as usize]],
                    None => vec![],
                };
                let size = per_pair[to as usize];
                let node = self.send(
                    FlowTag {
                        collective: c,
                        step: round - 1,
                        src_rank: i,
                        dst_rank: to,
                    },
                    size,
                    &after,
                );
                sent_now[i as usize] = node;
                got_now[to as usize] = node;
            }
            sent.push(sent_now);
            got.push(got_now);
        }
        n - 1
    }
}

/// `total` bytes in `n` parts, the first `total mod n` one byte larger
/// (parts of 0 bytes when total < n are 1 byte: a flow carries at least one).
fn split(total: u64, n: u64) -> Vec<u64> {
    let (q, r) = (total / n, total % n);
    (0..n).map(|i| (q + u64::from(i < r)).max(1)).collect()
}

/// `total` bytes in chunks of at most `chunk` (at least one chunk).
fn split_by(total: u64, chunk: u64) -> Vec<u64> {
    let k = total.div_ceil(chunk.max(1)).max(1);
    split(total, k)
}

#[cfg(test)]
mod tests;

use super::metrics::{results, FlowTimes};
use super::*;
use crate::bench::star_config;
use crate::config::SimConfig;
use crate::engine::{Time, PS_PER_MS};
use crate::{RunResult, Sim};
use serde_json::json;

fn stations(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("H{i}")).collect()
}

fn expand_one(job: serde_json::Value, hosts: usize) -> Result<(Vec<FlowConfig>, Vec<GateConfig>, Plan), ConfigError> {
    let (mut flows, mut gates) = (Vec::new(), Vec::new());
    let plan = expand(&[job], &stations(hosts), &mut flows, &mut gates, 4_000_000)?;
    resolve_gates(&mut flows, &mut gates);
    Ok((flows, gates, plan))
}

fn phase(collective: &str, size: u64) -> serde_json::Value {
    json!({"collective": collective, "size_bytes": size})
}

#[test]
fn a_ring_allreduce_is_two_n_minus_one_steps_of_a_segment_in_chunks() {
    let mut p = phase("allreduce", 8 * 3_000);
    p["chunk_bytes"] = json!(1_000);
    let (flows, gates, plan) = expand_one(json!({"ranks": 8, "phases": [p]}), 8).unwrap();
    // 2 (n - 1) steps x n ranks x 3 chunks of the 3,000-byte segment.
    assert_eq!(flows.len(), 14 * 8 * 3);
    assert!(flows.iter().all(|f| f.size_bytes == 1_000));
    assert_eq!(plan.collectives[0].steps, 14);
    // Every rank sends to the next.
    for f in &flows {
        let t = f.tag.unwrap();
        assert_eq!(t.dst_rank, (t.src_rank + 1) % 8);
        assert_eq!(&*f.src, format!("H{}", t.src_rank));
    }
    // Step 0 waits for nothing; chunk c of step k > 0 waits for chunk c of
    // step k - 1 into its sender, and (c >= 2) for the sender's chunk c - 2.
    let at = |k: u32, r: u32, c: usize| {
        flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.tag.is_some_and(|t| t.step == k && t.src_rank == r))
            .nth(c)
            .unwrap()
            .0 as u32
    };
    assert!(flows[at(0, 3, 0) as usize].after.is_empty());
    assert_eq!(flows[at(0, 3, 2) as usize].after, vec![at(0, 3, 0)]);
    assert_eq!(flows[at(5, 3, 1) as usize].after, vec![at(4, 2, 1)]);
    // One gate per rank closes the (only) phase.
    assert_eq!(gates.len(), 8);
}

#[test]
fn alltoall_pairwise_and_shift_send_each_pair_once() {
    for alg in ["pairwise", "shift"] {
        let mut p = phase("alltoall", 6 * 100);
        p["algorithm"] = json!(alg);
        let (flows, _, _) = expand_one(json!({"ranks": 6, "phases": [p]}), 6).unwrap();
        let mut pairs: Vec<(u32, u32)> = flows.iter().map(|f| f.tag.map(|t| (t.src_rank, t.dst_rank)).unwrap()).collect();
        pairs.sort();
        pairs.dedup();
        assert_eq!(pairs.len(), 30, "{alg}: every ordered pair, once");
        assert!(flows.iter().all(|f| f.size_bytes == 100));
    }
}

#[test]
fn a_tree_allreduce_moves_every_chunk_up_and_down_both_trees() {
    let mut p = phase("allreduce", 4_000);
    p["algorithm"] = json!("tree");
    p["chunk_bytes"] = json!(1_000);
    let (flows, _, plan) = expand_one(json!({"ranks": 7, "phases": [p]}), 7).unwrap();
    // 4 chunks, 2 per tree; each goes over the 6 edges of a tree up and down.
    assert_eq!(flows.len(), 4 * 6 * 2);
    assert_eq!(plan.collectives[0].steps, 4); // 7 ranks: two levels
    let bytes: u64 = flows.iter().map(|f| f.size_bytes).sum();
    assert_eq!(bytes, 4_000 * 12);
}

#[test]
fn phases_and_iterations_chain_through_per_rank_gates_with_compute() {
    let job = json!({"ranks": 4, "iterations": 3, "start_ms": 1.0, "phases": [
        {"compute_us": 10.0, "collective": "allgather", "size_bytes": 4000},
        {"compute_us": 5.0, "collective": "alltoall", "size_bytes": 4000},
    ]});
    let (flows, gates, plan) = expand_one(job, 4).unwrap();
    assert_eq!(plan.collectives.len(), 6);
    assert_eq!(gates.len(), 6 * 4);
    // The first phase starts after the job's start and its compute.
    let first = flows.iter().find(|f| f.tag.unwrap().collective == 0).unwrap();
    assert_eq!(first.start_ps, PS_PER_MS + 10 * crate::engine::PS_PER_US);
    // The second phase's first flows wait for their sender's gate, whose
    // delay is that phase's compute.
    let n = flows.len() as u32;
    let second = flows.iter().find(|f| f.tag.unwrap().collective == 1).unwrap();
    let g = second.after.iter().find(|&&a| a >= n).unwrap();
    assert_eq!(gates[(g - n) as usize].delay_ps, 5 * crate::engine::PS_PER_US);
}

#[test]
fn bad_jobs_are_refused_naming_the_key() {
    let err = |job: serde_json::Value, hosts: usize| expand_one(job, hosts).unwrap_err().to_string();
    let e = err(json!({"ranks": 8, "phases": [phase("allreduce", 1000)]}), 4);
    assert!(e.contains("jobs[0].ranks") && e.contains("allow_shared_hosts"), "{e}");
    let e = err(json!({"ranks": 2, "hosts": ["H0", "X9"], "phases": [phase("allreduce", 1000)]}), 4);
    assert!(e.contains("jobs[0].hosts") && e.contains("X9"), "{e}");
    let e = err(json!({"ranks": 2, "phases": [phase("allreduce", 0)]}), 4);
    assert!(e.contains("jobs[0].phases[0].size_bytes"), "{e}");
    let mut p = phase("alltoall", 1000);
    p["algorithm"] = json!("ring");
    let e = err(json!({"ranks": 2, "phases": [p]}), 4);
    assert!(e.contains("jobs[0].phases[0].algorithm") && e.contains("pairwise"), "{e}");
    let e = err(
        json!({"ranks": 1_000_000, "allow_shared_hosts": true, "phases": [phase("alltoall", 1000)]}),
        4,
    );
    assert!(e.contains("jobs[0].ranks") && e.contains("flows"), "{e}");
    let e = err(json!({"ranks": 2, "phases": []}), 4);
    assert!(e.contains("jobs[0].phases"), "{e}");
}

#[test]
fn shared_hosts_skip_the_flows_between_ranks_of_one_host() {
    let job = json!({"ranks": 4, "allow_shared_hosts": true, "phases": [phase("alltoall", 4000)]});
    let (flows, _, _) = expand_one(job, 2).unwrap();
    // Ranks 0, 2 on H0 and 1, 3 on H1: of the 12 pairs, the 4 within a host carry no flow.
    assert_eq!(flows.len(), 8);
    assert!(flows.iter().all(|f| f.src != f.dst));
}

#[test]
fn random_placement_depends_on_its_seed_only() {
    let job = |seed: u64| json!({"ranks": 8, "placement": "random", "placement_seed": seed, "phases": [phase("allgather", 800)]});
    let a = expand_one(job(1), 16).unwrap().2.jobs[0].hosts.clone();
    assert_eq!(a, expand_one(job(1), 16).unwrap().2.jobs[0].hosts);
    assert_ne!(a, expand_one(job(2), 16).unwrap().2.jobs[0].hosts);
}

#[test]
fn the_metrics_follow_nccls_formulas() {
    let plan = Plan {
        jobs: vec![JobInfo {
            name: "j".into(),
            hosts: stations(4),
            iterations: 1,
            start_ps: 0,
        }],
        collectives: vec![CollectiveInfo {
            job: 0,
            iteration: 0,
            phase: 0,
            collective: "allreduce".into(),
            algorithm: "ring".into(),
            ranks: 4,
            size_bytes: 1_000_000,
            steps: 6,
        }],
    };
    // One flow lasting 1 ms: algbw 8 Gbit/s, busbw x 2 (n - 1) / n = 12.
    let t = |src, dst, s, e| FlowTimes {
        tag: FlowTag {
            collective: 0,
            step: 0,
            src_rank: src,
            dst_rank: dst,
        },
        start_ps: s,
        finish_ps: e,
    };
    let flows = [t(0, 1, 0, PS_PER_MS), t(1, 2, 0, PS_PER_MS / 2), t(2, 1, 0, PS_PER_MS / 2)];
    let got = results(&plan, &flows, &[vec![10e9; 4]]);
    let (c, it) = (&got.collectives, &got.iterations);
    // Per rank: its first flow in or out and its last; rank 3 has none.
    let span: Vec<(Time, Time)> = got.ranks.iter().map(|r| (r.start_ps, r.end_ps)).collect();
    assert_eq!(span, [(0, PS_PER_MS), (0, PS_PER_MS), (0, PS_PER_MS / 2), (Time::MAX, Time::MAX)]);
    assert!((c[0].algbw_gbps - 8.0).abs() < 1e-9);
    assert!((c[0].busbw_gbps - 12.0).abs() < 1e-9);
    assert!((c[0].ideal_us - 1.5 * 1e6 * 8.0 / 10e9 * 1e6).abs() < 1e-6);
    assert_eq!(c[0].max_senders, 2, "rank 1 receives from 0 and 2 at once");
    assert_eq!(c[0].slowest_rank, 0);
    assert!((it[0].step_time_us - 1000.0).abs() < 1e-9);
}

/// A star of `n` hosts (H_i -> B_i -> B0 -> D as star_config builds it,
/// with D as one more host), 10 Gbit/s, running `job` over `scheme`.
pub(crate) fn run_job(n: usize, job: serde_json::Value, scheme: &str) -> RunResult {
    let mut cfg: SimConfig = star_config(n, 0.0, 200 * PS_PER_MS, 0);
    cfg.events.clear();
    cfg.scheme = crate::scheme::params::SchemeConfig {
        name: scheme.into(),
        table: None,
        params: Default::default(),
    };
    cfg.transport.header_bytes = 64;
    let names: Vec<String> = cfg.stations.iter().map(|s| s.name.clone()).collect();
    let plan = expand(&[job], &names, &mut cfg.transport.flows, &mut cfg.transport.gates, 4_000_000).unwrap();
    resolve_gates(&mut cfg.transport.flows, &mut cfg.transport.gates);
    cfg.transport.plan = Some(plan);
    Sim::new(&cfg, 1).expect("valid").run().expect("conservation holds")
}

#[test]
fn a_lone_ring_allreduce_reaches_the_payload_rate() {
    let job = json!({"ranks": 4, "phases": [{"collective": "allreduce", "size_bytes": 8_000_000, "chunk_bytes": 250_000}]});
    let r = run_job(4, job, "nocm");
    let c = &r.collectives[0];
    assert_eq!(c.flows, 6 * 4 * 8);
    assert!(c.time_us.is_finite(), "it finishes");
    // The ring's links carry one direction each: close to the payload rate.
    assert!(c.vs_ideal >= 1.0 && c.vs_ideal < 1.05, "{c:?}");
    assert!((c.busbw_gbps / c.payload_gbps - 1.0 / c.vs_ideal).abs() < 1e-9);
}

#[test]
fn every_flow_transport_completes_a_collective() {
    for scheme in ["nocm", "dcqcn", "hpcc", "dctcp", "swift", "timely", "uet"] {
        let job = json!({"ranks": 4, "iterations": 2, "phases": [
            {"collective": "allreduce", "size_bytes": 400_000, "chunk_bytes": 50_000},
            {"compute_us": 20.0, "collective": "alltoall", "size_bytes": 400_000},
        ]});
        let r = run_job(4, job, scheme);
        assert_eq!(r.collectives.len(), 4);
        assert!(r.collectives.iter().all(|c| c.time_us.is_finite()), "{scheme}: {:?}", r.collectives);
        assert!(r.iterations.iter().all(|i| i.step_time_us.is_finite()));
        // The second iteration starts when the first ends.
        assert_eq!(r.iterations[1].start_ps, r.iterations[0].end_ps);
        // A phase's flows start no earlier than the compute after the one before.
        assert!(r.collectives[1].start_ps >= r.collectives[0].start_ps + 20 * crate::engine::PS_PER_US);
    }
}

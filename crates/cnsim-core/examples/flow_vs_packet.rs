//! The flow-level model against the packet engine on one engine config
//! (JSON, as `Scenario.engine_json()` writes it), without Python: the p50 /
//! p95 / p99 slowdown per size bucket of both, and the flow-level figure's
//! error. For working on the model: the packet run's flow records are kept
//! in `CACHE_DIR` (by the config's and seed's hash) and reused.
//! `cargo run --profile test-release --example flow_vs_packet CONFIG.json [seed] [CACHE_DIR]`
//! Environment: FLOW_MODEL=maxmin, FLOW_SAMPLES=2000, FLOW_MIN_REPS=4, FLOW_JOINT=0.
use cnsim_core::config::SimConfig;
use cnsim_core::flow::{Fidelity, FlowModel};
use cnsim_core::Sim;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Instant;

/// (src, dst, size, start, finish, ideal) per flow.
type Rec = (String, String, u64, u64, u64, u64);

/// A run's flows as (src, dst, size, start, finish, ideal).
fn flow_recs(r: &cnsim_core::RunResult) -> Vec<Rec> {
    r.transport
        .flows
        .iter()
        .map(|f| {
            (
                f.src.to_string(),
                f.dst.to_string(),
                f.size_bytes,
                f.start_ps,
                f.finish_ps,
                f.ideal_fct_ps,
            )
        })
        .collect()
}

fn records(cfg: &SimConfig, seed: u64) -> (Vec<Rec>, f64) {
    let t0 = Instant::now();
    let r = Sim::new(cfg, seed).unwrap_or_else(|e| panic!("{e}")).run().unwrap();
    let out = flow_recs(&r);
    (out, t0.elapsed().as_secs_f64())
}

fn percentile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let h = (v.len() - 1) as f64 * q / 100.0;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (h - lo as f64))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: flow_vs_packet CONFIG.json [seed] [CACHE_DIR]");
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let cache = args.next();
    let text = std::fs::read_to_string(&path).expect("readable config");
    let mut cfg = SimConfig::from_json(&text).unwrap_or_else(|e| panic!("{e}"));
    cfg.fidelity = Fidelity::Packet;
    // The packet run does not depend on the flow-level model's settings.
    let mut keyed = cfg.clone();
    keyed.flow = Default::default();
    let mut h = DefaultHasher::new();
    keyed.to_json().hash(&mut h);
    seed.hash(&mut h);
    let key = format!("{:016x}", h.finish());
    let cached = cache.as_ref().map(|d| format!("{d}/{key}.json"));
    // PACKET_RECORDS=FILE: a cached run of this config under another key.
    let cached = std::env::var("PACKET_RECORDS").ok().or(cached);
    let (packet, packet_wall): (Vec<Rec>, f64) = match cached.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        Some(t) => serde_json::from_str(&t).expect("cache"),
        None => {
            let (r, w) = records(&cfg, seed);
            if let Some(p) = &cached {
                std::fs::write(p, serde_json::to_string(&(&r, w)).unwrap()).unwrap();
            }
            (r, w)
        }
    };
    cfg.fidelity = Fidelity::Flow;
    if std::env::var("FLOW_MODEL").as_deref() == Ok("maxmin") {
        cfg.flow.model = FlowModel::Maxmin;
    }
    if let Ok(s) = std::env::var("FLOW_SAMPLES") {
        cfg.flow.samples = s.parse().unwrap();
    }
    if std::env::var("FLOW_JOINT").as_deref() == Ok("0") {
        cfg.flow.joint_host_links = false;
    }
    if let Ok(s) = std::env::var("FLOW_MIN_REPS") {
        cfg.flow.min_reps_per_tier = s.parse().unwrap();
    }
    let t0 = Instant::now();
    let mut sim = Sim::new(&cfg, seed).unwrap_or_else(|e| panic!("{e}"));
    sim.run_until(u64::MAX);
    let warnings = sim.warnings().to_vec();
    let r = sim.finish().unwrap();
    let flow_wall = t0.elapsed().as_secs_f64();
    let flow: Vec<Rec> = flow_recs(&r);
    let slow = |x: &Rec| (x.4 != u64::MAX).then(|| (x.4 - x.3) as f64 / x.5 as f64);
    let mut by_key = std::collections::HashMap::new();
    for p in &packet {
        by_key.insert((p.0.clone(), p.1.clone(), p.2, p.3), p);
    }
    let bounds = [0u64, 10_000, 30_000, 100_000, 1_000_000, 10_000_000, u64::MAX];
    println!(
        "packet {} flows {packet_wall:.2} s; flow {} flows {flow_wall:.2} s ({:.0}x)",
        packet.len(),
        flow.len(),
        packet_wall / flow_wall
    );
    println!(
        "{:>22} {:>6}  {:>22} {:>22} {:>22} {:>6}",
        "bucket", "flows", "p50 pkt/flow", "p95 pkt/flow", "p99 pkt/flow", "med"
    );
    let mut cells = (0, 0);
    for w in bounds.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let inb = |x: &Rec| x.2 > lo && x.2 <= hi;
        let mut a: Vec<f64> = packet.iter().filter(|x| inb(x)).filter_map(slow).collect();
        let mut b: Vec<f64> = flow.iter().filter(|x| inb(x)).filter_map(slow).collect();
        let mut per: Vec<f64> = flow
            .iter()
            .filter(|x| inb(x))
            .filter_map(|f| {
                let p = by_key.get(&(f.0.clone(), f.1.clone(), f.2, f.3))?;
                Some((slow(f)? / slow(p)? - 1.0).abs())
            })
            .collect();
        let n = a.len().min(b.len());
        let mut line = format!(
            "{:>10}-{:<11} {:>6} ",
            lo,
            if hi == u64::MAX { "inf".into() } else { hi.to_string() },
            a.len()
        );
        for q in [50.0, 95.0, 99.0] {
            let (x, y) = (percentile(&mut a, q), percentile(&mut b, q));
            match (x, y) {
                (Some(x), Some(y)) => {
                    line += &format!(" {:>7.3}/{:<7.3}({:+4.0}%)", x, y, (y / x - 1.0) * 100.0);
                    if q == 99.0 && n >= 200 {
                        cells.1 += 1;
                        if (y / x - 1.0).abs() <= 0.1 {
                            cells.0 += 1;
                        }
                    }
                }
                _ => line += &format!(" {:>22}", "-"),
            }
        }
        let med = percentile(&mut per, 50.0).unwrap_or(f64::NAN);
        println!("{line} {:>5.1}%{}", med * 100.0, if n < 200 { " *" } else { "" });
    }
    println!("p99 within 10%: {} of {} judged buckets", cells.0, cells.1);
    if let Ok(path) = std::env::var("PACKET_CSV") {
        let mut out = String::from("src,dst,size,start,finish,ideal\n");
        for p in &packet {
            out += &format!("{},{},{},{},{},{}\n", p.0, p.1, p.2, p.3, p.4, p.5);
        }
        std::fs::write(path, out).unwrap();
    }
    for w in warnings {
        println!("warning: {w}");
    }
}

//! Baseline with BCN: per-seed fairness over 20-80 ms (quick calibration look).
//! `cargo run --release --example baseline_bcn [seeds]`
use cnsim_core::bench::baseline_config;
use cnsim_core::config::*;
use cnsim_core::scheme::bcn::BcnParams;
use cnsim_core::Sim;

fn main() {
    let seeds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut cfg = baseline_config(false);
    cfg.scheme = SchemeConfig::of("bcn", &BcnParams::default());
    let mut jains = vec![];
    for seed in 0..seeds {
        let r = Sim::new(&cfg, seed).unwrap().run().unwrap();
        let rates: Vec<f64> = r.flows.iter().map(|f| f.throughput_gbps[2]).collect();
        let t = 2.5;
        let x: Vec<f64> = rates.iter().map(|r| r / t).collect();
        let jain = x.iter().sum::<f64>().powi(2) / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>());
        let dev_max = rates.iter().map(|r| (r - t).abs() / t).fold(0.0, f64::max);
        let dev_rms = (rates.iter().map(|r| (r - t).powi(2)).sum::<f64>() / rates.len() as f64).sqrt() / t;
        jains.push(jain);
        let down = r.link("B0->D").unwrap().throughput_gbps[1];
        let after: Vec<f64> = ["S1", "S2"]
            .iter()
            .map(|s| {
                let v = r.series("flow_throughput", &format!("{s}->D")).unwrap();
                v[900..1000].iter().sum::<f64>() / 100.0
            })
            .collect();
        println!(
            "seed {seed}: rates {:.3?} jain {jain:.3} dev_max {dev_max:.3} dev_rms {dev_rms:.3} down {down:.3} dropped_cp {} dropped_rp {} overhead {:.2} Mb/s after80 {:.2?}",
            rates, r.frames.dropped_cp, r.frames.dropped_rp, r.metrics.overhead_mbps, after
        );
    }
    println!("mean jain {:.4}", jains.iter().sum::<f64>() / jains.len() as f64);
}

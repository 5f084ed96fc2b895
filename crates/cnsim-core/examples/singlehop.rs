//! Single-hop hotspot, every scheme, with and without PAUSE (a quick look).
//! `cargo run --release --example singlehop [rate_gbps] [duration_ms]`
use cnsim_core::bench::singlehop_config;
use cnsim_core::config::SchemeConfig;
use cnsim_core::engine::PS_PER_MS;
use cnsim_core::scheme::bcn::BcnParams;
use cnsim_core::scheme::qcn::{Efr, QcnParams, Sampling};
use cnsim_core::Sim;

fn main() {
    let rate: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let ms: u64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let qcn2007 = QcnParams {
        qeq_bytes: 409.0 * 64.0,
        sampling: Sampling::Bytes,
        r_ai_bps: 12e6,
        bc_ai_bytes: 37_500.0,
        timer_ps: 0,
        hai: false,
        efr: Efr::ResetStage,
        ..QcnParams::default()
    };
    let ecm = BcnParams {
        sample_bytes: 75_000.0,
        jitter_bytes: 5_000.0,
        gi: 0.5333,
        gd: 2.6667e-4,
        bcn_max: true,
        qmc_bytes: 1300.0 * 64.0,
        oversampling: true,
        oversample_above_bytes: 1300.0 * 64.0,
        sample_sev_bytes: 15_000.0,
        ..BcnParams::default()
    };
    let schemes = vec![
        ("nocm", SchemeConfig::nocm()),
        ("qcn2pt", SchemeConfig::of("qcn", &qcn2007)),
        (
            "qcn3pt",
            SchemeConfig::of(
                "qcn",
                &QcnParams {
                    three_point: true,
                    ..qcn2007
                },
            ),
        ),
        ("ecm", SchemeConfig::of("bcn", &ecm)),
    ];
    for pause in [true, false] {
        for (name, s) in &schemes {
            let mut cfg = singlehop_config((rate * 1e9) as u64, ms * PS_PER_MS, pause, s.clone());
            if std::env::var("CP").as_deref() == Ok("hot") {
                cfg.cp_ports = vec!["SW->H0".into()];
            }
            let r = Sim::new(&cfg, 0).unwrap().run().unwrap();
            let hot = r.flows.iter().filter(|f| f.dst == "H0").map(|f| f.throughput_gbps[0]).sum::<f64>();
            println!(
                "pause {pause:5} {name:7} agg {:6.2} hot {:5.2} paused {:6.2} dropped {:7} overhead {:7.2} | frames {} events {} wall {:.2}s {:.2}M ev/s {:.2}M deliv/s",
                r.metrics.aggregate_throughput,
                hot,
                r.metrics.time_paused_pct.unwrap_or(0.0),
                r.metrics.dropped_cp,
                r.metrics.overhead_mbps,
                r.frames.generated,
                r.engine.events,
                r.engine.wall_s,
                r.engine.events_per_s / 1e6,
                r.engine.frames_delivered_per_s / 1e6
            );
            let cnm: Vec<String> = r
                .links
                .iter()
                .filter(|l| l.control_frames > 0)
                .map(|l| format!("{}:{}", l.name, l.control_frames))
                .collect();
            println!("    CNMs by origin: {}", cnm.join(" "));
        }
    }
}

//! Runs an engine config (JSON, as `Scenario.engine_json()` writes it) once
//! and prints the engine figures: for profiling a scenario without Python.
//! `cargo run --release --example run_config CONFIG.json [seed]`
use cnsim_core::config::SimConfig;
use cnsim_core::Sim;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: run_config CONFIG.json [seed]");
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let text = std::fs::read_to_string(&path).expect("readable config");
    let cfg = SimConfig::from_json(&text).unwrap_or_else(|e| panic!("{e}"));
    let r = Sim::new(&cfg, seed).unwrap_or_else(|e| panic!("{e}")).run().unwrap();
    let wall = r.engine.wall_s.max(1e-9);
    println!(
        "{} events in {:.3} s: {:.2} M events/s, {:.2} M delivered frames/s",
        r.engine.events,
        wall,
        r.engine.events as f64 / wall / 1e6,
        r.frames.counts.delivered as f64 / wall / 1e6
    );
}

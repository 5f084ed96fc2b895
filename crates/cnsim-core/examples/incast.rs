//! Runs the performance.md incast once and prints the engine figures.
//! `cargo run --release --example incast [duration_ms]`
use cnsim_core::bench::incast_config;
use cnsim_core::engine::PS_PER_MS;
use cnsim_core::Sim;

fn main() {
    let ms: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let r = Sim::new(&incast_config(ms * PS_PER_MS), 0).unwrap().run().unwrap();
    println!("{}", serde_json::to_string_pretty(&r.frames).unwrap());
    println!("{}", serde_json::to_string_pretty(&r.engine).unwrap());
    let wall = r.engine.wall_s.max(1e-9);
    println!("{:.2} M delivered frames/s", r.frames.counts.delivered as f64 / wall / 1e6);
}

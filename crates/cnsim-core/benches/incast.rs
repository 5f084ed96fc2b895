//! criterion: the 4-to-1 incast of performance.md (10 ms slices keep a
//! sample short; `cnsim bench` runs the full second).
use cnsim_core::bench::incast_config;
use cnsim_core::engine::PS_PER_MS;
use cnsim_core::Sim;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn incast(c: &mut Criterion) {
    let cfg = incast_config(10 * PS_PER_MS);
    let delivered = Sim::new(&cfg, 0).unwrap().run().unwrap().frames.counts.delivered;
    let mut g = c.benchmark_group("incast");
    g.throughput(Throughput::Elements(delivered));
    g.sample_size(20);
    g.bench_function("4to1_10ms_delivered_frames", |b| {
        b.iter(|| Sim::new(&cfg, 0).unwrap().run().unwrap().frames.counts.delivered)
    });
    g.finish();
}

criterion_group!(benches, incast);
criterion_main!(benches);

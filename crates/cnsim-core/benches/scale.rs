//! criterion: events per second on leaf-spine fabrics of 64 and 1024 hosts
//! (85% uniform, ECMP, no management, 0.5 ms slices), the ratio the scale
//! bar of performance.md is about; `cnsim bench --workload scale` runs the
//! fat trees of the bar for 10 ms each.
use cnsim_core::bench::leafspine_config;
use cnsim_core::engine::PS_PER_US;
use cnsim_core::Sim;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn scale(c: &mut Criterion) {
    let mut g = c.benchmark_group("leafspine");
    g.sample_size(10);
    for (leaves, spines, per_leaf) in [(4, 4, 16), (32, 8, 32)] {
        let cfg = leafspine_config(leaves, spines, per_leaf, 0.85, 500 * PS_PER_US);
        let events = Sim::new(&cfg, 0).unwrap().run().unwrap().engine.events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(format!("{}_hosts_events", leaves * per_leaf), |b| {
            b.iter(|| Sim::new(&cfg, 0).unwrap().run().unwrap().engine.events)
        });
    }
    g.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);

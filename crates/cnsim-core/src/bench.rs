//! Reference workloads for `cnsim bench` and the criterion benchmarks.

use crate::config::*;
use crate::engine::{Time, PS_PER_US};

/// A station of the benchmark workloads: 150 KB NIC buffer and RLQs.
fn host(name: String, load: f64, dest: DestConfig, processing_ps: Time) -> StationConfig {
    StationConfig {
        name,
        load,
        dest,
        nic_buffer_bytes: 150_000,
        rlq_bytes: 150_000,
        processing_ps,
        rl_scope: RlScope::default(),
        nic_full: NicFull::default(),
        rl_order: Default::default(),
        priority: crate::frame::DATA_PRIORITY,
    }
}

/// A station -> edge bridge -> core bridge -> sink topology with `n` sources
/// (the baseline shape, scenarios.md section 1), no congestion management.
pub fn star_config(n: usize, load: f64, duration_ps: Time, sources_start_ps: Time) -> SimConfig {
    let mut stations: Vec<StationConfig> = (1..=n)
        .map(|i| host(format!("S{i}"), load, DestConfig::Fixed { node: "D".into() }, 2 * PS_PER_US))
        .collect();
    stations.push(host("D".into(), 0.0, DestConfig::Uniform, 2 * PS_PER_US));
    let mut bridges: Vec<BridgeConfig> = (1..=n)
        .map(|i| BridgeConfig {
            name: format!("B{i}"),
            buffer_mode: BufferMode::PerOutput,
            buffer_bytes: 150_000,
            latency_ps: PS_PER_US,
            cp: false,
            ports: None,
            dt_alpha: 1.0,
            scheduler: Default::default(),
            mmu: Default::default(),
            red: None,
            red_ref_bps: None,
        })
        .collect();
    bridges.push(BridgeConfig {
        name: "B0".into(),
        buffer_mode: BufferMode::PerOutput,
        buffer_bytes: 150_000,
        latency_ps: PS_PER_US,
        cp: true,
        ports: None,
        dt_alpha: 1.0,
        scheduler: Default::default(),
        mmu: Default::default(),
        red: None,
        red_ref_bps: None,
    });
    let link = |a: String, b: String| LinkConfig {
        a,
        b,
        rate_bps: 10_000_000_000,
        delay_ps: PS_PER_US / 2,
    };
    let mut links: Vec<LinkConfig> = (1..=n).map(|i| link(format!("S{i}"), format!("B{i}"))).collect();
    links.extend((1..=n).map(|i| link(format!("B{i}"), "B0".into())));
    links.push(link("B0".into(), "D".into()));
    let events = (1..=n)
        .map(|i| EventConfig::Start {
            at_ps: sources_start_ps,
            node: format!("S{i}"),
        })
        .collect();
    SimConfig {
        trace_ports: vec!["B0->D".into()],
        ..SimConfig::new(duration_ps, stations, bridges, links, events)
    }
}

/// The baseline of scenarios.md section 1 (no management, PAUSE as asked):
/// S3 and S4 stop at 80 ms; windows: measure (whole run), utilization
/// (10-80 ms), fairness (20-80 ms). The CP is `B0->D`.
pub fn baseline_config(pause: bool) -> SimConfig {
    let ms = crate::engine::PS_PER_MS;
    let mut cfg = star_config(4, 0.49, 100 * ms, 5 * ms);
    for node in ["S3", "S4"] {
        cfg.events.push(EventConfig::Stop {
            at_ps: 80 * ms,
            node: node.into(),
        });
    }
    for (name, a, b) in [("utilization", 10, 80), ("fairness", 20, 80)] {
        cfg.windows.push(WindowConfig {
            name: name.into(),
            start_ps: a * ms,
            end_ps: b * ms,
        });
    }
    cfg.pause.enabled = pause;
    cfg
}

/// The 1-second 4-to-1 incast of performance.md: four sources at 4.9 Gbit/s
/// into one 10 Gbit/s sink link, 150 KB drop-tail buffers, no management.
pub fn incast_config(duration_ps: Time) -> SimConfig {
    star_config(4, 0.49, duration_ps, 0)
}

/// The single-hop output-generated hotspot of scenarios.md section 5: ten
/// hosts on one bridge (per-input 150 KB partitions), every host at 85%
/// uniform over the others, H0's service rate `hot_rate_bps` from 100 to
/// 500 ms of a 1 s run.
pub fn singlehop_config(hot_rate_bps: u64, duration_ps: Time, pause: bool, scheme: SchemeConfig) -> SimConfig {
    let stations: Vec<StationConfig> = (0..10)
        .map(|i| host(format!("H{i}"), 0.85, DestConfig::Uniform, PS_PER_US))
        .collect();
    let bridges = vec![BridgeConfig {
        name: "SW".into(),
        buffer_mode: BufferMode::PerInput,
        buffer_bytes: 150_000,
        latency_ps: PS_PER_US,
        cp: true,
        ports: None,
        dt_alpha: 1.0,
        scheduler: Default::default(),
        mmu: Default::default(),
        red: None,
        red_ref_bps: None,
    }];
    let links = (0..10)
        .map(|i| LinkConfig {
            a: format!("H{i}"),
            b: "SW".into(),
            rate_bps: 10_000_000_000,
            delay_ps: PS_PER_US / 2,
        })
        .collect();
    let mut events: Vec<EventConfig> = (0..10)
        .map(|i| EventConfig::Start {
            at_ps: 0,
            node: format!("H{i}"),
        })
        .collect();
    let ms = crate::engine::PS_PER_MS;
    events.push(EventConfig::LinkRate {
        at_ps: 100 * ms,
        from: "SW".into(),
        to: "H0".into(),
        rate_bps: hot_rate_bps,
        scale_buffers: false,
    });
    events.push(EventConfig::LinkRate {
        at_ps: 500 * ms,
        from: "SW".into(),
        to: "H0".into(),
        rate_bps: 10_000_000_000,
        scale_buffers: false,
    });
    SimConfig {
        bin_ps: 1000 * PS_PER_US,
        max_traced_flows: 0,
        pause: PauseConfig {
            enabled: pause,
            trigger: PauseTrigger::Auto,
            xoff_bytes: 130_000,
            xon_bytes: 110_000,
            quanta: 65535,
            ..PauseConfig::default()
        },
        trace_ports: vec!["SW->H0".into()],
        scheme,
        ..SimConfig::new(duration_ps, stations, bridges, links, events)
    }
}

/// A two-tier leaf-spine: `leaves` x `hosts_per_leaf` hosts `H0..` (host h
/// on leaf `L<h / hosts_per_leaf>`), every leaf linked to every one of
/// `spines` spines `S0..`; 10 Gbit/s links, every host at `load` to uniform
/// destinations from time 0, ECMP routing, per-output 150 KB buffers, no
/// management.
pub fn leafspine_config(leaves: usize, spines: usize, hosts_per_leaf: usize, load: f64, duration_ps: Time) -> SimConfig {
    let hosts = leaves * hosts_per_leaf;
    let stations: Vec<StationConfig> = (0..hosts)
        .map(|h| host(format!("H{h}"), load, DestConfig::Uniform, PS_PER_US))
        .collect();
    let bridge = |name: String| BridgeConfig {
        name,
        buffer_mode: BufferMode::PerOutput,
        buffer_bytes: 150_000,
        latency_ps: PS_PER_US,
        cp: false,
        ports: None,
        dt_alpha: 1.0,
        scheduler: Default::default(),
        mmu: Default::default(),
        red: None,
        red_ref_bps: None,
    };
    let bridges = (0..leaves)
        .map(|l| bridge(format!("L{l}")))
        .chain((0..spines).map(|s| bridge(format!("S{s}"))))
        .collect();
    let link = |a: String, b: String| LinkConfig {
        a,
        b,
        rate_bps: 10_000_000_000,
        delay_ps: PS_PER_US / 2,
    };
    let mut links: Vec<LinkConfig> = (0..hosts)
        .map(|h| link(format!("H{h}"), format!("L{}", h / hosts_per_leaf)))
        .collect();
    for l in 0..leaves {
        links.extend((0..spines).map(|s| link(format!("L{l}"), format!("S{s}"))));
    }
    let events = (0..hosts)
        .map(|h| EventConfig::Start {
            at_ps: 0,
            node: format!("H{h}"),
        })
        .collect();
    let n_stations = stations.len();
    SimConfig {
        routing: RoutingConfig::Ecmp,
        // As a scenario gets it (`stats.per_flow = "auto"`): per-flow
        // counters, hosts x hosts of them, only for small fabrics.
        per_flow: n_stations <= PER_FLOW_AUTO_STATIONS,
        ..SimConfig::new(duration_ps, stations, bridges, links, events)
    }
}

/// Stations up to which a scenario keeps per-flow counters by default
/// (`stats.per_flow = "auto"`, python/cnsim/scenario/model.py).
pub const PER_FLOW_AUTO_STATIONS: usize = 256;

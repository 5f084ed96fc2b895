//! End-to-end behaviour of the network model: exact timing, Bernoulli
//! sources, determinism, the baseline incast with and without PAUSE.

use cnsim_core::bench::star_config;
use cnsim_core::config::*;
use cnsim_core::engine::{PS_PER_MS, PS_PER_US};
use cnsim_core::net::pause::headroom_bytes;
use cnsim_core::{RunResult, Sim};

fn station(name: &str, load: f64, dest: DestConfig) -> StationConfig {
    StationConfig {
        name: name.into(),
        load,
        dest,
        nic_buffer_bytes: 150_000,
        rlq_bytes: 150_000,
        processing_ps: 2 * PS_PER_US,
        rl_scope: RlScope::default(),
        nic_full: NicFull::default(),
        rl_order: Default::default(),
        priority: cnsim_core::frame::DATA_PRIORITY,
    }
}

fn bridge(name: &str, mode: BufferMode, latency_ps: u64) -> BridgeConfig {
    BridgeConfig {
        name: name.into(),
        buffer_mode: mode,
        buffer_bytes: 150_000,
        latency_ps,
        cp: true,
        ports: None,
        dt_alpha: 1.0,
        scheduler: Default::default(),
        mmu: Default::default(),
        red: None,
        red_ref_bps: None,
    }
}

fn link(a: &str, b: &str, rate_bps: u64, delay_ps: u64) -> LinkConfig {
    LinkConfig {
        a: a.into(),
        b: b.into(),
        rate_bps,
        delay_ps,
    }
}

/// S -> B -> D with the given rates and delays; S starts at 0.
fn line(load: f64, duration_ps: u64, up: (u64, u64), down: (u64, u64), latency_ps: u64) -> SimConfig {
    SimConfig {
        trace_ports: vec!["B->D".into()],
        ..SimConfig::new(
            duration_ps,
            vec![
                station("S", load, DestConfig::Fixed { node: "D".into() }),
                station("D", 0.0, DestConfig::Uniform),
            ],
            vec![bridge("B", BufferMode::Infinite, latency_ps)],
            vec![link("S", "B", up.0, up.1), link("B", "D", down.0, down.1)],
            vec![EventConfig::Start {
                at_ps: 0,
                node: "S".into(),
            }],
        )
    }
}

fn run(cfg: &SimConfig, seed: u64) -> RunResult {
    Sim::new(cfg, seed).expect("valid config").run().expect("conservation holds")
}

#[test]
fn one_frame_arrives_at_exactly_the_sum_of_serialisation_propagation_and_latency() {
    // p = 1 puts a frame in slot 0 at t = 0; stopping at 1 ps leaves exactly one.
    let mut cfg = line(1.0, 100 * PS_PER_US, (10_000_000_000, 700_000), (2_500_000_000, 300_000), 1_100_000);
    cfg.events.push(EventConfig::Stop {
        at_ps: 1,
        node: "S".into(),
    });
    let r = run(&cfg, 0);
    assert_eq!(r.frames.counts.generated, 1);
    assert_eq!(r.frames.counts.delivered, 1);
    // 1500 B at 10 Gbit/s = 1.2 us, 0.7 us wire, 1.1 us bridge, 1500 B at 2.5 Gbit/s = 4.8 us, 0.3 us wire.
    assert_eq!(r.frames.counts.delay_max_ps, 1_200_000 + 700_000 + 1_100_000 + 4_800_000 + 300_000);
}

#[test]
fn a_frame_still_on_the_wire_at_the_end_is_in_flight_not_delivered() {
    let mut cfg = line(1.0, 4 * PS_PER_US, (10_000_000_000, 500_000), (10_000_000_000, 500_000), PS_PER_US);
    cfg.events.push(EventConfig::Stop {
        at_ps: 1,
        node: "S".into(),
    });
    let r = run(&cfg, 0); // arrival would be at 4.4 us
    assert_eq!(
        (r.frames.counts.generated, r.frames.counts.delivered, r.frames.in_flight),
        (1, 0, 1)
    );
}

#[test]
fn bernoulli_source_offers_p_within_one_percent() {
    let p = 0.3;
    let cfg = line(p, 1000 * PS_PER_MS, (10_000_000_000, 0), (10_000_000_000, 0), 0);
    let slots = (1000 * PS_PER_MS / 1_200_000) as f64;
    for seed in [0, 1, 2] {
        let r = run(&cfg, seed);
        let offered = r.frames.counts.generated as f64 / slots;
        assert!((offered - p).abs() / p < 0.01, "seed {seed}: offered {offered} vs p {p}");
        // Nothing is lost: the sink link is faster than the offered load.
        assert_eq!(r.frames.counts.dropped_cp + r.frames.dropped_rp, 0);
    }
}

#[test]
fn same_seed_same_results_different_seed_different_results() {
    let cfg = star_config(4, 0.49, 20 * PS_PER_MS, PS_PER_MS);
    let strip = |r: &RunResult| {
        let mut v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        v.as_object_mut().unwrap().remove("engine");
        (
            v,
            r.series
                .iter()
                .map(|s| (s.series.clone(), s.key.clone(), s.values.clone()))
                .collect::<Vec<_>>(),
        )
    };
    let a = strip(&run(&cfg, 5));
    let b = strip(&run(&cfg, 5));
    let c = strip(&run(&cfg, 6));
    assert_eq!(a, b);
    assert_ne!(a.0, c.0);
}

/// The baseline of scenarios.md section 1 (nocm): S3 and S4 stop at 80 ms.
fn baseline(pause: bool) -> SimConfig {
    cnsim_core::bench::baseline_config(pause)
}

#[test]
fn baseline_nocm_saturates_the_downlink_and_drops_at_the_cp() {
    let r = run(&baseline(false), 1);
    let down = r.link("B0->D").unwrap();
    assert!(
        r.window_gbps(down.bytes[1], 1) >= 9.9,
        "downlink {} Gbit/s over 10-80 ms",
        r.window_gbps(down.bytes[1], 1)
    );
    assert!(r.frames.counts.dropped_cp > 0);
    assert_eq!(r.frames.dropped_rp, 0);
    let by_node: u64 = r.nodes.iter().map(|n| n.dropped_cp).sum();
    assert_eq!(by_node, r.frames.counts.dropped_cp);
    // 4 x 4.9 Gbit/s offered into 10: every uplink from the sources carries its own load.
    let up = r.link("S1->B1").unwrap();
    assert!((r.window_gbps(up.bytes[1], 1) - 4.9).abs() < 0.1);
}

#[test]
fn pause_with_enough_headroom_is_lossless_and_keeps_the_downlink_busy() {
    let mut cfg = baseline(true);
    // The CP queue can be fed by 4 ingress ports.
    let headroom = headroom_bytes(10_000_000_000, PS_PER_US / 2, PS_PER_US, 1500, 64, 4);
    cfg.pause.xoff_bytes = 150_000 - headroom;
    cfg.pause.xon_bytes = cfg.pause.xoff_bytes - 10_000;
    let r = run(&cfg, 3);
    assert_eq!(
        r.frames.counts.dropped_cp, 0,
        "lossless: xoff {} leaves {} B of headroom",
        cfg.pause.xoff_bytes, headroom
    );
    let down = r.link("B0->D").unwrap();
    assert!(
        r.window_gbps(down.bytes[1], 1) >= 9.9,
        "downlink {} Gbit/s over 10-80 ms",
        r.window_gbps(down.bytes[1], 1)
    );
    for i in 1..=4 {
        let up = r.link(&format!("B{i}->B0")).unwrap();
        assert!(up.paused_ever && up.paused_ps > 0, "B{i}->B0 never paused");
    }
    assert!(r.links.iter().any(|l| l.paused_ps > 0));
    assert!(r.links.iter().map(|l| l.pause_frames).sum::<u64>() > 0);
    // Back-pressure reaches the sources: their generators defer (the
    // default), so no frame is lost anywhere.
    assert!(r.link("S1->B1").unwrap().paused_ever);
    assert_eq!(
        (r.frames.dropped_rp, r.frames.counts.dropped_nic, r.frames.counts.dropped_rl),
        (0, 0, 0)
    );
    assert!(r.frames.counts.deferred > 0, "the paused sources held frames back");
    let held: u64 = r.nodes.iter().map(|n| n.deferred).sum();
    assert_eq!(held, r.frames.counts.deferred);
    assert_eq!(r.windows.iter().map(|w| w.dropped_rp).sum::<u64>(), 0);

    // The other reading: a full NIC drops what the source generates.
    for st in &mut cfg.stations {
        st.nic_full = NicFull::Drop;
    }
    let d = run(&cfg, 3);
    assert_eq!(d.frames.counts.dropped_cp, 0);
    assert_eq!(d.frames.counts.deferred, 0);
    assert!(d.frames.counts.dropped_nic > 0 && d.frames.dropped_rp == d.frames.counts.dropped_nic);
    // Same slots, same deliveries: deferring only changes what is counted.
    assert_eq!(d.frames.counts.delivered, r.frames.counts.delivered);
    assert_eq!(d.frames.counts.generated, r.frames.counts.generated + r.frames.counts.deferred);
}

#[test]
fn pause_with_published_thresholds_reports_its_drops() {
    let r = run(&baseline(true), 3);
    let by_node: u64 = r.nodes.iter().map(|n| n.dropped_cp).sum();
    assert_eq!(by_node, r.frames.counts.dropped_cp);
    let down = r.link("B0->D").unwrap();
    assert!(r.window_gbps(down.bytes[1], 1) >= 9.9);
    assert!(r.links.iter().any(|l| l.paused_ps > 0));
}

#[test]
fn bad_configs_are_rejected_with_the_parameter_named() {
    let base = line(0.5, PS_PER_MS, (10_000_000_000, 0), (10_000_000_000, 0), 0);
    let check = |f: &dyn Fn(&mut SimConfig), needle: &str| {
        let mut c = base.clone();
        f(&mut c);
        let e = Sim::new(&c, 0).err().unwrap_or_else(|| panic!("accepted a bad config ({needle})"));
        assert!(e.line().contains(needle), "'{}' does not mention '{needle}'", e.line());
    };
    check(&|c| c.stations[0].load = -0.1, "nodes.S.load");
    check(&|c| c.stations[0].dest = DestConfig::Fixed { node: "X".into() }, "unknown node 'X'");
    check(&|c| c.links.push(link("S", "B", 1, 0)), "duplicate link");
    check(&|c| c.links[0].rate_bps = 0, "rate_gbps");
    check(
        &|c| {
            c.links.remove(1);
        },
        "station needs exactly one link",
    );
    check(&|c| c.trace_ports = vec!["B->X".into()], "trace.ports");
    check(
        &|c| {
            c.events.push(EventConfig::Start {
                at_ps: 0,
                node: "B".into(),
            })
        },
        "only stations",
    );
    check(
        &|c| {
            c.pause.enabled = true;
            c.pause.xon_bytes = c.pause.xoff_bytes + 1
        },
        "pause.xon_bytes",
    );
    // Disconnected: a second island that S wants to reach.
    check(
        &|c| {
            c.stations.push(station("E", 0.0, DestConfig::Uniform));
            c.stations.push(station("F", 0.0, DestConfig::Uniform));
            c.links.push(link("E", "F", 1, 0));
            c.stations[0].dest = DestConfig::Fixed { node: "E".into() };
        },
        "not reachable",
    );
    assert!(SimConfig::from_json("{\"duration_ps\": 1, \"nope\": 2}").is_err());
}

#[test]
fn a_stopped_link_holds_frames_and_restarting_it_drains_them() {
    let mut cfg = line(0.5, 20 * PS_PER_MS, (10_000_000_000, 0), (10_000_000_000, 0), 0);
    cfg.events.push(EventConfig::LinkRate {
        at_ps: 5 * PS_PER_MS,
        from: "B".into(),
        to: "D".into(),
        rate_bps: 0,
        scale_buffers: false,
    });
    cfg.events.push(EventConfig::LinkRate {
        at_ps: 10 * PS_PER_MS,
        from: "B".into(),
        to: "D".into(),
        rate_bps: 10_000_000_000,
        scale_buffers: false,
    });
    let r = run(&cfg, 0);
    let q = r.series("queue_bytes", "B->D").unwrap();
    // 5 ms stopped at 5 Gbit/s offered builds ~3.1 MB in the infinite buffer.
    let peak = q.iter().cloned().fold(0.0, f64::max);
    assert!(peak > 2.8e6 && peak < 3.4e6, "peak {peak}");
    // Delivered in 5-10 ms: nothing.
    let d = r.series("delivered_throughput", "D").unwrap();
    assert!(d[51..99].iter().all(|&x| x == 0.0));
    assert!(d[101..110].iter().all(|&x| x > 9.9), "drains at line rate after restart");
}

#[test]
fn partition_trigger_pauses_per_input_partitions_without_loss() {
    // The CN-SIM bridge model: each input owns 150 KB; PAUSE at 130 KB / 110 KB per input.
    let mut cfg = baseline(true);
    for b in &mut cfg.bridges {
        b.buffer_mode = BufferMode::PerInput;
    }
    cfg.pause.trigger = PauseTrigger::Auto; // per_input -> partition
    cfg.pause.xoff_bytes = 130_000;
    cfg.pause.xon_bytes = 110_000;
    let r = run(&cfg, 2);
    assert_eq!(r.frames.counts.dropped_cp, 0);
    for i in 1..=4 {
        assert!(r.link(&format!("B{i}->B0")).unwrap().paused_ever);
    }
    let down = r.link("B0->D").unwrap();
    assert!(r.window_gbps(down.bytes[1], 1) >= 9.9);
    // Without PAUSE the same partitions overflow.
    cfg.pause.enabled = false;
    assert!(run(&cfg, 2).frames.counts.dropped_cp > 0);
}

#[test]
fn output_queue_and_ingress_triggers_both_protect_a_shared_buffer() {
    for trigger in [PauseTrigger::OutputQueue, PauseTrigger::Ingress] {
        let mut cfg = baseline(true);
        for b in &mut cfg.bridges {
            b.buffer_mode = BufferMode::Shared;
            b.buffer_bytes = 600_000;
        }
        cfg.pause.trigger = trigger;
        cfg.pause.xoff_bytes = 100_000;
        cfg.pause.xon_bytes = 80_000;
        let r = run(&cfg, 4);
        assert_eq!(r.frames.counts.dropped_cp, 0, "{trigger:?}");
        assert!(r.links.iter().any(|l| l.paused_ps > 0), "{trigger:?}");
    }
}

#[test]
fn per_input_partitions_never_exceed_their_size() {
    // Two sources into one sink link at 2 Gbit/s, per-(output, input) partitions of 150 KB, no PAUSE.
    let mut cfg = star_config(2, 0.5, 20 * PS_PER_MS, 0);
    for b in &mut cfg.bridges {
        b.buffer_mode = BufferMode::PerInput;
    }
    cfg.links.last_mut().unwrap().rate_bps = 2_000_000_000;
    let r = run(&cfg, 1);
    let q = r.series("queue_bytes_max", "B0->D").unwrap();
    let peak = q.iter().cloned().fold(0.0, f64::max);
    // Each input may hold at most 150 KB in the queue: 2 x 150 KB in all.
    assert!(peak <= 300_000.0, "peak {peak}");
    assert!(peak > 290_000.0, "both partitions fill: peak {peak}");
    assert!(r.frames.counts.dropped_cp > 0);
    // With PAUSE at 130 / 110 KB per partition, nothing is lost.
    cfg.pause = PauseConfig {
        enabled: true,
        trigger: PauseTrigger::Auto,
        xoff_bytes: 130_000,
        xon_bytes: 110_000,
        quanta: 65535,
        ..PauseConfig::default()
    };
    let r = run(&cfg, 1);
    assert_eq!(r.frames.counts.dropped_cp, 0);
    let q = r.series("queue_bytes_max", "B0->D").unwrap();
    assert!(q.iter().cloned().fold(0.0, f64::max) <= 300_000.0);
}

/// Two tiers: S1..S3 on edge E1, whose uplink to core C is paused by C while
/// the hot station H drains at 0.5 Gbit/s; L on C competes directly. The
/// sources two hops behind the paused uplink receive feedback and their RLs
/// for H fall below 0.5 Gbit/s (4x their fair share) within 5 ms of the onset.
#[test]
fn a_source_behind_a_paused_uplink_is_slowed_within_5_ms() {
    use cnsim_core::scheme::qcn::QcnParams;
    let ms = PS_PER_MS;
    let to_h = || DestConfig::Fixed { node: "H".into() };
    let mut stations: Vec<StationConfig> = ["S1", "S2", "S3", "L"].iter().map(|n| station(n, 0.2, to_h())).collect();
    stations.push(station("H", 0.0, DestConfig::Uniform));
    let mut e1 = bridge("E1", BufferMode::PerInput, PS_PER_US);
    let mut c = bridge("C", BufferMode::PerInput, PS_PER_US);
    e1.buffer_bytes = 150_000;
    c.buffer_bytes = 150_000;
    let g = 10_000_000_000;
    let links = vec![
        link("S1", "E1", g, PS_PER_US / 2),
        link("S2", "E1", g, PS_PER_US / 2),
        link("S3", "E1", g, PS_PER_US / 2),
        link("E1", "C", g, PS_PER_US / 2),
        link("L", "C", g, PS_PER_US / 2),
        link("C", "H", g, PS_PER_US / 2),
    ];
    let mut events: Vec<EventConfig> = ["S1", "S2", "S3", "L"]
        .iter()
        .map(|n| EventConfig::Start {
            at_ps: 0,
            node: (*n).into(),
        })
        .collect();
    events.push(EventConfig::LinkRate {
        at_ps: 10 * ms,
        from: "C".into(),
        to: "H".into(),
        rate_bps: 500_000_000,
        scale_buffers: false,
    });
    let mut cfg = SimConfig::new(40 * ms, stations, vec![e1, c], links, events);
    cfg.bin_ps = ms;
    cfg.pause = PauseConfig {
        enabled: true,
        xoff_bytes: 130_000,
        xon_bytes: 110_000,
        ..PauseConfig::default()
    };
    // QCN two-point as compared in July 2007 (schemes.md), every port a CP.
    let qcn2pt: QcnParams = cnsim_core::scheme::qcn::table_2pt().default_params();
    cfg.scheme = SchemeConfig::of("qcn", &qcn2pt);
    let r = run(&cfg, 1);
    let up = r.link("E1->C").unwrap();
    assert!(up.paused_ever, "the uplink is paused: the premise of the test");
    for s in ["S1", "S2", "S3"] {
        let node = r.nodes.iter().find(|n| n.name == s).unwrap();
        assert!(node.notifications > 0, "{s} received feedback");
        let rate = r.series("rl_rate", &format!("{s}|H")).expect("an RL for the flow to H");
        // rl_rate is in Gbit/s at each 1 ms bin's end; bin 29 ends at 30 ms.
        // rl_rate is in Gbit/s at each 1 ms bin's end: unlimited (line rate)
        // before the onset at 10 ms, below 0.5 Gbit/s 5 ms after it.
        assert_eq!(rate[8], 10.0, "{s} had no RL before the hotspot");
        assert!(rate[14] <= 0.5, "{s}'s RL for H at 15 ms: {} Gbit/s", rate[14]);
    }
    assert_eq!(r.frames.counts.dropped_cp, 0, "lossless");
}

#[test]
fn hand_built_configs_the_python_layer_would_refuse_are_refused_not_crashed() {
    let ms = PS_PER_MS;
    let mut cfg = cnsim_core::bench::star_config(2, 0.5, 10 * ms, 0);
    cfg.pause.quanta = 0;
    cfg.pause.enabled = true;
    let e = Sim::new(&cfg, 0).err().unwrap();
    assert!(e.line().starts_with("pause.quanta: 0 is not allowed"));
    assert_eq!(e.path, "pause.quanta", "the error names its parameter as a path");
    let mut cfg = cnsim_core::bench::star_config(2, 0.5, 10 * ms, 0);
    cfg.bin_ps = 1;
    assert!(Sim::new(&cfg, 0).err().unwrap().line().starts_with("duration_ms / bin_us:"));
    let mut cfg = cnsim_core::bench::star_config(2, 0.5, u64::MAX / 2, 0);
    cfg.windows[0].end_ps = cfg.duration_ps;
    assert!(Sim::new(&cfg, 0).err().unwrap().line().starts_with("duration_ms:"));
}

/// A config that does not parse names the field where it went wrong.
#[test]
fn a_config_that_does_not_parse_names_the_field() {
    let mut v: serde_json::Value = serde_json::from_str(&cnsim_core::bench::star_config(2, 0.5, 1_000_000, 0).to_json()).unwrap();
    v["pause"]["xoff_bytes"] = serde_json::json!("many");
    let e = cnsim_core::SimConfig::from_json(&v.to_string()).unwrap_err();
    assert_eq!(e.path, "pause.xoff_bytes");
    assert!(e.message.contains("invalid type"), "{}", e.message);
    v["pause"]["xoff_bytes"] = serde_json::json!(1000);
    v["links"][1]["rate_bps"] = serde_json::json!(-1);
    let e = cnsim_core::SimConfig::from_json(&v.to_string()).unwrap_err();
    assert_eq!(e.path, "links[1].rate_bps");
}

/// Every module that refuses a config keeps the parameter at fault apart
/// from what is wrong (nothing reads a path back out of a message): the path
/// is the parameter's dotted name, the message does not repeat it, and the
/// one line users see is `path: message`.
#[test]
fn every_config_error_names_its_parameter_apart_from_its_text() {
    let base = line(0.5, PS_PER_MS, (10_000_000_000, 0), (10_000_000_000, 0), 0);
    let check = |e: cnsim_core::error::ConfigError, path: &str| {
        assert_eq!(e.path, path, "{e:?}");
        assert!(!e.message.is_empty() && !e.message.starts_with(path), "{e:?}");
        assert_eq!(e.line(), format!("{}: {}", e.path, e.message));
        assert_eq!(e.to_string(), e.line());
    };
    let refused = |f: &dyn Fn(&mut SimConfig)| {
        let mut c = base.clone();
        f(&mut c);
        Sim::new(&c, 0).err().expect("a bad config is refused")
    };
    // config.rs
    check(refused(&|c| c.stations[0].load = -0.1), "nodes.S.load");
    // net/topology.rs, with a node name holding a space (it once hid the path)
    check(
        refused(&|c| {
            c.stations[0].name = "S 1".into();
            c.links[0].a = "S 1".into();
            c.stations[0].dest = DestConfig::Fixed { node: "S 1".into() };
        }),
        "nodes.S 1.dest",
    );
    check(refused(&|c| c.links.push(link("S", "B", 1, 0))), "links");
    // net/build.rs (the line already starts its source: this event is the second)
    check(refused(&|c| c.cp_ports = vec!["B->X".into()]), "cp_ports");
    check(
        refused(&|c| {
            c.events.push(EventConfig::Start {
                at_ps: 0,
                node: "X".into(),
            })
        }),
        "events[1].node",
    );
    // Fat-tree routing's k: config.rs, against [topology]'s declaration (topology_fattree.k).
    check(refused(&|c| c.routing = RoutingConfig::Fattree { k: 1 }), "routing.k");
    // net/sim_transport.rs
    check(
        refused(&|c| {
            c.transport.flows.push(FlowConfig {
                src: "X".into(),
                dst: "D".into(),
                size_bytes: 1000,
                start_ps: 0,
                priority: None,
                after: vec![],
                after_delay_ps: 0,
                tag: None,
            })
        }),
        "flows[0].src",
    );
    // trace/record.rs
    check(refused(&|c| c.trace.snaplen = 1), "trace.snaplen");
    // params.rs: a rule names every parameter it involves
    check(
        refused(&|c| {
            c.pause.enabled = true;
            c.pause.xon_bytes = c.pause.xoff_bytes + 1
        }),
        "pause.xon_bytes / pause.xoff_bytes",
    );
    // scheme/mod.rs and a scheme's own table
    check(refused(&|c| c.scheme.name = "nope".into()), "scheme");
    check(
        refused(&|c| {
            c.scheme.params.insert("x".into(), 1.into());
        }),
        "nocm",
    );
    // sections.rs
    let written = serde_json::json!({"hotspot": 3});
    check(
        cnsim_core::sections::check_written(written.as_object().unwrap()).unwrap_err(),
        "hotspot",
    );
    // fluid.rs
    // (a fluid model with no flows)
    let fluid = cnsim_core::fluid::FluidConfig::from_json(
        r#"{"capacity_bps": 1e10, "buffer_bytes": 1e5, "duration_ps": 1000000, "bin_ps": 1000, "step_ps": 100,
            "frame_bytes": 1500, "flows": [], "scheme": {"name": "qcn"}}"#,
    )
    .expect("a fluid config");
    check(cnsim_core::fluid::integrate(&fluid).unwrap_err(), "fluid");
}

/// Two islands (a bridge and its stations each) whose stations all send
/// uniformly: the first loaded station finds the first station of the other
/// island unreachable, as a pair-by-pair search finds it, whether paths
/// depend on the source (explicit routes) or not (the per-first-hop answer).
#[test]
fn a_disconnected_uniform_source_names_the_first_station_it_cannot_reach() {
    let build = |routing: RoutingConfig, routes: bool| {
        let names = ["A0", "A1", "A2", "B0", "B1"];
        let stations = names.iter().map(|n| station(n, 0.5, DestConfig::Uniform)).collect();
        let mut links: Vec<LinkConfig> = names[..3].iter().map(|n| link(n, "X", 10_000_000_000, 0)).collect();
        links.extend(names[3..].iter().map(|n| link(n, "Y", 10_000_000_000, 0)));
        let bridges = vec![bridge("X", BufferMode::Infinite, 0), bridge("Y", BufferMode::Infinite, 0)];
        let mut cfg = SimConfig::new(PS_PER_MS, stations, bridges, links, vec![]);
        cfg.routing = routing;
        if routes {
            cfg.routes.push(RouteConfig {
                bridge: "X".into(),
                dst: "A1".into(),
                via: "A1".into(),
            });
        }
        cfg
    };
    // The dense table; equal-cost groups; explicit routes over groups (paths
    // depend on the source: asked pair by pair).
    for (routing, routes) in [
        (RoutingConfig::ShortestPath, false),
        (RoutingConfig::Ecmp, false),
        (RoutingConfig::Ecmp, true),
    ] {
        let e = Sim::new(&build(routing, routes), 0)
            .err()
            .expect("a disconnected fabric is refused");
        assert_eq!(e.path, "nodes.A0.dest", "{routing:?} routes {routes}");
        assert_eq!(e.message, "destination B0 is not reachable (disconnected topology)", "{routing:?}");
    }
}

/// Issue 37 item 14: a route whose next hop is a station other than its
/// destination is refused as such, not as a disconnected topology (the
/// topology is connected); a route to the destination itself stays legal.
#[test]
fn a_route_via_a_station_names_the_station_not_a_disconnected_topology() {
    let build = |via: &str| {
        let mut cfg = SimConfig::new(
            PS_PER_MS,
            vec![
                station("S1", 0.5, DestConfig::Fixed { node: "D".into() }),
                station("S2", 0.5, DestConfig::Fixed { node: "D".into() }),
                station("D", 0.0, DestConfig::Uniform),
            ],
            vec![bridge("B", BufferMode::Infinite, 0)],
            vec![
                link("S1", "B", 10_000_000_000, 0),
                link("S2", "B", 10_000_000_000, 0),
                link("B", "D", 10_000_000_000, 0),
            ],
            vec![],
        );
        cfg.routes.push(RouteConfig {
            bridge: "B".into(),
            dst: "D".into(),
            via: via.into(),
        });
        cfg
    };
    let e = Sim::new(&build("S1"), 0).err().expect("a route via a station is refused");
    assert_eq!(e.path, "routes[0]");
    assert!(
        e.message.contains("'via' is the station S1, which forwards nothing"),
        "{}",
        e.message
    );
    assert!(!e.message.contains("disconnected"), "{}", e.message);
    assert!(Sim::new(&build("D"), 0).is_ok(), "a route to the destination itself is legal");
}

/// S1 (priority 0) and S2 (priority 3) each at line rate into D through B:
/// B's port to D is the bottleneck, its buffer unbounded so both classes stay
/// backlogged; `scheduler` decides how they share it.
fn two_classes(scheduler: cnsim_core::config::SchedulerConfig) -> SimConfig {
    let mut s1 = station("S1", 1.0, DestConfig::Fixed { node: "D".into() });
    s1.priority = 0;
    let s2 = station("S2", 1.0, DestConfig::Fixed { node: "D".into() });
    let start = |n: &str| EventConfig::Start { at_ps: 0, node: n.into() };
    let g10 = 10_000_000_000;
    SimConfig::new(
        5 * PS_PER_MS,
        vec![s1, s2, station("D", 0.0, DestConfig::Uniform)],
        vec![BridgeConfig {
            scheduler,
            ..bridge("B", BufferMode::Infinite, PS_PER_US)
        }],
        vec![
            link("S1", "B", g10, 500_000),
            link("S2", "B", g10, 500_000),
            link("B", "D", g10, 500_000),
        ],
        vec![start("S1"), start("S2")],
    )
}

fn bytes_from(r: &RunResult, name: &str, window: usize) -> u64 {
    r.nodes.iter().find(|n| n.name == name).expect("node").bytes_from[window]
}

/// 802.1Qaz ETS: two saturated classes share the port in proportion to their
/// weights (within 5%, issue 40's bar); strict priority starves the lower.
#[test]
fn two_saturated_classes_share_a_port_by_ets_weight_and_strict_priority_starves() {
    for (w0, w3) in [(1, 3), (1, 1), (5, 2)] {
        let mut weights = [1; 8];
        (weights[0], weights[3]) = (w0, w3);
        let r = run(
            &two_classes(SchedulerConfig {
                strict: vec![],
                ets_weights: weights,
            }),
            0,
        );
        let (a, b) = (bytes_from(&r, "S1", 0) as f64, bytes_from(&r, "S2", 0) as f64);
        let want = w3 as f64 / w0 as f64;
        assert!(((b / a) - want).abs() / want < 0.05, "weights {w0}:{w3}: S2/S1 = {}", b / a);
        // The port is busy all along: together they fill it.
        let total = (a + b) * 8.0 / (5e-3 * 10e9);
        assert!(total > 0.97, "utilisation {total}");
    }
    let r = run(
        &two_classes(SchedulerConfig {
            strict: vec![0],
            ets_weights: [1; 8],
        }),
        0,
    );
    let (a, b) = (bytes_from(&r, "S1", 0), bytes_from(&r, "S2", 0));
    assert!(b * 100 < a, "strict priority 0 leaves S2 {b} bytes against S1's {a}");
}

/// A port's own scheduler (`[[ports]]`) replaces its bridge's for that port.
#[test]
fn a_port_scheduler_overrides_its_bridges() {
    let mut cfg = two_classes(SchedulerConfig::default());
    let mut weights = [1; 8];
    weights[3] = 3;
    cfg.port_overrides = vec![PortOverride {
        port: "B->D".into(),
        scheduler: SchedulerConfig {
            strict: vec![],
            ets_weights: weights,
        },
        headroom: None,
        red: None,
    }];
    let r = run(&cfg, 0);
    let (a, b) = (bytes_from(&r, "S1", 0) as f64, bytes_from(&r, "S2", 0) as f64);
    assert!((b / a - 3.0).abs() / 3.0 < 0.05, "S2/S1 = {}", b / a);
    cfg.port_overrides[0].port = "D->B".into();
    assert_eq!(Sim::new(&cfg, 0).err().expect("refused").path, "ports[0].port");
}

/// With one priority in use every port keeps its one FIFO: the scheduler's
/// settings change nothing, to the bit.
#[test]
fn one_priority_in_use_ignores_the_scheduler() {
    let mut a = two_classes(SchedulerConfig::default());
    a.stations[0].priority = 3;
    let mut b = two_classes(SchedulerConfig {
        strict: vec![3],
        ets_weights: [0, 0, 0, 9, 0, 0, 0, 1],
    });
    b.stations[0].priority = 3;
    let strip = |r: RunResult| {
        let mut v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        v.as_object_mut().unwrap().remove("engine");
        v
    };
    assert_eq!(strip(run(&a, 1)), strip(run(&b, 1)));
}

/// IEEE 802.1Qbb PFC: S1 (priority 3, lossless) and S2 (priority 0, lossy)
/// at line rate into D through B, per-input buffers of 150 KB, XOFF / XON
/// at 50 / 40 KB per (ingress, priority). S1 is paused and loses nothing;
/// S2 is never paused and its excess is dropped; ETS shares the port.
#[test]
fn pfc_pauses_the_lossless_priority_only_and_it_loses_nothing() {
    let mut cfg = two_classes(SchedulerConfig::default());
    cfg.stations[0].priority = 3;
    cfg.stations[1].priority = 0;
    cfg.bridges[0].buffer_mode = BufferMode::PerInput;
    cfg.per_flow = true;
    cfg.pause = PauseConfig {
        enabled: true,
        xoff_bytes: 50_000,
        xon_bytes: 40_000,
        mode: PauseMode::Pfc,
        lossless: vec![3],
        ..PauseConfig::default()
    };
    // Both stop at 3 ms and everything has drained by 5 ms: what was not
    // delivered was lost. The shares are measured while both are backlogged.
    for s in ["S1", "S2"] {
        cfg.events.push(EventConfig::Stop {
            at_ps: 3 * PS_PER_MS,
            node: s.into(),
        });
    }
    cfg.windows = vec![WindowConfig {
        name: "measure".into(),
        start_ps: PS_PER_MS / 2,
        end_ps: 5 * PS_PER_MS / 2,
    }];
    let r = run(&cfg, 0);
    assert_eq!(r.frames.in_flight, 0);
    let flow = |s: &str| r.flows.iter().find(|f| f.src == s).expect("flow");
    let (s1, s2) = (flow("S1"), flow("S2"));
    assert_eq!(s1.generated, s1.delivered, "the lossless priority loses nothing");
    assert!(r.frames.counts.dropped_cp > 500 && r.frames.counts.dropped_cp == s2.generated - s2.delivered);
    let link = |n: &str| r.links.iter().find(|l| l.name == n).expect("link");
    assert!(link("B->S1").pause_frames > 10 && link("S1->B").paused_ps > 0);
    assert_eq!((link("B->S2").pause_frames, link("S2->B").paused_ps), (0, 0));
    // Equal ETS weights: each class half the port while both are backlogged.
    let (a, b) = (bytes_from(&r, "S1", 0) as f64, bytes_from(&r, "S2", 0) as f64);
    assert!((a / b - 1.0).abs() < 0.05, "S1 / S2 = {}", a / b);
    // The same run under 802.3x PAUSE stops S2 as well.
    cfg.pause.mode = PauseMode::Pause;
    let r = run(&cfg, 0);
    let link = |n: &str| r.links.iter().find(|l| l.name == n).expect("link");
    assert!(link("B->S2").pause_frames > 0);
}

/// SONiC's PFC storm test, small: H1 (priority 3, lossless) and H3
/// (priority 0, lossy) each at half line rate into H2, whose NIC storms
/// priority 3 from 2 to 10 ms. During the storm the stormed priority
/// receives nothing and the lossy one loses nothing; the watchdog storms the
/// queue, drops its frames (so H1 is not held paused), and once the storm is
/// over restores it: H1's traffic is back within detection + restoration.
#[test]
fn a_pfc_storm_stops_only_its_priority_and_the_watchdog_contains_it() {
    let ms = PS_PER_MS;
    let g10 = 10_000_000_000;
    let mut h1 = station("H1", 0.5, DestConfig::Fixed { node: "H2".into() });
    h1.priority = 3;
    let mut h3 = station("H3", 0.5, DestConfig::Fixed { node: "H2".into() });
    h3.priority = 0;
    let start = |n: &str| EventConfig::Start { at_ps: 0, node: n.into() };
    let storm = |at_ps, on| EventConfig::PfcStorm {
        at_ps,
        node: "H2".into(),
        priority: 3,
        on,
    };
    let mut cfg = SimConfig::new(
        20 * ms,
        vec![h1, h3, station("H2", 0.0, DestConfig::Uniform)],
        vec![bridge("B", BufferMode::PerInput, PS_PER_US)],
        vec![
            link("H1", "B", g10, 500_000),
            link("H3", "B", g10, 500_000),
            link("B", "H2", g10, 500_000),
        ],
        vec![start("H1"), start("H3"), storm(2 * ms, true), storm(10 * ms, false)],
    );
    cfg.windows = vec![
        WindowConfig {
            name: "storm".into(),
            start_ps: 4 * ms,
            end_ps: 10 * ms,
        },
        WindowConfig {
            name: "after".into(),
            start_ps: 15 * ms,
            end_ps: 20 * ms,
        },
    ];
    cfg.per_flow = true;
    cfg.pause = PauseConfig {
        enabled: true,
        xoff_bytes: 50_000,
        xon_bytes: 40_000,
        mode: PauseMode::Pfc,
        lossless: vec![3],
        ..PauseConfig::default()
    };
    let gbps = |r: &RunResult, s: &str, w: usize| r.window_gbps(bytes_from(r, s, w), w);
    for watchdog in [false, true] {
        cfg.pause.watchdog = watchdog;
        cfg.pause.watchdog_detection_ms = 2.0;
        cfg.pause.watchdog_restoration_ms = 2.0;
        cfg.pause.watchdog_poll_ms = 0.5;
        let r = run(&cfg, 0);
        let p = r.priorities.expect("a PFC run has per-priority counters");
        assert!(gbps(&r, "H1", 0) < 0.01, "watchdog {watchdog}: the stormed priority receives 0%");
        assert!((gbps(&r, "H3", 0) - 5.0).abs() < 0.25, "the lossy priority goes on");
        // The lossy priority loses nothing: every drop is the watchdog's, of priority 3.
        assert_eq!(r.frames.counts.dropped_cp, p.watchdog_drops[3]);
        assert!(p.pfc_frames[3] > 0 && p.pfc_frames[0] == 0);
        let h1_paused = r.links.iter().find(|l| l.name == "H1->B").expect("link").paused_ps;
        if watchdog {
            assert_eq!(p.watchdog_storms[3], 1);
            assert!(p.watchdog_drops[3] > 1_000);
            assert!((gbps(&r, "H1", 1) - 5.0).abs() < 0.25, "restored: H1 is back");
            assert!(h1_paused < ms, "the queue's frames are dropped, H1 not held: {h1_paused} ps");
        } else {
            assert_eq!((p.watchdog_storms[3], p.watchdog_drops[3]), (0, 0));
            assert!(h1_paused > 5 * ms, "H1 is held paused through the storm: {h1_paused} ps");
        }
    }
}

//! Faults to study: a link going down (routes recomputed around it and back)
//! and the PFC deadlock a cyclic buffer dependency makes (the detector names
//! the cycle; it never changes the run).

use cnsim_core::config::*;
use cnsim_core::engine::{PS_PER_MS, PS_PER_US};
use cnsim_core::{RunResult, Sim};

fn station(name: &str, load: f64, dest: &str) -> StationConfig {
    StationConfig {
        name: name.into(),
        load,
        dest: if dest.is_empty() {
            DestConfig::Uniform
        } else {
            DestConfig::Fixed { node: dest.into() }
        },
        nic_buffer_bytes: 150_000,
        rlq_bytes: 150_000,
        processing_ps: 0,
        rl_scope: RlScope::default(),
        nic_full: NicFull::default(),
        rl_order: Default::default(),
        priority: 3,
    }
}

fn bridge(name: &str) -> BridgeConfig {
    BridgeConfig {
        name: name.into(),
        buffer_mode: BufferMode::PerInput,
        buffer_bytes: 150_000,
        latency_ps: PS_PER_US,
        cp: false,
        ports: None,
        dt_alpha: 1.0,
        scheduler: Default::default(),
        mmu: Default::default(),
        red: None,
        red_ref_bps: None,
    }
}

fn link(a: &str, b: &str) -> LinkConfig {
    LinkConfig {
        a: a.into(),
        b: b.into(),
        rate_bps: 10_000_000_000,
        delay_ps: 500_000,
    }
}

fn run(cfg: &SimConfig) -> RunResult {
    Sim::new(cfg, 0).expect("valid config").run().expect("conservation holds")
}

fn bytes(r: &RunResult, link: &str, window: usize) -> u64 {
    r.links.iter().find(|l| l.name == link).expect("link").bytes[window]
}

/// S -> B0 -> {B1, B2} -> B3 -> D: shortest-path routing takes B1 (the
/// lower port); while B0-B1 is down (3-6 ms) the frames go through B2.
#[test]
fn a_link_down_reroutes_around_it_and_back() {
    let ms = PS_PER_MS;
    let mut cfg = SimConfig::new(
        9 * ms,
        vec![station("S", 0.5, "D"), station("D", 0.0, "")],
        ["B0", "B1", "B2", "B3"].map(bridge).to_vec(),
        vec![
            link("S", "B0"),
            link("B0", "B1"),
            link("B0", "B2"),
            link("B1", "B3"),
            link("B2", "B3"),
            link("B3", "D"),
        ],
        vec![
            EventConfig::Start {
                at_ps: 0,
                node: "S".into(),
            },
            EventConfig::LinkState {
                at_ps: 3 * ms,
                a: "B0".into(),
                b: "B1".into(),
                up: false,
            },
            EventConfig::LinkState {
                at_ps: 6 * ms,
                a: "B1".into(),
                b: "B0".into(),
                up: true,
            },
        ],
    );
    let window = |name: &str, from: u64, to: u64| WindowConfig {
        name: name.into(),
        start_ps: from * ms,
        end_ps: to * ms,
    };
    cfg.windows = vec![window("before", 0, 3), window("down", 3, 6), window("back", 7, 9)];
    let r = run(&cfg);
    assert_eq!((bytes(&r, "B0->B2", 0), bytes(&r, "B0->B1", 1), bytes(&r, "B0->B2", 2)), (0, 0, 0));
    assert!(bytes(&r, "B0->B1", 0) > 0 && bytes(&r, "B0->B2", 1) > 0 && bytes(&r, "B0->B1", 2) > 0);
    // Everything sent was delivered or is still on its way: nothing lost.
    assert_eq!(r.frames.counts.dropped_cp, 0);
    let f = &r.frames.counts;
    assert!(f.generated > 3_500 && f.delivered + 5 >= f.generated, "the flow kept going: {f:?}");
}

/// Three bridges in a ring, a host on each sending lossless priority 3 at
/// line rate two bridges on, routed the long way round (scenario
/// pfc_deadlock): PFC deadlocks the ring; the detector names the cycle.
#[test]
fn a_cyclic_buffer_dependency_deadlocks_and_is_named() {
    let ms = PS_PER_MS;
    let route = |b: &str, dst: &str, via: &str| RouteConfig {
        bridge: b.into(),
        dst: dst.into(),
        via: via.into(),
    };
    let mut cfg = SimConfig::new(
        20 * ms,
        vec![station("H0", 1.0, "H2"), station("H1", 1.0, "H0"), station("H2", 1.0, "H1")],
        ["B0", "B1", "B2"].map(bridge).to_vec(),
        vec![
            link("H0", "B0"),
            link("H1", "B1"),
            link("H2", "B2"),
            link("B0", "B1"),
            link("B1", "B2"),
            link("B2", "B0"),
        ],
        ["H0", "H1", "H2"].map(|n| EventConfig::Start { at_ps: 0, node: n.into() }).to_vec(),
    );
    cfg.routes = vec![route("B0", "H2", "B1"), route("B1", "H0", "B2"), route("B2", "H1", "B0")];
    cfg.windows[0].start_ps = 10 * ms;
    cfg.pause = PauseConfig {
        enabled: true,
        xoff_bytes: 50_000,
        xon_bytes: 40_000,
        mode: PauseMode::Pfc,
        lossless: vec![3],
        ..PauseConfig::default()
    };
    let r = run(&cfg);
    let d = r.deadlock.clone().expect("a PFC run has the detector's counters");
    assert_eq!(d.deadlocks, 1);
    assert_eq!(d.deadlock_cycle, "priority 3: B0->B1, B1->B2, B2->B0");
    assert!(d.deadlock_at_ps.is_some_and(|t| t <= 5 * ms));
    assert_eq!(r.windows[0].delivered, 0, "nothing moves once deadlocked");
    // Without the detector: the same run, minus what it found.
    cfg.pause.deadlock_detector = false;
    let quiet = run(&cfg);
    assert!(quiet.deadlock.is_none());
    let c = |r: &RunResult| {
        (
            r.frames.counts.generated,
            r.frames.counts.delivered,
            r.frames.counts.deferred,
            r.frames.counts.dropped_cp,
        )
    };
    assert_eq!(c(&quiet), c(&r));
    // Shortest paths instead: no cycle, no deadlock.
    cfg.pause.deadlock_detector = true;
    cfg.routes.clear();
    let r = run(&cfg);
    assert_eq!(r.deadlock.expect("counters").deadlocks, 0);
    assert!(r.windows[0].delivered > 10_000);
}

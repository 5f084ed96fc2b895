//! The shared-buffer switch (`buffer_mode = "mmu"`) in a network: with
//! `auto` headroom a lossless priority never loses a frame, whatever the
//! link's rate, cable and MTU, in the worst arrival pattern we can build;
//! with 10% less it does; lossy traffic beside it is held to its egress
//! threshold and never paused.

use cnsim_core::config::*;
use cnsim_core::engine::time::serialization_ps;
use cnsim_core::net::pause::headroom_bytes;
use cnsim_core::{RunResult, Sim};
use proptest::prelude::*;

fn station(name: &str, load: f64, dest: &str, priority: u8) -> StationConfig {
    StationConfig {
        name: name.into(),
        load,
        dest: if dest.is_empty() {
            DestConfig::Uniform
        } else {
            DestConfig::Fixed { node: dest.into() }
        },
        nic_buffer_bytes: 1_000_000,
        rlq_bytes: 150_000,
        processing_ps: 0,
        rl_scope: RlScope::default(),
        nic_full: NicFull::default(),
        rl_order: Default::default(),
        priority,
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

/// The worst arrival pattern for one port's headroom: S sends lossless
/// priority 3 back to back at line rate through B to D, whose link runs at a
/// fiftieth of it, so B pauses S again and again and hardly drains while
/// the headroom fills (a departure frees headroom first). R sends lossy priority 0 at
/// line rate through B to S, from `r_start_ps`, so that B's port towards S
/// is always sending a full frame that each XOFF waits behind. Every frame
/// is `mtu` bytes; S's cable is `cable_m` metres. Returns the config and
/// `auto`'s headroom for S's port.
///
/// Every stream here is back to back, so the phases lock: how far B's port
/// towards S is into a frame when an XOFF is queued, and S when it lands,
/// follow from the delays. B's latency `aligned_latency` makes both frames
/// just begun, the worst case; other latencies leave part of `auto` unused.
fn worst_case(rate_bps: u64, cable_m: f64, mtu: u32, latency_ps: u64, r_start_ps: u64, headroom: Option<u64>) -> (SimConfig, u64) {
    let delay_ps = cable_ps(cable_m);
    let auto = headroom_bytes(rate_bps, delay_ps, latency_ps, mtu as u64, 64, 1);
    let mmu = MmuConfig {
        headroom: headroom.map_or(Headroom::Auto(AutoWord::Auto), Headroom::Bytes),
        ..MmuConfig::default()
    };
    // Reserves for 3 ports x 2 priorities, headroom for 3 ports (the
    // slower link's is smaller), and a pool of 40 frames.
    let buffer = 6 * mmu.reserve_bytes + 3 * headroom.unwrap_or(auto) + 40 * mtu as u64;
    let bridge = BridgeConfig {
        name: "B".into(),
        buffer_mode: BufferMode::Mmu,
        buffer_bytes: buffer,
        latency_ps,
        cp: false,
        ports: None,
        dt_alpha: 1.0,
        scheduler: Default::default(),
        mmu,
        red: None,
        red_ref_bps: None,
    };
    // Long enough for 40 pause cycles (each drains about the headroom and
    // the XON offset at a fiftieth of the rate).
    let cycle_ps = (auto + 3_072) as u128 * 8 * 50 * 1_000_000_000_000 / rate_bps as u128;
    let duration = 40 * cycle_ps as u64;
    let mut cfg = SimConfig::new(
        duration,
        vec![station("S", 1.0, "D", 3), station("R", 1.0, "S", 0), station("D", 0.0, "", 3)],
        vec![bridge],
        vec![
            link("S", "B", rate_bps, delay_ps),
            link("R", "B", rate_bps, 1_000),
            link("B", "D", rate_bps / 50, 1_000),
        ],
        vec![
            EventConfig::Start {
                at_ps: 0,
                node: "S".into(),
            },
            EventConfig::Start {
                at_ps: r_start_ps,
                node: "R".into(),
            },
        ],
    );
    cfg.frame_bytes = mtu;
    cfg.per_flow = false;
    cfg.pause = PauseConfig {
        enabled: true,
        mode: PauseMode::Pfc,
        lossless: vec![3],
        ..PauseConfig::default()
    };
    (cfg, auto)
}

fn cable_ps(cable_m: f64) -> u64 {
    (cable_m * 5_000.0).round() as u64
}

/// The bridge latency L that makes each XOFF wait behind a frame B's port
/// towards S began `late_ps` before (2 x delay + L a whole number of frame
/// times, plus `late_ps`), and so lands on S just after S began one: S
/// resumes as an XON lands, and the XON left at the end of that port's frame.
fn aligned_latency(rate_bps: u64, cable_m: f64, mtu: u32, late_ps: u64) -> u64 {
    let frame = serialization_ps(mtu as u64, rate_bps);
    (2 * frame - (2 * cable_ps(cable_m)) % frame + late_ps) % frame
}

fn run(cfg: &SimConfig) -> RunResult {
    Sim::new(cfg, 1).expect("valid config").run().expect("conservation holds")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// `auto` headroom loses no lossless frame over 10-400 Gbit/s, 1-300 m
    /// of cable, 1,500-9,000-byte frames and any phase of the reverse
    /// traffic; the pattern fills all of it but two frames' phases.
    #[test]
    fn auto_headroom_never_loses_a_lossless_frame(
        rate_gbps in prop::sample::select(vec![10u64, 25, 40, 100, 200, 400]),
        cable_m in 1.0f64..300.0,
        mtu in prop::sample::select(vec![1500u32, 4096, 9000]),
        latency_ns in prop::option::of(0u64..2_000),
        late_ps in 1u64..20_000,
        r_start_ps in 0u64..1_000_000,
    ) {
        let rate = rate_gbps * 1_000_000_000;
        let latency = latency_ns.map_or_else(|| aligned_latency(rate, cable_m, mtu, late_ps), |ns| ns * 1_000);
        let (cfg, auto) = worst_case(rate, cable_m, mtu, latency, r_start_ps, None);
        let r = run(&cfg);
        let p = r.priorities.expect("an mmu run has per-priority counters");
        prop_assert_eq!(p.headroom_drops[3], 0, "headroom peak {} of {}", p.headroom_peak_bytes[3], auto);
        prop_assert!(p.pfc_frames[3] > 40, "the pattern pauses S again and again: {}", p.pfc_frames[3]);
        // The pattern uses all of `auto` but the two frames whose phase it
        // cannot always choose (the one the XOFF waits behind, the one S is
        // sending when it lands), the PFC frame, and what drains meanwhile.
        let peak = p.headroom_peak_bytes[3];
        prop_assert!((peak + 2 * mtu as u64 + 64) as f64 >= 0.97 * auto as f64, "peak {} of {}", peak, auto);
        // The lossy priority is never paused, only dropped.
        prop_assert_eq!(p.pfc_frames[0], 0);
        prop_assert_eq!(r.frames.counts.dropped_cp, p.buffer_drops[0]);
    }
}

/// 10% less headroom than `auto` loses lossless frames in that pattern.
#[test]
fn ten_percent_less_than_auto_loses_frames() {
    for (gbps, cable_m, mtu) in [(10, 1.0, 1500), (100, 100.0, 1500), (400, 300.0, 9000), (25, 30.0, 4096)] {
        let rate = gbps * 1_000_000_000;
        let lost = (0..4u64).any(|k| {
            let latency = aligned_latency(rate, cable_m, mtu, 1_000);
            let (_, auto) = worst_case(rate, cable_m, mtu, latency, 0, None);
            let (cfg, _) = worst_case(rate, cable_m, mtu, latency, k * 77_777, Some(auto * 9 / 10));
            let p = run(&cfg).priorities.expect("counters");
            eprintln!("{gbps} {cable_m} {mtu} {k}: peak {} of {}", p.headroom_peak_bytes[3], auto * 9 / 10);
            p.headroom_drops[3] > 0
        });
        assert!(lost, "{gbps} Gbit/s, {cable_m} m, {mtu} B: 90% of auto lost nothing");
    }
}

/// docs/classes.md's figure: `auto` for 100 Gbit/s, 100 m, 1,500-byte
/// frames, 1 us of bridge latency.
#[test]
fn auto_headroom_of_the_documented_case() {
    assert_eq!(headroom_bytes(100_000_000_000, cable_ps(100.0), 1_000_000, 1500, 64, 1), 29_564);
    assert_eq!(headroom_bytes(100_000_000_000, cable_ps(100.0), 0, 1500, 64, 1), 17_064);
}

/// Two of the buffer modes cnsim had before the MMU are instances of it: a
/// lossy-only MMU with no reserve is `shared` when its egress threshold never
/// binds (alpha 1e12), and `dynamic` (Choudhury and Hahne) when its egress
/// alpha is `dt_alpha`. Same seed, same frames: every count, delay and
/// flow's figures equal. (`per_output` and `per_input` are static
/// partitions, which no setting of a shared pool reproduces.)
#[test]
fn shared_and_dynamic_buffers_are_instances_of_the_mmu() {
    // Three hosts into D and one into F through one bridge, PAUSE off: D's
    // queue fills the buffer, and F's share of what is left is the threshold.
    let cfg = |mode: BufferMode, dt_alpha: f64, egress_alpha: f64| {
        let bridge = BridgeConfig {
            name: "B".into(),
            buffer_mode: mode,
            buffer_bytes: 150_000,
            latency_ps: 500_000,
            cp: false,
            ports: None,
            dt_alpha,
            scheduler: Default::default(),
            mmu: MmuConfig {
                reserve_bytes: 0,
                egress_alpha,
                ..MmuConfig::default()
            },
            red: None,
            red_ref_bps: None,
        };
        let mut stations: Vec<_> = ["H1", "H2", "H3"].iter().map(|h| station(h, 0.45, "D", 3)).collect();
        stations.push(station("H4", 0.9, "F", 3));
        stations.extend([station("D", 0.0, "", 3), station("F", 0.0, "", 3)]);
        let links = ["H1", "H2", "H3", "H4", "D", "F"]
            .iter()
            .map(|h| link(h, "B", 10_000_000_000, 1_000_000))
            .collect();
        let starts = ["H1", "H2", "H3", "H4"]
            .iter()
            .map(|h| EventConfig::Start {
                at_ps: 0,
                node: (*h).into(),
            })
            .collect();
        let mut c = SimConfig::new(20_000_000_000, stations, vec![bridge], links, starts);
        c.pause.enabled = false;
        c
    };
    let same = |a: &RunResult, b: &RunResult, what: &str| {
        let (x, y) = (&a.frames.counts, &b.frames.counts);
        assert!(x.dropped_cp > 1_000, "{what}: the buffer binds ({} drops)", x.dropped_cp);
        assert_eq!(
            (x.generated, x.delivered, x.dropped_cp, x.delay_sum_ps, x.delay_max_ps),
            (y.generated, y.delivered, y.dropped_cp, y.delay_sum_ps, y.delay_max_ps),
            "{what}"
        );
        let flows = |r: &RunResult| {
            r.flows
                .iter()
                .map(|f| (f.src.clone(), f.dst.clone(), f.delivered))
                .collect::<Vec<_>>()
        };
        assert_eq!(flows(a), flows(b), "{what}: per flow");
    };
    let shared = run(&cfg(BufferMode::Shared, 1.0, 0.0));
    same(&shared, &run(&cfg(BufferMode::Mmu, 1.0, 1e12)), "shared");
    let dynamic = run(&cfg(BufferMode::Dynamic, 0.5, 0.0));
    same(&dynamic, &run(&cfg(BufferMode::Mmu, 1.0, 0.5)), "dynamic");
    // The threshold binds: F's flow loses frames it would not under `shared`.
    assert!(dynamic.frames.counts.dropped_cp != shared.frames.counts.dropped_cp);
}

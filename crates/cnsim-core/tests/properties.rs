//! Properties that hold for every configuration, checked on random ones
//! (proptest): frame conservation (a run that broke it would return an
//! error), determinism (same config and seed, same results to the bit), and
//! losslessness under PAUSE when the thresholds leave enough headroom.

use cnsim_core::bench::star_config;
use cnsim_core::config::*;
use cnsim_core::engine::{PS_PER_MS, PS_PER_US};
use cnsim_core::scheme::bcn::BcnParams;
use cnsim_core::scheme::dcqcn::DcqcnParams;
use cnsim_core::scheme::qcn::QcnParams;
use cnsim_core::{RunResult, Sim};
use proptest::prelude::*;

/// A random n-to-1 incast (the baseline's shape): sources, loads, buffer
/// size and mode, PAUSE, scheme, RL scope, what a full NIC does.
#[derive(Debug, Clone)]
struct Case {
    sources: usize,
    loads: Vec<f64>,
    buffer: u64,
    mode: BufferMode,
    pause: bool,
    scheme: u8,
    per_cp: bool,
    drop_at_nic: bool,
    ms: u64,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=5).prop_flat_map(|n| {
        (
            Just(n),
            prop::collection::vec(0.0f64..=1.0, n),
            20_000u64..=300_000,
            prop_oneof![Just(BufferMode::PerOutput), Just(BufferMode::PerInput), Just(BufferMode::Shared)],
            any::<bool>(),
            0u8..4,
            any::<bool>(),
            any::<bool>(),
            1u64..=4,
            any::<u64>(),
        )
            .prop_map(
                |(sources, loads, buffer, mode, pause, scheme, per_cp, drop_at_nic, ms, seed)| Case {
                    sources,
                    loads,
                    buffer,
                    mode,
                    pause,
                    scheme,
                    per_cp,
                    drop_at_nic,
                    ms,
                    seed,
                },
            )
    })
}

fn config(c: &Case) -> SimConfig {
    let mut cfg = star_config(c.sources, 0.5, c.ms * PS_PER_MS, 0);
    for (st, &load) in cfg.stations.iter_mut().zip(&c.loads) {
        st.load = load;
        st.rl_scope = if c.per_cp { RlScope::Cp } else { RlScope::Flow };
        st.nic_full = if c.drop_at_nic { NicFull::Drop } else { NicFull::Defer };
    }
    for b in &mut cfg.bridges {
        b.buffer_mode = c.mode;
        b.buffer_bytes = c.buffer;
    }
    cfg.pause.enabled = c.pause;
    cfg.pause.xoff_bytes = c.buffer * 9 / 10;
    cfg.pause.xon_bytes = c.buffer * 8 / 10;
    cfg.scheme = match c.scheme {
        0 => SchemeConfig::nocm(),
        1 => SchemeConfig::of("bcn", &BcnParams::default()),
        2 => SchemeConfig::of("qcn", &QcnParams::default()),
        _ => SchemeConfig::of("dcqcn", &DcqcnParams::default()),
    };
    cfg
}

fn run(cfg: &SimConfig, seed: u64) -> RunResult {
    Sim::new(cfg, seed).expect("valid config").run().expect("frame conservation holds")
}

/// What a run reports, wall-clock figures aside.
fn fingerprint(r: &RunResult) -> String {
    let mut r = r.clone();
    r.engine.wall_s = 0.0;
    let series: Vec<(String, String, Vec<u64>)> = r
        .series
        .iter()
        .map(|s| (s.series.clone(), s.key.clone(), s.values.iter().map(|v| v.to_bits()).collect()))
        .collect();
    format!("{}{:?}", r.to_json(), series)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_run_conserves_frames_and_is_deterministic(c in case()) {
        let cfg = config(&c);
        let a = run(&cfg, c.seed);
        let b = run(&cfg, c.seed);
        prop_assert_eq!(fingerprint(&a), fingerprint(&b));
        let f = &a.frames;
        prop_assert_eq!(f.dropped_rp, f.dropped_rl + f.dropped_nic);
        if !c.drop_at_nic {
            prop_assert_eq!(f.dropped_nic, 0);
        }
        if !c.pause {
            // Without PAUSE nothing holds a NIC: no source ever defers.
            prop_assert_eq!(f.deferred, 0);
        }
    }

    #[test]
    fn pause_with_headroom_loses_nothing(sources in 1usize..=4, loads in prop::collection::vec(0.2f64..=1.0, 4), seed in any::<u64>()) {
        // Per-output buffers of 150 KB; XOFF leaves each feeding port the
        // bytes that can still arrive once it is paused (tests/network.rs).
        let c = Case {
            sources,
            loads: loads[..sources].to_vec(),
            buffer: 150_000,
            mode: BufferMode::PerOutput,
            pause: true,
            scheme: 0,
            per_cp: false,
            drop_at_nic: false,
            ms: 3,
            seed,
        };
        let mut cfg = config(&c);
        let bytes_in = |ps: u64| 10_000_000_000u128 * ps as u128 / 8 / 1_000_000_000_000;
        let per_port = 1500 + 64 + bytes_in(2 * PS_PER_US / 2 + PS_PER_US) as u64 + 1500 + 1500;
        cfg.pause.xoff_bytes = 150_000 - sources as u64 * per_port;
        cfg.pause.xon_bytes = cfg.pause.xoff_bytes - 10_000;
        let r = run(&cfg, seed);
        prop_assert_eq!(r.frames.dropped_cp, 0);
        prop_assert_eq!(r.frames.dropped_rp, 0);
    }
}

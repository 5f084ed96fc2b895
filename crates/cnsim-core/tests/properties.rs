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
            prop_oneof![
                Just(BufferMode::PerOutput),
                Just(BufferMode::PerInput),
                Just(BufferMode::Shared),
                Just(BufferMode::Dynamic)
            ],
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

/// A value that a careless or hostile config might hold.
fn hostile_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    prop_oneof![
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(1)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(1e300)),
        Just(json!(-1e300)),
        Just(json!(1e-300)),
        Just(json!(0.5)),
        Just(json!(65536)),
        Just(json!(true)),
        Just(json!(null)),
        Just(json!("")),
        Just(json!("nosuch")),
        Just(json!([])),
        Just(json!({})),
        any::<i64>().prop_map(|v| json!(v)),
        any::<u32>().prop_map(|v| json!(v)),
        (-1e12f64..1e12).prop_map(|v| json!(v)),
    ]
}

/// Every leaf path of a JSON value (object keys and array indices).
fn leaves(v: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                path.push(k.clone());
                leaves(x, path, out);
                path.pop();
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                leaves(x, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

fn get_path<'a>(v: &'a serde_json::Value, path: &[String]) -> Option<&'a serde_json::Value> {
    path.iter().try_fold(v, |cur, p| match cur {
        serde_json::Value::Object(m) => m.get(p),
        serde_json::Value::Array(a) => a.get(p.parse::<usize>().ok()?),
        _ => None,
    })
}

fn set_path(v: &mut serde_json::Value, path: &[String], new: serde_json::Value) {
    let mut cur = v;
    for p in &path[..path.len() - 1] {
        cur = match cur {
            serde_json::Value::Object(m) => m.get_mut(p).unwrap(),
            serde_json::Value::Array(a) => &mut a[p.parse::<usize>().unwrap()],
            _ => return,
        };
    }
    let last = &path[path.len() - 1];
    match cur {
        serde_json::Value::Object(m) => {
            m.insert(last.clone(), new);
        }
        serde_json::Value::Array(a) => a[last.parse::<usize>().unwrap()] = new,
        _ => {}
    }
}

static CONFIGS_RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static CONFIGS_REFUSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn fuzz_cases() -> u32 {
    std::env::var("CNSIM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

fn count(ran: bool) {
    use std::sync::atomic::Ordering::Relaxed;
    let (r, f) = if ran {
        (CONFIGS_RUN.fetch_add(1, Relaxed) + 1, CONFIGS_REFUSED.load(Relaxed))
    } else {
        (CONFIGS_RUN.load(Relaxed), CONFIGS_REFUSED.fetch_add(1, Relaxed) + 1)
    };
    if (r + f) % 10_000 == 0 && std::env::var("CNSIM_FUZZ_CASES").is_ok() {
        eprintln!("mutated engine configs: {} ({r} ran, {f} refused)", r + f);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fuzz_cases(), ..ProptestConfig::default() })]

    /// A hand-built config with any leaf replaced by a hostile value is
    /// refused with an error or runs (conserving frames): never a panic,
    /// an overflow or an allocation abort.
    #[test]
    fn a_mutated_engine_config_is_refused_or_runs(
        c in case(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), hostile_value(), prop::option::of(0usize..8)), 1..4),
    ) {
        let mut cfg = config(&c);
        cfg.duration_ps = PS_PER_MS;
        cfg.windows[0].end_ps = PS_PER_MS;
        let mut v: serde_json::Value = serde_json::from_str(&cfg.to_json()).unwrap();
        let mut paths = Vec::new();
        leaves(&v, &mut Vec::new(), &mut paths);
        for (i, value, scale) in picks {
            let path = i.get(&paths).clone();
            // Half the time a plausible value of the right type: the old one
            // scaled (0, tiny, half, double, huge), else a hostile one.
            let value = match (scale, get_path(&v, &path).and_then(|x| x.as_f64())) {
                (Some(k), Some(old)) => {
                    let f = [0.0, 1e-9, 1e-3, 0.5, 2.0, 1e3, 1e9, 1e18][k] * old;
                    if get_path(&v, &path).is_some_and(|x| x.is_u64()) && (0.0..1.8e19).contains(&f) {
                        serde_json::json!(f as u64)
                    } else {
                        serde_json::json!(f)
                    }
                }
                _ => value,
            };
            set_path(&mut v, &path, value);
        }
        let text = v.to_string();
        let Ok(cfg) = SimConfig::from_json(&text) else { count(false); return Ok(()) };
        let Ok(mut sim) = Sim::new(&cfg, 1) else { count(false); return Ok(()) };
        count(true);
        // One simulated ms of a 10-port config takes milliseconds; a config
        // that makes the engine spin (events that never advance time) fails.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sim.run_until(PS_PER_MS);
            let _ = tx.send(());
        });
        if rx.recv_timeout(std::time::Duration::from_secs(20)).is_err() {
            panic!("the engine did not finish 1 ms of this config within 20 s: {text}");
        }
    }
}

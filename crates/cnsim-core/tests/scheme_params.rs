//! Every registered scheme with every declared parameter at its bounds and
//! beyond (issue 28: `timely.min_rate_mbps = 10001` panicked in a clamp):
//! the engine either refuses the config with one message naming the
//! parameter, or builds it and runs it (briefly) to a result that passes its
//! conservation check. Never a panic. Systematically (each parameter alone
//! at each edge) and at random (several parameters at once, proptest).

use cnsim_core::bench::star_config;
use cnsim_core::config::{FlowConfig, SchemeConfig, SimConfig};
use cnsim_core::engine::{PS_PER_MS, PS_PER_US};
use cnsim_core::scheme::params::{Kind, Range, Table};
use cnsim_core::scheme::{tables, SCHEMES};
use cnsim_core::Sim;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The networks every parameter is tried on: two long transport flows into
/// one 10 Gbit/s port (a 30 KB buffer, so they lose frames and recover),
/// with and without PAUSE, on 0.5 Gbit/s links, and two open-loop sources
/// at line rate.
fn networks() -> Vec<(&'static str, SimConfig)> {
    let flows = |pause: bool| {
        let mut cfg = star_config(2, 0.0, PS_PER_MS / 2, 0);
        cfg.events.clear();
        cfg.pause.enabled = pause;
        cfg.pause.xoff_bytes = 20_000;
        cfg.pause.xon_bytes = 15_000;
        for b in &mut cfg.bridges {
            b.buffer_bytes = 30_000;
        }
        cfg.transport.flows = ["S1", "S2"]
            .iter()
            .enumerate()
            .map(|(i, s)| FlowConfig {
                src: (*s).into(),
                dst: "D".into(),
                size_bytes: 1 << 30,
                start_ps: i as u64 * 7 * PS_PER_US,
                priority: None,
                after: vec![],
                after_delay_ps: 0,
                tag: None,
            })
            .collect();
        cfg
    };
    let open = star_config(2, 1.0, PS_PER_MS / 2, 0);
    // Links of 0.5 Gbit/s: a BDP under one frame, a floor nearer the line rate.
    let mut slow = flows(false);
    for l in &mut slow.links {
        l.rate_bps = 500_000_000;
    }
    vec![
        ("flows", flows(false)),
        ("flows+pause", flows(true)),
        ("open loop", open),
        ("slow flows", slow),
    ]
}

/// Each scheme name with the engine scheme it runs and what its name sets.
fn schemes() -> Vec<(&'static str, &'static str, Table, Map<String, Value>)> {
    let all = tables();
    SCHEMES
        .iter()
        .filter_map(|e| {
            let t = all.iter().find(|t| Some(t.name) == e.table)?.clone();
            let sets = e.sets.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            Some((e.name, e.engine, t, sets))
        })
        .collect()
}

/// A number's edges: each declared bound, just inside and just outside it,
/// and values no range should let through.
fn edges(r: &Range, int: bool) -> Vec<Value> {
    let mut v: Vec<f64> = vec![0.0, -1.0, 1e-300, 1e-9, 1.0, 1e9, 1e18, 1e300, -1e300];
    for b in [r.min, r.max].into_iter().flatten() {
        let x = b.value;
        let step = if int { 1.0 } else { (x.abs() * 1e-9).max(1e-12) };
        v.extend([x, x - step, x + step, x * 2.0, x / 2.0]);
    }
    let mut out: Vec<Value> = v
        .into_iter()
        .filter(|x| x.is_finite())
        .map(|x| {
            if int && x.fract() == 0.0 && x.abs() < 9e15 {
                json!(x as i64)
            } else {
                json!(x)
            }
        })
        .collect();
    if int {
        out.extend([
            json!(u32::MAX),
            json!(u32::MAX as u64 + 1),
            json!(i64::MAX),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(0.5),
        ]);
    }
    out
}

/// Every value tried for a parameter.
fn values(kind: &Kind) -> Vec<Value> {
    match kind {
        Kind::Float(r) => edges(r, false),
        Kind::Int(r) => edges(r, true),
        Kind::Bool => vec![json!(true), json!(false), json!(1)],
        Kind::Choice(c) => c.iter().map(|s| json!(s)).chain([json!("nosuch"), json!(3)]).collect(),
        Kind::FlagOr(w) => w
            .iter()
            .map(|s| json!(s))
            .chain([json!(true), json!(false), json!("nosuch"), json!(1)])
            .collect(),
        // Kinds of the scenario's sections, not of a scheme's table.
        Kind::IntOr(r, w) => edges(r, true)
            .into_iter()
            .chain(w.iter().map(|s| json!(s)))
            .chain([json!("nosuch"), json!(true)])
            .collect(),
        Kind::Str | Kind::Strs => vec![json!("x"), json!(["x"]), json!(1)],
        Kind::Choices(c) => vec![json!([c[0]]), json!(["nosuch"]), json!(c[0])],
        Kind::CountOrList(r) => edges(r, true).into_iter().chain([json!([0, 1]), json!([1, 1])]).collect(),
        Kind::Opaque(_) => vec![json!("x"), json!({"x": 1}), json!([[1, 2]])],
        Kind::Ints(r, n) => {
            let n = (*n).max(1);
            let inside = r.min.map_or(0.0, |b| b.value) as i64;
            let out = r.max.map_or(-1.0, |b| b.value + 1.0) as i64;
            vec![
                json!(vec![inside; n]),
                json!(vec![out; n]),
                json!(vec![inside; n + 1]),
                json!(inside),
            ]
        }
    }
}

/// What happened to one config: refused (the message), ran, or a failure
/// (a panic, a message that names no parameter of the table, a run that
/// failed its checks).
fn outcome(cfg: &SimConfig, table: &str) -> Result<bool, String> {
    // In a thread with a deadline: a config that makes the engine crawl
    // (a timer of 1 ps) is a failure too, not a test that never ends.
    let (tx, rx) = std::sync::mpsc::channel();
    let cfg = cfg.clone();
    std::thread::spawn(move || {
        let run = catch_unwind(AssertUnwindSafe(|| match Sim::new(&cfg, 1) {
            Err(e) => Err(e.line()),
            Ok(sim) => Ok(sim.run()),
        }));
        let _ = tx.send(run);
    });
    let Ok(run) = rx.recv_timeout(std::time::Duration::from_secs(20)) else {
        return Err("did not finish within 20 s".into());
    };
    match run {
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
        Ok(Err(msg)) if msg.starts_with(&format!("{table}.")) || msg.contains(&format!(" {table}.")) => Ok(false),
        Ok(Err(msg)) => Err(format!("refused without naming a {table} parameter: {msg}")),
        Ok(Ok(Err(e))) => Err(format!("the run failed: {e}")),
        Ok(Ok(Ok(_))) => Ok(true),
    }
}

fn with_params(base: &SimConfig, engine: &str, table: &str, params: Map<String, Value>) -> SimConfig {
    let mut cfg = base.clone();
    cfg.scheme = SchemeConfig {
        name: engine.into(),
        table: Some(table.into()),
        params,
    };
    cfg
}

/// Each parameter of each scheme alone at each edge, on each network.
#[test]
fn every_parameter_at_its_bounds_and_beyond_is_refused_or_runs() {
    let nets = networks();
    let mut failures = Vec::new();
    let (mut ran, mut refused) = (0, 0);
    // A failure's own panic message would flood the output: it is reported below.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for (name, engine, table, sets) in schemes() {
        for p in table.params.iter().filter(|p| !p.fixed) {
            for v in values(&p.kind) {
                for (net, base) in &nets {
                    let mut params = sets.clone();
                    params.insert(p.name.into(), v.clone());
                    if std::env::var("SCHEME_PARAMS_TRACE").is_ok() {
                        eprintln!("{name} {}.{} = {v} on {net}", table.name, p.name);
                    }
                    match outcome(&with_params(base, engine, table.name, params), table.name) {
                        Ok(true) => ran += 1,
                        Ok(false) => refused += 1,
                        Err(e) => failures.push(format!("{name} {}.{} = {v} on {net}: {e}", table.name, p.name)),
                    }
                }
            }
        }
    }
    std::panic::set_hook(hook);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(ran > 500 && refused > 500, "{ran} ran, {refused} refused");
}

/// A value for a parameter of `kind`: mostly edges, sometimes anything.
fn any_value(kind: &Kind) -> BoxedStrategy<Value> {
    let edge = prop::sample::select(values(kind));
    match kind {
        Kind::Float(_) => prop_oneof![3 => edge, 1 => (-1e6f64..1e6).prop_map(|x| json!(x))].boxed(),
        Kind::Int(_) => prop_oneof![3 => edge, 1 => (-10i64..1000).prop_map(|x| json!(x))].boxed(),
        _ => edge.boxed(),
    }
}

fn combo() -> impl Strategy<Value = (usize, usize, Vec<(usize, Value)>)> {
    let all = schemes();
    let n = all.len();
    (0..n, 0..4usize).prop_flat_map(move |(s, net)| {
        let table = all[s].2.clone();
        let params: Vec<usize> = (0..table.params.len()).filter(|&i| !table.params[i].fixed).collect();
        let pick = prop::sample::select(params).prop_flat_map(move |i| (Just(i), any_value(&table.params[i].kind)));
        (Just(s), Just(net), prop::collection::vec(pick, 1..5))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Several parameters of one scheme at once, edges and beyond: refused
    /// naming a parameter of the table, or run to a checked result.
    #[test]
    fn parameters_together_are_refused_or_run((s, net, picks) in combo()) {
        let all = schemes();
        let (_, engine, table, sets) = &all[s];
        let mut params = sets.clone();
        for (i, v) in picks {
            params.insert(table.params[i].name.into(), v);
        }
        let cfg = with_params(&networks()[net].1, engine, table.name, params);
        let shown = || cfg.scheme.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = outcome(&cfg, table.name);
        std::panic::set_hook(hook);
        prop_assert!(r.is_ok(), "{} with {}: {}", table.name, shown(), r.err().unwrap_or_default());
    }
}

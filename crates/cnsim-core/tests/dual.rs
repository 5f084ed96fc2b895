//! Two schemes in one run (scheme/dual.rs): DCQCN for priority 3 beside
//! DCTCP for priority 0. Traffic of one side only runs exactly as that
//! scheme alone runs it (the same flows' completion times), and a mixed
//! run gives each flow its own scheme: CNPs for the DCQCN flow, none for
//! the DCTCP one, whose marks ride its ACKs.

use cnsim_core::bench::star_config;
use cnsim_core::config::{ClassScheme, FlowConfig, SchemeConfig, SimConfig};
use cnsim_core::engine::{Time, PS_PER_MS, PS_PER_US};
use cnsim_core::scheme::dcqcn::DcqcnParams;
use cnsim_core::scheme::dctcp::DctcpParams;
use cnsim_core::{RunResult, Sim};

pub(super) fn dcqcn() -> SchemeConfig {
    SchemeConfig::of("dcqcn", &DcqcnParams::default())
}

pub(super) fn dctcp() -> SchemeConfig {
    SchemeConfig::of("dctcp", &DctcpParams::default())
}

/// S1 and S2 each send a 2 MB flow to D through B0's port towards D (a
/// CP), S1 at priority `p1` and S2 at `p2`; `scheme` for priority 0 and
/// DCQCN for the others when `dual`.
pub(super) fn two_flows(p1: u8, p2: u8, scheme: SchemeConfig, dual: bool) -> SimConfig {
    let mut cfg = star_config(2, 0.0, 20 * PS_PER_MS, 0);
    cfg.events.clear();
    cfg.pause.enabled = true;
    cfg.stations[0].priority = p1;
    cfg.stations[1].priority = p2;
    cfg.transport.flows = ["S1", "S2"]
        .iter()
        .enumerate()
        .map(|(i, s)| FlowConfig {
            src: (*s).into(),
            dst: "D".into(),
            size_bytes: 2_000_000,
            start_ps: i as Time * 3 * PS_PER_US,
            priority: None,
            after: vec![],
            after_delay_ps: 0,
            tag: None,
        })
        .collect();
    if dual {
        cfg.scheme = dcqcn();
        cfg.class_scheme = Some(ClassScheme {
            priorities: vec![0],
            scheme: dctcp(),
        });
    } else {
        cfg.scheme = scheme;
    }
    cfg
}

pub(super) fn run(cfg: &SimConfig) -> RunResult {
    Sim::new(cfg, 1).expect("valid config").run().expect("conservation holds")
}

pub(super) fn finishes(r: &RunResult) -> Vec<Time> {
    r.transport.flows.iter().map(|f| f.finish_ps).collect()
}

#[test]
fn each_side_alone_runs_as_its_scheme_alone() {
    // Every flow at priority 0: the dual run is DCTCP's.
    let alone = run(&two_flows(0, 0, dctcp(), false));
    let dual = run(&two_flows(0, 0, dctcp(), true));
    assert!(alone.transport.flows.iter().all(|f| f.finish_ps < Time::MAX));
    assert_eq!(finishes(&dual), finishes(&alone), "priority 0 runs DCTCP");
    assert_eq!(dual.frames.counts.note_bytes_measure, 0, "DCTCP sends no CNP");
    // Every flow at priority 3: the dual run is DCQCN's, CP streams included.
    let alone = run(&two_flows(3, 3, dcqcn(), false));
    let dual = run(&two_flows(3, 3, dcqcn(), true));
    assert!(
        alone.frames.counts.note_bytes_measure > 0,
        "two line-rate DCQCN flows into one port get CNPs"
    );
    assert_eq!(finishes(&dual), finishes(&alone), "priority 3 runs DCQCN");
    assert_eq!(dual.frames.counts.note_bytes_measure, alone.frames.counts.note_bytes_measure);
}

#[test]
fn a_mixed_run_gives_each_flow_its_own_scheme() {
    let mixed = run(&two_flows(3, 0, dcqcn(), true));
    assert!(mixed.transport.flows.iter().all(|f| f.finish_ps < Time::MAX), "both flows finish");
    let f = mixed.frames;
    assert_eq!(
        f.counts.generated,
        f.counts.delivered + f.counts.dropped_cp + f.in_flight + f.dropped_rp
    );
    // Only S1's DCQCN flow draws CNPs: fewer than when both flows are DCQCN's.
    let both = run(&two_flows(3, 0, dcqcn(), false));
    assert!(mixed.frames.counts.note_bytes_measure > 0, "the DCQCN flow gets CNPs");
    assert!(
        mixed.frames.counts.note_bytes_measure < both.frames.counts.note_bytes_measure,
        "{} CNP bytes with DCTCP beside DCQCN, {} with two DCQCN flows",
        mixed.frames.counts.note_bytes_measure,
        both.frames.counts.note_bytes_measure
    );
}

#[test]
fn an_unbuilt_pair_and_a_bad_priority_name_the_workloads_keys() {
    let mut cfg = two_flows(3, 0, dcqcn(), true);
    cfg.class_scheme.as_mut().unwrap().scheme = SchemeConfig::nocm();
    let e = Sim::new(&cfg, 0).err().expect("nocm beside dcqcn is not built");
    assert_eq!(e.path, "workloads.scheme", "{e}");
    let mut cfg = two_flows(3, 0, dcqcn(), true);
    cfg.class_scheme.as_mut().unwrap().priorities = vec![9];
    let e = Sim::new(&cfg, 0).err().expect("priority 9");
    assert_eq!(e.path, "workloads.priority", "{e}");
}

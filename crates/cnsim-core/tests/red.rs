//! A bridge's own RED profile (`bridge.ecn_kmin_bytes`, `ecn_kmax_bytes`,
//! `ecn_pmax`) replaces the scheme's ECN marking at its CPs' queues: set to
//! the scheme's own it changes nothing, to the frame; set lower, it marks
//! earlier; under a scheme that marks no ECN it is said to be ignored.

use super::dual::{dcqcn, dctcp, finishes, run, two_flows};
use cnsim_core::config::SimConfig;
use cnsim_core::scheme::dcqcn::DcqcnParams;
use cnsim_core::scheme::dctcp::DctcpParams;
use cnsim_core::scheme::Red;
use cnsim_core::Sim;

fn with_red(mut cfg: SimConfig, kmin_bytes: f64, kmax_bytes: f64, pmax: f64) -> SimConfig {
    for b in &mut cfg.bridges {
        b.red = Some(Red {
            kmin_bytes,
            kmax_bytes,
            pmax,
        });
    }
    cfg
}

#[test]
fn the_schemes_own_profile_at_the_bridge_changes_nothing() {
    // DCQCN's K_min, K_max, P_max, and the CP's stream drawn as before.
    let d = DcqcnParams::default();
    let plain = run(&two_flows(3, 3, dcqcn(), false));
    let same = run(&with_red(two_flows(3, 3, dcqcn(), false), d.kmin_bytes, d.kmax_bytes, d.pmax));
    assert!(plain.frames.counts.note_bytes_measure > 0, "the flows are marked");
    assert_eq!(finishes(&same), finishes(&plain));
    assert_eq!(same.frames.counts.note_bytes_measure, plain.frames.counts.note_bytes_measure);
    // DCTCP's step at K is the profile (K, K, any P_max).
    let k = DctcpParams::default().k_bytes;
    let plain = run(&two_flows(0, 0, dctcp(), false));
    let step = run(&with_red(two_flows(0, 0, dctcp(), false), k, k, 0.5));
    assert_eq!(finishes(&step), finishes(&plain));
    assert_eq!(step.frames.counts.delay_sum_ps, plain.frames.counts.delay_sum_ps);
}

#[test]
fn a_lower_profile_marks_earlier_and_keeps_the_queue_shorter() {
    let d = DcqcnParams::default();
    let plain = run(&two_flows(3, 3, dcqcn(), false));
    let low = run(&with_red(
        two_flows(3, 3, dcqcn(), false),
        d.kmin_bytes / 5.0,
        d.kmin_bytes / 2.0,
        1.0,
    ));
    assert!(
        low.frames.counts.note_bytes_measure > plain.frames.counts.note_bytes_measure,
        "more CNPs: {} against {}",
        low.frames.counts.note_bytes_measure,
        plain.frames.counts.note_bytes_measure
    );
    let mean_delay = |r: &cnsim_core::RunResult| r.frames.counts.delay_sum_ps as f64 / r.frames.counts.delivered as f64;
    assert!(
        mean_delay(&low) < mean_delay(&plain),
        "a shorter queue: {} against {} ps",
        mean_delay(&low),
        mean_delay(&plain)
    );
    // DCTCP under a probabilistic profile: not the step's run.
    let k = DctcpParams::default().k_bytes;
    let step = run(&two_flows(0, 0, dctcp(), false));
    let red = run(&with_red(two_flows(0, 0, dctcp(), false), k / 4.0, k, 0.2));
    assert_ne!(finishes(&red), finishes(&step));
    assert!(mean_delay(&red) < mean_delay(&step));
}

#[test]
fn a_profile_under_a_scheme_without_ecn_is_said_to_be_ignored() {
    let mut cfg = with_red(two_flows(3, 3, dcqcn(), false), 1_000.0, 2_000.0, 1.0);
    let quiet = Sim::new(&cfg, 1).expect("valid");
    assert!(
        !quiet.warnings().iter().any(|w| w.contains("ecn_kmin_bytes")),
        "{:?}",
        quiet.warnings()
    );
    cfg.scheme = cnsim_core::config::SchemeConfig::of("timely", &cnsim_core::scheme::timely::TimelyParams::default());
    let sim = Sim::new(&cfg, 1).expect("valid");
    assert!(sim.warnings().iter().any(|w| w.contains("marks no ECN")), "{:?}", sim.warnings());
    // And where no bridge with a profile has a CP port.
    let mut cfg = with_red(two_flows(3, 3, dcqcn(), false), 1_000.0, 2_000.0, 1.0);
    cfg.bridges.iter_mut().for_each(|b| b.cp = false);
    let sim = Sim::new(&cfg, 1).expect("valid");
    assert!(
        sim.warnings()
            .iter()
            .any(|w| w.contains("no bridge with a RED profile has a CP port")),
        "{:?}",
        sim.warnings()
    );
}

/// `dcqcn.window` limits transport flows only: set where there are none, the
/// run says it changes nothing.
#[test]
fn a_dcqcn_window_without_transport_flows_is_said_to_change_nothing() {
    let windowed = cnsim_core::config::SchemeConfig::of(
        "dcqcn",
        &DcqcnParams {
            window: true,
            ..DcqcnParams::default()
        },
    );
    let said = |cfg: &SimConfig| {
        Sim::new(cfg, 1)
            .expect("valid")
            .warnings()
            .iter()
            .any(|w| w.starts_with("dcqcn.window"))
    };
    let mut flows = two_flows(3, 3, dcqcn(), false);
    flows.scheme = windowed.clone();
    assert!(!said(&flows));
    let mut open_loop = cnsim_core::bench::star_config(2, 0.5, 10 * cnsim_core::engine::PS_PER_MS, 0);
    open_loop.scheme = windowed;
    assert!(said(&open_loop));
}

/// A port's own profile (`[[ports]]`, as ECN thresholds set per link rate)
/// replaces its bridge's on that port only.
#[test]
fn a_ports_own_profile_replaces_its_bridges_there() {
    use cnsim_core::config::{PortOverride, SchedulerConfig};
    let d = DcqcnParams::default();
    let low = Red {
        kmin_bytes: d.kmin_bytes / 5.0,
        kmax_bytes: d.kmin_bytes / 2.0,
        pmax: 1.0,
    };
    let on_port = |cfg: &mut SimConfig, port: &str| {
        cfg.port_overrides = vec![PortOverride {
            port: port.into(),
            scheduler: SchedulerConfig::default(),
            headroom: None,
            red: Some(low),
        }];
    };
    // On the bottleneck (B0 -> D): as the bridge-wide low profile.
    let bridge_wide = run(&with_red(two_flows(3, 3, dcqcn(), false), low.kmin_bytes, low.kmax_bytes, low.pmax));
    let mut cfg = two_flows(3, 3, dcqcn(), false);
    on_port(&mut cfg, "B0->D");
    let port = run(&cfg);
    assert_eq!(finishes(&port), finishes(&bridge_wide));
    assert_eq!(port.frames.counts.note_bytes_measure, bridge_wide.frames.counts.note_bytes_measure);
    // On a port with no queue (towards a sender), over the bridge's own
    // default: the run is the scheme's.
    let plain = run(&two_flows(3, 3, dcqcn(), false));
    let mut cfg = two_flows(3, 3, dcqcn(), false);
    on_port(&mut cfg, "B0->B1");
    assert_eq!(finishes(&run(&cfg)), finishes(&plain));
}

/// A bridge profile written for another rate (`bridge.ecn_ref_gbps`, as the
/// HPCC artifact sets ECN thresholds per link rate): at a port of rate R
/// it marks as the profile with its thresholds x R / the reference, frame
/// for frame.
#[test]
fn a_profile_for_another_rate_is_scaled_to_each_ports() {
    let d = DcqcnParams::default();
    let base = two_flows(3, 3, dcqcn(), false);
    let rate = base.links[0].rate_bps;
    assert!(base.links.iter().all(|l| l.rate_bps == rate), "one rate in the star");
    let (kmin, kmax) = (d.kmin_bytes / 2.0, d.kmin_bytes * 2.0);
    let mut for_double = with_red(base.clone(), kmin, kmax, 0.5);
    for b in &mut for_double.bridges {
        b.red_ref_bps = Some(2.0 * rate as f64);
    }
    let halved = with_red(base.clone(), kmin / 2.0, kmax / 2.0, 0.5);
    let as_written = with_red(base, kmin, kmax, 0.5);
    let (scaled, halved, as_written) = (run(&for_double), run(&halved), run(&as_written));
    assert_eq!(finishes(&scaled), finishes(&halved));
    assert_eq!(scaled.frames.counts.note_bytes_measure, halved.frames.counts.note_bytes_measure);
    assert!(
        scaled.frames.counts.note_bytes_measure > as_written.frames.counts.note_bytes_measure,
        "half the thresholds mark more: {} against {}",
        scaled.frames.counts.note_bytes_measure,
        as_written.frames.counts.note_bytes_measure
    );
}

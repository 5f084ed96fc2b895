//! The simulator's own tests: whole runs that check the shortcuts it takes
//! (pass-through bridges, lazily draining ports) change no result, and
//! that frame conservation catches a lost or duplicated frame.
use super::*;
use crate::bench::star_config;
use crate::config::SimConfig;
use crate::config::{EventConfig, SchemeConfig};
use crate::engine::{PS_PER_MS, PS_PER_US};
use crate::frame::Frame;
use crate::net::fabric::NO_EXPRESS;
use crate::net::node::NodeKind;
use crate::scheme::bcn::{Bcn, BcnExt, BcnMsg, BcnParams};
use crate::scheme::nocm::NoCm;

/// Through a pass-through bridge a frame's arrival downstream is worked
/// out when it is sent, with no event at the bridge: the results are the
/// event-by-event run's, to the bit (counters, windows, binned series).
#[test]
fn express_forwarding_through_two_port_bridges_changes_no_result() {
    let mut cfg = crate::bench::incast_config(30 * PS_PER_MS);
    cfg.windows.push(crate::config::WindowConfig {
        name: "late".into(),
        start_ps: 10 * PS_PER_MS + 123,
        end_ps: 20 * PS_PER_MS + 7,
    });
    let run = |express: bool| {
        let mut sim: NetSim<NoCm> = NetSim::new(&cfg, 3, NoCm).unwrap();
        if !express {
            sim.fabric.express.fill(NO_EXPRESS);
        }
        let used = sim.fabric.express.iter().filter(|&&x| x != NO_EXPRESS).count();
        sim.run_until(Time::MAX);
        let mut r = serde_json::to_value(sim.finish().unwrap()).unwrap();
        let events = r["engine"]["events"].as_u64().unwrap();
        r.as_object_mut().unwrap().remove("engine");
        (r, events, used)
    };
    let (fast, fast_events, used) = run(true);
    let (slow, slow_events, _) = run(false);
    // Both directions of the four edge bridges.
    assert_eq!(used, 8);
    assert!(fast_events < slow_events * 3 / 4, "{fast_events} events against {slow_events}");
    assert_eq!(fast, slow);
    // With a CP on an edge bridge, or with PAUSE, nothing is forwarded express.
    let mut paused = cfg.clone();
    paused.pause.enabled = true;
    assert!(NetSim::<NoCm>::new(&paused, 3, NoCm)
        .unwrap()
        .fabric
        .express
        .iter()
        .all(|&x| x == NO_EXPRESS));
    let mut with_cp = cfg.clone();
    for b in &mut with_cp.bridges {
        b.cp = true;
    }
    assert!(NetSim::<NoCm>::new(&with_cp, 3, NoCm)
        .unwrap()
        .fabric
        .express
        .iter()
        .all(|&x| x == NO_EXPRESS));
}

/// A bridge port into a counting station drains lazily: no TxDone event,
/// the frames it would have sent by the time it is next read are sent
/// then, at their instants. Away from exact ties between a departure and
/// an arrival (the sink link a little slower than the sources, so their
/// slot grids drift apart) the results are the event-by-event run's, to
/// the bit; at a tie the departure frees its buffer first.
#[test]
fn a_lazily_draining_port_changes_no_result_away_from_ties() {
    let mut cfg = crate::bench::incast_config(30 * PS_PER_MS);
    for l in &mut cfg.links {
        if l.a == "B0" && l.b == "D" || l.a == "D" && l.b == "B0" {
            l.rate_bps = 9_999_999_937;
        }
    }
    cfg.windows.push(crate::config::WindowConfig {
        name: "late".into(),
        start_ps: 10 * PS_PER_MS + 123,
        end_ps: 20 * PS_PER_MS + 7,
    });
    let run = |cfg: &SimConfig, lazy: bool| {
        let mut sim: NetSim<NoCm> = NetSim::new(cfg, 3, NoCm).unwrap();
        let drained: Vec<usize> = (0..sim.fabric.ports.len()).filter(|&p| sim.fabric.ports[p].drain_lazy).collect();
        if !lazy {
            for p in &mut sim.fabric.ports {
                p.drain_lazy = false;
            }
        }
        sim.run_until(Time::MAX);
        let mut r = serde_json::to_value(sim.finish().unwrap()).unwrap();
        let events = r["engine"]["events"].as_u64().unwrap();
        r.as_object_mut().unwrap().remove("engine");
        (r, events, drained)
    };
    let (fast, fast_events, drained) = run(&cfg, true);
    let (slow, slow_events, _) = run(&cfg, false);
    let b0_d = cfg_port(&cfg, "B0", "D");
    // The bottleneck into the sink, and the edge bridges' ports back to the sources.
    assert!(drained.contains(&b0_d) && drained.len() == 5, "{drained:?}");
    assert!(fast_events < slow_events * 85 / 100, "{fast_events} events against {slow_events}");
    assert!(fast["frames"]["dropped_cp"].as_u64().unwrap() > 0 && fast["frames"]["in_flight"].as_u64().unwrap() > 0);
    assert_eq!(fast, slow);
    // With PAUSE (the port's departures release ingress counters) nothing drains lazily.
    let mut paused = cfg.clone();
    paused.pause.enabled = true;
    assert!(NetSim::<NoCm>::new(&paused, 3, NoCm)
        .unwrap()
        .fabric
        .ports
        .iter()
        .all(|p| !p.drain_lazy));
}

fn cfg_port(cfg: &SimConfig, from: &str, to: &str) -> usize {
    let sim: NetSim<NoCm> = NetSim::new(cfg, 0, NoCm).unwrap();
    sim.fabric.port_by_name(from, to).unwrap() as usize
}

/// A notification is a control frame: it leaves a paused port at once,
/// ahead of the data waiting there, and reaches its source at exactly the
/// sum of serialisation, propagation, bridge latency and processing time.
#[test]
fn a_notification_crosses_a_paused_port_without_delay() {
    // S1 - B1 - B0 - D, 10 Gbit/s, 0.5 us links, 1 us bridges, 2 us processing.
    let mut cfg = star_config(1, 0.0, 10 * PS_PER_MS, 0);
    cfg.pause.enabled = true;
    cfg.scheme = SchemeConfig::of("bcn", &BcnParams::default());
    // D floods S1 from t = 0: its frames queue at B0 behind the paused port.
    let d = cfg.stations.iter_mut().find(|s| s.name == "D").unwrap();
    d.load = 1.0;
    d.dest = crate::config::DestConfig::Fixed { node: "S1".into() };
    cfg.events.push(EventConfig::Start {
        at_ps: 0,
        node: "D".into(),
    });
    let mut sim: NetSim<Bcn> = NetSim::new(&cfg, 0, Bcn::new(BcnParams::default()).unwrap()).unwrap();
    let back = sim.fabric.port_by_name("B0", "B1").unwrap();
    let cp = sim.fabric.port_by_name("B0", "D").unwrap();
    let b0 = match sim.fabric.nodes[*sim.fabric.node_by_name.get("B0").unwrap() as usize].kind {
        NodeKind::Bridge(b) => b,
        NodeKind::Station(_) => unreachable!(),
    };
    // B1 pauses B0's port towards it for the full 65,535 quanta (3.36 ms).
    sim.fabric.receive_pause(back, 0, u16::MAX, &mut sim.ctx, &mut sim.hosts);
    let pause_end = sim.fabric.ports[back as usize].pause_end;
    assert!(pause_end > 3 * PS_PER_MS);

    let t0 = 100 * PS_PER_US;
    sim.run_until(t0);
    sim.ctx.now = t0;
    assert!(!sim.fabric.ports[back as usize].data.is_empty(), "data waits behind the pause");
    assert_eq!(sim.fabric.ports[back as usize].frames_sent, 0);
    // The CP at B0 -> D notifies S1 about a frame of S1's (negative feedback).
    let sampled = Frame::data(t0, 0, 1, 1500);
    sim.fabric.send_note(
        b0,
        cp,
        &sampled,
        BcnExt::new(BcnMsg::Negative, -100.0),
        &mut sim.ctx,
        &mut sim.hosts,
    );
    assert_eq!(sim.fabric.ports[back as usize].frames_sent, 1, "the CNM left at once");
    // 64 B at 10 Gbit/s twice (51.2 ns), two 0.5 us links, B1's 1 us, S1's 2 us.
    let arrive = t0 + 2 * 51_200 + 2 * PS_PER_US / 2 + PS_PER_US + 2 * PS_PER_US;
    sim.run_until(arrive);
    assert_eq!(sim.hosts.rps[0].notifications, 0, "not before its exact arrival time");
    sim.run_until(arrive + 1);
    assert_eq!(sim.hosts.rps[0].notifications, 1);
    assert!(
        sim.hosts.rps[0].rl_of(1).is_some(),
        "the negative notification created S1's RL for D"
    );
    // The data it overtook is still held by the pause.
    sim.run_until(pause_end - 1);
    assert_eq!(sim.fabric.ports[back as usize].frames_sent, 1);
    sim.run_until(pause_end + 10 * PS_PER_US);
    assert!(sim.fabric.ports[back as usize].frames_sent > 1, "data flows once the pause ends");
}

/// A run of the 4-to-1 incast stopped half way: frames are queued in
/// bridges, on wires and in NICs.
fn half_run() -> NetSim<NoCm> {
    let cfg = star_config(4, 0.49, 2 * PS_PER_MS, 0);
    let mut sim: NetSim<NoCm> = NetSim::new(&cfg, 0, NoCm).unwrap();
    sim.run_until(PS_PER_MS);
    sim
}

/// The busiest queue of the run above (the CP towards the sink).
fn busiest(sim: &NetSim<NoCm>) -> usize {
    (0..sim.fabric.ports.len()).max_by_key(|&p| sim.fabric.ports[p].data.len()).unwrap()
}

#[test]
fn the_conservation_check_passes_an_untouched_run() {
    let mut sim = half_run();
    sim.run_until(Time::MAX);
    assert!(sim.finish().is_ok());
}

#[test]
fn the_conservation_check_fires_on_a_lost_frame() {
    let mut sim = half_run();
    let p = busiest(&sim);
    assert!(sim.fabric.ports[p].data.len() > 2, "the queue holds frames");
    // Fault: a queued frame vanishes (its bytes stay accounted, as a bug would leave them).
    sim.fabric.ports[p].data.remove(1);
    sim.run_until(Time::MAX);
    let e = sim.finish().unwrap_err();
    assert!(e.contains("frame conservation violated"), "{e}");
}

#[test]
fn the_conservation_check_fires_on_a_duplicated_frame() {
    let mut sim = half_run();
    let p = busiest(&sim);
    // Fault: a queued frame is delivered twice (no bytes accounted for the copy).
    let copy = sim.fabric.ports[p].data[1];
    let (len, ingress) = (copy.len as u64, copy.in_port);
    sim.fabric.ports[p].data.insert(1, copy);
    sim.fabric.ports[p].data_bytes += len;
    sim.fabric.ports[ingress as usize].pause_in.in_bytes += len;
    let b = match sim.fabric.nodes[sim.fabric.ports[p].owner as usize].kind {
        NodeKind::Bridge(b) => b as usize,
        NodeKind::Station(_) => unreachable!(),
    };
    sim.fabric.bridges[b].total_bytes += len;
    let local = sim.fabric.ports[ingress as usize].local as usize;
    sim.fabric.ports[p].bytes_by_ingress[local] += len;
    sim.run_until(Time::MAX);
    let e = sim.finish().unwrap_err();
    assert!(e.contains("frame conservation violated"), "{e}");
}

//! The Ultra Ethernet transport end to end (scheme/uet.rs, net/sack.rs,
//! net/trim.rs): trimmed frames are NACKed and sent again, each once, and
//! nothing is lost; with trimming off the same frames are dropped and the
//! timer recovers them; sprayed frames arrive out of order and are kept,
//! not sent twice; runs repeat to the bit.

use cnsim_core::bench::star_config;
use cnsim_core::config::*;
use cnsim_core::engine::{Time, PS_PER_MS, PS_PER_US};
use cnsim_core::scheme::uet::UetParams;
use cnsim_core::{RunResult, Sim};

fn uet(p: UetParams) -> SchemeConfig {
    SchemeConfig::of("uet", &p)
}

/// `n` senders of `size` bytes each into D (star_config: S_i -> B_i -> B0
/// -> D, here every link 100 Gbit/s and 1 us, as the reference's fabric),
/// UET with 4,150-byte frames of 64 bytes of headers.
fn incast(n: usize, size: u64, p: UetParams) -> SimConfig {
    let mut cfg = star_config(n, 0.0, 50 * PS_PER_MS, 0);
    cfg.events.clear();
    for l in cfg.links.iter_mut() {
        l.rate_bps = 100_000_000_000;
        l.delay_ps = PS_PER_US;
    }
    for s in cfg.stations.iter_mut() {
        s.processing_ps = 0;
    }
    cfg.frame_bytes = 4150;
    cfg.control_frame_bytes = 64;
    cfg.transport.header_bytes = 64;
    for b in cfg.bridges.iter_mut() {
        b.cp = true;
        b.latency_ps = 0;
    }
    cfg.transport.flows = (1..=n)
        .map(|i| FlowConfig {
            src: format!("S{i}").into(),
            dst: "D".into(),
            size_bytes: size,
            start_ps: 0,
            priority: None,
            after: vec![],
            after_delay_ps: 0,
            tag: None,
        })
        .collect();
    cfg.scheme = uet(p);
    cfg
}

fn run(cfg: &SimConfig, seed: u64) -> RunResult {
    Sim::new(cfg, seed).expect("valid config").run().expect("conservation holds")
}

fn all_finished(r: &RunResult) -> bool {
    r.transport.flows.iter().all(|f| f.finish_ps < Time::MAX && f.acked_ps < Time::MAX)
}

#[test]
fn trimmed_frames_are_nacked_and_sent_again_once_each() {
    let r = run(&incast(8, 1_000_000, UetParams::default()), 1);
    assert!(all_finished(&r), "every flow finishes");
    let c = r.transport.counts;
    assert!(c.trimmed > 0, "eight line-rate senders into one port overflow its queue");
    assert_eq!(c.header_drops, 0, "the header queue (twice the data queue) never fills here");
    assert_eq!(c.timeouts, 0, "every loss is NACKed: no timeout");
    let resent: u64 = r.transport.flows.iter().map(|f| f.retransmitted as u64).sum();
    assert_eq!(resent, c.trimmed, "each trimmed frame is sent again once, nothing else is");
    assert_eq!(c.nacks, c.trimmed, "one NACK per trimmed frame");
    // Every payload byte arrived exactly once: the frames delivered are the
    // flows' frames, each trimmed frame's payload counted as dropped.
    let frames: u64 = r.transport.flows.iter().map(|f| f.size_bytes.div_ceil(4086)).sum();
    assert_eq!(r.frames.counts.delivered, frames);
    assert_eq!(r.frames.counts.dropped_cp, c.trimmed);
    // The sender's completion is one acknowledgement after the receiver's.
    assert!(r.transport.flows.iter().all(|f| f.acked_ps > f.finish_ps));
}

#[test]
fn without_trimming_the_timer_recovers_the_dropped_frames() {
    let p = UetParams {
        trim: false,
        queue_bdp: 0.0,
        ..UetParams::default()
    };
    let mut cfg = incast(4, 500_000, p);
    for b in cfg.bridges.iter_mut() {
        b.buffer_bytes = 30_000; // a few frames: the incast must drop
    }
    let r = run(&cfg, 2);
    assert!(all_finished(&r));
    let c = r.transport.counts;
    assert_eq!((c.trimmed, c.nacks), (0, 0), "nothing trimmed, nothing NACKed");
    assert!(r.frames.counts.dropped_cp > 0);
    assert!(c.timeouts > 0, "only the timer finds a dropped frame");
    let resent: u64 = r.transport.flows.iter().map(|f| f.retransmitted as u64).sum();
    assert!(resent >= r.frames.counts.dropped_cp, "every dropped frame was sent again");
}

/// S -> A, A -> {M1, M2} -> Z -> D: two equal-cost paths, the second slower.
fn diamond(paths: u32) -> SimConfig {
    let host = |name: &str| StationConfig {
        name: name.into(),
        load: 0.0,
        dest: DestConfig::Uniform,
        nic_buffer_bytes: 150_000,
        rlq_bytes: 150_000,
        processing_ps: 0,
        rl_scope: RlScope::default(),
        nic_full: NicFull::default(),
        rl_order: Default::default(),
        priority: cnsim_core::frame::DATA_PRIORITY,
    };
    let bridge = |name: &str| BridgeConfig {
        name: name.into(),
        buffer_mode: BufferMode::PerOutput,
        buffer_bytes: 10_000_000,
        latency_ps: 0,
        cp: true,
        ports: None,
        dt_alpha: 1.0,
        scheduler: Default::default(),
        mmu: Default::default(),
        red: None,
        red_ref_bps: None,
    };
    let link = |a: &str, b: &str, gbps: u64, us: u64| LinkConfig {
        a: a.into(),
        b: b.into(),
        rate_bps: gbps * 1_000_000_000,
        delay_ps: us * PS_PER_US,
    };
    let links = vec![
        link("S", "A", 100, 1),
        link("A", "M1", 100, 1),
        link("A", "M2", 100, 3),
        link("M1", "Z", 100, 1),
        link("M2", "Z", 100, 1),
        link("Z", "D", 100, 1),
    ];
    let mut cfg = SimConfig::new(
        20 * PS_PER_MS,
        vec![host("S"), host("D")],
        vec![bridge("A"), bridge("M1"), bridge("M2"), bridge("Z")],
        links,
        vec![],
    );
    cfg.routing = RoutingConfig::Ecmp;
    cfg.frame_bytes = 4150;
    cfg.control_frame_bytes = 64;
    cfg.transport.header_bytes = 64;
    cfg.transport.flows = vec![FlowConfig {
        src: "S".into(),
        dst: "D".into(),
        size_bytes: 4_000_000,
        start_ps: 0,
        priority: None,
        after: vec![],
        after_delay_ps: 0,
        tag: None,
    }];
    cfg.scheme = uet(UetParams {
        paths,
        queue_bdp: 0.0,
        ..UetParams::default()
    });
    cfg
}

#[test]
fn sprayed_frames_arrive_out_of_order_and_are_kept() {
    let sprayed = run(&diamond(64), 3);
    assert!(all_finished(&sprayed));
    let c = sprayed.transport.counts;
    assert!(c.held > 0, "frames of the slower path arrive behind later ones and are kept");
    assert_eq!(c.trimmed + c.timeouts, 0);
    assert_eq!(sprayed.transport.flows[0].retransmitted, 0, "nothing kept is sent again");
    // One entropy: one path, in order.
    let one = run(&diamond(1), 3);
    assert!(all_finished(&one));
    assert_eq!(one.transport.counts.held, 0, "one path keeps its frames in order");
}

#[test]
fn a_run_repeats_to_the_bit_and_seeds_differ() {
    let cfg = incast(6, 400_000, UetParams::default());
    let key = |r: &RunResult| {
        r.transport
            .flows
            .iter()
            .map(|f| (f.finish_ps, f.acked_ps, f.retransmitted))
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(&cfg, 7), run(&cfg, 7));
    assert_eq!(key(&a), key(&b));
    assert_eq!(a.transport.counts.trimmed, b.transport.counts.trimmed);
    let c = run(&cfg, 8);
    assert_ne!(key(&a), key(&c), "the coin flips and entropies are the seed's");
}

#[test]
fn without_flows_the_bridges_keep_their_buffers_and_pause_loses_nothing() {
    // No transport flow, no path, no BDP: a queue of 0 BDPs would drop
    // every open-loop frame; the bridges keep bridge.buffer_bytes instead.
    let mut cfg = star_config(2, 0.6, 5 * PS_PER_MS, 0);
    cfg.scheme = uet(UetParams::default());
    cfg.pause.enabled = true;
    cfg.pause.xoff_bytes = 100_000;
    cfg.pause.xon_bytes = 90_000;
    for b in cfg.bridges.iter_mut() {
        b.buffer_bytes = 150_000;
    }
    let r = run(&cfg, 3);
    assert!(r.frames.counts.delivered > 1000);
    assert_eq!(r.frames.counts.dropped_cp, 0);
}

#[test]
fn pause_above_the_schemes_queue_is_warned() {
    let mut cfg = incast(2, 100_000, UetParams::default());
    cfg.pause.enabled = true;
    cfg.pause.xoff_bytes = 10_000_000;
    cfg.pause.xon_bytes = 9_000_000;
    let sim = Sim::new(&cfg, 1).expect("valid config");
    assert!(
        sim.warnings()
            .iter()
            .any(|w| w.contains("pause.xoff_bytes") && w.contains("uet.queue_bdp")),
        "{:?}",
        sim.warnings()
    );
    cfg.pause.enabled = false;
    let sim = Sim::new(&cfg, 1).expect("valid config");
    assert!(!sim.warnings().iter().any(|w| w.contains("pause.xoff_bytes")));
}

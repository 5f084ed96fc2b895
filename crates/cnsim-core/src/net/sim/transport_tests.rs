//! Whole runs of the transport (flows.rs): completion times, losses and
//! their recovery, arrivals, refusals of what the engine cannot index.
use super::*;
use crate::bench::star_config;
use crate::config::{ArrivalConfig, FlowConfig};
use crate::engine::{PS_PER_MS, PS_PER_US};

use crate::stats::RunResult;

/// `n` senders S1..Sn and the sink D of the star, every source silent;
/// flows of `size` bytes from each sender to D at `start`.
fn incast(n: usize, size: u64, pause: bool, buffer: u64) -> SimConfig {
    let mut cfg = star_config(n, 0.0, 50 * PS_PER_MS, 0);
    cfg.events.clear();
    cfg.pause.enabled = pause;
    for b in &mut cfg.bridges {
        b.buffer_bytes = buffer;
    }
    cfg.transport.flows = (1..=n)
        .map(|i| FlowConfig {
            src: format!("S{i}").into(),
            dst: "D".into(),
            size_bytes: size,
            start_ps: 10 * PS_PER_US,
            priority: None,
            after: vec![],
            after_delay_ps: 0,
            tag: None,
        })
        .collect();
    cfg
}

fn run(cfg: &SimConfig, seed: u64) -> RunResult {
    Sim::new(cfg, seed).unwrap().run().unwrap()
}

#[test]
fn a_lone_flow_completes_in_exactly_its_ideal_time() {
    for size in [1, 1499, 1500, 1501, 64_000, 1_000_000] {
        let cfg = incast(1, size, false, 150_000);
        let r = run(&cfg, 0);
        let f = &r.transport.flows[0];
        assert_ne!(f.finish_ps, Time::MAX, "size {size}");
        assert_eq!(f.finish_ps - f.start_ps, f.ideal_fct_ps, "size {size}: slowdown exactly 1");
        assert_eq!(f.hops, 3);
        assert_eq!((f.retransmitted, r.transport.counts.nacks), (0, 0));
        // The run ends when the flow is done (its last ACK is back).
        assert!(r.end_ps < 5 * PS_PER_MS, "{}", r.end_ps);
    }
}

#[test]
fn with_pause_an_incast_loses_nothing_and_every_flow_completes() {
    let mut cfg = incast(8, 500_000, true, 150_000);
    cfg.pause.xoff_bytes = 100_000;
    cfg.pause.xon_bytes = 80_000;
    let r = run(&cfg, 0);
    assert_eq!(r.frames.counts.dropped_cp + r.frames.dropped_rp, 0);
    assert!(r.transport.flows.iter().all(|f| f.finish_ps != Time::MAX));
    assert_eq!(
        (r.transport.counts.nacks, r.transport.counts.timeouts, r.transport.counts.discarded),
        (0, 0, 0)
    );
    // Eight flows share the sink's 10 Gbit/s: the last ends no sooner than 4 MB at line rate.
    let last = r.transport.flows.iter().map(|f| f.finish_ps).max().unwrap();
    assert!(last - 10 * PS_PER_US >= 8 * 500_000 * 8 * 100);
    assert_eq!(r.frames.counts.generated, r.frames.counts.delivered + r.frames.in_flight);
}

#[test]
fn without_pause_drops_are_recovered_and_every_byte_arrives() {
    // A 30 KB buffer cannot hold eight line-rate senders: frames drop,
    // receivers NACK the gaps, senders go back N.
    let mut cfg = incast(8, 300_000, false, 30_000);
    for (i, f) in cfg.transport.flows.iter_mut().enumerate() {
        f.start_ps += i as Time * 777_000; // not in lockstep
    }
    let r = run(&cfg, 0);
    assert!(r.frames.counts.dropped_cp > 0, "the incast overflows the buffer");
    assert!(r.transport.counts.nacks > 0);
    for f in &r.transport.flows {
        assert_ne!(f.finish_ps, Time::MAX, "{f:?}");
        assert!(f.finish_ps - f.start_ps >= f.ideal_fct_ps);
    }
    assert!(r.transport.flows.iter().map(|f| f.retransmitted).sum::<u32>() > 0);
    // Conservation: every frame sent (retransmissions included) is delivered, dropped or in flight.
    assert_eq!(
        r.frames.counts.generated,
        r.frames.counts.delivered + r.frames.counts.dropped_cp + r.frames.in_flight
    );
}

#[test]
fn a_tail_loss_is_recovered_by_the_timeout() {
    // One flow, its last link stopped while the flow is on the way: the
    // frames beyond the bridge's buffer drop and no later frame reveals
    // the gap, so only the RTO can recover them.
    let mut cfg = incast(1, 30_000, false, 150_000);
    let link_cut = |at_ps, rate_bps| crate::config::EventConfig::LinkRate {
        at_ps,
        from: "B0".into(),
        to: "D".into(),
        rate_bps,
        scale_buffers: false,
    };
    cfg.bridges.iter_mut().for_each(|b| b.buffer_bytes = 3_000);
    cfg.events.push(link_cut(10 * PS_PER_US + 2 * PS_PER_US, 0));
    cfg.events.push(link_cut(200 * PS_PER_US, 10_000_000_000));
    cfg.transport.rto_ps = 500 * PS_PER_US;
    let r = run(&cfg, 0);
    let f = &r.transport.flows[0];
    assert!(r.frames.counts.dropped_cp > 0);
    assert_ne!(f.finish_ps, Time::MAX);
    assert!(f.timeouts >= 1, "{f:?}");
}

#[test]
fn poisson_arrivals_follow_their_rate_and_repeat_with_the_seed() {
    let mut cfg = star_config(4, 0.0, 20 * PS_PER_MS, 0);
    cfg.events.clear();
    cfg.transport.end_when_done = false;
    let stations: Vec<String> = ["S1", "S2", "S3", "S4", "D"].iter().map(|s| s.to_string()).collect();
    cfg.transport.arrivals = vec![ArrivalConfig {
        stations,
        rate_per_s: 10_000.0,
        cdf: vec![(1000.0, 0.0), (20_000.0, 1.0)],
        start_ps: 0,
        priority: None,
        end_ps: 10 * PS_PER_MS,
    }];
    let a = run(&cfg, 3);
    // 5 stations x 10,000/s x 10 ms = 500 expected.
    let n = a.transport.flows.len() as f64;
    assert!((n - 500.0).abs() < 4.0 * 500f64.sqrt(), "{n}");
    assert!(a.transport.flows.iter().all(|f| f.src != f.dst && f.start_ps < 10 * PS_PER_MS));
    assert!(a.transport.flows.iter().all(|f| f.finish_ps != Time::MAX));
    let b = run(&cfg, 3);
    assert_eq!(
        serde_json::to_string(&a.transport).unwrap(),
        serde_json::to_string(&b.transport).unwrap()
    );
    let c = run(&cfg, 4);
    assert_ne!(
        serde_json::to_string(&a.transport).unwrap(),
        serde_json::to_string(&c.transport).unwrap()
    );
}

fn arrivals(rate_per_s: f64, stations: &[&str]) -> SimConfig {
    let mut cfg = star_config(4, 0.0, 20 * PS_PER_MS, 0);
    cfg.events.clear();
    cfg.transport.arrivals = vec![ArrivalConfig {
        stations: stations.iter().map(|s| s.to_string()).collect(),
        rate_per_s,
        cdf: vec![(1.0, 0.0), (1.0, 1.0)],
        start_ps: 0,
        priority: None,
        end_ps: 10 * PS_PER_MS,
    }];
    cfg
}

fn refusal(cfg: &SimConfig) -> String {
    match Sim::new(cfg, 0) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_station_named_twice_in_arrivals_is_refused() {
    let e = refusal(&arrivals(1000.0, &["S1", "S2", "S2"]));
    assert!(e.starts_with("workload.hosts: 'S2' is listed twice"), "{e}");
}

/// A rate that would draw more flows than event indices can name is
/// refused before anything runs (it used to run for minutes first).
#[test]
fn an_arrival_rate_past_what_the_engine_indexes_is_refused() {
    for rate in [1e300, 1e9] {
        let e = refusal(&arrivals(rate, &["S1", "S2", "D"]));
        assert!(e.starts_with("workload: arrivals[0] would start about"), "{e}");
    }
    // Just below: accepted (not run: it would start 4 M flows).
    let ok = (crate::engine::queue::MAX_INDEX as f64 - 1.0) / 3.0 / 0.01;
    assert!(Sim::new(&arrivals(ok, &["S1", "S2", "D"]), 0).is_ok());
}

/// A DCTCP flow alone on a path as fast as its own link never fills its
/// window: cwnd validation keeps the window from growing on every ACK
/// (to megabytes after 5 ms), so flows joining later meet a queue DCTCP
/// holds near K, not the first flow's inflated window in the buffer.
#[test]
fn a_dctcp_window_grows_only_while_it_limits_the_flow() {
    use crate::scheme::dctcp::DctcpParams;
    let late_fct = |cwnd_validation: bool| {
        let mut cfg = incast(3, 0, false, 4_000_000);
        let p = DctcpParams {
            cwnd_validation,
            ..DctcpParams::default()
        };
        cfg.scheme = crate::config::SchemeConfig::of("dctcp", &p);
        let flow = |src: &str, size_bytes: u64, start_ps: Time| FlowConfig {
            src: src.into(),
            dst: "D".into(),
            size_bytes,
            start_ps,
            priority: None,
            after: vec![],
            after_delay_ps: 0,
            tag: None,
        };
        cfg.transport.flows = vec![
            flow("S1", 20_000_000, 0),
            flow("S2", 2_000_000, 5 * PS_PER_MS),
            flow("S3", 30_000, 5 * PS_PER_MS + 500 * PS_PER_US),
        ];
        let r = run(&cfg, 0);
        assert_eq!(r.frames.counts.dropped_cp, 0);
        assert!(r.transport.flows.iter().all(|f| f.finish_ps != Time::MAX));
        let late = &r.transport.flows[2];
        late.finish_ps - late.start_ps
    };
    // The queue near K (78 us) and the new flow's alpha of 1 halving its
    // window each RTT: about 7 RTTs of 90 us (measured 590 us).
    let fct = late_fct(true);
    assert!(fct < PS_PER_MS, "the 30 KB flow took {} us", fct / PS_PER_US);
    // Growing S1's window by every ACK: 2,411 us.
    let fct = late_fct(false);
    assert!(fct > 2 * PS_PER_MS, "the 30 KB flow took {} us", fct / PS_PER_US);
}

/// Flows that wait for flows (net::deps): S2's flow starts 5 us after S1's
/// has been received whole, S3's when both have; each then runs alone, in
/// exactly its ideal time. A cycle and an unknown flow are refused, named;
/// a flow whose dependency never finishes never starts, and the run ends.
#[test]
fn a_flow_that_waits_starts_when_what_it_waits_for_is_received() {
    let mut cfg = incast(3, 100_000, false, 4_000_000);
    cfg.transport.flows[1].after = vec![0];
    cfg.transport.flows[1].after_delay_ps = 5 * PS_PER_US;
    cfg.transport.flows[2].after = vec![1, 0];
    let r = run(&cfg, 0);
    let f = &r.transport.flows;
    assert!(f.iter().all(|f| f.finish_ps != Time::MAX));
    assert_eq!(f[1].start_ps, f[0].finish_ps + 5 * PS_PER_US);
    assert_eq!(f[2].start_ps, f[1].finish_ps);
    for x in f {
        assert_eq!(x.finish_ps - x.start_ps, x.ideal_fct_ps, "alone on the fabric");
    }
    // A later start of its own is kept.
    cfg.transport.flows[2].start_ps = f[1].finish_ps + PS_PER_MS;
    assert_eq!(run(&cfg, 0).transport.flows[2].start_ps, f[1].finish_ps + PS_PER_MS);

    let refused = |after: [(usize, u32); 2]| {
        let mut cfg = incast(3, 100_000, false, 4_000_000);
        for (i, a) in after {
            cfg.transport.flows[i].after.push(a);
        }
        let e = Sim::new(&cfg, 0).err().expect("refused");
        (e.path, e.message)
    };
    let (path, message) = refused([(0, 2), (2, 0)]);
    assert_eq!(path, "flows[0].after");
    assert!(message.contains("flows[0] -> flows[2] -> flows[0]"), "{message}");
    let (path, message) = refused([(1, 0), (2, 7)]);
    assert_eq!((path.as_str(), message.as_str()), ("flows[2].after", "no flow 7; there are 3"));

    // S1's 1 GB takes 800 ms at 10 Gbit/s: S2's never starts in 50 ms.
    let mut cfg = incast(2, 100_000, false, 4_000_000);
    cfg.transport.flows[0].size_bytes = 1_000_000_000;
    cfg.transport.flows[1].after = vec![0];
    let r = run(&cfg, 0);
    assert_eq!(r.transport.flows[1].finish_ps, Time::MAX);
    assert_eq!(r.end_ps, 50 * PS_PER_MS);
}

//! The reaction points (rp.rs) inside a built network: an RL created by
//! feedback, paced and tagged frames, its release, CP scope, BCN(0,0).
use super::*;
use crate::bench::star_config;
use crate::config::RlScope;
use crate::engine::{PS_PER_MS, PS_PER_US};
use crate::net::rl::RateLimiter;
use crate::scheme::bcn::{Bcn, BcnExt, BcnMsg, BcnParams};

fn sim(scope: RlScope) -> NetSim<Bcn> {
    let mut cfg = star_config(3, 0.5, 10 * PS_PER_MS, 0);
    cfg.scheme = crate::config::SchemeConfig::of("bcn", &BcnParams::default());
    for st in &mut cfg.stations {
        st.rl_scope = scope;
    }
    NetSim::new(&cfg, 0, Bcn::new(BcnParams::default()).unwrap()).unwrap()
}

/// Station 0's next data frame on its port.
fn next(s: &mut NetSim<Bcn>, port: PortId) -> Option<Frame<BcnExt>> {
    let mut p = std::mem::replace(&mut s.fabric.ports[port as usize], Port::new(String::new(), 0, 0, 0, 1, 0, 1500));
    let f = s.hosts.station_next_data(0, port, &mut p, &mut s.ctx);
    s.fabric.ports[port as usize] = p;
    f
}

fn cnm(msg: BcnMsg, fb: f32, cpid: u32, flow_dst: u32) -> Frame<BcnExt> {
    Frame::note(0, flow_dst, 0, flow_dst, cpid, 64, BcnExt::new(msg, fb))
}

fn rl_of(s: &NetSim<Bcn>, st: usize, dst: u32) -> &RateLimiter<<Bcn as Scheme>::Rl, BcnExt> {
    let id = s.hosts.rps[st].rl_of(dst).expect("the flow is rate limited");
    s.hosts.rls[id as usize].as_ref().unwrap()
}

fn admit(s: &mut NetSim<Bcn>, st: usize, f: Frame<BcnExt>) -> bool {
    match s.hosts.rps[st].rl_of(f.dst) {
        Some(id) => s.hosts.rl_enqueue(id, f, &mut s.ctx),
        None => false,
    }
}

#[test]
fn negative_feedback_creates_a_flow_rl_whose_frames_leave_tagged_and_paced() {
    let mut s = sim(RlScope::Flow);
    let d = 3u32; // stations S1, S2, S3, D
    let cpid = 9;
    // Positive feedback for a flow without an RL does nothing.
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Positive, 100.0, cpid, d), &mut s.ctx, &mut s.fabric);
    assert!(!s.hosts.rps[0].active());
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Negative, -1875.0, cpid, d), &mut s.ctx, &mut s.fabric);
    assert_eq!(s.hosts.rps[0].live.len(), 1);
    let rl = rl_of(&s, 0, d);
    assert_eq!((rl.key, rl.tag), (d, cpid));
    assert!((rl.core.rate_bps - 0.5125 * 10e9).abs() < 1.0);
    assert!(s.hosts.rps[0].rl_of(1).is_none(), "other flows stay unlimited");
    // Frames of the flow queue in the RLQ...
    for i in 0..3 {
        assert!(admit(&mut s, 0, Frame::data(i, 0, d, 1500)));
    }
    assert_eq!(rl_of(&s, 0, d).bytes, 4500);
    assert_eq!(s.hosts.rps[0].queued, 3);
    // ... and leave tagged with the CPID, one per 8 x 1500 / R.
    let port = s.hosts.stations[0].port;
    let f = next(&mut s, port).unwrap();
    assert_eq!(f.cpid, cpid);
    assert!(next(&mut s, port).is_none(), "the next frame waits for its pacing time");
    let gap = rl_of(&s, 0, d).next_release - s.ctx.now;
    assert_eq!(gap, (1500.0f64 * 8e12 / (0.5125 * 10e9)).ceil() as Time);
    s.ctx.now += gap;
    assert_eq!(next(&mut s, port).unwrap().cpid, cpid);
}

#[test]
fn every_cp_on_a_flows_path_acts_on_its_one_rl() {
    let mut s = sim(RlScope::Flow);
    let d = 3u32;
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Negative, -1875.0, 5, d), &mut s.ctx, &mut s.fabric);
    let r1 = rl_of(&s, 0, d).core.rate_bps;
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Negative, -1875.0, 6, d), &mut s.ctx, &mut s.fabric);
    assert_eq!(s.hosts.rps[0].live.len(), 1, "a second CP does not create a second RL for the flow");
    let rl = rl_of(&s, 0, d);
    assert!((rl.core.rate_bps - r1 * 0.5125).abs() < 1.0, "both decreases compound");
    assert_eq!(rl.tag, 6, "the last CP to slow the flow tags its frames");
    // Positive feedback from either CP raises it (the tag test is the CP's, rule 4).
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Positive, 100.0, 5, d), &mut s.ctx, &mut s.fabric);
    assert!(rl_of(&s, 0, d).core.rate_bps > r1 * 0.5125);
}

#[test]
fn an_rl_back_at_line_rate_with_an_empty_queue_is_released() {
    for scope in [RlScope::Flow, RlScope::Cp] {
        let mut s = sim(scope);
        let d = 3u32;
        s.hosts
            .rp_receive(1, &cnm(BcnMsg::Negative, -100.0, 5, d), &mut s.ctx, &mut s.fabric);
        assert!(s.hosts.rps[1].active());
        for _ in 0..20 {
            s.hosts
                .rp_receive(1, &cnm(BcnMsg::Positive, 1875.0, 5, d), &mut s.ctx, &mut s.fabric);
        }
        assert!(!s.hosts.rps[1].active(), "{scope:?}");
        assert!(s.hosts.rps[1].rl_of(d).is_none());
        assert_eq!(s.hosts.free_rls.len(), 1, "the slot is free for the next RL");
    }
}

#[test]
fn cp_scope_maps_flows_to_the_newest_cp_and_the_rlq_drops_when_full() {
    let mut s = sim(RlScope::Cp);
    let d = 3u32;
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Negative, -1875.0, 5, d), &mut s.ctx, &mut s.fabric);
    let first = s.hosts.rps[0].rl_of(d).unwrap();
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Negative, -1875.0, 6, d), &mut s.ctx, &mut s.fabric);
    let second = s.hosts.rps[0].rl_of(d).unwrap();
    assert_ne!(first, second);
    assert_eq!(s.hosts.rps[0].live.len(), 2);
    assert_eq!(s.hosts.rls[second as usize].as_ref().unwrap().key, 6);
    // The RL of CP 5 limits another flow it slows, not this one any more.
    s.hosts
        .rp_receive(0, &cnm(BcnMsg::Negative, -1875.0, 5, 1), &mut s.ctx, &mut s.fabric);
    assert_eq!(s.hosts.rps[0].rl_of(1), Some(first));
    let cap = s.hosts.stations[0].rlq_bytes / 1500;
    for i in 0..cap + 5 {
        admit(&mut s, 0, Frame::data(i, 0, d, 1500));
    }
    assert_eq!(s.ctx.stats.counts.dropped_rp(), 5);
    assert_eq!(s.hosts.stations[0].dropped_rl, 5);
}

#[test]
fn bcn00_stop_holds_the_rl_until_its_random_restart() {
    let mut s = sim(RlScope::Flow);
    let d = 3u32;
    s.hosts.rp_receive(0, &cnm(BcnMsg::Stop, 0.0, 5, d), &mut s.ctx, &mut s.fabric);
    let until = rl_of(&s, 0, d).core.stopped_until;
    assert!(until <= 100 * PS_PER_US);
    admit(&mut s, 0, Frame::data(0, 0, d, 1500));
    let port = s.hosts.stations[0].port;
    if until > 0 {
        assert!(next(&mut s, port).is_none());
    }
    s.ctx.now = until;
    assert!(next(&mut s, port).is_some());
}

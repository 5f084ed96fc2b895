//! A flow-level run's first step: what the model can represent, the flows
//! drawn as the packet engine draws them and routed as it routes them, the
//! idle floor per path class.

use super::fabric::Fabric;
use super::flows::Flows;
use super::idle::{self, IdleExcess};
use crate::config::{fail, ConfigError, EventConfig, SimConfig};
use crate::engine::{Time, PS_PER_MS};
use crate::net::port::PortId;
use crate::net::run::PacketRuns;
use crate::net::topology::NodeKind;
use crate::net::transport::FlowGen;

/// What the flow-level model cannot represent is refused (open-loop
/// sources, the notification schemes acting on them, timed events);
/// what it approximates is said (PAUSE between links, traces).
pub(super) fn representable(cfg: &SimConfig) -> Result<Vec<String>, ConfigError> {
    const TRANSPORTS: [&str; 6] = ["nocm", "dctcp", "dcqcn", "hpcc", "timely", "swift"];
    let mut warnings = Vec::new();
    let scheme = cfg.scheme.table.as_deref().unwrap_or(&cfg.scheme.name);
    if !TRANSPORTS.contains(&cfg.scheme.name.as_str()) {
        return fail(
            "fidelity",
            format!("'flow' cannot run scheme {scheme}: it acts on open-loop sources through congestion notifications, which only the packet model represents (fidelity = \"packet\"); the flow-level model runs transport flows (dctcp, dcqcn, hpcc, timely, swift, or none)"),
        );
    }
    if let Some(s) = cfg.stations.iter().find(|s| s.load > 0.0) {
        return fail(
            "fidelity",
            format!("'flow' cannot run station {}'s open-loop source (load {}): the flow-level model runs [workload] flows only; use fidelity = \"packet\"", s.name, s.load),
        );
    }
    if cfg.transport.flows.is_empty() && cfg.transport.arrivals.is_empty() {
        return fail("fidelity", "'flow' needs flows ([workload]); this scenario has none");
    }
    if let Some(e) = cfg.events.iter().find(|e| matches!(e, EventConfig::LinkRate { .. })) {
        return fail(
            "fidelity",
            format!("'flow' cannot change a link's rate during the run (a link_rate event at {} ms, or a [hotspot]): the flow-level model keeps links as built; use fidelity = \"packet\"", e.at_ps() as f64 / PS_PER_MS as f64),
        );
    }
    if cfg.events.iter().any(|e| matches!(e, EventConfig::LinkState { .. })) {
        return fail(
            "fidelity",
            "'flow' does not model links going down (a link_down event): use fidelity = \"packet\"",
        );
    }
    if cfg.transport.header_bytes > 0 {
        return fail(
            "fidelity",
            "'flow' counts a flow's bytes as its bytes on the wire; this scenario gives frames headers (workload.header_bytes): use fidelity = \"packet\"",
        );
    }
    if cfg.class_scheme.is_some() {
        return fail(
            "fidelity",
            "'flow' runs one scheme; this scenario gives a workload a scheme of its own (workloads[].scheme): use fidelity = \"packet\"",
        );
    }
    if cfg.events.iter().any(|e| matches!(e, EventConfig::PfcStorm { .. })) {
        return fail(
            "fidelity",
            "'flow' does not model PFC storms (a pfc_storm event): use fidelity = \"packet\"",
        );
    }
    if cfg.pause.enabled {
        warnings.push("flow-level model: PAUSE acts only inside each link's own packet run (no PAUSE spreading between links, no head-of-line blocking across the fabric)".to_string());
    }
    // Asked for events or captures (the queue series' ports are chosen by
    // default: their absence is not worth a warning on every run).
    if cfg.trace.records() {
        warnings.push(
            "flow-level model: no frames are simulated across the fabric, so [trace] (events, captures, queue series) records nothing"
                .to_string(),
        );
    }
    Ok(warnings)
}

/// The flows' stations exist and every pair that may carry a flow is
/// routed (as the packet engine checks when it is built).
pub(super) fn check_flows(cfg: &SimConfig, fabric: &Fabric) -> Result<(), ConfigError> {
    let t = &cfg.transport;
    let no_route = |s: u32, d: u32| {
        fail(
            "flows",
            format!("no route from '{}' to '{}'", fabric.station_name(s), fabric.station_name(d)),
        )
    };
    for (i, f) in t.flows.iter().enumerate() {
        let s = fabric.station(&format!("flows[{i}].src"), &f.src)?;
        let d = fabric.station(&format!("flows[{i}].dst"), &f.dst)?;
        if !fabric.net.reachable(s as usize, d as usize) {
            return no_route(s, d);
        }
    }
    for (i, a) in t.arrivals.iter().enumerate() {
        let members: Vec<u32> = a
            .stations
            .iter()
            .map(|n| fabric.station(&format!("workload: arrivals[{i}]"), n))
            .collect::<Result<_, _>>()?;
        for &s in &members {
            for &d in members.iter().filter(|&&d| d != s) {
                if !fabric.net.reachable(s as usize, d as usize) {
                    return no_route(s, d);
                }
            }
        }
    }
    Ok(())
}

/// The flows of `cfg` for `seed`: the ones given one by one, in order, then
/// every arrival process's, by time (ties by process), each with its path.
pub(super) fn draw_flows(cfg: &SimConfig, fabric: &Fabric, seed: u64) -> Result<Flows, ConfigError> {
    let t = &cfg.transport;
    let mut src = Vec::new();
    let mut dst = Vec::new();
    let mut size = Vec::new();
    let mut start = Vec::new();
    for (i, f) in t.flows.iter().enumerate() {
        let s = fabric.station(&format!("flows[{i}].src"), &f.src)?;
        let d = fabric.station(&format!("flows[{i}].dst"), &f.dst)?;
        if f.start_ps >= cfg.duration_ps {
            // The packet engine never starts it, and so records none.
            continue;
        }
        src.push(s);
        dst.push(d);
        size.push(f.size_bytes);
        start.push(f.start_ps);
    }
    let mut arrivals: Vec<(Time, u32, u32, u32, u64)> = Vec::new();
    let mut g = 0u32;
    for (i, a) in t.arrivals.iter().enumerate() {
        let members: Vec<u32> = a
            .stations
            .iter()
            .map(|n| fabric.station(&format!("workload: arrivals[{i}]"), n))
            .collect::<Result<_, _>>()?;
        let name = |s: u32| fabric.station_name(s).to_string();
        for gen in FlowGen::for_arrivals(a, i, &members, name, seed, cfg.duration_ps) {
            let s = gen.station;
            arrivals.extend(gen.arrivals().map(|(at, d, sz)| (at, g, s, d, sz)));
            g += 1;
        }
    }
    arrivals.sort_unstable_by_key(|a| (a.0, a.1));
    if src.len() + arrivals.len() >= u32::MAX as usize {
        return fail("flows", format!("more than {} flows", u32::MAX - 1));
    }
    for (at, _, s, d, sz) in arrivals {
        src.push(s);
        dst.push(d);
        size.push(sz);
        start.push(at);
    }
    let mut path_off = Vec::with_capacity(src.len() + 1);
    path_off.push(0u32);
    let mut path = Vec::new();
    let mut hops = Vec::new();
    for f in 0..src.len() {
        if !fabric.path(src[f], dst[f], &mut hops) {
            return fail(
                "flows",
                format!(
                    "no route from '{}' to '{}'",
                    fabric.station_name(src[f]),
                    fabric.station_name(dst[f])
                ),
            );
        }
        path.extend_from_slice(&hops);
        path_off.push(path.len() as u32);
    }
    Ok(Flows {
        src,
        dst,
        size,
        start,
        path_off,
        path,
    })
}

/// Each flow's idle excess: measured per path class (its hops' rates,
/// delays and latencies) over the sizes the class's flows have.
pub(super) fn idle_excess(cfg: &SimConfig, fabric: &Fabric, flows: &Flows, seed: u64, packet: PacketRuns) -> Result<Vec<i64>, ConfigError> {
    let fb = cfg.frame_bytes as u64;
    // A hop as the idle FCT sees it: rate, delay, latency there and back.
    let hop = |p: PortId| {
        let port = &fabric.net.ports[p as usize];
        let back = &fabric.net.ports[port.reverse as usize];
        [port.nominal_rate_bps, port.delay_ps, port.rx_extra_ps[1], back.rx_extra_ps[2]]
    };
    // Classes by their hops (a hash of them, checked against the class's
    // first path): per class its first flow and largest size in frames.
    let mut by_hash: std::collections::HashMap<u64, Vec<u32>> = std::collections::HashMap::new();
    let mut classes: Vec<(u32, u64)> = Vec::new();
    let mut class_of = Vec::with_capacity(flows.len());
    for f in 0..flows.len() as u32 {
        let path = flows.path(f);
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for &p in path {
            for x in hop(p) {
                h = (h ^ x).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        let same = |c: u32| {
            let other = flows.path(classes[c as usize].0);
            other.len() == path.len() && other.iter().zip(path).all(|(&a, &b)| hop(a) == hop(b))
        };
        let found = by_hash.get(&h).and_then(|cs| cs.iter().copied().find(|&c| same(c)));
        let c = match found {
            Some(c) => c,
            None => {
                classes.push((f, 0));
                let c = (classes.len() - 1) as u32;
                by_hash.entry(h).or_default().push(c);
                c
            }
        };
        let frames = flows.size[f as usize].div_ceil(fb).max(1);
        classes[c as usize].1 = classes[c as usize].1.max(frames);
        class_of.push(c);
    }
    let tables = classes
        .iter()
        .map(|&(first, max_frames)| idle::measure(cfg, fabric, flows.path(first), max_frames, seed, packet))
        .collect::<Result<Vec<IdleExcess>, _>>()?;
    Ok(class_of
        .iter()
        .zip(&flows.size)
        .map(|(&c, &size)| tables[c as usize].at(size.div_ceil(fb).max(1)))
        .collect())
}

/// Each node's distance in hops from the nearest station (stations: 0).
pub(super) fn station_distance(fabric: &Fabric) -> Vec<u32> {
    let net = &fabric.net;
    let mut dist = vec![u32::MAX; net.nodes.len()];
    let mut queue = std::collections::VecDeque::new();
    for (i, n) in net.nodes.iter().enumerate() {
        if matches!(n.kind, NodeKind::Station(_)) {
            dist[i] = 0;
            queue.push_back(i);
        }
    }
    while let Some(i) = queue.pop_front() {
        for &p in &net.nodes[i].ports {
            let peer = net.ports[p as usize].peer as usize;
            if dist[peer] == u32::MAX {
                dist[peer] = dist[i] + 1;
                queue.push_back(peer);
            }
        }
    }
    dist
}

//! The idle-network FCT under the scheme: a flow alone on its path may take
//! longer than the ideal (store and forward at line rate) when the scheme
//! holds it back (DCTCP's first window and slow start). The packet engine
//! measures it on a copy of the path alone, once per path class and for a
//! grid of sizes; between grid sizes it is interpolated.

use super::fabric::Fabric;
use crate::config::{BridgeConfig, ConfigError, FlowConfig, LinkConfig, SimConfig, StationConfig, TransportConfig};
use crate::engine::Time;
use crate::net::port::PortId;
use crate::net::run::PacketRuns;
use crate::net::topology::NodeKind;

/// Frames counts the excess is measured at: every count up to 32, then
/// about 25% apart up to `max` (at most 2^17 frames: beyond, the scheme's
/// start-up is long over and the excess is the last one's).
pub fn size_grid(max: u64) -> Vec<u64> {
    let max = max.clamp(1, 1 << 17);
    let mut g: Vec<u64> = (1..=max.min(32)).collect();
    let mut n = 32u64;
    while n < max {
        n = (n + n / 4).min(max);
        g.push(n);
    }
    g
}

/// The excess over the ideal FCT of a flow alone on one path class, by
/// its size in frames.
pub struct IdleExcess {
    pub frames: Vec<u64>,
    pub excess_ps: Vec<i64>,
}

impl IdleExcess {
    /// Interpolated (linearly in frames) at `n` frames.
    pub fn at(&self, n: u64) -> i64 {
        let i = self.frames.partition_point(|&f| f < n);
        if i == 0 {
            return self.excess_ps[0];
        }
        if i >= self.frames.len() {
            return *self.excess_ps.last().expect("non-empty");
        }
        if self.frames[i] == n {
            return self.excess_ps[i];
        }
        let (f0, f1) = (self.frames[i - 1] as f64, self.frames[i] as f64);
        let (e0, e1) = (self.excess_ps[i - 1] as f64, self.excess_ps[i] as f64);
        (e0 + (e1 - e0) * (n as f64 - f0) / (f1 - f0)).round() as i64
    }
}

/// The packet engine's config of `path` alone: its nodes under their own
/// names and parameters, its links, one flow of `size` bytes from its first
/// node to its last at time 0.
pub fn chain_config(cfg: &SimConfig, fabric: &Fabric, path: &[PortId], size: u64) -> SimConfig {
    let mut stations = Vec::new();
    let mut bridges = Vec::new();
    let mut links = Vec::new();
    let add_node = |n: u32, stations: &mut Vec<StationConfig>, bridges: &mut Vec<BridgeConfig>| match fabric.node_kind(n) {
        NodeKind::Station(s) => stations.push(StationConfig {
            load: 0.0,
            dest: Default::default(),
            ..cfg.stations[s as usize].clone()
        }),
        NodeKind::Bridge(b) => bridges.push(BridgeConfig {
            ports: None,
            ..cfg.bridges[b as usize].clone()
        }),
    };
    let (first, _) = fabric.ends(path[0]);
    add_node(first, &mut stations, &mut bridges);
    for &p in path {
        let (a, b) = fabric.ends(p);
        add_node(b, &mut stations, &mut bridges);
        let port = &fabric.net.ports[p as usize];
        links.push(LinkConfig {
            a: fabric.node_name(a).to_string(),
            b: fabric.node_name(b).to_string(),
            rate_bps: port.nominal_rate_bps,
            delay_ps: port.delay_ps,
        });
    }
    let (_, last) = fabric.ends(*path.last().expect("a path has a hop"));
    let mut c = SimConfig::new(cfg.duration_ps.max(1), stations, bridges, links, vec![]);
    c.bin_ps = c.duration_ps;
    c.frame_bytes = cfg.frame_bytes;
    c.control_frame_bytes = cfg.control_frame_bytes;
    c.pause = cfg.pause.clone();
    c.trace_rls = Some(vec![]);
    c.per_flow = false;
    c.max_series_keys = 0;
    c.scheme = cfg.scheme.clone();
    c.transport = TransportConfig {
        flows: vec![FlowConfig {
            src: fabric.node_name(first).into(),
            dst: fabric.node_name(last).into(),
            size_bytes: size,
            start_ps: 0,
            priority: None,
            after: vec![],
            after_delay_ps: 0,
            tag: None,
        }],
        arrivals: vec![],
        matrix: None,
        jobs: vec![],
        gates: vec![],
        plan: None,
        header_bytes: cfg.transport.header_bytes,
        ack_every: cfg.transport.ack_every,
        rto_ps: cfg.transport.rto_ps,
        end_when_done: true,
    };
    c
}

/// The excess of a flow alone on `path`, measured by the packet engine at
/// each size of `size_grid(max_frames)`. A size it cannot finish inside the
/// run counts as no excess (the flow-level model then finds it unfinished
/// by its fluid shares).
pub fn measure(
    cfg: &SimConfig,
    fabric: &Fabric,
    path: &[PortId],
    max_frames: u64,
    seed: u64,
    packet: PacketRuns,
) -> Result<IdleExcess, ConfigError> {
    let frames = size_grid(max_frames);
    let mut excess_ps = Vec::with_capacity(frames.len());
    // A long run: the flows are alone, the end only bounds a scheme that stalls.
    let fb = cfg.frame_bytes as u64;
    for &n in &frames {
        let mut c = chain_config(cfg, fabric, path, n * fb);
        c.duration_ps = cfg.duration_ps.max(1).saturating_mul(4).min(crate::config::MAX_TIME_PS);
        c.bin_ps = c.duration_ps;
        c.windows[0].end_ps = c.duration_ps;
        let mut run = packet(&c, seed)?;
        run.run_until(Time::MAX);
        let r = run.finish().map_err(|e| ConfigError::new("flow", e))?;
        let f = &r.transport.flows[0];
        excess_ps.push(if f.finish_ps == Time::MAX {
            0
        } else {
            (f.finish_ps - f.start_ps) as i64 - f.ideal_fct_ps as i64
        });
    }
    Ok(IdleExcess { frames, excess_ps })
}

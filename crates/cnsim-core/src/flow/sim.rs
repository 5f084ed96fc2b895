//! The flow-level run (module docs in `flow/mod.rs`): built at once,
//! advanced in steps of wall time like a packet run (the link runs, then
//! every other link, then the flows' totals), so that a caller shows
//! progress and sees a Ctrl-C within a step.

use super::fabric::Fabric;
use super::flows::Flows;
use super::fluid::{Fluid, FluidInput};
use super::linksim::{link_net, LinkNet};
use super::params::{Fidelity, FlowModel, FlowParams};
use super::pool::Pool;
use super::result;
use super::setup::{check_flows, draw_flows, idle_excess, representable, station_distance};
use crate::config::{ConfigError, SimConfig};
use crate::engine::rng::stream;
use crate::engine::Time;
use crate::net::port::PortId;
use crate::net::run::{PacketRuns, Run};
use crate::net::topology::NodeKind;
use crate::stats::RunResult;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Flows a recomputation of the host links' fluid rates at most (beyond
/// the links that changed): in a busy fabric every host link is connected
/// to every other through the flows, and an exact recomputation would rate
/// them all at every arrival and departure.
const HOST_LIMIT: usize = 32;

/// A link's fluid, per flow of the link: its delay in the link's own
/// network (a source's flows sharing its edge link: what the link's packet
/// run is corrected against), the delay the link itself adds (with joint
/// host links: none on a host link, on another link without the sources'
/// sharing), and the flows active on the link when it arrived.
struct LinkFluid {
    shared: Vec<f64>,
    own: Vec<f64>,
    busy: Vec<u32>,
}

/// What a representative link's packet run showed beyond delays.
struct LinkRunNote {
    port: PortId,
    paused_fraction: f64,
    drops: u64,
    timeouts: u64,
}

enum Stage {
    /// Drawing and routing the flows, the idle floor, the clusters.
    Setup,
    /// Representative links, one packet run each (`running`: the one under way).
    Reps {
        i: usize,
        running: Option<Running>,
    },
    /// Every other link with flows: fluid plus drawn corrections.
    Links {
        i: usize,
    },
    /// Every flow on its two host links as one max-min fluid.
    Hosts,
    /// The whole fabric as one max-min fluid (`FlowModel::Maxmin`).
    Maxmin,
    Done,
}

struct Running {
    sim: Box<dyn Run>,
    fluid: LinkFluid,
}

/// A flow-level run of one scenario and seed.
pub struct FlowSim {
    cfg: SimConfig,
    packet: PacketRuns,
    params: FlowParams,
    seed: u64,
    fabric: Fabric,
    flows: Flows,
    ideal: Vec<Time>,
    /// Per flow: the idle FCT's excess over the ideal (ps).
    excess: Vec<i64>,
    /// Per port: its flows in start order (`port_flows[port_off[p]..port_off[p + 1]]`).
    port_off: Vec<u32>,
    port_flows: Vec<u32>,
    /// Per port with flows: its representative; the representatives.
    rep_of: Vec<PortId>,
    reps: Vec<PortId>,
    others: Vec<PortId>,
    /// Corrections, by tier (`tier_of`): every representative of a tier
    /// adds its flows', so a draw has the tier's loads to choose from.
    pools: BTreeMap<u32, Pool>,
    tier_of: Vec<u32>,
    /// Per tier: (tier, corrections gathered, representatives, links).
    tier_samples: Vec<(u32, usize, usize, usize)>,
    /// Per flow: the sum of its delays on its links so far (ps); infinite
    /// when some link did not finish it inside the run.
    acc: Vec<f64>,
    /// With CNSIM_FLOW_PARTS=FILE: each flow's delays by part (for working
    /// on the model; see `write_parts`).
    parts: Option<Vec<[f64; 8]>>,
    stage: Stage,
    fluid: Fluid,
    notes: Vec<LinkRunNote>,
    warnings: Vec<String>,
    /// Why the run could not finish (reported by `finish`).
    failed: Option<String>,
    work_total: f64,
    work_done: f64,
    /// Wall seconds by stage (CNSIM_FLOW_DEBUG).
    stage_wall: BTreeMap<&'static str, f64>,
    now: Time,
    wall_s: f64,
    /// Wall seconds `new` took (the engine's figures only).
    build_s: f64,
    events: u64,
}

const NO_REP: PortId = PortId::MAX;

impl FlowSim {
    /// Builds the run: checks what the flow-level model can represent and
    /// everything the packet engine would refuse (its own checks, the
    /// flows' stations and routes), naming the parameter. The work (drawing
    /// and routing the flows, the idle floor, the clusters) is the first
    /// step of the run.
    pub fn new(cfg: &SimConfig, seed: u64, packet: PacketRuns) -> Result<FlowSim, ConfigError> {
        let started = Instant::now();
        let warnings = representable(cfg)?;
        // The packet engine's own checks of everything but the flows
        // (scheme parameters, nodes, links): built without them, run never.
        let mut bare = cfg.clone();
        bare.fidelity = Fidelity::Packet;
        bare.transport.flows.clear();
        bare.transport.arrivals.clear();
        bare.trace = Default::default();
        drop(packet(&bare, seed)?);
        let params = cfg.flow.clone();
        let fabric = Fabric::build(cfg, seed)?;
        check_flows(cfg, &fabric)?;
        let n_ports = fabric.n_ports();
        Ok(FlowSim {
            cfg: cfg.clone(),
            packet,
            params,
            seed,
            fabric,
            flows: Flows {
                src: vec![],
                dst: vec![],
                size: vec![],
                start: vec![],
                path_off: vec![0],
                path: vec![],
            },
            ideal: Vec::new(),
            excess: Vec::new(),
            port_off: vec![0; n_ports + 1],
            port_flows: Vec::new(),
            rep_of: vec![NO_REP; n_ports],
            reps: Vec::new(),
            others: Vec::new(),
            pools: BTreeMap::new(),
            tier_of: vec![u32::MAX; n_ports],
            tier_samples: Vec::new(),
            acc: Vec::new(),
            parts: None,
            stage: Stage::Setup,
            fluid: Fluid::default(),
            notes: Vec::new(),
            warnings,
            failed: None,
            work_total: 1.0,
            work_done: 0.0,
            stage_wall: BTreeMap::new(),
            now: 0,
            wall_s: 0.0,
            build_s: started.elapsed().as_secs_f64(),
            events: 0,
        })
    }

    /// The run's first step: the flows, their paths and ideal FCTs, the
    /// idle floor, the links' flows and clusters.
    fn setup(&mut self) -> Result<(), ConfigError> {
        let (cfg, seed) = (&self.cfg, self.seed);
        let fabric = &self.fabric;
        let flows = draw_flows(cfg, fabric, seed)?;
        let n = flows.len();
        let mut ideal = Vec::with_capacity(n);
        for f in 0..n as u32 {
            ideal.push(fabric.ideal_fct(flows.path(f), flows.size[f as usize]));
        }
        let excess = idle_excess(cfg, fabric, &flows, seed, self.packet)?;
        // Flows per port, in start order.
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&f| (flows.start[f as usize], f));
        let n_ports = fabric.n_ports();
        let mut count = vec![0u32; n_ports + 1];
        for &p in &flows.path {
            count[p as usize + 1] += 1;
        }
        for i in 0..n_ports {
            count[i + 1] += count[i];
        }
        let port_off = count.clone();
        let mut fill = count;
        let mut port_flows = vec![0u32; flows.path.len()];
        for &f in &order {
            for &p in flows.path(f) {
                port_flows[fill[p as usize] as usize] = f;
                fill[p as usize] += 1;
            }
        }
        self.flows = flows;
        self.ideal = ideal;
        self.excess = excess;
        self.port_off = port_off;
        self.port_flows = port_flows;
        self.acc = vec![0.0; n];
        if std::env::var_os("CNSIM_FLOW_PARTS").is_some() {
            self.parts = Some(vec![[0.0; 8]; n]);
        }
        match self.params.model {
            FlowModel::Decomposed => {
                self.cluster();
                // Work: frames a link's packet run carries (a few events
                // each), flows a fluid run takes.
                let bytes = |s: &FlowSim, p: PortId| -> f64 { s.flows_on(p).iter().map(|&f| s.flows.size[f as usize] as f64).sum() };
                let rep_work: f64 = self.reps.iter().map(|&p| bytes(self, p) / 1500.0 * 4.0).sum();
                let other_work: f64 = self.others.iter().map(|&p| self.flows_on(p).len() as f64).sum();
                self.work_total = rep_work + other_work + 1.0;
                self.stage = Stage::Reps { i: 0, running: None };
            }
            FlowModel::Maxmin => {
                self.work_total = 1.0;
                self.stage = Stage::Maxmin;
            }
        }
        Ok(())
    }

    fn flows_on(&self, p: PortId) -> &[u32] {
        &self.port_flows[self.port_off[p as usize] as usize..self.port_off[p as usize + 1] as usize]
    }

    /// Clusters the links with flows: by tier (the ends' distances from the
    /// nearest station) and rate, then by load within a tier; one
    /// representative per cluster, the median-load member.
    fn cluster(&mut self) {
        let tiers = station_distance(&self.fabric);
        let duration = self.cfg.duration_ps.max(1) as f64;
        let mut by_tier: BTreeMap<(u32, u32, u64), Vec<(f64, PortId)>> = BTreeMap::new();
        let mut total_bytes = 0.0;
        for p in 0..self.fabric.n_ports() as PortId {
            let fl = self.flows_on(p);
            if fl.is_empty() {
                continue;
            }
            let bytes: f64 = fl.iter().map(|&f| self.flows.size[f as usize] as f64).sum();
            total_bytes += bytes;
            let rate = self.fabric.rate_bps(p);
            let load = bytes * 8.0 / (rate as f64 * duration / 1e12);
            let (a, b) = self.fabric.ends(p);
            by_tier
                .entry((tiers[a as usize], tiers[b as usize], rate))
                .or_default()
                .push((load, p));
        }
        let _ = total_bytes;
        for (tier, (_, mut links)) in by_tier.into_iter().enumerate() {
            for &(_, p) in &links {
                self.tier_of[p as usize] = tier as u32;
            }
            links.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
            let tier_flows: usize = links.iter().map(|&(_, p)| self.flows_on(p).len()).sum();
            let per_link = tier_flows as f64 / links.len() as f64;
            // Enough representatives for the tier's corrections to hold
            // `samples` flows.
            let k = ((self.params.samples as f64 / per_link.max(1.0)).ceil() as usize)
                .max(self.params.min_reps_per_tier as usize)
                .clamp(1, links.len());
            self.tier_samples.push((tier as u32, 0, k, links.len()));
            for c in 0..k {
                let (a, b) = (c * links.len() / k, (c + 1) * links.len() / k);
                let rep = links[(a + b) / 2].1;
                self.reps.push(rep);
                for &(_, p) in &links[a..b] {
                    self.rep_of[p as usize] = rep;
                    if p != rep {
                        self.others.push(p);
                    }
                }
            }
        }
        self.others.sort_unstable();
    }

    /// The link's fluid: each flow's delay over running alone at its path's
    /// rate there, and the flows active when it arrived.
    fn link_fluid(&mut self, p: PortId, net: Option<&LinkNet>) -> LinkFluid {
        let flows: Vec<u32> = self.flows_on(p).to_vec();
        let owned;
        let net = match net {
            Some(n) => n,
            None => {
                owned = link_net(&self.cfg, &self.fabric, &self.flows, p, &flows);
                &owned
            }
        };
        let rate = self.fabric.rate_bps(p) as f64 / 1e12;
        let edge_rate = |i: usize| net.edge_of[i].map(|e| net.edge_rate_bps[e as usize] as f64 / 1e12);
        let start: Vec<Time> = flows.iter().map(|&f| self.flows.start[f as usize]).collect();
        let bits: Vec<f64> = flows.iter().map(|&f| self.flows.size[f as usize] as f64 * 8.0).collect();
        // As the link's own network has it: a source's flows share its edge link.
        let mut caps = vec![rate];
        caps.extend(net.edge_rate_bps.iter().map(|&r| r as f64 / 1e12));
        let mut offsets = vec![0u32];
        let mut links = Vec::with_capacity(flows.len() * 2);
        for i in 0..flows.len() {
            links.push(0);
            if let Some(e) = net.edge_of[i] {
                links.push(e + 1);
            }
            offsets.push(links.len() as u32);
        }
        let end = self.cfg.duration_ps;
        let shared = self.fluid.run(&FluidInput {
            caps: &caps,
            start: &start,
            bits: &bits,
            offsets: &offsets,
            links: &links,
            end,
        });
        self.events += shared.updates;
        let alone = |i: usize| edge_rate(i).map_or(rate, |e| e.min(rate));
        let delay = |finish: &[f64]| -> Vec<f64> {
            (0..flows.len())
                .map(|i| (finish[i] - start[i] as f64) - bits[i] / alone(i))
                .collect()
        };
        let shared_delay = delay(&shared.finish);
        // This link's own share alone: each flow limited by its line rate,
        // not by its source's other flows (the host links' fluid has them).
        let own_delay = if self.joint(p) {
            vec![0.0; flows.len()]
        } else if self.params.joint_host_links && net.edge_of.iter().any(Option::is_some) {
            let mut caps = vec![rate];
            let mut offsets = vec![0u32];
            let mut links = Vec::with_capacity(flows.len() * 2);
            for i in 0..flows.len() {
                links.push(0);
                if let Some(e) = edge_rate(i) {
                    links.push(caps.len() as u32);
                    caps.push(e);
                }
                offsets.push(links.len() as u32);
            }
            let own = self.fluid.run(&FluidInput {
                caps: &caps,
                start: &start,
                bits: &bits,
                offsets: &offsets,
                links: &links,
                end,
            });
            self.events += own.updates;
            delay(&own.finish)
        } else {
            shared_delay.clone()
        };
        LinkFluid {
            shared: shared_delay,
            own: own_delay,
            busy: shared.concurrent,
        }
    }

    fn frames_of(&self, f: u32) -> u64 {
        self.flows.size[f as usize].div_ceil(self.cfg.frame_bytes as u64).max(1)
    }

    fn stage_name(&self) -> &'static str {
        match self.stage {
            Stage::Setup => "setup",
            Stage::Reps { .. } => "reps",
            Stage::Links { .. } => "links",
            Stage::Hosts => "hosts",
            Stage::Maxmin => "maxmin",
            Stage::Done => "done",
        }
    }

    /// One step of work; true when the stage moved on or a unit finished.
    fn step(&mut self, deadline: Instant) -> bool {
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Setup => {
                if let Err(e) = self.setup() {
                    self.failed = Some(e.to_string());
                    self.stage = Stage::Done;
                }
                true
            }
            Stage::Reps { i, running } => {
                if i >= self.reps.len() {
                    self.stage = Stage::Links { i: 0 };
                    return true;
                }
                let p = self.reps[i];
                let mut run = match running {
                    Some(r) => r,
                    None => {
                        let flows: Vec<u32> = self.flows_on(p).to_vec();
                        let net = link_net(&self.cfg, &self.fabric, &self.flows, p, &flows);
                        let fluid = self.link_fluid(p, Some(&net));
                        let sim = match (self.packet)(&net.config, self.seed) {
                            Ok(s) => s,
                            Err(e) => {
                                self.warnings.push(format!(
                                    "flow-level model: the packet run of link {} could not be built ({e}); its flows take their fluid delays",
                                    self.fabric.port_name(p)
                                ));
                                self.pools.entry(self.tier_of[p as usize]).or_insert_with(Pool::new);
                                for (j, &f) in flows.iter().enumerate() {
                                    self.acc[f as usize] += fluid.own[j];
                                }
                                self.stage = Stage::Reps { i: i + 1, running: None };
                                return true;
                            }
                        };
                        Running { sim, fluid }
                    }
                };
                let left = deadline.saturating_duration_since(Instant::now());
                if !run.sim.run_for(left.max(Duration::from_millis(1))) {
                    self.stage = Stage::Reps { i, running: Some(run) };
                    return false;
                }
                let r = match run.sim.finish() {
                    Ok(r) => r,
                    Err(e) => {
                        self.warnings.push(format!(
                            "flow-level model: the packet run of link {} failed: {e}",
                            self.fabric.port_name(p)
                        ));
                        self.stage = Stage::Reps { i: i + 1, running: None };
                        return true;
                    }
                };
                self.events += r.engine.events;
                let flows: Vec<u32> = self.flows_on(p).to_vec();
                let mut pool = self.pools.remove(&self.tier_of[p as usize]).unwrap_or_else(Pool::new);
                let mut bytes = 0.0;
                for (j, &f) in flows.iter().enumerate() {
                    let rec = &r.transport.flows[j];
                    bytes += self.flows.size[f as usize] as f64;
                    let d = if rec.finish_ps == Time::MAX {
                        f64::INFINITY
                    } else {
                        (rec.finish_ps - rec.start_ps) as f64 - rec.ideal_fct_ps as f64 - self.excess[f as usize] as f64
                    };
                    // Its own correction here, and the link's own share.
                    let c = d - run.fluid.shared[j];
                    self.acc[f as usize] += c + run.fluid.own[j];
                    self.part(p, f, run.fluid.own[j], c, true);
                    if let Some(path) = std::env::var_os("CNSIM_FLOW_REPS") {
                        use std::io::Write;
                        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("writable");
                        let _ = writeln!(
                            file,
                            "{},{},{},{},{},{},{}",
                            self.fabric.port_name(p),
                            self.tier_of[p as usize],
                            self.flows.size[f as usize],
                            self.flows.start[f as usize],
                            run.fluid.busy[j],
                            run.fluid.shared[j],
                            d
                        );
                    }
                    if c.is_finite() {
                        pool.add(self.frames_of(f), run.fluid.busy[j] as usize, c);
                    }
                }
                let measure = (r.windows[0].end_ps - r.windows[0].start_ps).max(1) as f64;
                let paused = r.links.iter().map(|l| l.paused_ps as f64 / measure).fold(0.0, f64::max);
                self.notes.push(LinkRunNote {
                    port: p,
                    paused_fraction: paused,
                    drops: r.frames.counts.dropped_cp,
                    timeouts: r.transport.counts.timeouts,
                });
                self.pools.insert(self.tier_of[p as usize], pool);
                self.work_done += bytes / 1500.0 * 4.0;
                self.stage = Stage::Reps { i: i + 1, running: None };
                true
            }
            Stage::Links { i } => {
                if i >= self.others.len() {
                    self.stage = if self.params.joint_host_links { Stage::Hosts } else { Stage::Done };
                    if !self.params.joint_host_links {
                        self.finish_flows();
                    }
                    return true;
                }
                let p = self.others[i];
                let fluid = self.link_fluid(p, None);
                let mut rng = stream(self.seed, &format!("flow/{}", self.fabric.port_name(p)));
                let flows: Vec<u32> = self.flows_on(p).to_vec();
                let pool = self.pools.get(&self.tier_of[p as usize]).expect("representatives run first");
                let drawn: Vec<f64> = flows
                    .iter()
                    .enumerate()
                    .map(|(j, &f)| pool.draw(self.frames_of(f), fluid.busy[j] as usize, &mut rng))
                    .collect();
                for (j, &f) in flows.iter().enumerate() {
                    self.acc[f as usize] += fluid.own[j] + drawn[j];
                    self.part(p, f, fluid.own[j], drawn[j], false);
                }
                self.work_done += flows.len() as f64;
                self.stage = Stage::Links { i: i + 1 };
                true
            }
            Stage::Hosts => {
                self.run_hosts();
                self.finish_flows();
                self.stage = Stage::Done;
                true
            }
            Stage::Maxmin => {
                self.run_maxmin();
                self.finish_flows();
                self.stage = Stage::Done;
                true
            }
            Stage::Done => true,
        }
    }

    /// Records flow `f`'s fluid delay and correction on link `p` (debugging).
    fn part(&mut self, p: PortId, f: u32, fluid: f64, corr: f64, own: bool) {
        let Some(parts) = &mut self.parts else { return };
        let (a, b) = self.fabric.ends(p);
        let tier = if matches!(self.fabric.node_kind(a), NodeKind::Station(_)) {
            0
        } else if matches!(self.fabric.node_kind(b), NodeKind::Station(_)) {
            1
        } else {
            2
        };
        let row = &mut parts[f as usize];
        row[1 + tier] += fluid;
        row[4 + tier] += corr;
        if own {
            row[7] += 1.0;
        }
    }

    /// Writes each flow's parts as CSV (CNSIM_FLOW_PARTS=FILE).
    fn write_parts(&self) {
        let (Some(parts), Some(path)) = (&self.parts, std::env::var_os("CNSIM_FLOW_PARTS")) else {
            return;
        };
        let mut out = String::from("src,dst,size,start,ideal,excess,joint,fl_up,fl_down,fl_fabric,c_up,c_down,c_fabric,own_links\n");
        for (f, r) in parts.iter().enumerate() {
            out += &format!(
                "{},{},{},{},{},{},{}\n",
                self.fabric.station_name(self.flows.src[f]),
                self.fabric.station_name(self.flows.dst[f]),
                self.flows.size[f],
                self.flows.start[f],
                self.ideal[f],
                self.excess[f],
                r.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(",")
            );
        }
        let _ = std::fs::write(path, out);
    }

    /// Whether link `p`'s fluid share is the joint host-link fluid's: a
    /// link from or to a station, with the joint fluid on.
    fn joint(&self, p: PortId) -> bool {
        let (a, b) = self.fabric.ends(p);
        self.params.joint_host_links
            && (matches!(self.fabric.node_kind(a), NodeKind::Station(_)) || matches!(self.fabric.node_kind(b), NodeKind::Station(_)))
    }

    /// Every flow on its two host links (its source's and its
    /// destination's) as one max-min fluid: a flow sharing both ends is
    /// slowed by the tighter one at each moment, not by both in turn.
    fn run_hosts(&mut self) {
        let n_ports = self.fabric.n_ports();
        let caps: Vec<f64> = (0..n_ports as PortId).map(|p| self.fabric.rate_bps(p) as f64 / 1e12).collect();
        let mut order: Vec<u32> = (0..self.flows.len() as u32).collect();
        order.sort_by_key(|&f| (self.flows.start[f as usize], f));
        let mut offsets = vec![0u32];
        let mut links = Vec::with_capacity(order.len() * 2);
        let mut start = Vec::with_capacity(order.len());
        let mut bits = Vec::with_capacity(order.len());
        for &f in &order {
            let path = self.flows.path(f);
            links.push(path[0]);
            if path.len() > 1 {
                links.push(*path.last().expect("non-empty"));
            }
            offsets.push(links.len() as u32);
            start.push(self.flows.start[f as usize]);
            bits.push(self.flows.size[f as usize] as f64 * 8.0);
        }
        // A constant, never the environment: results depend only on the
        // scenario and the seed.
        let out = Fluid::with_limit(HOST_LIMIT).run(&FluidInput {
            caps: &caps,
            start: &start,
            bits: &bits,
            offsets: &offsets,
            links: &links,
            end: self.cfg.duration_ps,
        });
        self.events += out.updates;
        for (i, &f) in order.iter().enumerate() {
            let ls = &links[offsets[i] as usize..offsets[i + 1] as usize];
            let alone = ls.iter().map(|&l| caps[l as usize]).fold(f64::INFINITY, f64::min);
            self.acc[f as usize] += (out.finish[i] - start[i] as f64) - bits[i] / alone;
            if let Some(parts) = &mut self.parts {
                parts[f as usize][0] += (out.finish[i] - start[i] as f64) - bits[i] / alone;
            }
        }
    }

    /// The whole fabric as one max-min fluid.
    fn run_maxmin(&mut self) {
        let caps: Vec<f64> = (0..self.fabric.n_ports() as PortId)
            .map(|p| self.fabric.rate_bps(p) as f64 / 1e12)
            .collect();
        let mut order: Vec<u32> = (0..self.flows.len() as u32).collect();
        order.sort_by_key(|&f| (self.flows.start[f as usize], f));
        let mut offsets = vec![0u32];
        let mut links = Vec::new();
        let mut start = Vec::new();
        let mut bits = Vec::new();
        for &f in &order {
            links.extend_from_slice(self.flows.path(f));
            offsets.push(links.len() as u32);
            start.push(self.flows.start[f as usize]);
            bits.push(self.flows.size[f as usize] as f64 * 8.0);
        }
        let out = self.fluid.run(&FluidInput {
            caps: &caps,
            start: &start,
            bits: &bits,
            offsets: &offsets,
            links: &links,
            end: self.cfg.duration_ps,
        });
        self.events += out.updates;
        for (i, &f) in order.iter().enumerate() {
            let slowest = self.flows.path(f).iter().map(|&p| caps[p as usize]).fold(f64::INFINITY, f64::min);
            self.acc[f as usize] = (out.finish[i] - start[i] as f64) - bits[i] / slowest;
        }
    }

    /// Warnings the link runs call for (PAUSE, losses).
    fn finish_flows(&mut self) {
        self.write_parts();
        let paused: Vec<&LinkRunNote> = self.notes.iter().filter(|n| n.paused_fraction > 0.01).collect();
        if let Some(worst) = paused.iter().max_by(|a, b| a.paused_fraction.total_cmp(&b.paused_fraction)) {
            self.warnings.push(format!(
                "flow-level model: PAUSE was active in {} of {} link runs (link {} paused {:.1}% of the run); PAUSE spreading between links is not modelled, so FCTs are approximate where PAUSE matters",
                paused.len(),
                self.notes.len(),
                self.fabric.port_name(worst.port),
                worst.paused_fraction * 100.0
            ));
        }
        let lossy = self.notes.iter().filter(|n| n.drops > 0 || n.timeouts > 0).count();
        if lossy > 0 {
            self.warnings.push(format!(
                "flow-level model: frames were dropped in {lossy} of {} link runs; losses and their retransmissions are modelled link by link only",
                self.notes.len()
            ));
        }
        self.work_done = self.work_total;
    }

    /// Flow `f`'s FCT: its idle FCT plus its delays on its links, at
    /// least the idle FCT (ps; infinite: not finished by some link).
    fn fct(&self, f: usize) -> f64 {
        let idle = self.ideal[f] as f64 + self.excess[f] as f64;
        (idle + self.acc[f]).max(idle.max(self.ideal[f] as f64))
    }
}

impl Run for FlowSim {
    fn run_for(&mut self, wall: Duration) -> bool {
        let started = Instant::now();
        let deadline = started + wall;
        let debug = std::env::var_os("CNSIM_FLOW_DEBUG").is_some();
        while !matches!(self.stage, Stage::Done) {
            let (t0, stage) = (Instant::now(), self.stage_name());
            self.step(deadline);
            if debug {
                *self.stage_wall.entry(stage).or_insert(0.0) += t0.elapsed().as_secs_f64();
                if matches!(self.stage, Stage::Done) {
                    eprintln!(
                        "flow stages (s): {:?}; reps {}, other links {}",
                        self.stage_wall,
                        self.reps.len(),
                        self.others.len()
                    );
                }
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        self.wall_s += started.elapsed().as_secs_f64();
        self.now = if matches!(self.stage, Stage::Done) {
            self.cfg.duration_ps
        } else {
            // Progress as a share of the run's length (never the end itself).
            ((self.work_done / self.work_total).min(0.999) * self.cfg.duration_ps as f64) as Time
        };
        matches!(self.stage, Stage::Done)
    }

    fn run_until(&mut self, t: Time) -> bool {
        while !matches!(self.stage, Stage::Done) && self.now < t {
            self.run_for(Duration::from_millis(100));
        }
        matches!(self.stage, Stage::Done)
    }

    fn finish(&mut self) -> Result<RunResult, String> {
        if let Some(e) = &self.failed {
            return Err(format!("flow-level model: {e}"));
        }
        if !matches!(self.stage, Stage::Done) {
            return Err("flow-level run not finished".into());
        }
        Ok(result::build_result(
            &result::Model {
                cfg: &self.cfg,
                seed: self.seed,
                fabric: &self.fabric,
                flows: &self.flows,
                ideal: &self.ideal,
                events: self.events,
                wall_s: self.wall_s,
                build_s: self.build_s,
            },
            |f| self.fct(f),
        ))
    }

    fn now(&self) -> Time {
        self.now
    }

    fn duration(&self) -> Time {
        self.cfg.duration_ps
    }

    fn is_finished(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

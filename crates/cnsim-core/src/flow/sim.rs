//! The flow-level run (module docs in `flow/mod.rs`): built at once,
//! advanced in steps of wall time like a packet run (the link runs, then
//! every other link, then the flows' totals), so that a caller shows
//! progress and sees a Ctrl-C within a step.

use super::fabric::Fabric;
use super::fluid::{Fluid, FluidInput};
use super::idle::{self, IdleExcess};
use super::linksim::{link_net, LinkNet};
use super::{FlowModel, FlowParams};
use crate::config::{fail, ConfigError, EventConfig, SimConfig};
use crate::engine::rng::{stream, Stream};
use crate::engine::{Time, PS_PER_MS};
use crate::net::port::PortId;
use crate::net::sim::Run;
use crate::net::sim::Sim;
use crate::net::topology::NodeKind;
use crate::net::transport::FlowGen;
use crate::stats::{self, FlowRecord, FrameCounters, FrameCounts, RunResult, TransportCounters, TransportResult};
use rand::Rng;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The flows of a run (the packet engine's, in its order: flows given one
/// by one, then arrivals by time) and their paths.
pub struct Flows {
    pub src: Vec<u16>,
    pub dst: Vec<u16>,
    pub size: Vec<u64>,
    pub start: Vec<Time>,
    /// Flow f's ports: `path[path_off[f]..path_off[f + 1]]`.
    pub path_off: Vec<u32>,
    pub path: Vec<PortId>,
}

impl Flows {
    pub fn len(&self) -> usize {
        self.src.len()
    }

    pub fn path(&self, f: u32) -> &[PortId] {
        &self.path[self.path_off[f as usize] as usize..self.path_off[f as usize + 1] as usize]
    }
}

/// Congestion classes: 0, 1, 2, 3 or more flows active at arrival.
const BUSY_CLASSES: usize = 4;
/// Size classes: frames in [2^k, 2^(k+1)).
const SIZE_CLASSES: usize = 40;
/// A correction is drawn from the nearest size classes holding at least
/// this many samples (of the flow's congestion class if within two classes
/// of its size, else of any).
const DRAW_MIN: usize = 25;
/// From this many frames on, a correction scales with the flow's frames
/// (a long flow's loss of share lasts as long as it does); below, it is
/// the flow's wait (queueing, round trips) whatever its size.
const SCALE_FRAMES: u64 = 64;

fn size_class(frames: u64) -> usize {
    (63 - frames.max(1).leading_zeros() as usize).min(SIZE_CLASSES - 1)
}

/// A tier's corrections: its representatives' flows' packet delays against
/// their fluid delays, by size class and congestion class.
struct Pool {
    /// [size class][congestion class] -> (frames, correction).
    cells: Vec<[Vec<(u64, f64)>; BUSY_CLASSES]>,
    len: usize,
}

impl Pool {
    fn new() -> Pool {
        Pool {
            cells: (0..SIZE_CLASSES).map(|_| Default::default()).collect(),
            len: 0,
        }
    }

    fn add(&mut self, frames: u64, busy: usize, c: f64) {
        self.cells[size_class(frames)][busy.min(BUSY_CLASSES - 1)].push((frames, c));
        self.len += 1;
    }

    /// Samples of size classes `lo..=hi`, of congestion class `busy` (None: any).
    fn count(&self, lo: usize, hi: usize, busy: Option<usize>) -> usize {
        self.cells[lo..=hi]
            .iter()
            .map(|c| match busy {
                Some(b) => c[b].len(),
                None => c.iter().map(Vec::len).sum(),
            })
            .sum()
    }

    fn nth(&self, lo: usize, hi: usize, busy: Option<usize>, mut i: usize) -> (u64, f64) {
        for cell in &self.cells[lo..=hi] {
            for (b, v) in cell.iter().enumerate() {
                if busy.is_some_and(|x| x != b) {
                    continue;
                }
                if i < v.len() {
                    return v[i];
                }
                i -= v.len();
            }
        }
        unreachable!("i < count")
    }

    /// A correction for a flow of `frames` frames that found `busy` flows:
    /// drawn from its size class widened until it holds `DRAW_MIN`
    /// samples, of its congestion class while that stays within two classes
    /// of its size; a long flow's scaled to its size.
    fn draw(&self, frames: u64, busy: usize, rng: &mut Stream) -> f64 {
        if self.len == 0 {
            return 0.0;
        }
        let k = size_class(frames);
        let busy = busy.min(BUSY_CLASSES - 1);
        let mut pick = None;
        for w in 0..SIZE_CLASSES {
            let (lo, hi) = (k.saturating_sub(w), (k + w).min(SIZE_CLASSES - 1));
            let class = if w <= 2 { Some(busy) } else { None };
            let n = self.count(lo, hi, class);
            if n >= DRAW_MIN || (w + 1 >= SIZE_CLASSES && n > 0) {
                pick = Some(self.nth(lo, hi, class, rng.gen_range(0..n)));
                break;
            }
        }
        let (n, c) = pick.unwrap_or_else(|| self.nth(0, SIZE_CLASSES - 1, None, rng.gen_range(0..self.len)));
        if frames >= SCALE_FRAMES && n >= SCALE_FRAMES {
            c * frames as f64 / n as f64
        } else {
            c
        }
    }
}

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
    sim: Sim,
    fluid: LinkFluid,
}

/// A flow-level run of one scenario and seed.
pub struct FlowSim {
    cfg: SimConfig,
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
    events: u64,
}

const NO_REP: PortId = PortId::MAX;

impl FlowSim {
    /// Builds the run: checks what the flow-level model can represent and
    /// everything the packet engine would refuse (its own checks, the
    /// flows' stations and routes), naming the parameter. The work (drawing
    /// and routing the flows, the idle floor, the clusters) is the first
    /// step of the run.
    pub fn new(cfg: &SimConfig, seed: u64) -> Result<FlowSim, ConfigError> {
        let warnings = representable(cfg)?;
        // The packet engine's own checks of everything but the flows
        // (scheme parameters, nodes, links): built without them, run never.
        let mut bare = cfg.clone();
        bare.fidelity = super::Fidelity::Packet;
        bare.transport.flows.clear();
        bare.transport.arrivals.clear();
        bare.trace = Default::default();
        drop(Sim::new(&bare, seed)?);
        let params = cfg.flow.clone();
        let fabric = Fabric::build(cfg, seed)?;
        check_flows(cfg, &fabric)?;
        let n_ports = fabric.n_ports();
        Ok(FlowSim {
            cfg: cfg.clone(),
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
        let excess = idle_excess(cfg, fabric, &flows, seed)?;
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
                        let sim = match Sim::new(&net.config, self.seed) {
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
        let limit = std::env::var("CNSIM_FLOW_HOST_LIMIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(HOST_LIMIT);
        let out = Fluid::with_limit(limit).run(&FluidInput {
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

    /// The flows' records and the run's results.
    fn build_result(&self) -> RunResult {
        let cfg = &self.cfg;
        let duration = cfg.duration_ps;
        let fb = cfg.frame_bytes as u64;
        let n = self.flows.len();
        let finish: Vec<Time> = (0..n)
            .map(|f| {
                let end = self.flows.start[f] as f64 + self.fct(f);
                if end.is_finite() && end <= duration as f64 {
                    end.round() as Time
                } else {
                    Time::MAX
                }
            })
            .collect();
        let all_done = finish.iter().all(|&t| t != Time::MAX);
        let end_ps = if cfg.transport.end_when_done && all_done && n > 0 {
            (finish.iter().copied().max().unwrap_or(0) + 1).min(duration)
        } else {
            duration
        };
        // Bytes delivered: a flow's spread evenly over its lifetime (the
        // model has no finer timing); a flow still running at the end, its
        // share up to then.
        let windows: Vec<(Time, Time)> = cfg.windows.iter().map(|w| (w.start_ps.min(end_ps), w.end_ps.min(end_ps))).collect();
        let nw = windows.len();
        let n_st = self.fabric.n_stations();
        let n_ports = self.fabric.n_ports();
        let mut win_bytes = vec![0u64; nw];
        let mut port_bytes = vec![0u64; n_ports * nw];
        let mut port_frames = vec![0u64; n_ports];
        let mut from = vec![0u64; n_st * nw];
        let mut to = vec![0u64; n_st * nw];
        let mut delivered_frames = 0u64;
        let mut generated_frames = 0u64;
        let mut delivered_from = vec![0u64; n_st];
        let bin = cfg.bin_ps.max(1);
        let n_bins = end_ps.div_ceil(bin) as usize;
        let mut agg = vec![0.0f64; n_bins];
        for (f, &done_at) in finish.iter().enumerate() {
            let start = self.flows.start[f];
            if start >= end_ps {
                continue;
            }
            let size = self.flows.size[f];
            let frames = size.div_ceil(fb).max(1);
            generated_frames += frames;
            let est = self.flows.start[f] as f64 + self.fct(f);
            let stop = if done_at != Time::MAX { done_at } else { end_ps };
            let span = (est - start as f64).max(1.0);
            let part = |a: Time, b: Time| -> u64 {
                let (a, b) = (a.max(start), b.min(stop));
                if b <= a || !span.is_finite() {
                    0
                } else {
                    (size as f64 * (b - a) as f64 / span).round().min(size as f64) as u64
                }
            };
            let done = part(start, stop);
            let (s, d) = (self.flows.src[f] as usize, self.flows.dst[f] as usize);
            if finish[f] != Time::MAX {
                delivered_frames += frames;
                delivered_from[s] += frames;
            } else {
                delivered_frames += done / fb;
                delivered_from[s] += done / fb;
            }
            for (w, &(a, b)) in windows.iter().enumerate() {
                let x = part(a, b);
                win_bytes[w] += x;
                from[s * nw + w] += x;
                to[d * nw + w] += x;
                for &p in self.flows.path(f as u32) {
                    port_bytes[p as usize * nw + w] += x;
                }
            }
            for &p in self.flows.path(f as u32) {
                port_frames[p as usize] += frames;
            }
            if span.is_finite() && stop > start {
                let rate = size as f64 / span; // bytes per ps
                let mut t = start;
                while t < stop {
                    let b = (t / bin) as usize;
                    let next = ((b as Time + 1) * bin).min(stop);
                    if b < n_bins {
                        agg[b] += rate * (next - t) as f64;
                    }
                    t = next;
                }
            }
        }
        let widths: Vec<f64> = (0..n_bins).map(|b| (end_ps - b as Time * bin).min(bin) as f64).collect();
        let agg_gbps: Vec<f64> = agg.iter().zip(&widths).map(|(&x, &w)| x * 8.0 / w * 1e3).collect();
        let counts = FrameCounters {
            generated: generated_frames,
            delivered: delivered_frames,
            ..FrameCounters::default()
        };
        let records: Vec<FlowRecord> = (0..n)
            .map(|f| FlowRecord {
                src: self.fabric.station_name(self.flows.src[f]).to_string(),
                dst: self.fabric.station_name(self.flows.dst[f]).to_string(),
                size_bytes: self.flows.size[f],
                start_ps: self.flows.start[f],
                finish_ps: finish[f],
                ideal_fct_ps: self.ideal[f],
                retransmitted: 0,
                timeouts: 0,
                hops: (self.flows.path_off[f + 1] - self.flows.path_off[f]),
            })
            .collect();
        let net = &self.fabric.net;
        let links = net
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (a, b) = p.name.split_once("->").expect("port names are FROM->TO");
                stats::LinkResult {
                    name: p.name.clone(),
                    from: a.to_string(),
                    to: b.to_string(),
                    rate_bps: p.nominal_rate_bps,
                    bytes: (0..nw).map(|w| port_bytes[i * nw + w]).collect(),
                    frames: port_frames[i],
                    can_pause: cfg.pause.enabled && matches!(net.nodes[p.peer as usize].kind, NodeKind::Bridge(_)),
                    paused_ever: false,
                    paused_ps: 0,
                    pause_frames: 0,
                    control_frames: 0,
                }
            })
            .collect();
        let nodes = net
            .nodes
            .iter()
            .map(|nd| match nd.kind {
                NodeKind::Station(s) => {
                    let s = s as usize;
                    stats::NodeResult {
                        name: nd.name.clone(),
                        kind: "station",
                        generated: 0,
                        delivered: 0,
                        dropped_cp: 0,
                        dropped_rp: 0,
                        dropped_rl: 0,
                        dropped_nic: 0,
                        deferred: 0,
                        notifications: 0,
                        delivered_from: delivered_from[s],
                        bytes_from: (0..nw).map(|w| from[s * nw + w]).collect(),
                        bytes_to: (0..nw).map(|w| to[s * nw + w]).collect(),
                    }
                }
                NodeKind::Bridge(_) => stats::NodeResult {
                    name: nd.name.clone(),
                    kind: "bridge",
                    generated: 0,
                    delivered: 0,
                    dropped_cp: 0,
                    dropped_rp: 0,
                    dropped_rl: 0,
                    dropped_nic: 0,
                    deferred: 0,
                    notifications: 0,
                    delivered_from: 0,
                    bytes_from: Vec::new(),
                    bytes_to: Vec::new(),
                },
            })
            .collect();
        RunResult {
            seed: self.seed,
            end_ps,
            bin_ps: bin,
            n_bins,
            frames: FrameCounts::new(counts, generated_frames - delivered_frames),
            engine: stats::EngineFigures {
                events: self.events,
                wall_s: self.wall_s,
            },
            windows: cfg
                .windows
                .iter()
                .zip(&windows)
                .enumerate()
                .map(|(w, (c, &(a, b)))| stats::WindowResult {
                    name: c.name.clone(),
                    start_ps: a,
                    end_ps: b,
                    generated: 0,
                    delivered: 0,
                    dropped_cp: 0,
                    dropped_rp: 0,
                    deferred: 0,
                    delivered_bytes: win_bytes[w],
                })
                .collect(),
            flows: Vec::new(),
            links,
            nodes,
            transport: TransportResult {
                flows: records,
                counts: TransportCounters::default(),
            },
            queue_hists: Vec::new(),
            series: vec![stats::Series {
                series: "aggregate_throughput".into(),
                key: "all".into(),
                values: agg_gbps,
            }],
            trace: None,
        }
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
        Ok(self.build_result())
    }

    fn now(&self) -> Time {
        self.now
    }

    fn duration(&self) -> Time {
        self.cfg.duration_ps
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// What the flow-level model cannot represent is refused (open-loop
/// sources, the notification schemes acting on them, timed events);
/// what it approximates is said (PAUSE between links, traces).
fn representable(cfg: &SimConfig) -> Result<Vec<String>, ConfigError> {
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
    if cfg.pause.enabled {
        warnings.push("flow-level model: PAUSE acts only inside each link's own packet run (no PAUSE spreading between links, no head-of-line blocking across the fabric)".to_string());
    }
    if cfg.trace.records() || !cfg.trace_ports.is_empty() {
        warnings.push(
            "flow-level model: no frames are simulated across the fabric, so [trace] (queue series, events, captures) records nothing"
                .to_string(),
        );
    }
    Ok(warnings)
}

/// The flows' stations exist and every pair that may carry a flow is
/// routed (as the packet engine checks when it is built).
fn check_flows(cfg: &SimConfig, fabric: &Fabric) -> Result<(), ConfigError> {
    let t = &cfg.transport;
    let no_route = |s: u16, d: u16| {
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
        let members: Vec<u16> = a
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
fn draw_flows(cfg: &SimConfig, fabric: &Fabric, seed: u64) -> Result<Flows, ConfigError> {
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
    let mut arrivals: Vec<(Time, u32, u16, u16, u64)> = Vec::new();
    let mut g = 0u32;
    for (i, a) in t.arrivals.iter().enumerate() {
        let members: Vec<u16> = a
            .stations
            .iter()
            .map(|n| fabric.station(&format!("workload: arrivals[{i}]"), n))
            .collect::<Result<_, _>>()?;
        let name = |s: u16| fabric.station_name(s).to_string();
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
fn idle_excess(cfg: &SimConfig, fabric: &Fabric, flows: &Flows, seed: u64) -> Result<Vec<i64>, ConfigError> {
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
        .map(|&(first, max_frames)| idle::measure(cfg, fabric, flows.path(first), max_frames, seed))
        .collect::<Result<Vec<IdleExcess>, _>>()?;
    Ok(class_of
        .iter()
        .zip(&flows.size)
        .map(|(&c, &size)| tables[c as usize].at(size.div_ceil(fb).max(1)))
        .collect())
}

/// Each node's distance in hops from the nearest station (stations: 0).
fn station_distance(fabric: &Fabric) -> Vec<u32> {
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

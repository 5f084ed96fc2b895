//! Statistics: counters and fixed-width bins filled on the fly (memory grows
//! with ports and bins, never with frames), and the [`RunResult`] computed
//! from them when a run ends.

pub use crate::class_stats::{DeadlockCounters, PriorityCounters};
pub use crate::columns::Column;
use crate::engine::Time;
use serde::Serialize;

/// Queue length of one traced port: its value at each bin's end and its
/// maximum within each bin. Updated on every change, lazily filling the bins
/// the queue spent unchanged; the bins grow with the simulated time reached
/// (nothing is allocated for bins the run never reaches).
pub struct QueueTrace {
    pub port: u32,
    pub end: Vec<f64>,
    pub max: Vec<f64>,
    last_bin: usize,
    cur: u64,
    cur_max: u64,
}

impl QueueTrace {
    pub fn new(port: u32) -> Self {
        QueueTrace {
            port,
            end: Vec::new(),
            max: Vec::new(),
            last_bin: 0,
            cur: 0,
            cur_max: 0,
        }
    }

    #[inline]
    pub fn update(&mut self, bin: usize, value: u64) {
        if bin > self.last_bin {
            self.close_until(bin);
        }
        self.cur = value;
        self.cur_max = self.cur_max.max(value);
    }

    /// Closes the bins before `bin`: the current one with its maximum, the
    /// ones the queue spent unchanged with its value.
    fn close_until(&mut self, bin: usize) {
        debug_assert_eq!(self.end.len(), self.last_bin);
        self.end.push(self.cur as f64);
        self.max.push(self.cur_max as f64);
        self.end.resize(bin, self.cur as f64);
        self.max.resize(bin, self.cur as f64);
        self.last_bin = bin;
        self.cur_max = self.cur;
    }

    /// Closes every bin of a run that reached `n_bins` bins.
    pub fn finish(&mut self, n_bins: usize) {
        if self.last_bin < n_bins {
            self.close_until(n_bins);
        }
        self.end.truncate(n_bins);
        self.max.truncate(n_bins);
    }
}

/// Counts per (bin, key), bin-major so that a new bin is appended as the
/// simulated time reaches it: memory follows the time simulated, not the
/// declared duration.
#[derive(Debug, Clone, Default)]
pub struct BinTable {
    keys: usize,
    data: Vec<u64>,
}

impl BinTable {
    pub fn new(keys: usize) -> Self {
        BinTable { keys, data: Vec::new() }
    }

    #[inline]
    pub fn add(&mut self, bin: usize, key: usize, value: u64) {
        let i = bin * self.keys + key;
        if i >= self.data.len() {
            self.data.resize((bin + 1) * self.keys, 0);
        }
        self.data[i] += value;
    }

    /// Key `key`'s counts over the first `n_bins` bins (0 in bins never reached).
    pub fn series(&self, key: usize, n_bins: usize) -> Vec<u64> {
        (0..n_bins)
            .map(|b| self.data.get(b * self.keys + key).copied().unwrap_or(0))
            .collect()
    }

    /// Whether key `key` counted anything.
    pub fn any(&self, key: usize) -> bool {
        self.data.iter().skip(key).step_by(self.keys.max(1)).any(|&x| x > 0)
    }
}

/// The time a traced port's queue spent at each length inside the measure
/// window: buckets of `width` bytes (the last takes everything above).
#[derive(Debug, Clone)]
pub struct QueueHist {
    pub port: u32,
    pub width: u64,
    /// Picoseconds spent with a queue in [i width, (i + 1) width).
    pub time_ps: Vec<u64>,
    window: (Time, Time),
    last_t: Time,
    last_q: u64,
}

/// Most buckets of a queue histogram.
pub const QUEUE_HIST_BUCKETS: usize = 4096;

impl QueueHist {
    pub fn new(port: u32, width: u64, window: (Time, Time)) -> Self {
        QueueHist {
            port,
            width: width.max(1),
            time_ps: Vec::new(),
            window,
            last_t: 0,
            last_q: 0,
        }
    }

    /// The queue length last recorded.
    pub fn last_q_bytes(&self) -> u64 {
        self.last_q
    }

    /// The queue is `q` bytes from time `t` on.
    #[inline]
    pub fn record(&mut self, t: Time, q: u64) {
        let t = t.max(self.last_t);
        let a = self.last_t.max(self.window.0);
        let b = t.min(self.window.1);
        if b > a {
            let i = ((self.last_q / self.width) as usize).min(QUEUE_HIST_BUCKETS - 1);
            if self.time_ps.len() <= i {
                self.time_ps.resize(i + 1, 0);
            }
            self.time_ps[i] += b - a;
        }
        self.last_t = t;
        self.last_q = q;
    }
}

/// Counters and bins of one run.
pub struct Stats {
    pub bin_ps: Time,
    /// Bins of the declared duration: the most a run can reach (series are
    /// allocated only as the run reaches their bins).
    pub max_bins: usize,
    /// The bin of the current simulated time and where it ends (the event
    /// loop advances them, so the hot path needs no division).
    pub cur_bin: usize,
    pub next_edge: Time,
    /// The run-wide frame counters (the results serialise them as they are).
    pub counts: FrameCounters,
    pub windows: Vec<(Time, Time)>,
    pub n_stations: usize,
    /// Delivered bytes per bin, all destinations.
    pub agg_bins: BinTable,
    /// Delivered bytes per (bin, destination), when recorded (`dest_series`).
    pub dest_bins: BinTable,
    pub dest_series: bool,
    /// Per-flow counters kept (dense src x dst), else only per source and
    /// per destination.
    pub per_flow: bool,
    /// Frames of each source delivered, and bytes delivered per (window,
    /// source) and per (window, destination); counted directly only without
    /// per-flow counters, else summed from them when the run ends
    /// (`finish_station_sums`), which keeps the per-frame path short.
    /// Station-major (one station's counts share a cache line):
    /// `src_rec[src * (1 + windows)]` frames delivered, then bytes per
    /// window; `dst_win_bytes[dst * windows + w]`.
    pub src_rec: Vec<u64>,
    pub dst_win_bytes: Vec<u64>,
    /// Flow (src * n + dst) -> slot in `flow_bins`, when flows are traced.
    pub flow_slot: Vec<u32>,
    pub flow_bins: BinTable,
    pub flow_generated: Vec<u64>,
    pub flow_delivered: Vec<u64>,
    /// Generation time of each flow's last delivered frame, and the frames
    /// delivered after a later-generated frame of their flow (per-flow
    /// counters only: a flow's frames are generated in order; the count is
    /// `counts.reordered`).
    pub flow_last_born: Vec<Time>,
    /// Whether order is checked: with per-flow counters, when frames of a
    /// flow can take different paths (ECMP) or wait in rate limiters; on a
    /// single path through FIFO queues with no RLs they cannot reorder.
    pub track_order: bool,
    /// Delivered bytes per (window, flow).
    pub flow_win_bytes: Vec<u64>,
    pub agg_win_bytes: Vec<u64>,
    /// Transmitted bytes per (bin, port) when recorded (`link_series`), and
    /// per (window, port).
    pub link_bins: BinTable,
    pub link_series: bool,
    /// Per-port paused-fraction series recorded.
    pub paused_series: bool,
    pub link_win_bytes: Vec<u64>,
    pub queue_traces: Vec<QueueTrace>,
    /// Queue-length distribution of each traced port (same index as `queue_traces`).
    pub queue_hists: Vec<QueueHist>,
    pub n_ports: usize,
    /// Frame counts per window: generated, delivered, dropped_cp, dropped_rp, deferred.
    pub win_counts: Vec<[u64; 5]>,
}

pub const NO_SLOT: u32 = u32::MAX;

/// Windows whose per-port byte counts live in the port (`Port::win_bytes`).
pub const INLINE_WINDOWS: usize = 2;

/// What [`Stats::count`] counts.
pub const GENERATED: usize = 0;
pub const DROPPED_CP: usize = 2;
pub const DROPPED_RL: usize = 3;
pub const DROPPED_NIC: usize = 4;
pub const DEFERRED: usize = 5;

impl Stats {
    /// `per_flow`: dense per-flow counters; `max_series_keys`: the most keys
    /// a per-destination / per-link series family may have to be recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        duration: Time,
        bin_ps: Time,
        windows: Vec<(Time, Time)>,
        n_stations: usize,
        n_ports: usize,
        traced_flows: &[(usize, usize)],
        per_flow: bool,
        max_series_keys: usize,
    ) -> Stats {
        let max_bins = (duration.div_ceil(bin_ps) as usize).max(1);
        let nf = if per_flow { n_stations * n_stations } else { 0 };
        let mut flow_slot = if traced_flows.is_empty() {
            Vec::new()
        } else {
            vec![NO_SLOT; n_stations * n_stations]
        };
        for (i, &(s, d)) in traced_flows.iter().enumerate() {
            flow_slot[s * n_stations + d] = i as u32;
        }
        let nw = windows.len();
        let dest_series = n_stations <= max_series_keys;
        let link_series = n_ports <= max_series_keys;
        Stats {
            bin_ps,
            max_bins,
            cur_bin: 0,
            next_edge: bin_ps,
            counts: FrameCounters::default(),
            windows,
            n_stations,
            agg_bins: BinTable::new(1),
            dest_bins: BinTable::new(if dest_series { n_stations } else { 0 }),
            dest_series,
            per_flow,
            src_rec: vec![0; (1 + nw) * n_stations],
            dst_win_bytes: vec![0; nw * n_stations],
            flow_slot,
            flow_bins: BinTable::new(traced_flows.len()),
            flow_generated: vec![0; nf],
            flow_last_born: vec![0; nf],
            track_order: per_flow,
            flow_delivered: vec![0; nf],
            flow_win_bytes: vec![0; nw * nf],
            agg_win_bytes: vec![0; nw],
            link_bins: BinTable::new(if link_series { n_ports } else { 0 }),
            link_series,
            paused_series: link_series,
            link_win_bytes: vec![0; nw * n_ports],
            queue_traces: Vec::new(),
            queue_hists: Vec::new(),
            n_ports,
            win_counts: vec![[0; 5]; nw],
        }
    }

    #[inline]
    pub fn bin_of(&self, t: Time) -> usize {
        if t < self.next_edge && t + self.bin_ps >= self.next_edge {
            self.cur_bin.min(self.max_bins - 1)
        } else {
            ((t / self.bin_ps) as usize).min(self.max_bins - 1)
        }
    }

    #[inline]
    pub fn bin_now(&self) -> usize {
        self.cur_bin.min(self.max_bins - 1)
    }

    /// Bins a run that ended at `end` reached (at least one).
    pub fn bins_reached(&self, end: Time) -> usize {
        (end.div_ceil(self.bin_ps) as usize).clamp(1, self.max_bins)
    }

    /// The event loop reached `t` at or past `next_edge`.
    pub fn advance_bin(&mut self, t: Time) {
        self.cur_bin = (t / self.bin_ps) as usize;
        self.next_edge = (self.cur_bin as Time + 1) * self.bin_ps;
    }

    /// A data frame of flow (src, dst) fully received by its destination at
    /// `t` (which may lie ahead of the current time), `delay` after it was generated.
    #[inline]
    pub fn deliver(&mut self, t: Time, src: usize, dst: usize, len: u64, delay: Time) {
        self.counts.delivered += 1;
        self.counts.delay_sum_ps += delay as u128;
        self.counts.delay_max_ps = self.counts.delay_max_ps.max(delay);
        let b = self.bin_of(t);
        let n = self.n_stations;
        let f = src * n + dst;
        self.agg_bins.add(b, 0, len);
        if self.dest_series {
            self.dest_bins.add(b, dst, len);
        }
        let nw = self.windows.len();
        if !self.per_flow {
            self.src_rec[src * (1 + nw)] += 1;
        } else {
            self.flow_delivered[f] += 1;
            if self.track_order {
                let born = t - delay;
                if born < self.flow_last_born[f] {
                    self.counts.reordered += 1;
                } else {
                    self.flow_last_born[f] = born;
                }
            }
        }
        if !self.flow_slot.is_empty() {
            let slot = self.flow_slot[f];
            if slot != NO_SLOT {
                self.flow_bins.add(b, slot as usize, len);
            }
        }
        for (w, &(a, e)) in self.windows.iter().enumerate() {
            if t >= a && t < e {
                self.win_counts[w][1] += 1;
                self.agg_win_bytes[w] += len;
                if self.per_flow {
                    self.flow_win_bytes[w * n * n + f] += len;
                } else {
                    self.src_rec[src * (1 + nw) + 1 + w] += len;
                    self.dst_win_bytes[dst * nw + w] += len;
                }
            }
        }
    }

    /// With per-flow counters: the per-source and per-destination sums from them.
    pub fn finish_station_sums(&mut self) {
        if !self.per_flow {
            return;
        }
        let n = self.n_stations;
        for src in 0..n {
            for dst in 0..n {
                let f = src * n + dst;
                let nw = self.windows.len();
                self.src_rec[src * (1 + nw)] += self.flow_delivered[f];
                for w in 0..nw {
                    let b = self.flow_win_bytes[w * n * n + f];
                    self.src_rec[src * (1 + nw) + 1 + w] += b;
                    self.dst_win_bytes[dst * nw + w] += b;
                }
            }
        }
    }

    /// Counts a frame event (`GENERATED`, `DROPPED_CP`, `DROPPED_RL`,
    /// `DROPPED_NIC`, `DEFERRED`) at `t` in its windows.
    #[inline(always)]
    pub fn count(&mut self, t: Time, what: usize) {
        let col = match what {
            GENERATED => {
                self.counts.generated += 1;
                0
            }
            DROPPED_CP => {
                self.counts.dropped_cp += 1;
                2
            }
            DROPPED_RL => {
                self.counts.dropped_rl += 1;
                3
            }
            DROPPED_NIC => {
                self.counts.dropped_nic += 1;
                3
            }
            _ => {
                self.counts.deferred += 1;
                4
            }
        };
        for (w, &(a, e)) in self.windows.iter().enumerate() {
            if t >= a && t < e {
                self.win_counts[w][col] += 1;
            }
        }
    }

    /// A frame of `len` bytes starts transmission on `port` at `t`; the
    /// port's bytes in its first `INLINE_WINDOWS` windows are kept in the
    /// port itself (`inline`: no cache line of its own on a large fabric).
    /// Inlined: a call's prologue and epilogue were a third of its cost.
    #[inline(always)]
    pub fn transmit(&mut self, t: Time, port: usize, len: u64, inline: &mut [u64; INLINE_WINDOWS]) {
        if self.link_series {
            let b = self.bin_of(t);
            self.link_bins.add(b, port, len);
        }
        for (w, &(a, e)) in self.windows.iter().enumerate() {
            if t >= a && t < e {
                if w < INLINE_WINDOWS {
                    inline[w] += len;
                } else {
                    self.link_win_bytes[w * self.n_ports + port] += len;
                }
            }
        }
    }

    /// Gbit/s of `bytes` over `ps`.
    pub fn gbps(bytes: u64, ps: Time) -> f64 {
        if ps == 0 {
            0.0
        } else {
            bytes as f64 * 8.0 * 1000.0 / ps as f64
        }
    }

    /// Adds the paused interval [a, b) to per-bin fractions, growing `bins`
    /// to the bins it reaches (at most `max_bins`).
    pub fn add_interval_to_bins(bins: &mut Vec<f64>, bin_ps: Time, max_bins: usize, a: Time, b: Time) {
        if b <= a {
            return;
        }
        let mut t = a;
        while t < b {
            let i = (t / bin_ps) as usize;
            if i >= max_bins {
                break;
            }
            if i >= bins.len() {
                bins.resize(i + 1, 0.0);
            }
            let edge = (i as Time + 1) * bin_ps;
            let end = edge.min(b);
            bins[i] += (end - t) as f64 / bin_ps as f64;
            t = end;
        }
    }
}

/// Overlap of [a, b) with [c, d).
#[inline]
pub fn overlap(a: Time, b: Time, c: Time, d: Time) -> Time {
    let lo = a.max(c);
    let hi = b.min(d);
    hi.saturating_sub(lo)
}

// ---------------------------------------------------------------- results

/// Everything a run recorded, as raw counters: frame counts, bytes and
/// paused picoseconds per window, per flow, per link direction and per node,
/// and the binned series. No metric is derived here: `cnsim.metrics` turns
/// these tables into throughput, time paused, overhead and the rest.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub seed: u64,
    pub end_ps: Time,
    pub bin_ps: Time,
    pub n_bins: usize,
    pub frames: FrameCounts,
    /// Per priority, with more than one priority in use or PFC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priorities: Option<PriorityCounters>,
    /// The deadlock detector's findings, in PFC runs that run it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlock: Option<DeadlockCounters>,
    pub engine: EngineFigures,
    pub windows: Vec<WindowResult>,
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    pub nodes: Vec<NodeResult>,
    /// Transport flows: one record per flow, and the transport's counters.
    pub transport: TransportResult,
    /// Per traced port: (port, bucket width in bytes, ps spent per bucket in the measure window).
    pub queue_hists: Vec<(String, u64, Vec<u64>)>,
    /// Collective jobs: per collective and per job iteration (collective.rs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collectives: Vec<crate::collective::metrics::CollectiveResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub iterations: Vec<crate::collective::metrics::IterationResult>,
    /// Per collective and rank: when it began and was done.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collective_ranks: Vec<crate::collective::metrics::RankResult>,
    #[serde(skip)]
    pub series: Vec<Series>,
    /// What a traced run wrote (events.parquet, captures); not a result.
    #[serde(skip)]
    pub trace: Option<crate::trace::TraceSummary>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct TransportResult {
    pub flows: Vec<FlowRecord>,
    #[serde(flatten)]
    pub counts: TransportCounters,
}

/// The transport's run-wide counters, declared once: the transport
/// increments them and the results serialise them as they are.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TransportCounters {
    pub acks: u64,
    pub nacks: u64,
    /// Data frames the receivers discarded (beyond a gap, go-back-N).
    pub discarded: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// Data frames a selective receiver (UET) kept beyond a gap.
    #[serde(skip_serializing_if = "is_zero")]
    pub held: u64,
    /// Data frames bridges cut to their header (UET's trimming; their
    /// payload is in `dropped_cp`), and headers or acknowledgements a full
    /// header queue dropped.
    #[serde(skip_serializing_if = "is_zero")]
    pub trimmed: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub header_drops: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Per-flow outcome, as the results give it.
#[derive(Debug, Clone, Serialize)]
pub struct FlowRecord {
    /// Its flow's names, shared with the flow's config.
    pub src: std::sync::Arc<str>,
    pub dst: std::sync::Arc<str>,
    pub size_bytes: u64,
    pub start_ps: Time,
    /// `Time::MAX` when the flow did not finish inside the run.
    pub finish_ps: Time,
    /// When its sender had every byte acknowledged (`Time::MAX`: not inside the run).
    pub acked_ps: Time,
    pub ideal_fct_ps: Time,
    pub retransmitted: u32,
    pub timeouts: u32,
    pub hops: u32,
}

/// The run-wide frame counters, declared once: the hot path increments
/// them in place (`stats.counts.generated += 1`, a field path, no
/// indirection) and the results serialise them as they are, beside the
/// figures derived from them ([`FrameCounts`]).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct FrameCounters {
    pub generated: u64,
    pub delivered: u64,
    /// Frames dropped at congestion points (a full bridge buffer).
    pub dropped_cp: u64,
    /// Drops at reaction points: at a full RLQ, and at a full NIC FIFO
    /// (`nic_full = drop`).
    pub dropped_rl: u64,
    pub dropped_nic: u64,
    /// Frames sources held back at a full NIC FIFO (`nic_full = defer`:
    /// never generated, never lost).
    pub deferred: u64,
    /// Sum and largest generation-to-reception delay of the delivered
    /// frames (ps); the sum is given as a float.
    #[serde(serialize_with = "u128_as_f64")]
    pub delay_sum_ps: u128,
    pub delay_max_ps: Time,
    /// Frames delivered out of their flow's order (counted with per-flow counters only).
    pub reordered: u64,
    /// Bytes of notification frames (CNMs, CNPs, reflections) sent inside the
    /// measure window (`windows[0]`), by every sender.
    pub note_bytes_measure: u64,
}

fn u128_as_f64<S: serde::Serializer>(x: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*x as f64)
}

impl FrameCounters {
    /// Frames dropped at reaction points (RLQ and NIC): the definition.
    pub fn dropped_rp(&self) -> u64 {
        self.dropped_rl + self.dropped_nic
    }
}

/// The run's frame counts as the results give them: the counters, then
/// what is derived from them when the run ends.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FrameCounts {
    #[serde(flatten)]
    pub counts: FrameCounters,
    pub dropped_rp: u64,
    /// Data frames still in a queue (ports, rate limiters) when the run ended.
    pub in_flight: u64,
}

impl FrameCounts {
    pub fn new(counts: FrameCounters, in_flight: u64) -> FrameCounts {
        FrameCounts {
            counts,
            dropped_rp: counts.dropped_rp(),
            in_flight,
        }
    }

    /// Frame conservation: every frame generated was delivered, dropped
    /// (at a CP or an RP) or is still in flight. An error gives the books.
    pub fn check_conservation(&self) -> Result<(), String> {
        let c = &self.counts;
        let accounted = c.delivered + c.dropped_cp + self.dropped_rp + self.in_flight;
        if c.generated == accounted {
            Ok(())
        } else {
            Err(format!(
                "generated {} != delivered {} + dropped_cp {} + dropped_rp {} + in flight {}",
                c.generated, c.delivered, c.dropped_cp, self.dropped_rp, self.in_flight
            ))
        }
    }
}

/// A run's counters as one record: the frame counts and the transport's
/// (the `frames` of a run's results in Python, runs.parquet's `frames.*`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RunCounters<'a> {
    #[serde(flatten)]
    pub frames: &'a FrameCounts,
    #[serde(flatten)]
    pub transport: &'a TransportCounters,
    /// Runs with more than one priority or with PFC only.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub priorities: Option<&'a PriorityCounters>,
    /// PFC runs with the deadlock detector only.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub deadlock: Option<&'a DeadlockCounters>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineFigures {
    pub events: u64,
    /// Wall seconds running events.
    pub wall_s: f64,
    /// Wall seconds building and checking the network before the first event.
    pub build_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WindowResult {
    pub name: String,
    pub start_ps: Time,
    pub end_ps: Time,
    /// Frames generated, delivered, dropped at CPs and at RPs, and deferred, inside the window.
    pub generated: u64,
    pub delivered: u64,
    pub dropped_cp: u64,
    pub dropped_rp: u64,
    pub deferred: u64,
    /// Bytes delivered to all destinations inside the window.
    pub delivered_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    pub src: String,
    pub dst: String,
    pub generated: u64,
    pub delivered: u64,
    /// Bytes delivered, one value per window.
    pub bytes: Vec<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkResult {
    pub name: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    /// Bytes its sender started, one value per window.
    pub bytes: Vec<u64>,
    pub frames: u64,
    /// Its sender can be paused (PAUSE on and its receiver a bridge).
    pub can_pause: bool,
    pub paused_ever: bool,
    /// Picoseconds its sender was paused inside the measure window.
    pub paused_ps: Time,
    pub pause_frames: u64,
    /// Notifications this direction carried.
    pub control_frames: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeResult {
    pub name: String,
    pub kind: &'static str,
    pub generated: u64,
    pub delivered: u64,
    pub dropped_cp: u64,
    pub dropped_rp: u64,
    pub dropped_rl: u64,
    pub dropped_nic: u64,
    pub deferred: u64,
    /// Stations: congestion notifications received.
    pub notifications: u64,
    /// Stations: frames this source sent that were delivered.
    pub delivered_from: u64,
    /// Stations: bytes from this source / to this destination delivered, one value per window.
    pub bytes_from: Vec<u64>,
    pub bytes_to: Vec<u64>,
}

/// One time series: one value per bin.
#[derive(Debug, Clone)]
pub struct Series {
    pub series: String,
    pub key: String,
    pub values: Vec<f64>,
}

impl RunResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("results serialise")
    }

    /// The run-wide counters as one record (frames, then the transport's).
    pub fn counters(&self) -> RunCounters<'_> {
        RunCounters {
            frames: &self.frames,
            transport: &self.transport.counts,
            priorities: self.priorities.as_ref(),
            deadlock: self.deadlock.as_ref(),
        }
    }

    pub fn series(&self, series: &str, key: &str) -> Option<&[f64]> {
        self.series
            .iter()
            .find(|s| s.series == series && s.key == key)
            .map(|s| s.values.as_slice())
    }

    pub fn link(&self, name: &str) -> Option<&LinkResult> {
        self.links.iter().find(|l| l.name == name)
    }

    /// Gbit/s of `bytes` over window `w` (a convenience for tests and tools;
    /// the metrics are `cnsim.metrics`'s).
    pub fn window_gbps(&self, bytes: u64, w: usize) -> f64 {
        let win = &self.windows[w];
        Stats::gbps(bytes, win.end_ps - win.start_ps)
    }

    /// The columns of the run's tables, for the Python binding: each table
    /// is a list of (column, values).
    pub fn tables(&self) -> Vec<(&'static str, Vec<(String, Column)>)> {
        let per_window = |name: &str, rows: &dyn Fn(usize) -> Vec<u64>| -> Vec<(String, Column)> {
            self.windows
                .iter()
                .enumerate()
                .map(|(w, win)| (format!("{name}_{}", win.name), Column::U64(rows(w))))
                .collect()
        };
        let w = &self.windows;
        let windows = vec![
            ("name".into(), Column::Str(w.iter().map(|x| x.name.clone()).collect())),
            ("start_ps".into(), Column::U64(w.iter().map(|x| x.start_ps).collect())),
            ("end_ps".into(), Column::U64(w.iter().map(|x| x.end_ps).collect())),
            ("generated".into(), Column::U64(w.iter().map(|x| x.generated).collect())),
            ("delivered".into(), Column::U64(w.iter().map(|x| x.delivered).collect())),
            ("dropped_cp".into(), Column::U64(w.iter().map(|x| x.dropped_cp).collect())),
            ("dropped_rp".into(), Column::U64(w.iter().map(|x| x.dropped_rp).collect())),
            ("deferred".into(), Column::U64(w.iter().map(|x| x.deferred).collect())),
            ("delivered_bytes".into(), Column::U64(w.iter().map(|x| x.delivered_bytes).collect())),
        ];
        let f = &self.flows;
        let mut flows = vec![
            ("src".into(), Column::Str(f.iter().map(|x| x.src.clone()).collect())),
            ("dst".into(), Column::Str(f.iter().map(|x| x.dst.clone()).collect())),
            ("generated".into(), Column::U64(f.iter().map(|x| x.generated).collect())),
            ("delivered".into(), Column::U64(f.iter().map(|x| x.delivered).collect())),
        ];
        flows.extend(per_window("bytes", &|i| f.iter().map(|x| x.bytes[i]).collect()));
        let l = &self.links;
        let mut links = vec![
            ("name".into(), Column::Str(l.iter().map(|x| x.name.clone()).collect())),
            ("from".into(), Column::Str(l.iter().map(|x| x.from.clone()).collect())),
            ("to".into(), Column::Str(l.iter().map(|x| x.to.clone()).collect())),
            ("rate_bps".into(), Column::U64(l.iter().map(|x| x.rate_bps).collect())),
            ("frames".into(), Column::U64(l.iter().map(|x| x.frames).collect())),
            ("can_pause".into(), Column::Bool(l.iter().map(|x| x.can_pause).collect())),
            ("paused_ever".into(), Column::Bool(l.iter().map(|x| x.paused_ever).collect())),
            ("paused_ps".into(), Column::U64(l.iter().map(|x| x.paused_ps).collect())),
            ("pause_frames".into(), Column::U64(l.iter().map(|x| x.pause_frames).collect())),
            ("control_frames".into(), Column::U64(l.iter().map(|x| x.control_frames).collect())),
        ];
        links.extend(per_window("bytes", &|i| l.iter().map(|x| x.bytes[i]).collect()));
        let n = &self.nodes;
        let u = |g: &dyn Fn(&NodeResult) -> u64| Column::U64(n.iter().map(g).collect());
        let mut nodes = vec![
            ("name".into(), Column::Str(n.iter().map(|x| x.name.clone()).collect())),
            ("kind".into(), Column::Str(n.iter().map(|x| x.kind.to_string()).collect())),
            ("generated".into(), u(&|x| x.generated)),
            ("delivered".into(), u(&|x| x.delivered)),
            ("dropped_cp".into(), u(&|x| x.dropped_cp)),
            ("dropped_rp".into(), u(&|x| x.dropped_rp)),
            ("dropped_rl".into(), u(&|x| x.dropped_rl)),
            ("dropped_nic".into(), u(&|x| x.dropped_nic)),
            ("deferred".into(), u(&|x| x.deferred)),
            ("notifications".into(), u(&|x| x.notifications)),
            ("delivered_from".into(), u(&|x| x.delivered_from)),
        ];
        nodes.extend(per_window("bytes_from", &|i| {
            n.iter().map(|x| x.bytes_from.get(i).copied().unwrap_or(0)).collect()
        }));
        nodes.extend(per_window("bytes_to", &|i| {
            n.iter().map(|x| x.bytes_to.get(i).copied().unwrap_or(0)).collect()
        }));
        let t = &self.transport.flows;
        let tu = |g: &dyn Fn(&FlowRecord) -> u64| Column::U64(t.iter().map(g).collect());
        let flow_records = vec![
            ("src".into(), Column::Str(t.iter().map(|x| x.src.to_string()).collect())),
            ("dst".into(), Column::Str(t.iter().map(|x| x.dst.to_string()).collect())),
            ("size_bytes".into(), tu(&|x| x.size_bytes)),
            ("start_ps".into(), tu(&|x| x.start_ps)),
            ("finish_ps".into(), tu(&|x| x.finish_ps)),
            ("acked_ps".into(), tu(&|x| x.acked_ps)),
            ("ideal_fct_ps".into(), tu(&|x| x.ideal_fct_ps)),
            ("retransmitted".into(), tu(&|x| x.retransmitted as u64)),
            ("timeouts".into(), tu(&|x| x.timeouts as u64)),
            ("hops".into(), tu(&|x| x.hops as u64)),
        ];
        let mut qport = Vec::new();
        let mut qlow = Vec::new();
        let mut qtime = Vec::new();
        for (port, width, times) in &self.queue_hists {
            for (i, &t) in times.iter().enumerate() {
                qport.push(port.clone());
                qlow.push(i as u64 * width);
                qtime.push(t);
            }
        }
        let queue_hist = vec![
            ("port".into(), Column::Str(qport)),
            ("lower_bytes".into(), Column::U64(qlow)),
            ("time_ps".into(), Column::U64(qtime)),
        ];
        let mut out = vec![
            ("windows", windows),
            ("flows", flows),
            ("links", links),
            ("nodes", nodes),
            ("flow_records", flow_records),
            ("queue_hist", queue_hist),
        ];
        if !self.collectives.is_empty() {
            out.extend(crate::collective::metrics::tables(
                &self.collectives,
                &self.iterations,
                &self.collective_ranks,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_trace_fills_unchanged_bins() {
        let mut q = QueueTrace::new(0);
        q.update(0, 10);
        q.update(0, 5);
        q.update(2, 7); // bin 0 ends at 5 (max 10), bin 1 stays 5
        q.finish(5);
        assert_eq!(q.end, vec![5.0, 5.0, 7.0, 7.0, 7.0]);
        assert_eq!(q.max, vec![10.0, 5.0, 7.0, 7.0, 7.0]);
    }

    #[test]
    fn intervals_split_across_bins() {
        let mut bins = vec![];
        Stats::add_interval_to_bins(&mut bins, 10, 4, 5, 25);
        assert_eq!(bins, vec![0.5, 1.0, 0.5]);
        Stats::add_interval_to_bins(&mut bins, 10, 4, 35, 99);
        assert_eq!(bins, vec![0.5, 1.0, 0.5, 0.5], "cut at the last bin");
    }
}

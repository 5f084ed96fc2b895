//! What a run's results directory holds, declared once: each Parquet file
//! (what a row is, its columns in order with their types and units) and
//! each binned time series (its key and unit). The Python layer writes and
//! reads the files by these declarations (declarations.json's `outputs`:
//! an empty table keeps its columns and types), docs/results.md's tables
//! are generated from them, and a test holds every saved file to them.
//!
//! A column named with `<window>` stands for one column per measurement
//! window (`measure`, then each `[windows.NAME]`, then `hotspot`), in that
//! order.

use serde_json::{json, Value};

/// A column: its name, its type (`str`, `u64`, `i64`, `f64`, `bool`), its
/// unit (or "") and what it holds.
pub type Column = (&'static str, &'static str, &'static str, &'static str);

/// A Parquet file of a results directory.
pub struct File {
    /// The declaration's name (a file may have two forms).
    pub name: &'static str,
    pub file: &'static str,
    /// What one row is.
    pub row: &'static str,
    pub columns: &'static [Column],
}

/// A binned time series: its name, what its key is, its unit, what it holds.
pub type Series = (&'static str, &'static str, &'static str, &'static str);

const SEED: Column = ("seed", "i64", "", "replication");

/// Every Parquet file a run writes (events.parquet: docs/looking-at-frames.md).
pub const FILES: &[File] = &[
    File {
        name: "flows",
        file: "flows.parquet",
        row: "one row per (seed, flow): per (src, dst) pair that generated a frame (with per-flow counters)",
        columns: &[
            SEED,
            ("src", "str", "", "the flow's source"),
            ("dst", "str", "", "the flow's destination"),
            ("generated", "u64", "frames", "frames generated, whole run"),
            ("delivered", "u64", "frames", "frames delivered, whole run"),
            ("bytes_<window>", "u64", "bytes", "bytes delivered inside each window"),
            ("throughput_gbps_<window>", "f64", "Gbit/s", "delivered throughput over each window"),
        ],
    },
    File {
        name: "flows_transport",
        file: "flows.parquet",
        row: "with transport flows (a [workload]): one row per (seed, flow)",
        columns: &[
            SEED,
            ("src", "str", "", "sender"),
            ("dst", "str", "", "receiver"),
            ("size_bytes", "u64", "bytes", "the flow's bytes (on the wire: full frames of frame_bytes and the remainder)"),
            ("start_ps", "u64", "ps", "when the flow started"),
            ("finish_ps", "u64", "ps", "when the receiver had its last byte in order (2^64 - 1: not inside the run)"),
            ("acked_ps", "u64", "ps", "when the sender had its last byte acknowledged (2^64 - 1: not inside the run, or fidelity = flow, which has no acknowledgements)"),
            ("ideal_fct_ps", "u64", "ps", "the flow alone on the empty network along its path: store and forward at each hop's nominal rate plus propagation and node latency"),
            ("retransmitted", "u64", "frames", "frames sent again (go-back-N after a NACK or a timeout)"),
            ("timeouts", "u64", "", "retransmission timeouts that fired"),
            ("hops", "u64", "links", "links on the path"),
            ("start_us", "f64", "us", "start_ps in microseconds"),
            ("finish_us", "f64", "us", "finish_ps in microseconds (null: not inside the run)"),
            ("fct_us", "f64", "us", "flow completion time, finish - start (null: unfinished)"),
            ("fct_acked_us", "f64", "us", "the sender's completion time, acked - start: the FCT of the HPCC project and of the Ultra Ethernet reference (null: not acknowledged inside the run)"),
            ("ideal_fct_us", "f64", "us", "ideal_fct_ps in microseconds"),
            ("slowdown", "f64", "", "fct_us / ideal_fct_us (>= 1; exactly 1 for a flow alone)"),
        ],
    },
    File {
        name: "pairs",
        file: "pairs.parquet",
        row: "with transport flows only: one row per (seed, src, dst) pair that generated a frame",
        columns: &[
            SEED,
            ("src", "str", "", "the pair's source"),
            ("dst", "str", "", "the pair's destination"),
            ("generated", "u64", "frames", "frames generated, whole run"),
            ("delivered", "u64", "frames", "frames delivered, whole run"),
            ("bytes_<window>", "u64", "bytes", "bytes delivered inside each window"),
            ("throughput_gbps_<window>", "f64", "Gbit/s", "delivered throughput over each window"),
        ],
    },
    File {
        name: "collectives",
        file: "collectives.parquet",
        row: "with collective jobs ([[jobs]]): one row per (seed, collective), each iteration's phases in order (docs/collectives.md)",
        columns: &[
            SEED,
            ("job", "str", "", "the job's name"),
            ("iteration", "u64", "", "iteration (training step), from 0"),
            ("phase", "u64", "", "phase of the iteration, from 0"),
            ("collective", "str", "", "allreduce, allgather, reducescatter, alltoall or broadcast"),
            ("algorithm", "str", "", "ring, tree, pairwise or shift"),
            ("ranks", "u64", "", "ranks taking part"),
            ("size_bytes", "u64", "bytes", "the collective's size (NCCL's)"),
            ("flows", "u64", "", "flows it was made of (none between ranks of one host)"),
            ("start_ps", "u64", "ps", "its first flow's start"),
            ("end_ps", "u64", "ps", "its last flow's arrival (2^64 - 1: not inside the run)"),
            ("time_us", "f64", "us", "completion time, end - start (NaN: unfinished)"),
            ("algbw_gbps", "f64", "Gbit/s", "algorithm bandwidth, size / time"),
            ("busbw_gbps", "f64", "Gbit/s", "bus bandwidth, algbw x NCCL's factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast 1)"),
            ("payload_gbps", "f64", "Gbit/s", "the slowest rank's line rate x the payload share of a full frame: what busbw can reach"),
            ("ideal_us", "f64", "us", "the bandwidth-bound time on an idle fabric: factor x size / payload rate"),
            ("vs_ideal", "f64", "", "time / ideal (>= 1 up to latency)"),
            ("slowest_rank", "u64", "", "the rank done last (its last flow in or out)"),
            ("slowest_step", "u64", "", "the step in which the slowest rank lost most against an even share of the ideal time"),
            ("slowest_step_lost_us", "f64", "us", "what it lost there"),
            ("max_senders", "u64", "", "the most distinct senders with a flow of it in flight to one receiver at once (of the flows that finished)"),
        ],
    },
    File {
        name: "iterations",
        file: "iterations.parquet",
        row: "with collective jobs: one row per (seed, job, iteration)",
        columns: &[
            SEED,
            ("job", "str", "", "the job's name"),
            ("iteration", "u64", "", "iteration, from 0"),
            ("start_ps", "u64", "ps", "the previous iteration's end (the job's start for the first)"),
            ("end_ps", "u64", "ps", "the end of its last collective (2^64 - 1: not inside the run)"),
            ("step_time_us", "f64", "us", "step time, end - start (NaN: unfinished)"),
        ],
    },
    File {
        name: "collective_ranks",
        file: "collective_ranks.parquet",
        row: "with collective jobs: one row per (seed, collective, rank): the report's per-rank timeline",
        columns: &[
            SEED,
            ("job", "str", "", "the job's name"),
            ("iteration", "u64", "", "iteration, from 0"),
            ("phase", "u64", "", "phase of the iteration, from 0"),
            ("rank", "u64", "", "the rank, from 0"),
            ("host", "str", "", "the host it runs on"),
            ("start_ps", "u64", "ps", "its first flow's start in this collective, in or out (2^64 - 1: no flow, every peer on its own host)"),
            ("end_ps", "u64", "ps", "its last flow's arrival, in or out (2^64 - 1: not inside the run, or no flow)"),
        ],
    },
    File {
        name: "queues",
        file: "queues.parquet",
        row: "one row per (seed, traced port, queue-length bucket of frame_bytes)",
        columns: &[
            SEED,
            ("port", "str", "", "the traced port FROM->TO"),
            ("lower_bytes", "u64", "bytes", "the bucket's lower edge"),
            ("time_ps", "u64", "ps", "time the queue spent in the bucket inside the measure window"),
            ("fraction", "f64", "", "time_ps over the port's total"),
            ("cdf", "f64", "", "the fraction of time at or below the bucket"),
        ],
    },
    File {
        name: "links",
        file: "links.parquet",
        row: "one row per (seed, link direction)",
        columns: &[
            SEED,
            ("name", "str", "", "the direction FROM->TO"),
            ("from", "str", "", "its sender"),
            ("to", "str", "", "its receiver"),
            ("rate_bps", "u64", "bit/s", "configured rate"),
            ("frames", "u64", "frames", "frames carried, whole run (data and control)"),
            ("can_pause", "bool", "", "its sender can be paused: its receiver is a bridge (stations never send PAUSE)"),
            ("paused_ever", "bool", "", "it was paused at least once"),
            ("paused_ps", "u64", "ps", "time its sender was paused inside the measure window"),
            ("pause_frames", "u64", "frames", "PAUSE frames this direction carried"),
            ("control_frames", "u64", "frames", "congestion notifications this direction carried"),
            ("bytes_<window>", "u64", "bytes", "bytes it started sending inside each window"),
            ("throughput_gbps_<window>", "f64", "Gbit/s", "throughput over each window"),
            ("time_paused_pct", "f64", "%", "share of the measurement window its sender was paused"),
        ],
    },
    File {
        name: "nodes",
        file: "nodes.parquet",
        row: "one row per (seed, node)",
        columns: &[
            SEED,
            ("name", "str", "", "the node"),
            ("kind", "str", "", "station or bridge"),
            ("generated", "u64", "frames", "frames generated by the node"),
            ("delivered", "u64", "frames", "frames delivered to the node"),
            ("dropped_cp", "u64", "frames", "bridges: frames dropped for want of buffer"),
            ("dropped_rp", "u64", "frames", "stations: frames dropped, dropped_rl + dropped_nic"),
            ("dropped_rl", "u64", "frames", "stations: frames dropped at a full rate-limiter queue"),
            ("dropped_nic", "u64", "frames", "stations: frames dropped at a full NIC FIFO"),
            ("deferred", "u64", "frames", "stations: frames the source held back at a full NIC FIFO"),
            ("notifications", "u64", "", "stations: congestion notifications received (CNMs, reflections, CNPs)"),
            ("delivered_from", "u64", "frames", "stations: frames this source sent that were delivered"),
            ("bytes_from_<window>", "u64", "bytes", "stations: bytes this source sent that were delivered inside each window"),
            ("bytes_to_<window>", "u64", "bytes", "stations: bytes this destination received inside each window"),
        ],
    },
    File {
        name: "windows",
        file: "windows.parquet",
        row: "one row per (seed, window)",
        columns: &[
            SEED,
            ("name", "str", "", "the window (measure first)"),
            ("start_ps", "u64", "ps", "its start"),
            ("end_ps", "u64", "ps", "its end"),
            ("generated", "u64", "frames", "frames generated inside it"),
            ("delivered", "u64", "frames", "frames delivered inside it"),
            ("dropped_cp", "u64", "frames", "frames dropped in bridges inside it"),
            ("dropped_rp", "u64", "frames", "frames dropped at stations inside it"),
            ("deferred", "u64", "frames", "frames held back at a full NIC FIFO inside it"),
            ("delivered_bytes", "u64", "bytes", "bytes delivered inside it"),
        ],
    },
    File {
        name: "runs",
        file: "runs.parquet",
        row: "one row per seed: the run's counters, from which cnsim.open_results rebuilds the Results",
        columns: &[
            SEED,
            ("bin_ps", "i64", "ps", "the bins' width"),
            ("end_ps", "i64", "ps", "when the run ended"),
            ("n_bins", "i64", "", "bins the run reached"),
            ("frames.generated", "i64", "frames", "generated"),
            ("frames.delivered", "i64", "frames", "delivered"),
            ("frames.dropped_cp", "i64", "frames", "dropped in bridges"),
            ("frames.dropped_rl", "i64", "frames", "dropped at a full rate-limiter queue"),
            ("frames.dropped_nic", "i64", "frames", "dropped at a full NIC FIFO"),
            ("frames.deferred", "i64", "frames", "held back at a full NIC FIFO (never generated)"),
            ("frames.delay_sum_ps", "f64", "ps", "sum of the delivered frames' delays, generation to full reception"),
            ("frames.delay_max_ps", "i64", "ps", "the largest such delay"),
            ("frames.reordered", "i64", "frames", "delivered after a later frame of their flow (per-flow counters only)"),
            ("frames.note_bytes_measure", "i64", "bytes", "congestion-notification bytes sent in the measure window"),
            ("frames.dropped_rp", "i64", "frames", "dropped_rl + dropped_nic"),
            ("frames.in_flight", "i64", "frames", "data frames queued when the run ended"),
            ("frames.acks", "i64", "", "the transport's acknowledgements"),
            ("frames.nacks", "i64", "", "the transport's negative acknowledgements"),
            ("frames.discarded", "i64", "frames", "frames a receiver discarded beyond a gap"),
            ("frames.timeouts", "i64", "", "retransmission timeouts"),
            ("engine.events", "i64", "", "events the engine handled"),
        ],
    },
    File {
        name: "timeseries",
        file: "timeseries.parquet",
        row: "one row per (seed, series, key, bin), ordered by seed, then series and key in the engine's order, then time",
        columns: &[
            SEED,
            ("time_ms", "f64", "ms", "the bin's start"),
            ("series", "str", "", "the series (below)"),
            ("key", "str", "", "what the series is of (below)"),
            ("value", "f64", "", "the series' value in the bin, in its unit"),
        ],
    },
    File {
        name: "transient",
        file: "transient.parquet",
        row: "with [transient]: one row per deleted bin count l",
        columns: &[
            ("deleted_bins", "i64", "", "bins deleted from the start, l"),
            ("time_ms", "f64", "ms", "l in milliseconds"),
            ("rc", "f64", "", "the relative change rc(l)"),
            ("mean_aggregate_gbps", "f64", "Gbit/s", "the aggregate series' mean over seeds"),
            ("smoothed_aggregate_gbps", "f64", "Gbit/s", "the same, smoothed"),
        ],
    },
];

/// Every binned time series the engine records (net/results.rs).
pub const SERIES: &[Series] = &[
    ("aggregate_throughput", "`all`", "Gbit/s", "delivered to all stations in the bin"),
    ("delivered_throughput", "destination station", "Gbit/s", "delivered to it"),
    (
        "flow_throughput",
        "`SRC->DST`",
        "Gbit/s",
        "of one flow (only when the scenario has at most 64 flows)",
    ),
    ("link_throughput", "`FROM->TO` (every link direction)", "Gbit/s", "carried"),
    ("queue_bytes", "traced port `FROM->TO`", "bytes", "queued at the bin's end"),
    ("queue_bytes_max", "traced port", "bytes", "the bin's maximum"),
    (
        "paused_fraction",
        "`FROM->TO` of every direction paused at least once",
        "fraction of the bin",
        "its sender was paused",
    ),
    (
        "rl_rate",
        "`STATION|DEST` (a flow's rate limiter; `STATION|CP-PORT` with `rl_scope = \"cp\"`)",
        "Gbit/s",
        "its rate at the bin's end",
    ),
    ("rlq_bytes", "the same", "bytes", "in its queue at the bin's end"),
    (
        "rl_window_bytes",
        "`SRC|DST` of a transport flow named in `trace.rate_limiters`",
        "bytes",
        "its sender's window at the bin's end (window schemes: DCTCP, HPCC, Swift; 0 while the pair has no flow)",
    ),
];

/// The declarations as data (declarations.json's `outputs`).
pub fn to_json() -> Value {
    let column = |(name, dtype, unit, help): &Column| json!({"name": name, "type": dtype, "unit": unit, "help": help});
    json!({
        "files": FILES.iter().map(|f| json!({
            "name": f.name, "file": f.file, "row": f.row,
            "columns": f.columns.iter().map(column).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "series": SERIES.iter().map(|(name, key, unit, help)| json!({"name": name, "key": key, "unit": unit, "help": help})).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Sim, SimConfig};

    /// Every series a run records is declared, and none is declared twice.
    #[test]
    fn every_series_the_engine_records_is_declared() {
        let mut names: Vec<&str> = SERIES.iter().map(|s| s.0).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SERIES.len());
        let mut cfg: SimConfig = crate::bench::incast_config(2 * crate::engine::PS_PER_MS);
        let l = &cfg.links[0];
        cfg.trace_ports = vec![format!("{}->{}", l.b, l.a), format!("{}->{}", l.a, l.b)];
        let mut sim = Sim::new(&cfg, 0).unwrap();
        sim.run_until(u64::MAX);
        let r = sim.finish().unwrap();
        assert!(!r.series.is_empty());
        for s in &r.series {
            assert!(
                names.contains(&s.series.as_str()),
                "{} is not declared in outputs::SERIES",
                s.series
            );
        }
    }
}

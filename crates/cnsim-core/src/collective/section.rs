//! `[[jobs]]` and their `phases`: the declarations (keys, units, defaults,
//! rules) that docs, `cnsim show` and both layers' checks come from, and
//! the records they are read into.

use crate::params::{Range, Table};
use serde::Deserialize;

/// The collectives a phase may run and the algorithms of each (the first
/// is the default).
pub const COLLECTIVES: &[(&str, &[&str])] = &[
    ("allreduce", &["ring", "tree"]),
    ("allgather", &["ring"]),
    ("reducescatter", &["ring"]),
    ("alltoall", &["pairwise", "shift"]),
    ("broadcast", &["ring"]),
];

/// `[[jobs]]`: one table per job.
pub fn jobs() -> Table {
    Table::new(
        "jobs",
        "Collective jobs ([[jobs]], docs/collectives.md): ranks placed on hosts,\na sequence of phases (compute for a time, then a collective of a size)\nrepeated for a number of iterations; the collectives' flows wait for\nthe flows they need (net::deps). Results: collectives.parquet,\niterations.parquet, the run's collective metrics.",
    )
    .string("name", "", "the job's name (none: job0, job1, ... in order)")
    .optional("name", "job<i>")
    .int("ranks", 8, Range::ge(2.0).le(1_048_576.0), "number of ranks (processes, one per host unless allow_shared_hosts)")
    .strings("hosts", "the hosts ranks may be placed on, in order (none: every station)")
    .optional("hosts", "every station")
    .choice(
        "placement",
        &["in_order", "random", "listed"],
        "in_order",
        "in_order: rank i on the i-th host; random: the hosts shuffled with placement_seed, rank i on the i-th of them; listed: rank i on hosts[i] (hosts lists one per rank)",
    )
    .int("placement_seed", 1, Range::ge(0.0), "placement = random: the shuffle's seed (the run's seed does not move ranks)")
    .flag(
        "allow_shared_hosts",
        false,
        "more ranks than hosts: ranks wrap around the hosts (rank i on host i mod hosts); data between two ranks of one host is taken as moved at once (it does not cross the network)",
    )
    .int("iterations", 1, Range::ge(1.0).le(1_000_000.0), "times the phases are repeated (training steps)")
    .float("start_ms", 0.0, Range::ge(0.0), "when the job's first phase starts its compute")
    .int("priority", 0, Range::ge(0.0).le(7.0), "802.1p priority of the job's flows (none: the stations' own)")
    .optional("priority", "the stations' own")
    .opaque(
        "phases",
        "phases",
        serde_json::json!([]),
        "the phases of one iteration, in order: tables of compute_us, collective, algorithm, size_bytes, chunk_bytes, chunks_in_flight, root (see [[jobs.phases]])",
    )
    .required("phases")
}

/// One phase of a job (`[[jobs.phases]]`).
pub fn phases() -> Table {
    Table::new(
        "phases",
        "One phase of a job's iteration ([[jobs.phases]]): each rank computes\nfor compute_us once it is done with the previous phase, then the\nranks run one collective of size_bytes (NCCL's sizes: an all-reduce's\nbuffer, an all-gather's output, an all-to-all's send buffer per rank).",
    )
    .float("compute_us", 0.0, Range::ge(0.0), "each rank's compute before the collective, from when it is done with the previous phase")
    .choice(
        "collective",
        &["allreduce", "allgather", "reducescatter", "alltoall", "broadcast"],
        "allreduce",
        "allreduce, allgather, reducescatter, alltoall or broadcast",
    )
    .required("collective")
    .choice(
        "algorithm",
        &["ring", "tree", "pairwise", "shift"],
        "ring",
        "allreduce: ring (reduce-scatter then all-gather over the ranks in order) or tree (NCCL's double binary tree, half the data on each); allgather, reducescatter, broadcast: ring; alltoall: pairwise (round r: rank i exchanges with i xor r, or i +/- r when ranks are not a power of two; a round starts when the rank's exchange chunks_in_flight rounds before is done) or shift (round r: rank i sends to i + r once its own send chunks_in_flight rounds before was received)",
    )
    .optional("algorithm", "ring; alltoall: pairwise")
    .int("size_bytes", 0, Range::ge(1.0).le(crate::params::MAX_BYTES as f64), "the collective's size (bytes; NCCL's count x type size)")
    .required("size_bytes")
    .int(
        "chunk_bytes",
        1_048_576,
        Range::ge(1.0).le(crate::params::MAX_BYTES as f64),
        "ring / tree / broadcast: each step's data is cut into chunks of this many bytes, pipelined (alltoall: one flow per pair)",
    )
    .int(
        "chunks_in_flight",
        2,
        Range::ge(1.0).le(1024.0),
        "chunks of one step a rank sends at once (a chunk waits for the one this many before it); alltoall: rounds a rank runs at once (a round waits for the one this many before it)",
    )
    .int("root", 0, Range::ge(0.0), "broadcast: the rank that holds the data")
}

/// A job as written (the declared table, checked).
#[derive(Debug, Clone, Deserialize)]
pub struct JobSpec {
    #[serde(default)]
    pub name: Option<String>,
    pub ranks: u32,
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    pub placement: String,
    pub placement_seed: u64,
    pub allow_shared_hosts: bool,
    pub iterations: u32,
    pub start_ms: f64,
    #[serde(default)]
    pub priority: Option<u8>,
    pub phases: Vec<serde_json::Value>,
}

/// A phase as written (the declared table, checked).
#[derive(Debug, Clone, Deserialize)]
pub struct PhaseSpec {
    pub compute_us: f64,
    pub collective: String,
    #[serde(default)]
    pub algorithm: Option<String>,
    pub size_bytes: u64,
    pub chunk_bytes: u64,
    pub chunks_in_flight: u32,
    pub root: u32,
}

//! The transport flows' declarations: `[workload]` and `[[workloads]]`
//! (their keys, units, defaults and rules; sections.rs lists them with
//! the other sections).

use crate::params::{Range, Table};

const MAX_BYTES: f64 = crate::params::MAX_BYTES as f64;

/// Most flows `workload.max_flows` may allow: the flow-level model's
/// (fidelity = "flow"); the packet model's flow ids index its events
/// (engine/queue.rs MAX_INDEX = 2^22 - 1 = 4,194,303), so with it at most
/// 4 M (less room for a Poisson count above its mean: 2,000 = 1 standard
/// deviation at 4 M), which the Python layer checks against `fidelity`.
pub const MAX_FLOWS: f64 = 1e9;
/// Flows one run may start by default (`workload.max_flows`).
pub const DEFAULT_MAX_FLOWS: i64 = 1_000_000;

/// Transport flows with sizes (`[workload]`): the Python layer generates
/// the flows (or the Poisson arrivals) from it, so the engine sees it
/// resolved (`transport`) and checks it as written ([`check_written`]); its
/// rules against the rest of the scenario (hosts that are stations, a
/// receiver among them, the run's length) are the Python layer's.
pub fn workload() -> Table {
    Table::new(
        "workload",
        "Transport flows with sizes (docs/scenario-format.md \"Flows\"): the\nstations' transports send them, acknowledge them and recover losses;\nresults give each flow's completion time (FCT) and slowdown.",
    )
    .choice(
        "kind",
        &["poisson", "incast", "permutation", "long_lived", "matrix", "none"],
        "poisson",
        "poisson (arrivals at every host, sizes from `cdf`, to uniform destinations), incast (`fan_in` senders to one receiver), permutation (host i to host i + n/2), long_lived (`fan_in` senders to one receiver, flows longer than the run by default), matrix (the flows of a connection matrix `file`, the Ultra Ethernet reference simulator's format), none (no flows of its own: the transport's settings for the flows of [[jobs]])",
    )
    .required("kind")
    .strings("hosts", "the stations taking part (none: every station)")
    .optional("hosts", "every station")
    .opaque(
        "cdf",
        "cdf",
        "websearch",
        "poisson: flow-size CDF: websearch, hadoop, a file of 'size_bytes probability' lines, or the points inline [[size_bytes, probability], ...] (a saved scenario holds a file's points inline)",
    )
    .string(
        "cdf_source",
        "",
        "where inline cdf points were read from: the file and the SHA-256 of its bytes (written by cnsim when it saves a scenario; informational)",
    )
    .optional("cdf_source", "none")
    .string(
        "file",
        "",
        "matrix: a connection-matrix file (`Nodes N`, `Connections C`, lines `SRC->DST [id K] start T|trigger J size B ...`, start in us; node i is the i-th host), or the name of one of cnsim's (one.cm, incast.cm, incast_128.cm, perm_16n_16c_2MB.cm, perm_1024n_1024c_0u_2000000b.cm: the reference's published cases)",
    )
    .optional("file", "none (kind = \"matrix\" needs one)")
    .float(
        "load",
        0.5,
        Range::gt(0.0).le(1.0),
        "poisson: mean offered load of each host, as a fraction of its link rate",
    )
    .int("fan_in", 16, Range::ge(1.0).le(65535.0), "incast / long_lived: number of senders")
    .string("receiver", "", "incast / long_lived: the receiver (none: the first host)")
    .optional("receiver", "the first host")
    .int(
        "size_bytes",
        0,
        Range::ge(1.0).le(MAX_BYTES),
        "incast / permutation / long_lived: bytes per flow (none: 500,000; long_lived 2^40)",
    )
    .optional("size_bytes", "500,000; long_lived 2^40")
    .float(
        "period_us",
        0.0,
        Range::ge(1e-6),
        "incast: repeated every period (none: once; at least 1 ps)",
    )
    .optional("period_us", "once")
    .float("start_ms", 0.0, Range::ge(0.0), "first flows (poisson: arrivals from)")
    .float("end_ms", 0.0, Range::ge(0.0), "no flow starts after (none: the run end)")
    .optional("end_ms", "the run end")
    .int(
        "header_bytes",
        0,
        Range::ge(0.0).le(65535.0),
        "bytes of each data frame that are headers, not the flow's payload: a flow of size_bytes is sent in frames carrying frame_bytes - header_bytes of it, the last its rest plus a header (0: a flow's size is its bytes on the wire; below defaults.frame_bytes)",
    )
    .int(
        "ack_every",
        1,
        Range::ge(1.0).le(65535.0),
        "the receiver acknowledges every N frames in order",
    )
    .float(
        "rto_us",
        4000.0,
        Range::ge(1.0),
        "retransmission timeout: go back N when nothing was acknowledged for this long (RDMA NICs: '4.096 us x 2^k', milliseconds; at least 1 us: below a data-center RTT every frame would time out and be sent again, 1 ns meant minutes of retransmissions)",
    )
    .flag("end_when_done", true, "the run ends when the last flow has finished")
    .int(
        "priority",
        0,
        Range::ge(0.0).le(7.0),
        "802.1p priority (traffic class, 0-7) of the workload's data, set on its sending hosts (a station's NIC sends one priority: two workloads with different priorities need hosts of their own)",
    )
    .optional("priority", "the stations' own ([station] / [[nodes]] priority)")
    .int(
        "max_flows",
        DEFAULT_MAX_FLOWS,
        Range::ge(1.0).le(MAX_FLOWS),
        "most flows a run may start: a workload expected to start more (poisson: load x hosts x link rate x arrival window / mean size; incast: fan_in x incasts) is refused before anything runs; at most 4000000 with fidelity = packet (the packet model indexes no more)",
    )
    .rule(&["start_ms", "end_ms"], "start_ms < end_ms", |v| {
        v.get("end_ms").is_none_or(|e| v.f("start_ms") < e)
    })
}

/// The keys of the one transport every flow shares: `[workload]`'s only.
const TRANSPORT_KEYS: [&str; 4] = ["header_bytes", "ack_every", "rto_us", "end_when_done"];

/// Further workloads beside `[workload]` (`[[workloads]]`): the same keys
/// but those of the one transport every flow shares ([`TRANSPORT_KEYS`]),
/// and a scheme of their own.
pub fn workloads() -> Table {
    let mut t = workload()
        .string(
            "scheme",
            "",
            "the scheme of the workload's flows, when not the run's (a CP marks each frame by its own class's scheme, so the workload needs a priority of its own); pairs one run can hold: dcqcn, hpcc, timely or nocm (PFC alone) beside dctcp",
        )
        .optional("scheme", "the run's scheme");
    t.params.retain(|p| !TRANSPORT_KEYS.contains(&p.name));
    t.name = "workloads";
    t.doc = "More transport flows beside `[workload]` ([[workloads]], one table\neach): another CDF, load, set of hosts, priority or scheme (RDMA\nbeside TCP: the `rdma_tcp` scenario). The one transport's keys\n(header_bytes, ack_every, rto_us, end_when_done) are `[workload]`'s.";
    t
}

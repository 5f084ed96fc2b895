//! The scenario's own sections (`[pause]`, `[defaults]`, `[bridge]`,
//! `[station]`), each parameter declared once ([`crate::params::Table`]):
//! the engine checks a configuration against these tables
//! ([`crate::config::SimConfig::validate_scalars`]), and the Python models,
//! `cnsim show`, the CLI help and docs/scenario-format.md are generated from
//! them (`declarations.json`). A station's or bridge's parameters that a
//! `[[nodes]]` entry may override are listed in the table's `per_node`.

use crate::error::{fail, ConfigError};
use crate::params::{shown, Range, Table, MAX_GBPS, MIN_GBPS};
use serde_json::{Map, Value};

pub use crate::generators::{
    topology, topology_fattree, topology_innocent, topology_kary_fattree, topology_leafspine, topology_pods, MAX_HOSTS,
};
pub use crate::workloads::{workload, workloads, DEFAULT_MAX_FLOWS, MAX_FLOWS};

/// The engine's limits, declared once (`crate::params`).
const MAX_BYTES: f64 = crate::params::MAX_BYTES as f64;

/// IEEE 802.3x PAUSE.
pub fn pause() -> Table {
    Table::new(
        "pause",
        "IEEE 802.3x PAUSE (on with `--pause`, `--scheme pause` or `enabled =\ntrue`). The published thresholds are used as given; lossless operation\nneeds headroom above XOFF (docs/schemes.md), and drops that still occur\nare counted, never hidden.",
    )
    .flag("enabled", false, "PAUSE on (CLI: --pause / --no-pause)")
    .int("xoff_bytes", 140_000, Range::ge(0.0).le(MAX_BYTES), "XOFF threshold")
    .int("xon_bytes", 130_000, Range::ge(0.0).le(MAX_BYTES), "XON threshold")
    .choice(
        "trigger",
        &["auto", "output_queue", "ingress", "partition"],
        "auto",
        "what the thresholds watch: output_queue (an output queue; auto for per_output and infinite), partition (a per-input partition; auto for per_input), ingress (bytes per ingress port; auto for shared), or auto (by buffer mode)",
    )
    .int("quanta", 65535, Range::ge(1.0).le(65535.0), "pause_time of an XOFF, in quanta of 512 bit times")
    .choice(
        "mode",
        &["pause", "pfc"],
        "pause",
        "pause (IEEE 802.3x: an XOFF stops every data frame on the link; what the 802.1Qau scenarios use) | pfc (IEEE 802.1Qbb priority-based flow control: XOFF / XON per ingress port and priority, counted per (ingress, priority), for the lossless priorities only; frames of the other priorities are never paused)",
    )
    .ints(
        "lossless",
        &[3, 4],
        Range::ge(0.0).le(7.0),
        0,
        "mode = pfc: the lossless priorities (802.1p), each paused on its own (SONiC's default: 3 and 4)",
    )
    .flag(
        "watchdog",
        false,
        "mode = pfc: the PFC watchdog (SONiC's): a bridge port's lossless queue that stays paused with frames waiting for watchdog_detection_ms is stormed: watchdog_action applies to it until no PFC frame has paused it for watchdog_restoration_ms",
    )
    .float("watchdog_detection_ms", 200.0, Range::gt(0.0), "how long a queue stays paused with frames waiting before it is stormed")
    .float("watchdog_restoration_ms", 200.0, Range::gt(0.0), "how long a stormed queue must go without a PFC frame before it is restored")
    .float("watchdog_poll_ms", 20.0, Range::gt(0.0), "how often the watchdog looks at the queues (detection takes up to one poll longer)")
    .flag(
        "deadlock_detector",
        true,
        "mode = pfc: every deadlock_poll_ms, look for a cycle of bridge ports each paused at a lossless priority with frames waiting on the next (a cyclic buffer dependency: Guo et al., SIGCOMM 2016); the first is named in the run's counters (deadlock_cycle) and the event trace (kind deadlock)",
    )
    .float("deadlock_poll_ms", 1.0, Range::gt(0.0), "how often the deadlock detector looks")
    .choice(
        "watchdog_action",
        &["drop", "forward"],
        "drop",
        "what a stormed queue does: drop (its frames and those that arrive for it are dropped, PFC frames for it ignored) | forward (PFC frames for it are ignored: it sends)",
    )
    // Checked whether PAUSE is on or not: a sweep that turns it on must not
    // meet thresholds that cannot work.
    .rule(&["xon_bytes", "xoff_bytes"], "xon_bytes <= xoff_bytes", |v| {
        v.f("xon_bytes") <= v.f("xoff_bytes")
    })
    .rule(&["mode", "lossless"], "a lossless priority with mode = pfc", |v| {
        v.s("mode") != Some("pfc") || !v.ints("lossless").is_empty()
    })
    .rule(&["mode", "trigger"], "trigger auto or ingress with mode = pfc (PFC counts per ingress port and priority)", |v| {
        v.s("mode") != Some("pfc") || matches!(v.s("trigger"), Some("auto" | "ingress"))
    })
    .rule(&["watchdog", "mode"], "the watchdog with mode = pfc", |v| {
        !v.flag("watchdog") || v.s("mode") == Some("pfc")
    })
}

/// Frame sizes, and the rate and delay of links that set none.
pub fn defaults() -> Table {
    Table::new(
        "defaults",
        "Frame sizes, and link rate / delay for links that do not set their own.",
    )
    .int("frame_bytes", 1500, Range::ge(64.0).le(65535.0), "data frame size on the wire")
    .int(
        "control_frame_bytes",
        64,
        Range::ge(1.0).le(65535.0),
        "PAUSE / congestion-notification frame size on the wire",
    )
    .float(
        "link_rate_gbps",
        10.0,
        Range::ge(MIN_GBPS).le(MAX_GBPS),
        "link rate of links that set none (at least 1 bit/s)",
    )
    .float(
        "link_delay_us",
        0.5,
        Range::ge(0.0),
        "propagation delay, each way, of links that set none",
    )
}

/// Every bridge's parameters; a bridge node may override those in `per_node`.
pub fn bridge() -> Table {
    Table::new("bridge", "Defaults for every bridge; a bridge node may override each key.")
        .choice(
            "buffer_mode",
            &["per_output", "per_input", "shared", "dynamic", "mmu", "infinite"],
            "per_output",
            "buffer accounting: per_output (B bytes per output port), per_input (each input owns B bytes of every output buffer), shared (B bytes per switch), dynamic (B bytes per switch, an output queue at most dt_alpha x the free buffer: dynamic thresholds, Choudhury and Hahne), mmu (B bytes per switch as a shared-buffer switch keeps them: per (ingress port, priority) a reserve, a share of a pool with a dynamic threshold, and for lossless priorities a headroom; lossy priorities capped per (output port, priority) by their own dynamic threshold; docs/classes.md), infinite",
        )
        .int(
            "buffer_bytes",
            150_000,
            Range::ge(0.0).le(MAX_BYTES),
            "B in the sense of buffer_mode; ignored for infinite",
        )
        .float("latency_us", 1.0, Range::ge(0.0), "store-and-forward latency")
        .float(
            "dt_alpha",
            1.0,
            Range::gt(0.0).le(1e6),
            "dynamic buffers: alpha, the share of the free buffer one queue may take",
        )
        .int(
            "reserve_bytes",
            4096,
            Range::ge(0.0).le(MAX_BYTES),
            "mmu buffers: bytes reserved for each (ingress port, priority in use), taken before the shared pool",
        )
        .float(
            "ingress_alpha",
            0.125,
            Range::gt(0.0).le(1e6),
            "mmu buffers: the dynamic threshold of the shared pool: an (ingress port, priority) may hold ingress_alpha x the pool still free beyond its reserve; a lossless one past it is paused (PFC) and its frames go to headroom",
        )
        .float(
            "egress_alpha",
            1.0,
            Range::gt(0.0).le(1e6),
            "mmu buffers: the dynamic threshold of a lossy priority's output queue: it may hold egress_alpha x the pool still free; a lossy frame past it is dropped (lossless priorities have no egress threshold: they are paused instead)",
        )
        .int_or(
            "headroom_bytes",
            &["auto"],
            "auto",
            Range::ge(0.0).le(MAX_BYTES),
            "mmu buffers: headroom per (ingress port, lossless priority), what may still arrive after the XOFF; auto: computed per port from its link's rate and propagation delay, the largest frame, the PFC frame and the bridge's latency (docs/classes.md, \"Headroom\")",
        )
        .float(
            "ingress_alpha_ref_gbps",
            0.0,
            Range::ge(MIN_GBPS).le(MAX_GBPS),
            "mmu buffers: the port rate ingress_alpha is for: an ingress port k doublings faster gets ingress_alpha x 2^k (at most 1), as the HPCC artifact's dynamic PFC threshold takes one shift less per doubling of a port's rate above the NIC's (docs/hpcc-benchmark.md)",
        )
        .optional("ingress_alpha_ref_gbps", "none: ingress_alpha at every port")
        .int(
            "xon_offset_bytes",
            3072,
            Range::ge(0.0).le(MAX_BYTES),
            "mmu buffers: a paused (ingress port, lossless priority) resumes when its headroom is empty and its shared bytes + this are within the threshold",
        )
        .float(
            "ecn_kmin_bytes",
            0.0,
            Range::ge(0.0).le(MAX_BYTES),
            "the bridge's own RED profile for ECN marking, replacing the scheme's (dcqcn.kmin_bytes .., dctcp.k_bytes) at every queue of its CPs: no frame is marked while the queue holds at most this",
        )
        .optional("ecn_kmin_bytes", "none: the scheme's marking")
        .float(
            "ecn_kmax_bytes",
            0.0,
            Range::ge(0.0).le(MAX_BYTES),
            "the bridge's RED profile: frames are marked with a probability rising linearly from 0 at ecn_kmin_bytes to ecn_pmax here, every frame above (equal to ecn_kmin_bytes: DCTCP's step)",
        )
        .optional("ecn_kmax_bytes", "none: the scheme's marking")
        .float(
            "ecn_pmax",
            1.0,
            Range::gt(0.0).le(1.0),
            "the bridge's RED profile: the marking probability at ecn_kmax_bytes (read only with ecn_kmin_bytes and ecn_kmax_bytes)",
        )
        .float(
            "ecn_ref_gbps",
            0.0,
            Range::ge(MIN_GBPS).le(MAX_GBPS),
            "the port rate the bridge's RED profile is written for: a port of rate R marks from ecn_kmin_bytes x R / this to ecn_kmax_bytes x R / this (ECN thresholds by link rate, as the HPCC artifact's KMIN_MAP / KMAX_MAP scale them; a [[ports]] entry's own profile is taken as written)",
        )
        .optional("ecn_ref_gbps", "none: the same thresholds at every port")
        .rule(&RED_PAIR, RED_TOGETHER, red_together)
        .rule(&RED_PAIR, RED_ORDERED, red_ordered)
        .rule(&["ecn_ref_gbps", "ecn_kmin_bytes"], "ecn_ref_gbps scales the bridge's RED profile: set ecn_kmin_bytes and ecn_kmax_bytes with it", red_ref_has_profile)
        .ints(
            "strict_priorities",
            &[],
            Range::ge(0.0).le(7.0),
            0,
            "data priorities (802.1p, 0-7) each output port serves by strict priority, the highest first, ahead of the ETS classes (802.1Qaz); control frames are always served first",
        )
        .ints(
            "ets_weights",
            &[1; 8],
            Range::ge(0.0).le(1000.0),
            8,
            "ETS weights of priorities 0-7: the classes not in strict_priorities share what the strict ones leave by deficit-weighted round robin, a quantum of weight x frame_bytes per round (a weight of 0: only what the others leave)",
        )
        .rule(&["strict_priorities"], "strict_priorities distinct", strict_distinct)
        .rule(&["ets_weights"], "ets_weights not all 0", some_weight)
        .per_node(&["buffer_mode", "buffer_bytes", "latency_us", "strict_priorities", "ets_weights"])
}

/// Every station's parameters; a station node may override those in `per_node`.
pub fn station() -> Table {
    Table::new("station", "Defaults for every station; a station node may override each key.")
        .int(
            "nic_buffer_bytes",
            150_000,
            Range::ge(1.0).le(MAX_BYTES),
            "NIC transmit buffer; only PAUSE (or a stopped link) fills it, see nic_full",
        )
        .int(
            "rlq_bytes",
            150_000,
            Range::ge(1.0).le(MAX_BYTES),
            "capacity of each rate-limiter queue; a full RLQ drops new frames of its flow (dropped_rl, part of dropped_rp)",
        )
        .float("processing_us", 2.0, Range::ge(0.0), "reaction time to a notification")
        .choice(
            "rl_scope",
            &["flow", "cp"],
            "flow",
            "[derived] which rate limiter a notification acts on: flow (one RL per flow (source, destination), slowed by every CP on its path; its frames carry the CPID of the CP that last slowed it) | cp (one RL per CPID, flows mapped to the CP that last slowed them: the BCN proposal's reading); docs/calibration.md section 4",
        )
        .choice(
            "nic_full",
            &["defer", "drop"],
            "defer",
            "[derived] a frame for a full NIC FIFO (PAUSE holds the link): defer (the generator holds it back: not generated, nothing lost, counted in frames_deferred) | drop (dropped at the NIC: dropped_nic, part of dropped_rp)",
        )
        .choice(
            "rl_order",
            &["round_robin", "in_order"],
            "round_robin",
            "a flow whose RL is created while frames of it wait in the NIC FIFO: round_robin (schemes.md: the link serves the FIFO and the RLQs in turn, so the RLQ can overtake the flow's older frames; frames_reordered counts them) | in_order (with rl_scope = flow, the new RL sends nothing until those frames have left: no flow is reordered); docs/calibration.md section 4",
        )
        .int(
            "priority",
            3,
            Range::ge(0.0).le(7.0),
            "802.1p priority (traffic class, 0-7) of the station's data frames: its open-loop traffic and the transport flows it sends; notifications and acknowledgements travel as control frames, ahead of every data class",
        )
        .per_node(&["nic_buffer_bytes", "rlq_bytes", "processing_us", "priority"])
}

/// Most keys of a recorded series family (`stats.max_series_keys`).
pub const MAX_SERIES_KEYS: f64 = 1e6;

/// What a run counts beyond the run-wide, per-link and per-node counters.
pub fn stats() -> Table {
    Table::new(
        "stats",
        "What a run counts beyond the run-wide, per-link and per-node counters.",
    )
    .flag_or(
        "per_flow",
        &["auto"],
        "auto",
        "true, false or auto: per-flow (source x destination) counters and the flows table; auto: on up to 256 stations, else per source and per destination only (the nodes table's bytes_from_* / bytes_to_* columns)",
    )
    .int(
        "max_series_keys",
        1024,
        Range::ge(0.0).le(MAX_SERIES_KEYS),
        "a per-destination, per-link or per-port series family is recorded only when it has at most this many keys (and so is the default of trace.ports)",
    )
}

/// The measurement window (`windows[0]` of the engine config).
pub fn measure() -> Table {
    Table::new(
        "measure",
        "The measurement window: throughput, time paused and overhead of the summary are averaged over it.",
    )
    .float("start_ms", 0.0, Range::ge(0.0), "window start (ms)")
    .float("end_ms", 0.0, Range::gt(0.0), "window end (ms; none: the run end)")
    .optional("end_ms", "the run end")
    .rule(&["start_ms", "end_ms"], "start_ms < end_ms", |v| {
        v.get("end_ms").is_none_or(|e| v.f("start_ms") < e)
    })
}

/// A named measurement window (`[windows.NAME]`).
pub fn window() -> Table {
    Table::new(
        "windows",
        "Extra named measurement windows. Flows and links report their throughput over every window (`throughput_gbps_NAME` in `flows.parquet` / `links.parquet`). The name `measure` is reserved.",
    )
    .float("start_ms", 0.0, Range::ge(0.0), "window start (ms)")
    .required("start_ms")
    .float("end_ms", 0.0, Range::gt(0.0), "window end (ms)")
    .required("end_ms")
    .rule(&["start_ms", "end_ms"], "start_ms < end_ms", |v| v.f("start_ms") < v.f("end_ms"))
}

/// Most time-series bins a run records per series (`config::MAX_BINS`).
pub const MAX_BINS: f64 = 1e7;
/// Most replications of one scenario.
pub const MAX_SEEDS: f64 = 1e6;

/// The scenario's own keys (the top level of the file; errors name them
/// alone, `duration_ms`).
pub fn top() -> Table {
    Table::new("", "The scenario's own keys; the tables below are its sections.")
        .string("name", "scenario", "scenario name (results directory, reports)")
        .string("description", "", "one line shown by `cnsim list`")
        .float("duration_ms", 0.0, Range::ge(1e-9), "run length (at least 1 ps)")
        .required("duration_ms")
        .count_or_list(
            "seeds",
            1,
            Range::ge(1.0).le(MAX_SEEDS),
            "replications: a count N (seeds 0..N-1) or a list of distinct seeds",
        )
        .float("bin_us", 100.0, Range::ge(1e-6), "time-series bin width (at least 1 ps)")
        .string("scheme", "nocm", "congestion-management scheme (cnsim list; pause = nocm with PAUSE on)")
        .choice(
            "fidelity",
            &["packet", "flow"],
            "packet",
            "which model answers: packet (every frame) or flow (the flow-level model of docs/flow-level.md: the same flows, topology, routing and seeds, each flow's FCT from per-link fluid shares corrected by per-link packet runs; transport flows only, approximate, with its error stated there)",
        )
        .strings(
            "cp_ports",
            "CP detection on exactly these ports FROM->TO (default: cp = true bridges)",
        )
        .choice(
            "routing",
            &["shortest_path", "ecmp", "fattree"],
            "shortest_path",
            "routing function: shortest_path (fewest hops through bridges; ties to the lowest-numbered port), ecmp (fewest hops; among equal-cost next hops a hash of the run's seed, the bridge and the flow, so a flow keeps one path; the default with a leafspine [topology]) or fattree (the up-port rule of scenarios.md section 7, destination mod k; the default with a fattree [topology])",
        )
        .rule(
            &["duration_ms", "bin_us"],
            "at most 10000000 time-series bins (duration_ms x 1000 / bin_us)",
            |v| v.f("duration_ms") * 1e3 / v.f("bin_us") <= MAX_BINS,
        )
}

/// A rate that may also be 0 (a stopped link): 0 or at least 1 bit/s.
fn stopped_or_a_bit(v: f64) -> bool {
    v == 0.0 || v >= MIN_GBPS
}

/// An output-generated hotspot (`[hotspot]`): the engine sees it only as
/// two `link_rate` events and the `hotspot` window, so it is checked as the
/// user wrote it ([`check_written`]).
pub fn hotspot() -> Table {
    Table::new(
        "hotspot",
        "Output-generated hotspot: the link into `node` runs at `rate_gbps` from `start_ms` to `end_ms`. It becomes two `link_rate` events and a window named `hotspot` (used by `bottleneck_utilization`).",
    )
    .string("node", "", "the hot station: the link into it slows down")
    .required("node")
    .float(
        "rate_gbps",
        0.0,
        Range::ge(0.0).le(MAX_GBPS),
        "its service rate during the hotspot (0 = stopped, else >= 1 bit/s)",
    )
    .required("rate_gbps")
    .float("start_ms", 0.0, Range::ge(0.0), "hotspot start")
    .required("start_ms")
    .float("end_ms", 0.0, Range::gt(0.0), "hotspot end; the link's configured rate is restored")
    .required("end_ms")
    .rule(&["rate_gbps"], "rate_gbps = 0 (stopped) or >= 1e-09 (1 bit/s)", |v| {
        stopped_or_a_bit(v.f("rate_gbps"))
    })
    .rule(&["start_ms", "end_ms"], "start_ms < end_ms", |v| v.f("start_ms") < v.f("end_ms"))
}

/// The trace's event kinds, `all` first (`crate::io::events::Kind`'s names).
pub fn event_kinds() -> &'static [&'static str] {
    static KINDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KINDS.get_or_init(|| {
        std::iter::once("all")
            .chain(crate::io::events::Kind::ALL.iter().map(|k| k.name()))
            .collect()
    })
}

/// What a run records beyond its counters: queue and rate-limiter series,
/// the event trace and packet captures (`[trace]`). The engine config holds
/// it resolved (`trace_ports`, and `trace` only when something is recorded),
/// so it is checked as the user wrote it ([`check_written`]).
pub fn trace() -> Table {
    Table::new(
        "trace",
        "Ports whose queue_bytes time series, and rate limiters whose rate and RLQ series, are recorded; the event trace (events.parquet) and packet captures (pcapng) of docs/looking-at-frames.md.",
    )
    .strings(
        "ports",
        "ports FROM->TO whose queue_bytes / queue_bytes_max series are recorded (none: every output port of a cp = true bridge, or cp_ports when given)",
    )
    .optional("ports", "every output port of a cp = true bridge, or cp_ports when given")
    .strings(
        "rate_limiters",
        "rate limiters whose rl_rate / rlq_bytes series are recorded: STATION|DEST (the flow's source and destination, rl_scope = flow) or STATION|FROM->TO (the station and its CP port, rl_scope = cp); none: all, at most 256. A transport flow's sender only when named (its rate, and rl_window_bytes for a window scheme; the flows between one pair share a series)",
    )
    .optional("rate_limiters", "all, at most 256")
    .choices(
        "events",
        event_kinds(),
        "event kinds recorded in events.parquet, one row each: all, or any of the kinds of docs/looking-at-frames.md; [] (default): no event trace",
    )
    .strings("event_nodes", "events.parquet: only events at these nodes ([]: every node)")
    .strings(
        "event_ports",
        "events.parquet: only events at these ports FROM->TO ([]: every port; events at no port, such as rate changes, are then left out)",
    )
    .strings(
        "event_flows",
        "events.parquet: only events of these flows SRC|DST ([]: every flow; events of no flow, such as PAUSE, are then left out)",
    )
    .float("from_ms", 0.0, Range::ge(0.0), "events.parquet and pcap: from this time")
    .float("to_ms", 0.0, Range::gt(0.0), "events.parquet and pcap: before this time (none: the run end)")
    .optional("to_ms", "the run end")
    .int(
        "max_rows",
        10_000_000,
        Range::ge(1.0).le(4.611_686_018_427_388e18),
        "events.parquet keeps at most this many rows per seed (the first ones; a warning says when the cap was reached)",
    )
    .strings(
        "pcap",
        "ports FROM->TO whose frames are captured for Wireshark: one pcapng file per port and seed in pcap/ (also --pcap PORT)",
    )
    .int(
        "snaplen",
        65535,
        Range::ge(64.0).le(65535.0),
        "bytes of each frame a capture keeps (default: whole frames; payloads are zero); Wireshark labels a RoCEv2 data frame cut short 'Invalid Packet Length'",
    )
    .int(
        "pcap_max_bytes",
        1_000_000_000,
        Range::ge(1.0).le(4.611_686_018_427_388e18),
        "bytes the captures of one seed may take, all ports together (the first frames; a warning says when the cap was reached)",
    )
    .rule(&["from_ms", "to_ms"], "from_ms < to_ms", |v| {
        v.get("to_ms").is_none_or(|t| v.f("from_ms") < t)
    })
}

/// A full-duplex link (`[[links]]`, one table per entry, each named by its
/// ends: `links.A-B`).
pub fn link() -> Table {
    Table::new("links", "A full-duplex link between two nodes.")
        .string("a", "", "one end (node name)")
        .required("a")
        .string("b", "", "the other end (node name)")
        .required("b")
        .float(
            "rate_gbps",
            0.0,
            Range::ge(MIN_GBPS).le(MAX_GBPS),
            "link rate, both directions (none: [defaults])",
        )
        .optional("rate_gbps", "[defaults]")
        .float("delay_us", 0.0, Range::ge(0.0), "propagation delay, each way (none: [defaults], or from cable_m)")
        .optional("delay_us", "[defaults], or from cable_m")
        .float(
            "cable_m",
            0.0,
            Range::ge(0.0).le(1e6),
            "cable length; sets the propagation delay, 5 ns per metre each way (light in fibre or copper at about 2/3 c), instead of delay_us",
        )
        .optional("cable_m", "none: delay_us")
        .rule(&["delay_us", "cable_m"], "delay_us or cable_m, not both", |v| {
            v.get("delay_us").is_none() || v.get("cable_m").is_none()
        })
}

/// One bridge port's own transmission selection (`[[ports]]`, `ports[i]`),
/// over its bridge's (`strict_priorities`, `ets_weights`).
pub fn port() -> Table {
    Table::new(
        "ports",
        "One bridge port's own settings: its transmission selection (802.1Qaz), its RED profile for ECN marking and, with mmu buffers, its headroom as an ingress; the keys it sets replace the bridge's for that port.",
    )
    .string("port", "", "the bridge's output port, FROM->TO")
    .required("port")
    .ints(
        "strict_priorities",
        &[],
        Range::ge(0.0).le(7.0),
        0,
        "as the bridge's strict_priorities, for this port (none: the bridge's)",
    )
    .optional("strict_priorities", "the bridge's")
    .ints(
        "ets_weights",
        &[1; 8],
        Range::ge(0.0).le(1000.0),
        8,
        "as the bridge's ets_weights, for this port (none: the bridge's)",
    )
    .optional("ets_weights", "the bridge's")
    .int_or(
        "headroom_bytes",
        &["auto"],
        "auto",
        Range::ge(0.0).le(MAX_BYTES),
        "mmu buffers: as the bridge's headroom_bytes, for this port as an ingress (what its upstream sends after an XOFF) (none: the bridge's)",
    )
    .optional("headroom_bytes", "the bridge's")
    .float(
        "ecn_kmin_bytes",
        0.0,
        Range::ge(0.0).le(MAX_BYTES),
        "as the bridge's ecn_kmin_bytes, for this port's queues (a RED profile per link, as ECN thresholds set by link rate) (none: the bridge's profile)",
    )
    .optional("ecn_kmin_bytes", "the bridge's")
    .float("ecn_kmax_bytes", 0.0, Range::ge(0.0).le(MAX_BYTES), "as the bridge's ecn_kmax_bytes, for this port's queues")
    .optional("ecn_kmax_bytes", "the bridge's")
    .float("ecn_pmax", 1.0, Range::gt(0.0).le(1.0), "as the bridge's ecn_pmax, for this port's queues")
    .optional("ecn_pmax", "the bridge's")
    .rule(&["strict_priorities"], "strict_priorities distinct", strict_distinct)
    .rule(&["ets_weights"], "ets_weights not all 0", some_weight)
    .rule(&RED_PAIR, RED_TOGETHER, red_together)
    .rule(&RED_PAIR, RED_ORDERED, red_ordered)
}

/// A RED profile's rules, a bridge's and a port's: its two thresholds set
/// together, in order.
const RED_PAIR: [&str; 2] = ["ecn_kmin_bytes", "ecn_kmax_bytes"];
const RED_TOGETHER: &str = "ecn_kmin_bytes and ecn_kmax_bytes both set or both not";
const RED_ORDERED: &str = "ecn_kmin_bytes <= ecn_kmax_bytes";

fn red_together(v: &crate::params::Values) -> bool {
    v.get("ecn_kmin_bytes").is_some() == v.get("ecn_kmax_bytes").is_some()
}

fn red_ref_has_profile(v: &crate::params::Values) -> bool {
    v.get("ecn_ref_gbps").is_none() || v.get("ecn_kmin_bytes").is_some()
}

fn red_ordered(v: &crate::params::Values) -> bool {
    match (v.get("ecn_kmin_bytes"), v.get("ecn_kmax_bytes")) {
        (Some(a), Some(b)) => a <= b,
        _ => true,
    }
}

/// The scheduler's rules, a bridge's and a port's: no priority named twice
/// in strict_priorities; ETS weights (when given) not all 0.
fn strict_distinct(v: &crate::params::Values) -> bool {
    let s = v.ints("strict_priorities");
    s.iter().enumerate().all(|(i, p)| !s[..i].contains(p))
}

fn some_weight(v: &crate::params::Values) -> bool {
    let w = v.ints("ets_weights");
    w.is_empty() || w.iter().any(|&w| w > 0)
}

/// An explicit next hop (`[[routes]]`, one table per entry, `routes[i]`):
/// that the names exist and `via` neighbours `bridge` is checked against
/// the built network (net/topology.rs).
pub fn route() -> Table {
    Table::new(
        "routes",
        "An explicit next hop: at `bridge`, frames for station `dst` leave towards the neighbour `via`, whatever the routing function says.",
    )
    .string("bridge", "", "the bridge")
    .required("bridge")
    .string("dst", "", "the destination station")
    .required("dst")
    .string("via", "", "the neighbour of the bridge the frames go to")
    .required("via")
}

/// A timed event (`[[events]]`, one table per entry, `events[i]`): that
/// its node is a station and its link direction exists is checked against
/// the scenario's nodes (Python) and the built network (net/build.rs).
pub fn event() -> Table {
    Table::new(
        "events",
        "A timed event: a source starts or stops, or a link direction changes\nrate. Applied in time order; events at the same time in file order (after\nthe sources' start / stop events and the hotspot's events).",
    )
    .float("at_ms", 0.0, Range::ge(0.0), "when")
    .required("at_ms")
    .choice(
        "action",
        &["start", "stop", "link_rate", "pfc_storm", "link_down"],
        "start",
        "start / stop (a station's source), link_rate (one link direction's rate), pfc_storm (a station's NIC sends PFC frames pausing `priority` on its link, refreshed before they expire, until until_ms) or link_down (the link between from and to fails, both directions, until until_ms: routes are recomputed around it, and again when it is back)",
    )
    .required("action")
    .string("node", "", "the station (start / stop)")
    .optional("node", "none")
    .string("from", "", "link_rate: sending node; link_down: one end")
    .optional("from", "none")
    .string("to", "", "link_rate: receiving node; link_down: the other end")
    .optional("to", "none")
    .float(
        "rate_gbps",
        0.0,
        Range::ge(0.0).le(MAX_GBPS),
        "link_rate: new rate (0 = stopped, else >= 1 bit/s)",
    )
    .optional("rate_gbps", "none")
    .flag(
        "scale_buffers",
        false,
        "link_rate: also scale the sending port's queue (and its header queue) and its ECN thresholds by rate_gbps / the link's configured rate, floored to whole bytes, as the Ultra Ethernet reference degrades a link (`-failed`; docs/uet.md). The port must be a bridge's with buffer_mode = \"per_output\"; the ECN thresholds are those of schemes whose CP marks between two queue thresholds (uet)",
    )
    .int("priority", 0, Range::ge(0.0).le(7.0), "pfc_storm: the priority the storm pauses")
    .optional("priority", "none")
    .float("until_ms", 0.0, Range::ge(0.0), "pfc_storm: when the storm stops; link_down: when the link is back up")
    .optional("until_ms", "none: at the end of the run")
    .rule(&["rate_gbps"], "rate_gbps = 0 (stopped) or >= 1e-09 (1 bit/s)", |v| {
        v.get("rate_gbps").is_none_or(stopped_or_a_bit)
    })
    .rule(&["action", "node"], "a start or stop event names its node", |v| {
        !matches!(v.s("action"), Some("start" | "stop")) || v.s("node").is_some()
    })
    .rule(&["action", "node", "priority"], "a pfc_storm event names its node and priority", |v| {
        v.s("action") != Some("pfc_storm") || (v.s("node").is_some() && v.get("priority").is_some())
    })
    .rule(&["action", "from", "to"], "a link_down event names from and to", |v| {
        v.s("action") != Some("link_down") || (v.s("from").is_some() && v.s("to").is_some())
    })
    .rule(&["action", "scale_buffers"], "scale_buffers belongs to a link_rate event", |v| {
        !v.flag("scale_buffers") || v.s("action") == Some("link_rate")
    })
    .rule(
        &["scale_buffers", "rate_gbps"],
        "scale_buffers needs rate_gbps > 0 (a stopped link has no queue to scale)",
        |v| !v.flag("scale_buffers") || v.f("rate_gbps") > 0.0,
    )
    .rule(&["at_ms", "until_ms"], "until_ms >= at_ms", |v| v.get("until_ms").is_none_or(|u| u >= v.f("at_ms")))
    .rule(
        &["action", "from", "to", "rate_gbps"],
        "a link_rate event names from, to and rate_gbps",
        |v| v.s("action") != Some("link_rate") || (v.s("from").is_some() && v.s("to").is_some() && v.get("rate_gbps").is_some()),
    )
}

/// A node's own keys (`[[nodes]]`, one table per entry, `nodes.NAME`); the
/// keys of `[station]` / `[bridge]` a node may also set are those tables'
/// `per_node`. Which kind owns which key, a unique name, and the names a
/// `dest` refers to are rules against the rest of the scenario (the Python
/// layer's); the engine sees a station's load and destinations, a bridge's
/// cp and ports resolved, and the sources' start / stop as events, so the
/// rule `start_ms < stop_ms` is checked as written ([`check_written`]).
pub fn node() -> Table {
    Table::new(
        "nodes",
        "A station (an end node with a NIC and a Bernoulli source) or a bridge.\nKeys marked station: or bridge: belong to that kind only; a station's\nunset keys take `[station]`'s values, a bridge's `[bridge]`'s.",
    )
    .string("name", "", "unique node name")
    .required("name")
    .nonempty("name")
    .choice("kind", &["station", "bridge"], "station", "station | bridge")
    .required("kind")
    .float(
        "load",
        0.0,
        Range::ge(0.0).le(1.0),
        "offered load: Bernoulli p per frame slot (one frame time at its link rate)",
    )
    .opaque(
        "dest",
        "dest",
        "uniform",
        "a station name, 'uniform' (all other stations, equally likely), a table of weights { A = 1.0, B = 3.0 }, or a hotspot { hotspot = \"H0\", fraction = 0.2 } (that share to the hot station, the rest uniform)",
    )
    .float("start_ms", 0.0, Range::ge(0.0), "source on at")
    .float("stop_ms", 0.0, Range::ge(0.0), "source off at (none: never)")
    .optional("stop_ms", "never")
    .flag("cp", false, "congestion-point detection on its output ports")
    .int("ports", 0, Range::ge(1.0), "number of ports; more links is an error (none: unlimited)")
    .optional("ports", "unlimited")
    .kinds(&[("station", &["load", "dest", "start_ms", "stop_ms"]), ("bridge", &["cp", "ports"])])
    .rule(&["start_ms", "stop_ms"], "start_ms < stop_ms", |v| {
        v.get("stop_ms").is_none_or(|s| v.f("start_ms") < s)
    })
}

/// Every section's table, in the order of the docs.
pub fn tables() -> Vec<Table> {
    vec![
        top(),
        measure(),
        window(),
        defaults(),
        bridge(),
        station(),
        pause(),
        hotspot(),
        trace(),
        stats(),
        link(),
        event(),
        route(),
        port(),
        workload(),
        workloads(),
        crate::collective::section::jobs(),
        crate::collective::section::phases(),
        node(),
        topology_fattree(),
        topology_leafspine(),
        topology_innocent(),
        topology_pods(),
        topology_kary_fattree(),
    ]
}

/// The sections the engine config does not hold as the user wrote them
/// (`[hotspot]` becomes events and a window, `[trace]` is resolved,
/// `[workload]` becomes the transport's flows or arrivals, an
/// event's rate is rounded to whole bit/s and its index moves behind the
/// sources' events), checked against their declarations as written:
/// `written` maps a section's name to its values (an array of tables: a
/// list, entry i named `events[i]`). The Python layer asks this before the
/// engine config is run.
pub fn check_written(written: &Map<String, Value>) -> Result<(), ConfigError> {
    for (name, values) in written {
        let table = match name.as_str() {
            "hotspot" => hotspot(),
            "trace" => trace(),
            "workload" => workload(),
            "topology" => {
                let generator = values.get("generator").and_then(Value::as_str).unwrap_or("");
                let Some(table) = topology(generator) else {
                    return Err(ConfigError::new(
                        "topology.generator",
                        format!(
                            "{} is not allowed; expected one of fattree, leafspine, innocent, pods",
                            shown(values.get("generator").unwrap_or(&Value::Null))
                        ),
                    ));
                };
                table
            }
            "nodes" => {
                // The nodes whose rules the engine config cannot show (a
                // station's stop_ms), each named by its name.
                let node = node();
                let Value::Array(entries) = values else {
                    return Err(ConfigError::new(name, "expected an array of tables"));
                };
                for (i, e) in entries.iter().enumerate() {
                    let Value::Object(e) = e else {
                        return Err(ConfigError::new(format!("nodes[{i}]"), "expected a table"));
                    };
                    let label = e
                        .get("name")
                        .and_then(Value::as_str)
                        .map_or(format!("nodes[{i}]"), |n| format!("nodes.{n}"));
                    node.check(&label, e)?;
                }
                continue;
            }
            "workloads" => {
                let table = workloads();
                let Value::Array(entries) = values else {
                    return Err(ConfigError::new(name, "expected an array of tables"));
                };
                for (i, e) in entries.iter().enumerate() {
                    let Value::Object(e) = e else {
                        return Err(ConfigError::new(format!("workloads[{i}]"), "expected a table"));
                    };
                    table.check(&format!("workloads[{i}]"), e)?;
                }
                continue;
            }
            "events" => {
                let event = event();
                let Value::Array(entries) = values else {
                    return Err(ConfigError::new(name, "expected an array of tables"));
                };
                for (i, e) in entries.iter().enumerate() {
                    let Value::Object(e) = e else {
                        return Err(ConfigError::new(format!("events[{i}]"), "expected a table"));
                    };
                    event.check(&format!("events[{i}]"), e)?;
                }
                continue;
            }
            _ => {
                return fail(
                    name,
                    "not a section checked as written (hotspot, trace, workload, workloads, topology, events, nodes)",
                )
            }
        };
        let Value::Object(values) = values else {
            return fail(name, "expected a table");
        };
        table.check(name, values)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_section_passes_its_own_defaults() {
        for t in tables() {
            // Required numbers given 1, 2, ... (times in order), names "x"
            // (also those that may be unset: an event's node), choices their
            // first.
            let given: Map<String, Value> = t
                .params
                .iter()
                .filter(|p| p.required || (p.unset.is_some() && p.kind == crate::params::Kind::Str))
                .enumerate()
                .map(|(i, p)| {
                    let v = match &p.kind {
                        crate::params::Kind::Str => json!("x"),
                        crate::params::Kind::Choice(c) => json!(c[0]),
                        _ => json!(i + 1),
                    };
                    (p.name.to_string(), v)
                })
                .collect();
            t.check(t.name, &given).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            for k in t.per_node {
                assert!(t.get(k).is_some(), "{}: per_node {k} undeclared", t.name);
            }
        }
    }

    #[test]
    fn written_sections_are_checked_as_declared() {
        let check = |v: Value| check_written(v.as_object().unwrap()).map_err(|e| e.line());
        let h = |start: f64, end: f64, rate: f64| json!({"hotspot": {"node": "D", "rate_gbps": rate, "start_ms": start, "end_ms": end}});
        assert!(check(h(1.0, 2.0, 0.0)).is_ok());
        assert!(check(h(1.0, 2.0, 1e-9)).is_ok());
        assert_eq!(
            check(h(3.0, 2.0, 1.0)).unwrap_err(),
            "hotspot.start_ms / hotspot.end_ms: 3 / 2 not allowed; expected start_ms < end_ms"
        );
        assert_eq!(
            check(h(1.0, 2.0, 1e-10)).unwrap_err(),
            "hotspot.rate_gbps: 1e-10 not allowed; expected rate_gbps = 0 (stopped) or >= 1e-09 (1 bit/s)"
        );
        assert_eq!(
            check(json!({"hotspot": {"rate_gbps": 1.0, "start_ms": 1.0, "end_ms": 2.0}})).unwrap_err(),
            "hotspot.node: required parameter is missing"
        );
        assert!(check(json!({"links": {}})).unwrap_err().starts_with("links: not a section"));
        assert_eq!(check(json!({"nodes": {}})).unwrap_err(), "nodes: expected an array of tables");
        assert!(check(json!({"trace": {"events": ["all", "drop"], "from_ms": 1.0, "to_ms": 2.0}})).is_ok());
        assert_eq!(
            check(json!({"trace": {"from_ms": 5.0, "to_ms": 5.0}})).unwrap_err(),
            "trace.from_ms / trace.to_ms: 5 / 5 not allowed; expected from_ms < to_ms"
        );
        assert!(check(json!({"trace": {"events": ["drops"]}}))
            .unwrap_err()
            .starts_with("trace.events: [\"drops\"] is not allowed; expected a list of: all, generate,"));
        // The top level names its keys alone.
        let top = |d: f64, b: f64| {
            top()
                .check("", json!({"duration_ms": d, "bin_us": b}).as_object().unwrap())
                .map_err(|e| e.line())
        };
        assert!(top(1000.0, 100.0).is_ok());
        assert_eq!(
            top(10.0, 1e-6).unwrap_err(),
            "duration_ms / bin_us: 10 / 1e-6 not allowed; expected at most 10000000 time-series bins (duration_ms x 1000 / bin_us)"
        );
        assert!(top(0.0, 1.0)
            .unwrap_err()
            .starts_with("duration_ms: 0 is not allowed; expected a number >= 1e-9"));
        // A link entry is named by its ends.
        let l = |rate: f64| {
            link()
                .check("links.S-B", json!({"a": "S", "b": "B", "rate_gbps": rate}).as_object().unwrap())
                .map_err(|e| e.line())
        };
        assert!(l(1e-9).is_ok());
        assert_eq!(
            l(0.0).unwrap_err(),
            "links.S-B.rate_gbps: 0 is not allowed; expected a number >= 1e-9 and <= 1000000"
        );
        // Events as written: an array, each entry named by its place.
        let ev = |e: Value| check(json!({ "events": [e] }));
        assert!(ev(json!({"at_ms": 1.0, "action": "stop", "node": "S"})).is_ok());
        assert!(ev(json!({"at_ms": 1.0, "action": "link_rate", "from": "B", "to": "D", "rate_gbps": 0.0})).is_ok());
        assert_eq!(
            ev(json!({"at_ms": 1.0, "action": "start"})).unwrap_err(),
            "events[0].action / events[0].node: \"start\" / null not allowed; expected a start or stop event names its node"
        );
        assert!(ev(json!({"at_ms": 1.0, "action": "link_rate", "from": "B", "to": "D"}))
            .unwrap_err()
            .ends_with("expected a link_rate event names from, to and rate_gbps"));
        assert_eq!(
            ev(json!({"at_ms": 1.0, "action": "link_rate", "from": "B", "to": "D", "rate_gbps": 1e-10})).unwrap_err(),
            "events[0].rate_gbps: 1e-10 not allowed; expected rate_gbps = 0 (stopped) or >= 1e-09 (1 bit/s)"
        );
        assert!(ev(json!({"at_ms": 0.0, "action": "link_rate", "from": "B", "to": "D", "rate_gbps": 25.0, "scale_buffers": true})).is_ok());
        assert_eq!(
            ev(json!({"at_ms": 0.0, "action": "link_rate", "from": "B", "to": "D", "rate_gbps": 0.0, "scale_buffers": true})).unwrap_err(),
            "events[0].scale_buffers / events[0].rate_gbps: true / 0 not allowed; expected scale_buffers needs rate_gbps > 0 (a stopped link has no queue to scale)"
        );
        assert_eq!(
            ev(json!({"at_ms": 0.0, "action": "stop", "node": "S", "scale_buffers": true})).unwrap_err(),
            "events[0].action / events[0].scale_buffers: \"stop\" / true not allowed; expected scale_buffers belongs to a link_rate event"
        );
        assert_eq!(
            ev(json!({"at_ms": 0.0, "action": "link_rate", "from": "B", "to": "D", "rate_gbps": 25.0, "scale_buffers": 1})).unwrap_err(),
            "events[0].scale_buffers: 1 is not allowed; expected true or false"
        );
        assert_eq!(
            ev(json!({"at_ms": -1.0, "action": "stop", "node": "S"})).unwrap_err(),
            "events[0].at_ms: -1 is not allowed; expected a number >= 0 and <= 1000000000"
        );
        assert_eq!(check(json!({"events": {}})).unwrap_err(), "events: expected an array of tables");
        // The workload as written: its rule, and its CDF left to Python.
        let w = |extra: Value| {
            let mut v = json!({"kind": "poisson", "cdf": [[1000, 0.0], [2000, 1.0]]});
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            check(json!({ "workload": v }))
        };
        assert!(w(json!({"start_ms": 1.0})).is_ok());
        assert_eq!(
            w(json!({"start_ms": 2.0, "end_ms": 2.0})).unwrap_err(),
            "workload.start_ms / workload.end_ms: 2 / 2 not allowed; expected start_ms < end_ms"
        );
        assert_eq!(
            w(json!({"max_flows": 1_000_000_001})).unwrap_err(),
            "workload.max_flows: 1000000001 is not allowed; expected an integer >= 1 and <= 1000000000"
        );
        assert_eq!(
            check(json!({"workload": {"load": 0.5}})).unwrap_err(),
            "workload.kind: required parameter is missing"
        );
        // A node as written: its rule, its dest left to Python.
        let n = |v: Value| check(json!({ "nodes": [v] }));
        assert!(n(json!({"name": "S", "kind": "station", "dest": {"D": 1.0}, "start_ms": 1.0, "stop_ms": 2.0})).is_ok());
        assert_eq!(
            n(json!({"name": "S", "kind": "station", "start_ms": 2.0, "stop_ms": 1.0})).unwrap_err(),
            "nodes.S.start_ms / nodes.S.stop_ms: 2 / 1 not allowed; expected start_ms < stop_ms"
        );
        assert_eq!(
            n(json!({"name": "", "kind": "bridge"})).unwrap_err(),
            "nodes..name: \"\" is not allowed; expected a non-empty string"
        );
        // A topology as written: its generator's table, named `topology.key`.
        assert!(check(json!({"topology": {"generator": "fattree", "k": 4, "n": 2, "dest": {"H1": 1.0}}})).is_ok());
        assert_eq!(
            check(json!({"topology": {"generator": "fattree", "k": 65}})).unwrap_err(),
            "topology.k: 65 is not allowed; expected an integer >= 2 and <= 64"
        );
        assert_eq!(
            check(json!({"topology": {"generator": "leafspine", "k": 4}})).unwrap_err(),
            "topology.k: unknown parameter; known: load, dest, pattern, fan_in, hot_host, hot_fraction, pattern_seed, cp, generator, leaves, spines, hosts_per_leaf, host_gbps, spine_gbps, oversubscription"
        );
        assert_eq!(
            check(json!({"topology": {"generator": "mesh"}})).unwrap_err(),
            "topology.generator: \"mesh\" is not allowed; expected one of fattree, leafspine, innocent, pods"
        );
        assert!(check(json!({"topology": {"generator": "innocent", "variant": "C", "degree": 10}})).is_ok());
        // The declared kinds are the trace's.
        assert_eq!(event_kinds().len(), crate::io::events::Kind::ALL.len() + 1);
    }
}

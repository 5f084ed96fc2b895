//! The scenario's own sections (`[pause]`, `[defaults]`, `[bridge]`,
//! `[station]`), each parameter declared once ([`crate::params::Table`]):
//! the engine checks a configuration against these tables
//! ([`crate::config::SimConfig::validate_scalars`]), and the Python models,
//! `cnsim show`, the CLI help and docs/scenario-format.md are generated from
//! them (`declarations.json`). A station's or bridge's parameters that a
//! `[[nodes]]` entry may override are listed in the table's `per_node`.

use crate::params::{Range, Table};

/// Largest buffer or threshold: 1 TiB (`config::MAX_BYTES`).
const MAX_BYTES: f64 = (1u64 << 40) as f64;
/// Slowest link 1 bit/s, fastest 1 Pbit/s (the engine counts whole bit/s).
const MIN_GBPS: f64 = 1e-9;
const MAX_GBPS: f64 = 1e6;

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
    // Checked whether PAUSE is on or not: a sweep that turns it on must not
    // meet thresholds that cannot work.
    .rule(&["xon_bytes", "xoff_bytes"], "xon_bytes <= xoff_bytes", |v| {
        v.f("xon_bytes") <= v.f("xoff_bytes")
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
            &["per_output", "per_input", "shared", "dynamic", "infinite"],
            "per_output",
            "buffer accounting: per_output (B bytes per output port), per_input (each input owns B bytes of every output buffer), shared (B bytes per switch), dynamic (B bytes per switch, an output queue at most dt_alpha x the free buffer: dynamic thresholds, Choudhury and Hahne), infinite",
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
        .per_node(&["buffer_mode", "buffer_bytes", "latency_us"])
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
        .per_node(&["nic_buffer_bytes", "rlq_bytes", "processing_us"])
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

/// Every section's table, in the order of the docs.
pub fn tables() -> Vec<Table> {
    vec![measure(), window(), defaults(), bridge(), station(), pause(), stats()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map, Value};

    #[test]
    fn every_section_passes_its_own_defaults() {
        for t in tables() {
            // Required parameters given 1, 2, ... (times in order: the only
            // ones required).
            let given: Map<String, Value> = t
                .params
                .iter()
                .filter(|p| p.required)
                .enumerate()
                .map(|(i, p)| (p.name.to_string(), json!(i + 1)))
                .collect();
            t.check(t.name, &given).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            for k in t.per_node {
                assert!(t.get(k).is_some(), "{}: per_node {k} undeclared", t.name);
            }
        }
    }

    #[test]
    fn the_engine_defaults_are_the_declared_ones() {
        let p = crate::config::PauseConfig::default();
        let d = pause().defaults();
        assert_eq!(
            (p.xoff_bytes, p.xon_bytes, p.quanta as u64),
            (
                d["xoff_bytes"].as_u64().unwrap(),
                d["xon_bytes"].as_u64().unwrap(),
                d["quanta"].as_u64().unwrap()
            )
        );
        assert_eq!(defaults().defaults()["frame_bytes"], 1500);
        let c = crate::config::SimConfig::new(1, vec![], vec![], vec![], vec![]);
        assert_eq!(json!(c.max_series_keys), stats().defaults()["max_series_keys"]);
    }
}

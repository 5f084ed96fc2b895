//! The event trace and the captures on whole runs: a traced run's results
//! are the untraced run's, and what the files hold agrees with the counters.

use arrow_array::{Array, RecordBatch, StringArray, UInt64Array};
use cnsim_core::bench::{incast_config, singlehop_config, star_config};
use cnsim_core::config::{FlowConfig, SchemeConfig, SimConfig};
use cnsim_core::engine::PS_PER_MS;
use cnsim_core::scheme::bcn::BcnParams;
use cnsim_core::scheme::dcqcn::DcqcnParams;
use cnsim_core::scheme::qcn::QcnParams;
use cnsim_core::trace::{TraceOutput, TraceSummary};
use cnsim_core::{RunResult, Sim};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cnsim-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The results as JSON, wall-clock figures left out.
fn results(r: &RunResult) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("engine");
    v
}

fn traced(cfg: &SimConfig, seed: u64, name: &str) -> (RunResult, TraceSummary, PathBuf) {
    let dir = tmp(name);
    let r = Sim::with_trace(
        cfg,
        seed,
        &TraceOutput {
            dir: dir.clone(),
            run: vec![("cnsim.test".into(), "yes".into())],
        },
    )
    .unwrap()
    .run()
    .unwrap();
    let t = r.trace.clone().expect("a traced run reports its files");
    (r, t, dir)
}

fn read_events(path: &str) -> Vec<RecordBatch> {
    let f = std::fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn strings<'a>(b: &'a RecordBatch, col: &str) -> &'a StringArray {
    b.column_by_name(col).unwrap().as_any().downcast_ref::<StringArray>().unwrap()
}

/// A DCQCN incast of transport flows with PFC: CNPs, ACKs, PAUSE.
fn dcqcn_flows(duration_ms: u64) -> SimConfig {
    let mut cfg = star_config(4, 0.0, duration_ms * PS_PER_MS, 0);
    cfg.events.clear();
    cfg.pause.enabled = true;
    cfg.pause.xoff_bytes = 60_000;
    cfg.pause.xon_bytes = 40_000;
    cfg.scheme = SchemeConfig::of("dcqcn", &DcqcnParams::default());
    cfg.transport.flows = (1..=4)
        .map(|i| FlowConfig {
            src: format!("S{i}").into(),
            dst: "D".into(),
            size_bytes: 2_000_000,
            start_ps: 0,
            priority: None,
            after: vec![],
            after_delay_ps: 0,
            tag: None,
        })
        .collect();
    cfg
}

fn every_event(cfg: &mut SimConfig, pcap: &[&str]) {
    cfg.trace.events = vec!["all".into()];
    cfg.trace.pcap = pcap.iter().map(|s| s.to_string()).collect();
}

#[test]
fn a_traced_run_has_the_untraced_runs_results() {
    let short = |mut c: SimConfig| {
        c.events.retain(|e| e.at_ps() < c.duration_ps);
        c
    };
    let qcn = SchemeConfig::of("qcn", &QcnParams::default());
    let qcn_cfg = short(singlehop_config(1_000_000_000, 120 * PS_PER_MS, true, qcn));
    let bcn = SchemeConfig::of("bcn", &BcnParams::default());
    let bcn_cfg = short(singlehop_config(1_000_000_000, 120 * PS_PER_MS, false, bcn));
    let cases: Vec<(&str, SimConfig, Vec<&str>)> = vec![
        // Express forwarding and lazily draining ports (no event per hop).
        ("incast", incast_config(20 * PS_PER_MS), vec!["B0->D", "B1->B0"]),
        ("qcn-pause", qcn_cfg, vec!["SW->H0", "SW->H3"]),
        ("bcn", bcn_cfg, vec!["SW->H0", "SW->H3"]),
        ("dcqcn-flows", dcqcn_flows(5), vec!["B0->D", "D->B0", "B0->B1"]),
    ];
    for (name, mut cfg, pcap) in cases {
        let plain = Sim::new(&cfg, 1).unwrap().run().unwrap();
        every_event(&mut cfg, &pcap);
        let (r, t, dir) = traced(&cfg, 1, name);
        assert_eq!(results(&r), results(&plain), "{name}: tracing changed the results");
        assert!(t.rows > 1000, "{name}: {} rows", t.rows);
        assert_eq!(t.pcap.len(), pcap.len());
        assert!(t.pcap.iter().all(|p| p.frames > 0), "{name}: {:?}", t.pcap);
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn the_dequeue_rows_of_a_port_are_its_frames_sent_and_drops_its_drop_counters() {
    let mut cfg = incast_config(10 * PS_PER_MS);
    every_event(&mut cfg, &["B0->D"]);
    let (r, t, dir) = traced(&cfg, 0, "counts");
    let batches = read_events(t.events_file.as_deref().unwrap());
    let (mut sent, mut drops, mut delivered) = (0u64, 0u64, 0u64);
    for b in &batches {
        let (kind, port, reason) = (strings(b, "kind"), strings(b, "port"), strings(b, "reason"));
        let time = b.column_by_name("time_ps").unwrap().as_any().downcast_ref::<UInt64Array>().unwrap();
        for i in 0..b.num_rows() {
            assert!(time.value(i) < r.end_ps);
            match kind.value(i) {
                "dequeue" if !port.is_null(i) && port.value(i) == "B0->D" => sent += 1,
                "drop" => {
                    assert_eq!(reason.value(i), "output_buffer_full");
                    drops += 1;
                }
                "deliver" => delivered += 1,
                _ => {}
            }
        }
    }
    let link = r.links.iter().find(|l| l.name == "B0->D").unwrap();
    assert_eq!(sent, link.frames);
    assert_eq!(t.pcap[0].frames, link.frames);
    assert_eq!(drops, r.frames.counts.dropped_cp);
    assert_eq!(delivered, r.frames.counts.delivered);
    assert!(drops > 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_trace_file_names_its_run_and_seed() {
    let mut cfg = incast_config(PS_PER_MS);
    every_event(&mut cfg, &["B0->D"]);
    let (_, t, dir) = traced(&cfg, 7, "identity");
    let f = std::fs::File::open(t.events_file.as_deref().unwrap()).unwrap();
    let meta = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().metadata().clone();
    let kv: std::collections::HashMap<String, Option<String>> = meta
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .map(|k| (k.key.clone(), k.value.clone()))
        .collect();
    assert_eq!(kv["cnsim.seed"].as_deref(), Some("7"));
    assert_eq!(kv["cnsim.test"].as_deref(), Some("yes"));
    // The capture's section header block carries the same, as its comment option.
    let bytes = std::fs::read(&t.pcap[0].file).unwrap();
    let shb_len = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    let shb = String::from_utf8_lossy(&bytes[..shb_len]);
    assert!(shb.contains("cnsim.test=yes; cnsim.seed=7"), "{shb}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_row_cap_stops_the_trace_and_says_when() {
    let mut cfg = incast_config(5 * PS_PER_MS);
    cfg.trace.events = vec!["dequeue".into()];
    cfg.trace.max_rows = 1000;
    let (_, t, dir) = traced(&cfg, 0, "cap");
    assert_eq!(t.rows, 1000);
    let at = t.capped_at_ps.expect("the cap was reached");
    let batches = read_events(t.events_file.as_deref().unwrap());
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 1000);
    let last = batches.last().unwrap();
    let time = last
        .column_by_name("time_ps")
        .unwrap()
        .as_any()
        .downcast_ref::<UInt64Array>()
        .unwrap();
    assert!(time.value(time.len() - 1) <= at);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_trace_configs_name_the_parameter() {
    type Case = (fn(&mut SimConfig), &'static str);
    let cases: Vec<Case> = vec![
        (
            |c| c.trace.events = vec!["drops".into()],
            "trace.events: 'drops' is not an event kind",
        ),
        (|c| c.trace.event_nodes = vec!["X".into()], "trace.event_nodes: no node 'X'"),
        (
            |c| c.trace.event_ports = vec!["B0-D".into()],
            "trace.event_ports: no link direction 'B0-D'",
        ),
        (
            |c| c.trace.event_flows = vec!["S1|B0".into()],
            "trace.event_flows: 'S1|B0' is not allowed",
        ),
        (|c| c.trace.pcap = vec!["D->S1".into()], "trace.pcap: no link direction 'D->S1'"),
        (|c| c.trace.snaplen = 10, "trace.snaplen: 10 is not allowed"),
        (|c| c.trace.max_rows = 0, "trace.max_rows: 0 is not allowed"),
    ];
    for (set, msg) in cases {
        let mut cfg = incast_config(PS_PER_MS);
        set(&mut cfg);
        // Checked with or without somewhere to write.
        let e = Sim::new(&cfg, 0).err().expect("refused").line();
        assert!(e.starts_with(msg), "{e}");
    }
}

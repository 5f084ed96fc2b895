//! `events.parquet` (one seed's part): the trace's rows, kept as
//! fixed-width values in a chunk and written as one Parquet row group each
//! time the chunk fills, so a long trace never holds more than one chunk in
//! memory. Names (nodes, ports, flows, kinds, reasons) become strings only
//! when a chunk is written; Parquet stores them dictionary-encoded.
//!
//! Columns (docs/looking-at-frames.md): seed, time_ps, time_us, kind, node,
//! port, frame, flow, flow_id, seq, born_ps, bytes, queue_bytes, reason,
//! quanta, priority, note, fb, cpid, cp, qoff, qdelta, ecn, rate_gbps,
//! window_bytes.

use crate::engine::Time;
use crate::error::ConfigError;
use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, UInt16Array, UInt32Array, UInt64Array, UInt8Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Port id of an event that happens at no port.
pub const NO_PORT: u32 = u32::MAX;

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $name { $($(#[$vm])* $v),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v),+];

            /// The name the trace gives it.
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }

            pub fn from_name(s: &str) -> Option<$name> {
                match s { $($s => Some($name::$v),)+ _ => None }
            }
        }
    };
}

named_enum! {
    /// What happened (the trace's `kind` column).
    Kind {
        /// A station made a data frame (an open-loop source, or a flow's
        /// sender when its link takes the frame).
        Generate = "generate",
        /// A flow's sender sent a frame again (after a NACK or a timeout).
        Retransmit = "retransmit",
        /// A frame joined a queue (`reason` says which: nic, rlq, output, control).
        Enqueue = "enqueue",
        /// A frame started leaving a port (what a capture of the port sees).
        Dequeue = "dequeue",
        /// A data frame reached its destination station.
        Deliver = "deliver",
        /// A data frame was lost (`reason` says why).
        Drop = "drop",
        /// A source could not make a frame: its NIC FIFO was full (nic_full = defer).
        Defer = "defer",
        /// The receiver of a flow discarded a frame beyond a gap (go-back-N).
        Discard = "discard",
        /// A selective receiver (UET) kept a data frame that arrived beyond a
        /// gap (`reason`: out_of_order), to acknowledge it selectively.
        Hold = "hold",
        /// A bridge cut a data frame to its header at a full queue (UET's
        /// trimming; `reason`: arriving, or queued: the last frame queued).
        Trim = "trim",
        /// A trimmed frame's header reached its flow's receiver.
        TrimRx = "trim_rx",
        /// A CP marked a data frame (ECN CE; QCN three-point's mark).
        Mark = "mark",
        /// A bridge or station queued a PAUSE / PFC frame (`reason`: xoff, xon, refresh).
        PauseTx = "pause_tx",
        /// A transmitter received a PAUSE / PFC frame.
        PauseRx = "pause_rx",
        /// A transmitter became paused.
        PauseOn = "pause_on",
        /// A transmitter's pause ended (`reason`: xon, expired, run_end).
        PauseOff = "pause_off",
        /// The PFC watchdog stormed or restored a port's queue (`reason`:
        /// stormed, restored; `priority`: the queue's).
        Watchdog = "watchdog",
        /// The deadlock detector found a cycle of ports each paused at a
        /// lossless priority with frames waiting on the next: one row per
        /// port of the cycle (`priority`: the cycle's).
        Deadlock = "deadlock",
        /// A CP or a notification point sent a congestion notification.
        CnTx = "cn_tx",
        /// A congestion notification reached its reaction point.
        CnRx = "cn_rx",
        /// A flow's receiver sent an ACK / a NACK.
        AckTx = "ack_tx",
        NackTx = "nack_tx",
        /// A flow's sender received an ACK / a NACK.
        AckRx = "ack_rx",
        NackRx = "nack_rx",
        /// A flow's retransmission timer fired.
        Rto = "rto",
        /// A rate limiter's rate or window changed (`reason`: created, released).
        Rate = "rate",
        /// A transport flow started (its sender) / received its last byte (its receiver).
        FlowStart = "flow_start",
        FlowEnd = "flow_end",
    }
}

named_enum! {
    /// Why (the trace's `reason` column; its meaning depends on the kind).
    Reason {
        None = "",
        // enqueue: which queue
        Nic = "nic",
        Rlq = "rlq",
        Output = "output",
        Control = "control",
        // drop
        OutputBufferFull = "output_buffer_full",
        InputPartitionFull = "input_partition_full",
        SharedBufferFull = "shared_buffer_full",
        DynamicThreshold = "dynamic_threshold",
        HeadroomFull = "headroom_full",
        EgressThreshold = "egress_threshold",
        NoRoute = "no_route",
        RlqFull = "rlq_full",
        NicFull = "nic_full",
        Watchdog = "watchdog",
        HeaderQueueFull = "header_queue_full",
        // trim (and drop, with trimming off): which frame
        Arriving = "arriving",
        Queued = "queued",
        // discard
        OutOfOrder = "out_of_order",
        // pause
        Xoff = "xoff",
        Xon = "xon",
        Refresh = "refresh",
        Expired = "expired",
        RunEnd = "run_end",
        // watchdog
        Stormed = "stormed",
        Restored = "restored",
        // rate
        Created = "created",
        Released = "released",
        // ack_tx
        Duplicate = "duplicate",
    }
}

/// Rows per chunk (and so per Parquet row group).
pub const CHUNK_ROWS: usize = 1 << 15;

/// What kind of frame a row is about (the `frame` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameCol {
    Data,
    Pause,
    Note,
    Ack,
    Nack,
    /// A data frame cut to its header (UET's trimming).
    Trimmed,
}

impl FrameCol {
    pub fn name(self) -> &'static str {
        match self {
            FrameCol::Data => "data",
            FrameCol::Pause => "pause",
            FrameCol::Note => "note",
            FrameCol::Ack => "ack",
            FrameCol::Nack => "nack",
            FrameCol::Trimmed => "trimmed",
        }
    }
}

/// One row of the trace, as fixed-width values (None: null).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventRow {
    pub time_ps: Time,
    pub kind: Kind,
    /// Node index.
    pub node: u32,
    /// Port id (`NO_PORT`: none).
    pub port: u32,
    pub frame: Option<FrameCol>,
    /// (source, destination) station indices.
    pub flow: Option<(u32, u32)>,
    pub flow_id: Option<u32>,
    pub seq: Option<u32>,
    pub born_ps: Option<Time>,
    pub bytes: Option<u64>,
    pub queue_bytes: Option<u64>,
    pub reason: Reason,
    pub quanta: Option<u16>,
    pub priority: Option<u8>,
    pub note: Option<&'static str>,
    pub fb: Option<f64>,
    /// The engine's CPID (the CP's port id + 1).
    pub cpid: Option<u32>,
    pub qoff: Option<f64>,
    pub qdelta: Option<f64>,
    pub ecn: Option<bool>,
    pub rate_bps: Option<f64>,
    pub window_bytes: Option<u64>,
}

impl EventRow {
    /// A row of `kind` at `node` / `port` and `time_ps`, every other field null.
    pub fn new(time_ps: Time, kind: Kind, node: u32, port: u32) -> EventRow {
        EventRow {
            time_ps,
            kind,
            node,
            port,
            frame: None,
            flow: None,
            flow_id: None,
            seq: None,
            born_ps: None,
            bytes: None,
            queue_bytes: None,
            reason: Reason::None,
            quanta: None,
            priority: None,
            note: None,
            fb: None,
            cpid: None,
            qoff: None,
            qdelta: None,
            ecn: None,
            rate_bps: None,
            window_bytes: None,
        }
    }
}

/// The names rows refer to by index.
#[derive(Clone, Debug, Default)]
pub struct EventNames {
    /// Node names by node index (stations first: station s is node s).
    pub nodes: Vec<String>,
    /// Port names (FROM->TO) by port id.
    pub ports: Vec<String>,
}

/// The schema of events.parquet.
pub fn schema() -> SchemaRef {
    let f = |name: &str, t: DataType, nullable: bool| Field::new(name, t, nullable);
    Arc::new(Schema::new(vec![
        f("seed", DataType::Int64, false),
        f("time_ps", DataType::UInt64, false),
        f("time_us", DataType::Float64, false),
        f("kind", DataType::Utf8, false),
        f("node", DataType::Utf8, false),
        f("port", DataType::Utf8, true),
        f("frame", DataType::Utf8, true),
        f("flow", DataType::Utf8, true),
        f("flow_id", DataType::UInt32, true),
        f("seq", DataType::UInt32, true),
        f("born_ps", DataType::UInt64, true),
        f("bytes", DataType::UInt64, true),
        f("queue_bytes", DataType::UInt64, true),
        f("reason", DataType::Utf8, true),
        f("quanta", DataType::UInt16, true),
        f("priority", DataType::UInt8, true),
        f("note", DataType::Utf8, true),
        f("fb", DataType::Float64, true),
        f("cpid", DataType::UInt32, true),
        f("cp", DataType::Utf8, true),
        f("qoff", DataType::Float64, true),
        f("qdelta", DataType::Float64, true),
        f("ecn", DataType::Boolean, true),
        f("rate_gbps", DataType::Float64, true),
        f("window_bytes", DataType::UInt64, true),
    ]))
}

/// A string column of `rows`, one value (or null) per row.
fn string_column<'a>(rows: &[EventRow], f: &dyn Fn(&EventRow) -> Option<&'a str>) -> ArrayRef {
    let mut b = StringBuilder::with_capacity(rows.len(), rows.len() * 8);
    for r in rows {
        b.append_option(f(r));
    }
    Arc::new(b.finish())
}

/// Writes one seed's rows to a Parquet file, a row group per chunk.
pub struct EventWriter {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    chunk: Vec<EventRow>,
    names: Arc<EventNames>,
    seed: u64,
    rows: u64,
    path: PathBuf,
}

fn err(path: &Path, e: impl std::fmt::Display) -> String {
    format!("trace: {}", cannot_write(path, e))
}

/// What failed writing the file, without the `trace: ` its one line starts with.
fn cannot_write(path: &Path, e: impl std::fmt::Display) -> String {
    format!("cannot write {}: {e}", path.display())
}

impl EventWriter {
    /// A writer of a new file at `path`; an error names `trace`, the
    /// section that asked for it.
    pub fn create(path: &Path, seed: u64, names: Arc<EventNames>) -> Result<EventWriter, ConfigError> {
        let at = |e: &dyn std::fmt::Display| ConfigError::new("trace", cannot_write(path, e));
        let file = File::create(path).map_err(|e| at(&e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(CHUNK_ROWS))
            .build();
        let schema = schema();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| at(&e))?;
        Ok(EventWriter {
            writer,
            schema,
            chunk: Vec::with_capacity(CHUNK_ROWS),
            names,
            seed,
            rows: 0,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn push(&mut self, row: EventRow) -> Result<(), String> {
        self.chunk.push(row);
        self.rows += 1;
        if self.chunk.len() >= CHUNK_ROWS {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Writes the chunk as one row group and empties it.
    fn flush_chunk(&mut self) -> Result<(), String> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let batch = self.batch().map_err(|e| err(&self.path, e))?;
        self.writer.write(&batch).map_err(|e| err(&self.path, e))?;
        self.writer.flush().map_err(|e| err(&self.path, e))?;
        self.chunk.clear();
        Ok(())
    }

    fn batch(&self) -> Result<RecordBatch, arrow_schema::ArrowError> {
        let rows = &self.chunk;
        let names = &self.names;
        let n = rows.len();
        let port_name = |p: u32| (p != NO_PORT).then(|| names.ports[p as usize].as_str());
        let mut flows = StringBuilder::with_capacity(n, n * 8);
        for r in rows {
            match r.flow {
                Some((s, d)) => {
                    let _ = write!(flows, "{}|{}", names.nodes[s as usize], names.nodes[d as usize]);
                    flows.append_value("");
                }
                None => flows.append_null(),
            }
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![self.seed as i64; n])),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.time_ps))),
            Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.time_ps as f64 / 1e6))),
            string_column(rows, &|r| Some(r.kind.name())),
            string_column(rows, &|r| Some(names.nodes[r.node as usize].as_str())),
            string_column(rows, &|r| port_name(r.port)),
            string_column(rows, &|r| r.frame.map(FrameCol::name)),
            Arc::new(flows.finish()),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.flow_id))),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.seq))),
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.born_ps))),
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.bytes))),
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.queue_bytes))),
            string_column(rows, &|r| (r.reason != Reason::None).then(|| r.reason.name())),
            Arc::new(UInt16Array::from_iter(rows.iter().map(|r| r.quanta))),
            Arc::new(UInt8Array::from_iter(rows.iter().map(|r| r.priority))),
            string_column(rows, &|r| r.note),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.fb))),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.cpid))),
            string_column(rows, &|r| r.cpid.and_then(|c| port_name(c - 1))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.qoff))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.qdelta))),
            Arc::new(BooleanArray::from_iter(rows.iter().map(|r| r.ecn))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.rate_bps.map(|x| x / 1e9)))),
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.window_bytes))),
        ];
        RecordBatch::try_new(self.schema.clone(), columns)
    }

    /// Writes the last chunk and the footer, with `metadata` (key, value)
    /// pairs; returns the rows written.
    pub fn finish(mut self, metadata: &[(&str, String)]) -> Result<u64, String> {
        self.flush_chunk()?;
        for (k, v) in metadata {
            self.writer.append_key_value_metadata(KeyValue::new(k.to_string(), v.clone()));
        }
        let path = self.path.clone();
        self.writer.close().map_err(|e| err(&path, e))?;
        Ok(self.rows)
    }
}

//! The recording tracer: filters the events (kind, node, port, flow, time
//! window), stops at a row cap, writes the rows to events.parquet and the
//! frames leaving the captured ports to pcapng files. It also keeps what a
//! row or a captured frame needs beyond the event itself: each port's PAUSE
//! state (so that a pause that simply expired gets its `pause_off` row),
//! each rate limiter's last recorded rate and window, the fields of the
//! notifications in flight, and the size of each flow in frames.

use super::{FlowView, Kind, NoteOrigin, Reason, RlKey, RlView, Site, Tracer, NO_PORT};
use crate::config::{fail, ConfigError, TraceConfig};
use crate::engine::Time;
use crate::frame::{Frame, FrameKind, NO_FLOW, NO_NODE};
use crate::io::events::{EventNames, EventRow, EventWriter, FrameCol};
use crate::io::pcap::PcapWriter;
use crate::io::wire::{self, NoteInfo, WireFrame, CONTROL_PRIORITY, DATA_PRIORITY};
use crate::scheme::{NoteFormat, Scheme};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a traced run writes: `DIR/events.seed<K>.parquet` and
/// `DIR/pcap/<FROM>-to-<TO>.seed<K>.pcapng`.
#[derive(Clone, Debug, Default)]
pub struct TraceOutput {
    pub dir: PathBuf,
    /// The run these files belong to, as (key, value) pairs (the caller's
    /// own words: cnsim's Python writes the scenario's SHA-256): kept in the
    /// events file's footer and in each capture's section header comment,
    /// beside `cnsim.seed`, so a results directory can tell another run's
    /// trace file from its own.
    pub run: Vec<(String, String)>,
}

/// What a traced run wrote.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceSummary {
    /// The events file (None: no event kind asked for).
    pub events_file: Option<String>,
    pub rows: u64,
    pub max_rows: u64,
    /// The time of the first event the row cap refused (None: not reached).
    pub capped_at_ps: Option<Time>,
    pub pcap: Vec<PcapFile>,
    /// The captures' byte cap (all ports of the seed together).
    pub pcap_max_bytes: u64,
    /// When the first frame the byte cap refused left its port (None: not reached).
    pub pcap_capped_at_ps: Option<Time>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PcapFile {
    pub port: String,
    pub file: String,
    pub frames: u64,
    /// The file's length.
    pub bytes: u64,
}

/// The network a trace refers to (built by net/build.rs).
#[derive(Clone, Debug)]
pub struct TraceNet {
    pub names: EventNames,
    pub n_stations: usize,
    /// Per port: the node that transmits on it.
    pub port_owner: Vec<u32>,
    /// Control frames' length (bytes).
    pub ctrl_bytes: u16,
    /// Capture PAUSE frames as 802.1Qbb PFC (runs of transport flows).
    pub pfc: bool,
}

/// A trace config checked against the network.
#[derive(Clone, Debug)]
pub struct TracePlan {
    /// Bit `k` set: kind `k` is recorded.
    kinds: u64,
    nodes: Option<Vec<bool>>,
    ports: Option<Vec<bool>>,
    flows: Option<HashSet<(u32, u32)>>,
    from: Time,
    to: Time,
    max_rows: u64,
    pcap: Vec<u32>,
    snaplen: u32,
    pcap_max_bytes: u64,
}

/// `FROM->TO` (spaces around the names allowed) as a port id.
fn port_id(net: &TraceNet, name: &str) -> Option<u32> {
    let (a, b) = name.split_once("->")?;
    let want = format!("{}->{}", a.trim(), b.trim());
    net.names.ports.iter().position(|p| *p == want).map(|p| p as u32)
}

fn node_id(net: &TraceNet, name: &str) -> Option<u32> {
    net.names.nodes.iter().position(|n| n == name.trim()).map(|n| n as u32)
}

impl TracePlan {
    /// Checks `cfg` against the network: every name must exist.
    pub fn check(cfg: &TraceConfig, net: &TraceNet) -> Result<TracePlan, ConfigError> {
        let mut kinds = 0u64;
        for k in &cfg.events {
            if k == "all" {
                kinds = (1u64 << Kind::ALL.len()) - 1;
                continue;
            }
            match Kind::from_name(k) {
                Some(kind) => kinds |= 1 << kind as u8,
                None => {
                    let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                    return fail(
                        "trace.events",
                        format!("'{k}' is not an event kind; allowed: all, {}", names.join(", ")),
                    );
                }
            }
        }
        let nodes = if cfg.event_nodes.is_empty() {
            None
        } else {
            let mut on = vec![false; net.names.nodes.len()];
            for n in &cfg.event_nodes {
                let id = node_id(net, n).ok_or_else(|| ConfigError::new("trace.event_nodes", format!("no node '{n}'")))?;
                on[id as usize] = true;
            }
            Some(on)
        };
        let ports = if cfg.event_ports.is_empty() {
            None
        } else {
            let mut on = vec![false; net.names.ports.len()];
            for p in &cfg.event_ports {
                let id =
                    port_id(net, p).ok_or_else(|| ConfigError::new("trace.event_ports", format!("no link direction '{p}' (FROM->TO)")))?;
                on[id as usize] = true;
            }
            Some(on)
        };
        let flows = if cfg.event_flows.is_empty() {
            None
        } else {
            let mut set = HashSet::new();
            for f in &cfg.event_flows {
                let station = |s: &str| node_id(net, s).filter(|&n| (n as usize) < net.n_stations);
                let pair = f.split_once('|').and_then(|(a, b)| Some((station(a)?, station(b)?)));
                let (a, b) = pair.ok_or_else(|| {
                    ConfigError::new("trace.event_flows", format!("'{f}' is not allowed; expected SRC|DST, two stations"))
                })?;
                set.insert((a, b));
            }
            Some(set)
        };
        let mut pcap = Vec::new();
        for p in &cfg.pcap {
            let id = port_id(net, p).ok_or_else(|| ConfigError::new("trace.pcap", format!("no link direction '{p}' (FROM->TO)")))?;
            if !pcap.contains(&id) {
                pcap.push(id);
            }
        }
        if cfg.to_ps <= cfg.from_ps {
            return fail(
                "trace.to_ms",
                format!(
                    "{} ms is not after trace.from_ms ({} ms)",
                    cfg.to_ps as f64 / 1e9,
                    cfg.from_ps as f64 / 1e9
                ),
            );
        }
        if cfg.max_rows == 0 {
            return fail("trace.max_rows", "0 is not allowed; expected at least 1 row");
        }
        if cfg.pcap_max_bytes == 0 {
            return fail("trace.pcap_max_bytes", "0 is not allowed; expected at least 1 byte");
        }
        if !(64..=65_535).contains(&cfg.snaplen) {
            return fail(
                "trace.snaplen",
                format!("{} is not allowed; expected 64 to 65535 bytes", cfg.snaplen),
            );
        }
        Ok(TracePlan {
            kinds,
            nodes,
            ports,
            flows,
            from: cfg.from_ps,
            to: cfg.to_ps,
            max_rows: cfg.max_rows,
            pcap,
            snaplen: cfg.snaplen,
            pcap_max_bytes: cfg.pcap_max_bytes,
        })
    }

    /// Whether anything is recorded (events or captures).
    pub fn records(&self) -> bool {
        self.kinds != 0 || !self.pcap.is_empty()
    }

    #[inline]
    fn wants(&self, kind: Kind) -> bool {
        self.kinds & (1 << kind as u8) != 0
    }

    fn passes(&self, r: &EventRow) -> bool {
        r.time_ps >= self.from
            && r.time_ps < self.to
            && self.nodes.as_ref().is_none_or(|n| n[r.node as usize])
            && self.ports.as_ref().is_none_or(|p| r.port != NO_PORT && p[r.port as usize])
            && self.flows.as_ref().is_none_or(|f| r.flow.is_some_and(|x| f.contains(&x)))
    }
}

/// A file name part from a node name: ASCII letters, digits, '.' and '_'
/// as they are, every other byte of its UTF-8 as `%XX`. A '-' is one of
/// those, so the `-to-` between the two names of a port is unambiguous and
/// two ports never share a file (`A->B-to-C` and `A-to-B->C`); a leading
/// '.' too, so no capture is a hidden file.
fn file_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, b) in s.bytes().enumerate() {
        if b.is_ascii_alphanumeric() || b == b'_' || (b == b'.' && i > 0) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// FNV-1a, 64 bits: a stable digest of a long port name (std's hasher may
/// change between Rust versions; file names must not).
fn fnv1a(s: &str) -> u64 {
    s.bytes()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The file name stem of port `name` (FROM->TO): `FROM-to-TO` with each
/// name encoded by [`file_part`]; past 200 bytes (file names stop at 255)
/// both are cut and a digest of the whole name keeps it unique (`~` never
/// appears otherwise).
pub fn capture_stem(name: &str) -> String {
    let (a, b) = name.split_once("->").unwrap_or((name, ""));
    let (a, b) = (file_part(a), file_part(b));
    if a.len() + b.len() <= 200 {
        return format!("{a}-to-{b}");
    }
    let cut = |s: &str| s.chars().take(90).collect::<String>();
    format!("{}-to-{}~{:016x}", cut(&a), cut(&b), fnv1a(name))
}

/// Longest value a capture's section header comment carries: a pcapng
/// option is at most 65,535 bytes, so a longer one (the seed list of a run
/// of thousands of seeds) is left out; the caller passes a digest of it too.
pub const COMMENT_VALUE_MAX: usize = 4096;

/// A capture's section header comment: the run's (key, value) pairs (but a
/// value longer than [`COMMENT_VALUE_MAX`]) and the seed, `key=value`
/// joined by "; " (cnsim.trace reads it back).
fn run_comment(run: &[(String, String)], seed: u64) -> String {
    run.iter()
        .filter(|(k, v)| k.len() + v.len() <= COMMENT_VALUE_MAX)
        .take(8)
        .map(|(k, v)| format!("{k}={v}"))
        .chain(std::iter::once(format!("cnsim.seed={seed}")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The tracer of a traced run.
pub struct Recorder {
    /// The run's identity (`TraceOutput::run`) and seed, written into every file.
    run: Vec<(String, String)>,
    seed: u64,
    plan: TracePlan,
    names: Arc<EventNames>,
    port_owner: Vec<u32>,
    ctrl_bytes: u16,
    pfc: bool,
    events: Option<EventWriter>,
    capped_at: Option<Time>,
    /// Per port: its capture (index into `pcaps`), if captured.
    pcap_of: Vec<Option<usize>>,
    pcaps: Vec<(u32, PcapWriter)>,
    /// Bytes the captures hold (all ports), and when the byte cap first refused a frame.
    pcap_bytes: u64,
    pcap_capped_at: Option<Time>,
    /// Per (port, priority), at port x 8 + priority: the end of the pause
    /// the trace last saw it take (None: not paused).
    pause_until: Vec<Option<Time>>,
    /// Per RL id: the rate and window last recorded.
    rl_last: Vec<Option<(f64, u64)>>,
    /// Notifications in flight, by (sent at, destination, CPID).
    notes: HashMap<(Time, u32, u32), NoteInfo>,
    /// Per transport flow: its frames.
    flow_frames: Vec<u32>,
    error: Option<String>,
}

impl Recorder {
    /// Creates the files of `plan` for run `seed` in `out`.
    pub fn new(plan: TracePlan, net: TraceNet, out: &TraceOutput, seed: u64) -> Result<Recorder, ConfigError> {
        let io = |path: &Path, e: std::io::Error| ConfigError::new("trace", format!("cannot write {}: {e}", path.display()));
        std::fs::create_dir_all(&out.dir).map_err(|e| io(&out.dir, e))?;
        let names = Arc::new(net.names);
        let events = if plan.kinds != 0 {
            let path = out.dir.join(format!("events.seed{seed}.parquet"));
            Some(EventWriter::create(&path, seed, names.clone())?)
        } else {
            None
        };
        let mut pcap_of = vec![None; names.ports.len()];
        let mut pcaps = Vec::new();
        if !plan.pcap.is_empty() {
            let dir = out.dir.join("pcap");
            std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
            // Names that differ only in case would share a file on a
            // case-insensitive filesystem: the later one gets its port id.
            let mut taken: HashSet<String> = HashSet::new();
            for &p in &plan.pcap {
                let name = &names.ports[p as usize];
                let mut stem = capture_stem(name);
                if !taken.insert(stem.to_ascii_lowercase()) {
                    stem = format!("{stem}~{p}");
                    taken.insert(stem.to_ascii_lowercase());
                }
                let path = dir.join(format!("{stem}.seed{seed}.pcapng"));
                let desc = format!("cnsim port {name}, seed {seed}");
                let w = PcapWriter::create(&path, name, &desc, plan.snaplen, &run_comment(&out.run, seed)).map_err(|e| io(&path, e))?;
                pcap_of[p as usize] = Some(pcaps.len());
                pcaps.push((p, w));
            }
        }
        Ok(Recorder {
            run: out.run.clone(),
            seed,
            pause_until: vec![None; names.ports.len() * 8],
            plan,
            names,
            port_owner: net.port_owner,
            ctrl_bytes: net.ctrl_bytes,
            pfc: net.pfc,
            events,
            capped_at: None,
            pcap_bytes: pcaps.iter().map(|(_, w)| w.bytes()).sum(),
            pcap_capped_at: None,
            pcap_of,
            pcaps,
            rl_last: Vec::new(),
            notes: HashMap::new(),
            flow_frames: Vec::new(),
            error: None,
        })
    }

    /// Records `row` if it passes the filters and the cap.
    fn emit(&mut self, row: EventRow) {
        let Some(w) = self.events.as_mut() else { return };
        if !self.plan.wants(row.kind) || !self.plan.passes(&row) {
            return;
        }
        if w.rows() >= self.plan.max_rows {
            self.capped_at.get_or_insert(row.time_ps);
            return;
        }
        if let Err(e) = w.push(row) {
            self.fail(e);
        }
    }

    /// The first write error stops the trace; `finish` reports it.
    fn fail(&mut self, e: String) {
        self.error.get_or_insert(e);
        self.events = None;
        self.pcaps.clear();
        self.pcap_of.iter_mut().for_each(|x| *x = None);
    }

    /// The row of frame `f` at `site`.
    fn frame_row<S: Scheme>(&self, s: &S, site: Site, kind: Kind, f: &Frame<S::Ext>) -> EventRow {
        let fields = s.ext_fields(&f.ext);
        let mut r = EventRow::new(site.at, kind, site.node, site.port);
        r.born_ps = Some(f.born);
        r.bytes = Some(f.len as u64);
        r.flow_id = (f.flow != NO_FLOW).then_some(f.flow);
        r.cpid = (f.cpid != 0).then_some(f.cpid);
        match f.kind {
            FrameKind::Data => {
                r.frame = Some(FrameCol::Data);
                r.flow = Some((f.src, f.dst));
                r.seq = Some(f.seq);
                r.priority = Some(f.prio);
                r.ecn = Some(fields.ce);
                if fields.marked_by != 0 {
                    r.fb = fields.fb;
                }
            }
            FrameKind::Pause => {
                r.frame = Some(FrameCol::Pause);
                r.quanta = Some(f.quanta());
                r.priority = Some(wire::pause_priority(f.prio));
            }
            FrameKind::Note => {
                r.frame = Some(FrameCol::Note);
                r.flow = (f.about() != NO_NODE && f.dst != NO_NODE).then_some((f.dst, f.about()));
                r.priority = Some(CONTROL_PRIORITY);
                r.note = fields.note.name();
                r.fb = fields.fb;
                if let Some(n) = self.notes.get(&(f.born, f.dst, f.cpid)) {
                    r.seq = Some(n.sampled_seq);
                    r.qoff = Some(n.qoff);
                    r.qdelta = Some(n.qdelta);
                }
            }
            FrameKind::Ack | FrameKind::Nack => {
                r.frame = Some(if f.kind == FrameKind::Ack { FrameCol::Ack } else { FrameCol::Nack });
                r.flow = Some((f.dst, f.src));
                r.seq = Some(f.seq);
                r.priority = Some(CONTROL_PRIORITY);
                r.ecn = Some(fields.ce);
                // No CP sends an acknowledgement (a selective transport's
                // `cpid` is the PSN it answers).
                r.cpid = None;
            }
            FrameKind::Trimmed => {
                r.frame = Some(FrameCol::Trimmed);
                r.flow = Some((f.src, f.dst));
                r.seq = Some(f.seq);
                r.priority = Some(CONTROL_PRIORITY);
                r.ecn = Some(fields.ce);
                // `cpid` is not a CP here: 1 marks a cut at the last hop.
                r.cpid = None;
            }
        }
        r
    }

    /// Writes `f`, leaving captured port `port` at `at`, to its capture.
    fn capture<S: Scheme>(&mut self, s: &S, at: Time, port: u32, f: &Frame<S::Ext>) {
        let Some(i) = self.pcap_of[port as usize] else { return };
        if at < self.plan.from || at >= self.plan.to {
            return;
        }
        let note = (f.kind == FrameKind::Note)
            .then(|| self.notes.get(&(f.born, f.dst, f.cpid)).copied())
            .flatten();
        let wf = WireFrame {
            kind: f.kind,
            len: f.len,
            src: f.src,
            dst: f.dst,
            about: if f.kind == FrameKind::Note { f.about() } else { NO_NODE },
            flow: f.flow,
            seq: f.seq,
            cpid: f.cpid,
            fields: s.ext_fields(&f.ext),
            port,
            n_frames: self.flow_frames.get(f.flow as usize).copied(),
            note,
            pfc: self.pfc,
            prio: f.prio,
            entropy: f.entropy,
        };
        let (bytes, wire_len) = wire::encode(&wf, self.plan.snaplen);
        // A frame shorter than its protocol's headers need (a flow's last
        // few bytes, a control frame under 64 bytes) is captured at the
        // protocol's length; its comment keeps the simulated one.
        let padded = (wire_len != f.len as u32).then(|| format!("cnsim: simulated length {} bytes", f.len));
        let need = PcapWriter::frame_bytes(bytes.len(), padded.as_deref());
        if self.pcap_bytes + need > self.plan.pcap_max_bytes {
            self.pcap_capped_at.get_or_insert(at);
            return;
        }
        self.pcap_bytes += need;
        let w = &mut self.pcaps[i].1;
        if let Err(e) = w.write(at, &bytes, wire_len, padded.as_deref()) {
            let e = format!("trace: cannot write {}: {e}", w.path().display());
            self.fail(e);
        }
    }

    /// Priority `prio` of `port` resumes at `at`.
    fn pause_off(&mut self, port: u32, prio: u8, at: Time, reason: Reason) {
        self.pause_until[port as usize * 8 + prio as usize] = None;
        let node = self.port_owner[port as usize];
        let mut r = EventRow::new(at, Kind::PauseOff, node, port);
        r.reason = reason;
        r.priority = Some(prio);
        self.emit(r);
    }
}

impl<S: Scheme> Tracer<S> for Recorder {
    const ON: bool = true;

    fn frame(&mut self, s: &S, site: Site, kind: Kind, reason: Reason, f: &Frame<S::Ext>, queue_bytes: Option<u64>) {
        let done = kind == Kind::CnRx;
        if self.plan.wants(kind) {
            let mut r = self.frame_row(s, site, kind, f);
            r.reason = reason;
            r.queue_bytes = queue_bytes;
            if kind == Kind::Mark {
                // The CP that marked it, and what it marked.
                r.cpid = Some(site.port + 1);
                let fields = s.ext_fields(&f.ext);
                r.fb = if fields.marked_by != 0 { fields.fb } else { None };
            }
            self.emit(r);
        }
        if done {
            self.notes.remove(&(f.born, f.dst, f.cpid));
        }
    }

    fn depart(&mut self, s: &S, site: Site, f: &Frame<S::Ext>, queue_bytes: u64) {
        if self.plan.wants(Kind::Dequeue) {
            let mut r = self.frame_row(s, site, Kind::Dequeue, f);
            r.queue_bytes = Some(queue_bytes);
            self.emit(r);
        }
        self.capture(s, site.at, site.port, f);
    }

    fn note_sent(&mut self, s: &S, origin: NoteOrigin, note: &Frame<S::Ext>) {
        let stop = s.ext_fields(&note.ext).note == NoteFormat::BcnStop;
        let (qoff, qdelta) = match origin.cp {
            _ if stop => (0.0, 0.0), // BCN(0,0): the message carries zeros
            Some(c) => (c.qoff, c.qdelta),
            None => (0.0, 0.0),
        };
        let info = NoteInfo {
            cp_port: origin.from_cp.then_some(origin.site.port),
            qoff,
            qdelta,
            sampled_seq: origin.sampled_seq,
        };
        self.notes.insert((note.born, note.dst, note.cpid), info);
        if self.plan.wants(Kind::CnTx) {
            let mut r = self.frame_row(s, origin.site, Kind::CnTx, note);
            r.queue_bytes = origin.queue_bytes;
            if origin.cp.is_none() && !stop {
                r.qoff = None;
                r.qdelta = None;
            }
            self.emit(r);
        }
    }

    fn pause_sent(&mut self, site: Site, prio: u8, quanta: u16, reason: Reason, in_bytes: u64) {
        let mut r = EventRow::new(site.at, Kind::PauseTx, site.node, site.port);
        r.frame = Some(FrameCol::Pause);
        r.bytes = Some(self.ctrl_bytes as u64);
        r.quanta = Some(quanta);
        r.priority = Some(prio);
        r.reason = reason;
        r.queue_bytes = Some(in_bytes);
        self.emit(r);
    }

    fn pause_received(&mut self, site: Site, classes: u8, honoured: Option<u8>, quanta: u16, until: Time) {
        let (t, port) = (site.at, site.port);
        let mut r = EventRow::new(t, Kind::PauseRx, site.node, port);
        r.frame = Some(FrameCol::Pause);
        r.bytes = Some(self.ctrl_bytes as u64);
        r.quanta = Some(quanta);
        r.priority = Some(wire::pause_priority(classes));
        self.emit(r);
        // Each priority it pauses (802.3x: the whole port, shown at the data
        // priority) is paused while now < its end (`Port::is_paused`, a
        // class's pause on a multi-class port).
        let Some(honoured) = honoured else { return };
        let mask = if honoured == 0 { 1 << DATA_PRIORITY } else { honoured };
        for prio in (0..8u8).filter(|p| mask & (1 << p) != 0) {
            let i = port as usize * 8 + prio as usize;
            if let Some(u) = self.pause_until[i] {
                if u <= t {
                    self.pause_off(port, prio, u, Reason::Expired);
                }
            }
            match self.pause_until[i] {
                None if until > t => {
                    self.pause_until[i] = Some(until);
                    let mut r = EventRow::new(t, Kind::PauseOn, site.node, port);
                    r.quanta = Some(quanta);
                    r.priority = Some(prio);
                    self.emit(r);
                }
                None => {}
                Some(_) if until <= t => self.pause_off(port, prio, t, Reason::Xon),
                Some(_) => self.pause_until[i] = Some(until),
            }
        }
    }

    fn watchdog(&mut self, site: Site, prio: u8, reason: Reason) {
        let mut r = EventRow::new(site.at, Kind::Watchdog, site.node, site.port);
        r.priority = Some(prio);
        r.reason = reason;
        self.emit(r);
    }

    fn deadlock(&mut self, site: Site, prio: u8) {
        let mut r = EventRow::new(site.at, Kind::Deadlock, site.node, site.port);
        r.priority = Some(prio);
        self.emit(r);
    }

    fn rl_state(&mut self, site: Site, rl: RlView, reason: Reason) {
        let id = rl.id as usize;
        if self.rl_last.len() <= id {
            self.rl_last.resize(id + 1, None);
        }
        let now = (rl.rate_bps, rl.window_bytes);
        match reason {
            Reason::Created => self.rl_last[id] = Some(now),
            Reason::Released => self.rl_last[id] = None,
            _ if self.rl_last[id] == Some(now) => return,
            _ => self.rl_last[id] = Some(now),
        }
        let mut r = EventRow::new(site.at, Kind::Rate, site.node, site.port);
        r.reason = reason;
        r.rate_bps = Some(rl.rate_bps);
        r.window_bytes = (rl.window_bytes != u64::MAX).then_some(rl.window_bytes);
        r.flow_id = (rl.flow != NO_FLOW).then_some(rl.flow);
        match rl.key {
            RlKey::Flow { src, dst } => r.flow = Some((src, dst)),
            RlKey::Cp { cpid, .. } => r.cpid = (cpid != 0).then_some(cpid),
        }
        self.emit(r);
    }

    fn flow(&mut self, site: Site, kind: Kind, flow: FlowView) {
        if kind == Kind::FlowStart {
            let id = flow.id as usize;
            if self.flow_frames.len() <= id {
                self.flow_frames.resize(id + 1, 0);
            }
            self.flow_frames[id] = flow.n_frames;
        }
        let mut r = EventRow::new(site.at, kind, site.node, site.port);
        r.flow = Some((flow.src, flow.dst));
        r.flow_id = Some(flow.id);
        r.bytes = Some(flow.size);
        r.seq = flow.seq;
        self.emit(r);
    }

    fn finish(&mut self, end: Time) -> Result<Option<TraceSummary>, String> {
        for i in 0..self.pause_until.len() {
            if let Some(u) = self.pause_until[i] {
                let (port, prio) = ((i / 8) as u32, (i % 8) as u8);
                if u <= end {
                    self.pause_off(port, prio, u, Reason::Expired);
                } else {
                    self.pause_off(port, prio, end, Reason::RunEnd);
                }
            }
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut summary = TraceSummary {
            max_rows: self.plan.max_rows,
            capped_at_ps: self.capped_at,
            pcap_max_bytes: self.plan.pcap_max_bytes,
            pcap_capped_at_ps: self.pcap_capped_at,
            ..TraceSummary::default()
        };
        if let Some(w) = self.events.take() {
            summary.events_file = Some(w.path().display().to_string());
            let mut meta = vec![
                ("cnsim.max_rows", self.plan.max_rows.to_string()),
                ("cnsim.capped_at_ps", self.capped_at.map_or("null".into(), |t| t.to_string())),
                ("cnsim.seed", self.seed.to_string()),
            ];
            meta.extend(self.run.iter().map(|(k, v)| (k.as_str(), v.clone())));
            summary.rows = w.finish(&meta)?;
        }
        for (port, w) in self.pcaps.drain(..) {
            let file = w.path().display().to_string();
            let bytes = w.bytes();
            let frames = w.finish().map_err(|e| format!("trace: cannot write {file}: {e}"))?;
            summary.pcap.push(PcapFile {
                port: self.names.ports[port as usize].clone(),
                file,
                frames,
                bytes,
            });
        }
        Ok(Some(summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 37 item 4: two ports never share a capture file, whatever
    /// their names (the `-to-` between the names, non-ASCII names, long ones).
    #[test]
    fn capture_names_are_distinct_for_distinct_ports() {
        assert_eq!(capture_stem("L0->H0"), "L0-to-H0");
        assert_ne!(capture_stem("A->B-to-C"), capture_stem("A-to-B->C"));
        let accented: Vec<String> = ["Ä->ß", "Ö->ß", "ä->ß", "A->ß"].iter().map(|p| capture_stem(p)).collect();
        let unique: HashSet<&String> = accented.iter().collect();
        assert_eq!(unique.len(), accented.len(), "{accented:?}");
        assert!(!capture_stem(".x->y").starts_with('.'));
        let long_a = format!("{}->B", "x".repeat(300));
        let long_b = format!("{}y->B", "x".repeat(300));
        let (a, b) = (capture_stem(&long_a), capture_stem(&long_b));
        assert_ne!(a, b);
        assert!(a.len() <= 220, "{}", a.len());
    }

    /// Issue 37 item 5: a run's value too long for a pcapng option (the
    /// seed list of thousands of seeds) is left out of the comment.
    #[test]
    fn a_long_run_value_is_left_out_of_the_capture_comment() {
        let seeds = format!("[{}]", (0..20_000).map(|s| s.to_string()).collect::<Vec<_>>().join(", "));
        let run = vec![
            ("cnsim.scenario_sha256".to_string(), "ab".repeat(32)),
            ("cnsim.seeds".to_string(), seeds),
            ("cnsim.seeds_sha256".to_string(), "cd".repeat(32)),
        ];
        let c = run_comment(&run, 7);
        assert!(c.len() < 400, "{}", c.len());
        assert!(c.contains("cnsim.seeds_sha256=") && !c.contains("cnsim.seeds=") && c.ends_with("cnsim.seed=7"));
    }
}

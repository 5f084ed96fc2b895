//! Congestion-management schemes. A scheme is one module that implements
//! [`Scheme`]: it owns the state of its three roles and its frame extension,
//! and the engine calls it at fixed points without knowing what it does.
//!
//! - the **congestion point** (CP): state per bridge output port with
//!   detection on; it sees every data frame join the queue (and, if it asks,
//!   leave it) and may answer with a notification for the frame's source, or
//!   mark the frame (its extension), e.g. with a congestion mark or per-hop
//!   telemetry;
//! - the **notification point** (NP): state per (destination, source) pair at
//!   destination stations; it sees data frames arrive and may answer their
//!   source (a reflected mark, a CNP, an acknowledgement);
//! - the **reaction point** (RP): the rate law, and if the scheme wants one
//!   the window, of a rate limiter (RL) at a source. The engine owns the RL
//!   mechanics common to every scheme (its queue, pacing at
//!   [`RlCore::rate_bps`], a window of bytes in flight, tagging with the CPID
//!   of the CP that last slowed it, round robin, release at line rate) and
//!   which RL a notification reaches (`station.rl_scope`).
//!
//! A scheme declares its parameters once ([`params::Table`]) and registers
//! in one place, its entry in [`scheme_list!`](crate::scheme_list): its
//! module, its type(s), how it is built, its tables and the names users give
//! it. Its module declaration, its [`SCHEMES`] entries, its lines of
//! [`tables`], its variant of [`AnyScheme`] and its arm of `with_scheme!` are
//! all made from that entry. Schemes are type parameters of the simulation,
//! so the per-frame path has no dynamic dispatch.

pub mod dual;
pub mod params;

// The schemes' modules, `SCHEMES`, `tables()`, `AnyScheme` and its
// `from_config`: all made from the one registry below (`scheme_list!`).
crate::scheme_list!(registry;);

use params::{Entry, Table};

use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::error::{fail, ConfigError};
use crate::frame::Frame;
use params::SchemeConfig;
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// CPID of a notification that names no congestion point.
pub const NO_CPID: u32 = 0;

/// The part of a rate limiter a scheme may change.
#[derive(Clone, Debug)]
pub struct RlCore {
    /// Current rate (bit/s); the RL paces its frames at it.
    pub rate_bps: f64,
    /// The station's line rate (bit/s); an RL at line rate with an empty
    /// queue and nothing in flight is released.
    pub line_rate_bps: f64,
    /// The RL sends nothing before this time (e.g. BCN(0,0)'s stop).
    pub stopped_until: Time,
    /// Bytes the RL may have in flight (sent and not yet acknowledged by the
    /// scheme, see `inflight_bytes`); `u64::MAX`: no window, rate only.
    pub window_bytes: u64,
    /// Bytes sent and not yet acknowledged. The engine adds each frame the
    /// RL sends; a scheme with a window subtracts what its acknowledgements
    /// cover in [`Scheme::rp_on_note`] (the transport sets it for flows).
    pub inflight_bytes: u64,
    /// A transport flow's base RTT (a full frame there and its ACK back on
    /// the empty path), known from the start; 0 for open-loop traffic.
    pub base_rtt_ps: Time,
    /// The 802.1p priority of the RL's frames (its station's): a run of two
    /// schemes gives each its priorities (scheme/dual.rs).
    pub prio: u8,
    /// A selective transport's flow: the bytes it has left to send (new
    /// and lost), and the flows of its station with frames to send, as the
    /// transport sets them before each `rp_on_send` (receiver credit asks
    /// for what is left).
    pub backlog_bytes: u64,
    pub nic_flows: u32,
}

impl RlCore {
    /// A new RL's core: at line rate, not stopped, no window, nothing in flight.
    pub fn at_line_rate(line_rate_bps: f64) -> RlCore {
        RlCore {
            rate_bps: line_rate_bps,
            line_rate_bps,
            stopped_until: 0,
            window_bytes: u64::MAX,
            inflight_bytes: 0,
            base_rtt_ps: 0,
            prio: crate::frame::DATA_PRIORITY,
            backlog_bytes: 0,
            nic_flows: 0,
        }
    }
}

/// What a CP sees of its queue when a frame joins or leaves it.
#[derive(Clone, Copy, Debug)]
pub struct QueueView {
    /// Bytes queued, including the frame (on arrival) or including the frame
    /// now leaving (on departure).
    pub bytes: u64,
    /// The port's current rate (bit/s) and the bytes it has sent so far
    /// (per-hop telemetry: HPCC's INT records both).
    pub rate_bps: u64,
    pub tx_bytes: u64,
    pub now: Time,
}

/// A RED profile for ECN marking at a queue: nothing marked up to
/// `kmin_bytes`, then with a probability rising linearly to `pmax` at
/// `kmax_bytes`, every frame past it (DCQCN's K_min, K_max, P_max; DCTCP's
/// step at K is `kmin_bytes = kmax_bytes = K`). A bridge's own profile
/// (`bridge.ecn_kmin_bytes` ...) replaces the scheme's on its queues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Red {
    pub kmin_bytes: f64,
    pub kmax_bytes: f64,
    pub pmax: f64,
}

impl Red {
    /// The marking probability at a queue of `q` bytes.
    #[inline]
    pub fn probability(&self, q: f64) -> f64 {
        if q <= self.kmin_bytes {
            0.0
        } else if q <= self.kmax_bytes {
            self.pmax * (q - self.kmin_bytes) / (self.kmax_bytes - self.kmin_bytes)
        } else {
            1.0
        }
    }

    /// The profile with both thresholds times `factor` (a profile written
    /// for one link rate, at a port `factor` times as fast).
    pub fn scaled(self, factor: f64) -> Red {
        Red {
            kmin_bytes: self.kmin_bytes * factor,
            kmax_bytes: self.kmax_bytes * factor,
            pmax: self.pmax,
        }
    }

    /// Whether to mark a frame leaving or joining a queue of `q` bytes.
    #[inline]
    pub fn marks(&self, q: f64, rng: &mut Stream) -> bool {
        let p = self.probability(q);
        p > 0.0 && (p >= 1.0 || rng.gen::<f64>() < p)
    }
}

/// What a transport event tells a flow's RL ([`Scheme::rp_on_ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// A cumulative acknowledgement.
    Ack,
    /// A negative acknowledgement: the receiver saw a gap, the sender goes
    /// back to the first frame it did not acknowledge (go-back-N).
    Nack,
    /// Nothing was acknowledged for a retransmission timeout; the sender
    /// goes back to the first unacknowledged frame.
    Timeout,
}

/// A transport acknowledgement as the flow's RL sees it.
#[derive(Clone, Copy, Debug)]
pub struct AckView {
    pub kind: AckKind,
    /// Bytes this event newly acknowledges.
    pub acked_bytes: u64,
    /// Round trip measured by this acknowledgement: now minus the time the
    /// frame it answers was sent (0 for a timeout).
    pub rtt_ps: Time,
    /// The flow's bytes acknowledged and sent so far, after this event.
    pub una_bytes: u64,
    pub nxt_bytes: u64,
    /// Wire length of the flow's full frames (the MSS, bytes).
    pub mss: u32,
    /// Links on the flow's path (Swift scales its target by them).
    pub hops: u32,
    /// The flow's base RTT: a full frame there and its ACK back on the
    /// empty network (HPCC's T, Swift's base delay).
    pub base_rtt_ps: Time,
    /// The entropy value of the data frame the acknowledgement answers
    /// (a sprayed transport's path feedback; 0 for a timeout).
    pub entropy: u16,
}

/// What a selective transport's acknowledgement carries besides its
/// cumulative point ([`Scheme::SELECTIVE`]; net::sack): written into the
/// scheme's extension by [`Scheme::sack_ack`], read back by
/// [`Scheme::sack_of`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackFields {
    /// The selective acknowledgement: bit i for PSN `base + i` received
    /// beyond the cumulative point.
    pub base: u32,
    pub bits: u64,
    /// Bytes the receiver has received in all (duplicates not counted).
    pub recvd_bytes: u64,
    /// The frame answered was a retransmission.
    pub rtx: bool,
    /// NACK: the frame was trimmed at the last hop (the port into its
    /// destination).
    pub last_hop: bool,
}

/// A selective transport's settings, as its scheme has fitted them to the
/// network ([`Scheme::selective`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Selective {
    /// The receiver acknowledges every this many bytes received.
    pub ack_bytes: u32,
    /// Retransmission timeout, from the oldest outstanding send.
    pub rto_ps: Time,
    /// Bridges trim (true) or drop (false) what a full queue cannot take
    /// (schemes with [`Scheme::TRIMS`]).
    pub trim: bool,
    /// Length of a trimmed frame on the wire.
    pub trim_bytes: u16,
    /// The data queue of every `per_output` bridge port, when the scheme
    /// sizes them (bytes; None: the bridges' own `buffer_bytes`).
    pub queue_bytes: Option<u64>,
    /// Receiver credit (net::credit; UET's RCCC), if the scheme asks for it.
    pub credit: Option<Credit>,
}

/// Bytes in one quantum of receiver credit (UET's RCCC counts in them).
pub const CREDIT_QUANTUM: u64 = 256;

/// Receiver credit's settings ([`Selective::credit`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Credit {
    /// Quanta (256 bytes) a pull grants.
    pub per_pull: u64,
    /// Speculative credit a flow that asks for none may get (quanta).
    pub most_slow: u64,
    /// Pulls are paced at this fraction of the receiver's line rate.
    pub rate_fraction: f64,
}

impl Default for Selective {
    fn default() -> Self {
        Selective {
            ack_bytes: 1,
            rto_ps: Time::MAX,
            trim: false,
            trim_bytes: 64,
            queue_bytes: None,
            credit: None,
        }
    }
}

/// A transport flow's path in the built network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathView {
    /// The flow as users name it: `H1->H0`.
    pub flow: String,
    /// A full frame there and its ACK back on the empty network.
    pub base_rtt_ps: Time,
    pub hops: u32,
}

/// What a scheme checks its parameters against once the network is built
/// ([`Scheme::check_network`]): values whose bounds depend on the topology.
#[derive(Clone, Debug, Default)]
pub struct NetView {
    /// The slowest line rate of a station that sends (bit/s; 0: none
    /// sends), and that station's name.
    pub min_line_rate_bps: f64,
    pub slowest_sender: String,
    /// The longest queue a CP port can hold (bytes; infinite for an
    /// infinite buffer, 0 when no port is a CP): a marking threshold at or
    /// above it never marks.
    pub cp_queue_bytes: f64,
    /// The paths transport flows may take: one per distinct (base RTT,
    /// hops), named by the first flow found on it.
    pub paths: Vec<PathView>,
    /// Wire length of a full data frame and the bytes of it that are
    /// headers (`workload.header_bytes`), of a control frame.
    pub frame_bytes: u32,
    pub header_bytes: u32,
    pub ctrl_bytes: u32,
}

impl NetView {
    /// The path with the longest base RTT (the one a delay threshold must
    /// clear), if any flow may run.
    pub fn longest_path(&self) -> Option<&PathView> {
        self.paths.iter().max_by_key(|p| p.base_rtt_ps)
    }

    /// The path with the shortest base RTT.
    pub fn shortest_path(&self) -> Option<&PathView> {
        self.paths.iter().min_by_key(|p| p.base_rtt_ps)
    }
}

/// A microsecond figure as a message shows it: 104, 105.5, 9.5, 0.001.
pub fn num_us(v: f64) -> String {
    let digits = if v >= 10.0 { 10.0 } else { 1000.0 };
    params::num((v * digits).round() / digits)
}

/// A warning for a queue threshold (`name` = `value` bytes) that no CP queue
/// can reach, `what` saying what then never happens.
pub fn unreachable_threshold(name: &str, value: f64, net: &NetView, what: &str) -> Option<String> {
    (net.cp_queue_bytes > 0.0 && value >= net.cp_queue_bytes).then(|| {
        format!(
            "{name} = {} bytes is not below the longest queue a congestion point can hold ({} bytes): {what}",
            params::num(value),
            params::num(net.cp_queue_bytes)
        )
    })
}

/// Refuses a rate floor (`name`, Mbit/s) above the slowest sender's line
/// rate: the rate law could not hold both bounds.
pub fn check_floor(name: &str, floor_mbps: f64, net: &NetView) -> Result<(), ConfigError> {
    let line_mbps = net.min_line_rate_bps / 1e6;
    if net.min_line_rate_bps > 0.0 && floor_mbps > line_mbps {
        return fail(
            name,
            format!(
                "{} is not allowed here; expected at most the line rate of sender {}, {} Mbit/s",
                params::num(floor_mbps),
                net.slowest_sender,
                params::num(line_mbps)
            ),
        );
    }
    Ok(())
}

/// A congestion-management scheme: its CP, NP and RP roles and its frame
/// extension. Every hook but the RP's has a default that does nothing.
pub trait Scheme: Send + 'static {
    /// Carried by every frame: tags and marks on data frames, the payload of
    /// the scheme's notifications.
    type Ext: Copy + Default + std::fmt::Debug + Send + 'static;
    /// State of one CP (one bridge output port with detection on).
    type Cp: Send;
    /// State of one NP: a destination's memory of one source.
    type Np: Default + Send;
    /// Scheme state of one rate limiter.
    type Rl: Send;

    /// The NP acts on data frames reaching their destination, so those
    /// arrivals must be events; otherwise the engine counts them when they
    /// start their last hop.
    const NP_EVENTS: bool = false;
    /// The CP also sees every data frame leave its queue (`cp_on_dequeue`).
    const CP_ON_DEQUEUE: bool = false;
    /// Some CP or NP of the scheme may send a notification. Without any (and
    /// without PAUSE or transport flows) no control frame ever crosses the
    /// network, which lets the engine forward through pass-through bridges
    /// without an event (`Fabric::express`).
    const NOTIFIES: bool = true;

    /// Whether the scheme's CPs mark ECN (a bridge's RED profile, `red`
    /// below, is used only by such schemes).
    const MARKS_ECN: bool = false;

    /// Transport flows recover losses selectively (net::sack: a send record
    /// per frame, selective acknowledgements, a NACK per trimmed frame, one
    /// timer at the oldest outstanding send) instead of going back N; the
    /// receiver keeps frames that arrive beyond a gap. The settings are
    /// [`Scheme::selective`]'s, the acknowledgement's fields travel in the
    /// scheme's extension ([`Scheme::sack_ack`], [`Scheme::sack_of`]).
    const SELECTIVE: bool = false;
    /// Bridges trim a data frame that finds its output queue full to its
    /// header (UET's packet trimming: the arriving frame, or the last one
    /// queued) and forward the header in the control class to the flow's
    /// receiver, which NACKs it; with [`Selective::trim`] off they drop the
    /// same frame instead.
    const TRIMS: bool = false;

    /// The scheme fits its derived constants to the built network (its
    /// paths' base RTTs, line rates, queue sizes), once per run before
    /// anything is sent. Default: nothing.
    fn fit_network(&mut self, _net: &NetView) {}

    /// A selective transport's settings (after [`Scheme::fit_network`]).
    fn selective(&self) -> Selective {
        Selective::default()
    }

    /// Whether a flow's frames may take different paths (spraying): its
    /// shorter last frame can then overtake the full ones, and its ideal
    /// FCT is the lower bound that allows it (net::transport::sprayed_pipeline_ps).
    fn sprays(&self) -> bool {
        false
    }

    /// Selective transports: the sender marks data frame `ext` as asking
    /// for an acknowledgement at once (`ar`) and as sent again (`resent`).
    fn sack_stamp(&self, _ext: &mut Self::Ext, _ar: bool, _resent: bool) {}

    /// Selective transports: data frame `data`'s ECN CE mark and whether
    /// its sender asks for an acknowledgement at once (`ar`).
    fn sack_flags(&self, _data: &Self::Ext) -> (bool, bool) {
        (false, false)
    }

    /// Selective transports: the extension of the acknowledgement (or NACK)
    /// answering `data`, carrying `sack`.
    fn sack_ack(&self, data: &Self::Ext, _sack: &SackFields) -> Self::Ext {
        self.ack_echo(data)
    }

    /// Selective transports: what an acknowledgement's extension carries.
    fn sack_of(&self, _ack: &Self::Ext) -> SackFields {
        SackFields::default()
    }

    /// Selective transports with receiver credit: whether the sender may
    /// send now (its credit), the pull target (cumulative quanta) data frame
    /// `data` carries, and the extension of a PULL granting up to `latest`.
    fn sack_gate(&self, _rl: &Self::Rl) -> bool {
        true
    }
    fn sack_pull_target(&self, _data: &Self::Ext) -> u64 {
        0
    }
    fn sack_pull(&self, _latest: u64) -> Self::Ext {
        Self::Ext::default()
    }

    /// Whether [`Scheme::scale_cp`] scales anything: the CP marks between
    /// queue thresholds of its own (a `scale_buffers` event under another
    /// scheme scales only the queue, and says so in a warning).
    const SCALES_CP: bool = false;

    /// A `link_rate` event with `scale_buffers`: the CP's queue thresholds
    /// become those it was built with times `ratio` (the port's new rate
    /// over its configured one), floored to whole bytes; `ratio` = 1: as
    /// built.
    fn scale_cp(&self, _cp: &mut Self::Cp, _ratio: f64) {}

    /// A CP's state at a port into a station (`into_station`) or between
    /// bridges; default: [`Scheme::new_cp`]'s.
    fn new_cp_at(&self, rng: Stream, red: Option<Red>, _into_station: bool) -> Self::Cp {
        self.new_cp(rng, red)
    }

    /// A CP's state; `red`: its bridge's own RED profile, if it sets one.
    fn new_cp(&self, rng: Stream, red: Option<Red>) -> Self::Cp;

    /// A data frame joined a CP's queue. Returning a notification sends it
    /// to the frame's source (about the frame's flow, from CP `cpid`).
    fn cp_on_enqueue(&self, _cp: &mut Self::Cp, _frame: &mut Frame<Self::Ext>, _q: QueueView, _cpid: u32) -> Option<Self::Ext> {
        None
    }

    /// Whether the CP also samples frames that find the queue full (and are
    /// dropped); `cp_on_enqueue` then sees the queue without them.
    fn cp_samples_dropped(&self) -> bool {
        false
    }

    /// A data frame leaves a CP's queue (only with `CP_ON_DEQUEUE`): the CP
    /// may mark it or stamp it.
    fn cp_on_dequeue(&self, _cp: &mut Self::Cp, _frame: &mut Frame<Self::Ext>, _q: QueueView, _cpid: u32) {}

    /// A data frame reached its destination (only with `NP_EVENTS`), whose
    /// memory of that source is `np`. Returning `(payload, cpid)` sends a
    /// notification to the frame's source about its flow.
    fn np_on_data(&self, _np: &mut Self::Np, _frame: &Frame<Self::Ext>, _now: Time, _rng: &mut Stream) -> Option<(Self::Ext, u32)> {
        None
    }

    /// Whether notification `note` creates an RL for a flow that has none
    /// (default: no; schemes of transport flows have an RL per flow anyway).
    fn creates_rl(&self, _note: &Self::Ext) -> bool {
        false
    }

    /// Whether `note` slows its RL: the CP that sent it then tags the RL's
    /// frames, and with RLs per CP the flow is mapped to that CP's RL.
    fn slows(&self, _note: &Self::Ext) -> bool {
        false
    }

    /// A new RL for a flow (at line rate). Returns its state and first timer.
    fn new_rl(&self, core: &mut RlCore, now: Time) -> (Self::Rl, Option<Time>);

    /// A notification from CP `cpid` (0: none) reached the RL. Returns when
    /// its timer should next fire (`None` leaves a pending timer as it is,
    /// `Some(Time::MAX)` cancels it). Default: nothing happens.
    fn rp_on_note(
        &self,
        _core: &mut RlCore,
        _rl: &mut Self::Rl,
        _note: &Self::Ext,
        _cpid: u32,
        _now: Time,
        _rng: &mut Stream,
    ) -> Option<Time> {
        None
    }

    /// The RL sends `frame` (it may write the frame's extension). Returns a
    /// timer request as `rp_on_note` does; the rate may change.
    fn rp_on_send(
        &self,
        _core: &mut RlCore,
        _rl: &mut Self::Rl,
        _frame: &mut Frame<Self::Ext>,
        _now: Time,
        _rng: &mut Stream,
    ) -> Option<Time> {
        None
    }

    /// The RL's timer fired. Returns the next timer time, if any (default:
    /// the scheme never asks for one).
    fn rp_on_timer(&self, _core: &mut RlCore, _rl: &mut Self::Rl, _now: Time, _rng: &mut Stream) -> Option<Time> {
        None
    }

    /// Transport flows only: an acknowledgement (or a timeout) of the RL's
    /// flow, carrying what the receiver echoed (`echo`). The transport has
    /// already set `core.inflight_bytes`. Returns a timer request as
    /// `rp_on_note` does.
    fn rp_on_ack(
        &self,
        _core: &mut RlCore,
        _rl: &mut Self::Rl,
        _ack: &AckView,
        _echo: &Self::Ext,
        _now: Time,
        _rng: &mut Stream,
    ) -> Option<Time> {
        None
    }

    /// Checks the parameters against the built network (line rates, the
    /// flows' base RTTs): an error (naming the parameter) for a value the
    /// network cannot honour, one warning line per parameter for a legal
    /// value that is almost certainly unintended. Default: nothing to check.
    fn check_network(&self, _net: &NetView) -> Result<Vec<String>, ConfigError> {
        Ok(Vec::new())
    }

    /// What the receiver of a transport flow echoes in the acknowledgement
    /// of data frame `data` (default: the data frame's extension: its ECN
    /// mark, its per-hop telemetry).
    fn ack_echo(&self, data: &Self::Ext) -> Self::Ext {
        *data
    }

    /// What the event trace and the packet captures show of extension
    /// `ext` (on a data frame, a notification or an acknowledgement).
    /// Called only by a run that records a trace (default: nothing).
    fn ext_fields(&self, _ext: &Self::Ext) -> ExtFields {
        ExtFields::default()
    }

    /// Qoff and Qdelta of the sample CP `cp` would take of queue `q` now,
    /// in the scheme's units: what a notification it sends from this
    /// sample carries. Called, by a run that records a trace, before
    /// `cp_on_enqueue` sees the frame (default: none).
    fn cp_fields(&self, _cp: &Self::Cp, _q: QueueView) -> Option<CpFields> {
        None
    }
}

/// What a scheme's notifications are on the wire (packet captures, the
/// trace's `note` column).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoteFormat {
    /// The scheme sends no notification.
    #[default]
    None,
    /// A BCN message (EtherType 0x8904): CPID, Qoff, Qdelta, Fb.
    Bcn,
    /// A BCN(0,0) message: stop (Qoff = Qdelta = 0).
    BcnStop,
    /// An IEEE 802.1Qau CNM (EtherType 0x22E7); data frames carry a CN-TAG.
    Cnm,
    /// A RoCEv2 CNP (BTH opcode 0x81).
    Cnp,
}

impl NoteFormat {
    /// The name the trace gives the notification.
    pub fn name(self) -> Option<&'static str> {
        match self {
            NoteFormat::None => None,
            NoteFormat::Bcn => Some("BCN"),
            NoteFormat::BcnStop => Some("BCN(0,0)"),
            NoteFormat::Cnm => Some("CNM"),
            NoteFormat::Cnp => Some("CNP"),
        }
    }
}

/// A frame extension as the trace shows it ([`Scheme::ext_fields`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExtFields {
    /// What the scheme's notifications are (the same for every extension
    /// of a scheme but BCN's, whose stop message has its own).
    pub note: NoteFormat,
    /// The feedback a notification carries: BCN / ECM's Fb (64-byte pages,
    /// negative slows the flow down), QCN's quantized |Fb| (0 to 63).
    pub fb: Option<f64>,
    /// A data frame's ECN Congestion Experienced mark (DCQCN, DCTCP); on an
    /// acknowledgement, the mark it echoes.
    pub ce: bool,
    /// A data frame's mark for reflection at its destination (QCN
    /// three-point): the marking CP's CPID (0: none), its feedback in `fb`.
    pub marked_by: u32,
    /// An Ultra Ethernet transport frame's own fields (None: not UET; its
    /// flows' frames are captured as RoCEv2 then).
    pub uet: Option<UetFields>,
}

/// What a capture shows of a UET frame beyond the engine's fields
/// (io/wire.rs lays it out as UE 1.0's PDS over UDP 4793).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UetFields {
    /// Data: an acknowledgement asked for; sent again. ACK / NACK: the
    /// frame answered was a retransmission.
    pub ar: bool,
    pub rtx: bool,
    /// ACK: its selective acknowledgement and the receiver's bytes received.
    pub sack_base: u32,
    pub sack_bits: u64,
    pub recvd_bytes: u64,
    /// NACK: the frame was trimmed at the last hop.
    pub last_hop: bool,
}

/// The queue a CP sampled ([`Scheme::cp_fields`]), in the scheme's units
/// (BCN: 64-byte pages; QCN: bytes), as its notification carries it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpFields {
    /// The queue against its equilibrium: Q - Qeq.
    pub qoff: f64,
    /// The queue against the previous sample: Q - Qold.
    pub qdelta: f64,
}

/// The registry: one entry per scheme module, and the only place a scheme is
/// registered. `$cb` is a macro of this crate given the list (after
/// `$args`): `registry` (below) makes the items of this module from it,
/// `with_scheme_arms` the arms of [`with_scheme!`](crate::with_scheme).
/// An entry: the module; its types as `Variant(Type)`; `build`, the
/// `AnyScheme` from a config naming the module; its parameter `tables`, in
/// documentation order; the `names` users give it (`--scheme NAME`), each
/// with its table, the switches it sets in it and a description.
#[doc(hidden)]
#[macro_export]
macro_rules! scheme_list {
    ($cb:ident; $($args:tt)*) => {
        $crate::$cb! { ($($args)*)
            nocm {
                types: [NoCm(NoCm)],
                build: |s| Ok(AnyScheme::NoCm(nocm::NoCm::from_config(s)?)),
                tables: [],
                names: [
                    "nocm": None, [], "no congestion management (combine with --pause)";
                    "pause": None, [], "IEEE 802.3x PAUSE alone (= nocm --pause)";
                ],
            }
            bcn {
                types: [Bcn(Bcn)],
                build: |s| Ok(AnyScheme::Bcn(bcn::Bcn::from_config(s)?)),
                tables: [bcn::table(), bcn::ecm_table()],
                names: [
                    "bcn": Some("bcn"), [], "Backward Congestion Notification (Cisco, 2006)";
                    "bcn00": Some("bcn"), [("bcn00", true)], "BCN with BCN(0,0) stop messages above Qsc";
                    "bcnmax": Some("bcn"), [("bcn_max", true)], "BCN with BCN-Max (most negative Fb above Qmc)";
                    "ecm": Some("ecm"), [], "Ethernet Congestion Management (2007 BCN)";
                ],
            }
            qcn {
                types: [Qcn(Qcn), Qcn3pt(Qcn3pt)],
                build: |s| Ok(match qcn::Qcn::from_config(s)? {
                    q if q.params().three_point => AnyScheme::Qcn3pt(qcn::Qcn3pt(q)),
                    q => AnyScheme::Qcn(q),
                }),
                tables: [qcn::table(), qcn::table_2pt(), qcn::table_3pt()],
                names: [
                    "qcn": Some("qcn"), [], "Quantized Congestion Notification, final 802.1Qau";
                    "qcn2pt": Some("qcn2pt"), [], "QCN two-point, July 2007 proposal";
                    "qcn3pt": Some("qcn3pt"), [("three_point", true)], "QCN three-point (reflection at the destination), July 2007";
                ],
            }
            dcqcn {
                types: [Dcqcn(Dcqcn)],
                build: |s| Ok(AnyScheme::Dcqcn(dcqcn::Dcqcn::from_config(s)?)),
                tables: [dcqcn::table()],
                names: [
                    "dcqcn": Some("dcqcn"), [], "DCQCN (RoCEv2, 2015): ECN marking, CNPs, per-flow rate limiters; use --pause (PFC)";
                ],
            }
            dctcp {
                types: [Dctcp(Dctcp)],
                build: |s| Ok(AnyScheme::Dctcp(dctcp::Dctcp::from_config(s)?)),
                tables: [dctcp::table()],
                names: [
                    "dctcp": Some("dctcp"), [], "DCTCP (2010): ECN marking above K, window cut by the marked fraction; transport flows";
                ],
            }
            timely {
                types: [Timely(Timely)],
                build: |s| Ok(AnyScheme::Timely(timely::Timely::from_config(s)?)),
                tables: [timely::table()],
                names: [
                    "timely": Some("timely"), [], "TIMELY (2015): rate from the RTT gradient (rule = original | patched); transport flows";
                ],
            }
            hpcc {
                types: [Hpcc(Hpcc)],
                build: |s| Ok(AnyScheme::Hpcc(hpcc::Hpcc::from_config(s)?)),
                tables: [hpcc::table()],
                names: [
                    "hpcc": Some("hpcc"), [], "HPCC (2019): window and rate from per-hop telemetry (INT); transport flows";
                ],
            }
            swift {
                types: [Swift(Swift)],
                build: |s| Ok(AnyScheme::Swift(swift::Swift::from_config(s)?)),
                tables: [swift::table()],
                names: [
                    "swift": Some("swift"), [], "Swift (2020): window toward a delay target scaled by hops and window; transport flows";
                ],
            }
            uet {
                types: [Uet(Uet)],
                build: |s| Ok(AnyScheme::Uet(uet::Uet::from_config(s)?)),
                tables: [uet::table()],
                names: [
                    "uet": Some("uet"), [], "Ultra Ethernet transport (UE 1.0): NSCC window, packet spraying, trimming, selective acknowledgements; transport flows";
                ],
            }
        }
    };
}

/// The items of this module made from [`scheme_list!`](crate::scheme_list).
#[doc(hidden)]
#[macro_export]
macro_rules! registry {
    (() $(
        $m:ident {
            types: [$($v:ident($t:ident)),+],
            build: $build:expr,
            tables: [$($table:expr),*],
            names: [$($name:literal: $tab:expr, [$(($k:literal, $val:literal)),*], $desc:literal;)+],
        }
    )+) => {
        $(pub mod $m;)+

        /// The schemes as users name them (`--scheme`, `scheme = "..."`).
        pub const SCHEMES: &[Entry] = &[$($(Entry {
            name: $name,
            engine: stringify!($m),
            table: $tab,
            sets: &[$(($k, $val)),*],
            description: $desc,
        },)+)+];

        /// Every parameter table a scenario file may hold, in documentation order.
        pub fn tables() -> Vec<Table> {
            vec![$($($table,)*)+]
        }

        /// The scheme a config names, built from its parameters: one variant
        /// per scheme type. The simulator is generic over the scheme; it
        /// picks the instantiation once per run with
        /// [`with_scheme!`](crate::with_scheme).
        pub enum AnyScheme {
            $($($v($m::$t),)+)+
        }

        impl AnyScheme {
            /// The scheme module `s.name` names, built by its registry entry.
            pub fn from_config(s: &SchemeConfig) -> Result<AnyScheme, ConfigError> {
                $(
                    if s.name == stringify!($m) {
                        let build: fn(&SchemeConfig) -> Result<AnyScheme, ConfigError> = $build;
                        return build(s);
                    }
                )+
                fail("scheme", format!("unknown scheme '{}'", s.name))
            }
        }
    };
}

/// The arms of [`with_scheme!`](crate::with_scheme), from the registry.
#[doc(hidden)]
#[macro_export]
macro_rules! with_scheme_arms {
    (($any:expr, $s:ident, $body:expr) $(
        $m:ident {
            types: [$($v:ident($t:ident)),+],
            $($rest:tt)*
        }
    )+) => {
        match $any {
            $($($crate::scheme::AnyScheme::$v($s) => $body,)+)+
        }
    };
}

/// Every table and scheme name, as data (`cnsim.schemes` reads it).
pub fn declarations() -> Value {
    let tables: Vec<Value> = tables().iter().map(Table::to_json).collect();
    let schemes: Vec<Value> = SCHEMES
        .iter()
        .map(|e| {
            let sets: Map<String, Value> = e.sets.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            json!({"name": e.name, "engine": e.engine, "table": e.table, "sets": sets, "description": e.description})
        })
        .collect();
    json!({"tables": tables, "schemes": schemes})
}

/// `with_scheme!(any, s => expr)`: evaluates `expr` with `s` bound to the
/// concrete scheme inside an [`AnyScheme`] (one monomorphised copy of
/// `expr` per scheme type).
#[macro_export]
macro_rules! with_scheme {
    ($any:expr, $s:ident => $body:expr) => {
        $crate::scheme_list!(with_scheme_arms; $any, $s, $body)
    };
}

#[cfg(test)]
mod tests {
    use super::params::Kind;
    use super::*;

    #[test]
    fn every_table_matches_its_struct_and_its_defaults_pass_its_checks() {
        for table in tables() {
            table
                .check(table.name, &Map::new())
                .unwrap_or_else(|e| panic!("{}: {e}", table.name));
        }
        // Each scheme's struct reads its table's defaults (deny_unknown_fields,
        // no serde defaults: a field the declaration lacks, or a declared
        // parameter the struct lacks, fails here): every name, built as the
        // registry builds it, from its table's defaults and what it sets.
        let tables = tables();
        for e in SCHEMES {
            let mut params = e
                .table
                .map(|t| tables.iter().find(|x| x.name == t).expect("declared").defaults())
                .unwrap_or_default();
            params.extend(e.sets.iter().map(|(k, v)| (k.to_string(), json!(v))));
            let cfg = SchemeConfig {
                name: e.engine.into(),
                table: e.table.map(str::to_string),
                params,
            };
            AnyScheme::from_config(&cfg).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        }
        // Every table is some name's.
        for t in &tables {
            assert!(SCHEMES.iter().any(|e| e.table == Some(t.name)), "{}: no scheme reads it", t.name);
        }
    }

    #[test]
    fn every_scheme_names_a_declared_table_and_sets_declared_switches() {
        let tables = tables();
        for e in SCHEMES {
            if let Some(t) = e.table {
                let table = tables
                    .iter()
                    .find(|x| x.name == t)
                    .unwrap_or_else(|| panic!("{}: no table {t}", e.name));
                for (k, _) in e.sets {
                    assert_eq!(table.get(k).map(|p| &p.kind), Some(&Kind::Bool), "{}: sets {k}", e.name);
                }
            }
        }
    }
}

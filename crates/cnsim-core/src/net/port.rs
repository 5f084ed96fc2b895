//! A port is one direction of a full-duplex link: the transmitter at its
//! owner, the wire, and the receiver at its peer. It holds the owner's
//! egress queues (a data FIFO and a control FIFO served first), the frames on
//! the wire, the transmitter's PAUSE state, and, because the same port is
//! also the *ingress* of the frames that arrive over the reverse direction,
//! the owner's per-ingress accounting that PAUSE and `per_input` buffers need.

use super::classes::ClassQueues;
use super::pause::{IngressPause, OutputHolds, PfcIngress, Watchdog};
use crate::engine::time::serialization_ps;
use crate::engine::Time;
use crate::frame::Frame;
use std::collections::VecDeque;

pub type PortId = u32;

/// Frames on the wire, by how the receiver handles them. Within one class
/// every frame gets the same delay added, so arrivals leave each ring in FIFO
/// order and an arrival event needs only the port and the class.
pub const WIRE_MAC: usize = 0; // PAUSE: acts when fully received
pub const WIRE_DATA: usize = 1; // data: + bridge latency (bridge) or 0 (station)
pub const WIRE_NOTE: usize = 2; // notifications: + bridge latency (bridge) or processing time (station)

/// Fields are laid out by use (`repr(C)`, hottest first, each port starting
/// on a cache line): the state every
/// event reads sits in the first cache lines, so that a fabric of thousands
/// of ports, far larger than the caches, costs a miss or two per port touched
/// instead of one per field.
#[repr(C, align(64))]
pub struct Port<E> {
    // --- line 1: the transmitter's state, read by every event on the port ---
    pub busy: bool,
    /// A TxDone event is scheduled for `done_at`. When not, the port finishes
    /// lazily: whoever touches it next settles the completion (see `Sim::settle`).
    pub done_pending: bool,
    /// Whether this port may finish lazily: nothing else observes its
    /// completion at the instant it happens (stations; bridges without PAUSE
    /// whose admission depends only on this port's own queue).
    pub lazy_ok: bool,
    /// Lazily draining (a bridge port that only counts into a station, in a
    /// run where nothing else watches it): even with frames waiting no TxDone
    /// event is scheduled; `Sim::settle` sends the queue's frames at the
    /// instants they would have started, up to the time it is called for.
    pub drain_lazy: bool,
    /// The receiver is an end station.
    pub peer_is_station: bool,
    /// Data frames wait in `classes`, not in `data` (a bridge port of a run
    /// with more than one data priority).
    pub multiclass: bool,
    /// The priority of the data frames a single-class port sends (which
    /// PFC frames pause it).
    pub data_prio: u8,
    /// Index of this port among its owner's ports.
    pub local: u16,
    /// Index of `reverse` among the peer's ports: the ingress partition of
    /// the frames this port delivers to a bridge.
    pub reverse_local: u16,
    /// Owner node (transmitter) and peer node (receiver), node indices.
    pub owner: u32,
    pub peer: u32,
    /// The reverse direction: the peer's port back to the owner.
    pub reverse: PortId,
    /// Index of this port's queue trace, if traced (`NO_TRACE`: none).
    pub trace: u32,
    /// The receiving bridge's index (`NO_PEER_BRIDGE`: the peer is a station).
    pub peer_bridge: u32,
    /// When the frame being transmitted ends.
    pub done_at: Time,
    /// Bytes of data frames held for this port, including the one being sent.
    pub data_bytes: u64,
    /// Current transmit rate (bit/s); 0 = stopped (output-generated hotspot).
    pub rate_bps: u64,
    /// Serialisation time of a data frame at the current rate (cached).
    pub ser_data_ps: Time,

    // --- line 2: the egress queues ---
    pub data: VecDeque<Frame<E>>,
    pub ctrl: VecDeque<Frame<E>>,

    // --- line 3: what the frame being sent frees, and the transmitter's counters ---
    /// The frame being transmitted (valid while `busy`): what releasing its
    /// buffer needs, not the whole frame (a line less per port).
    pub tx: TxFrame,
    /// Paused until this time (the sender sends only control frames before it).
    pub pause_end: Time,
    pub delay_ps: Time,
    /// Bytes this port has started sending (data and control).
    pub bytes_sent: u64,
    pub frames_sent: u64,
    /// Bytes this port started sending in each of the first windows
    /// (`stats::INLINE_WINDOWS`; the others are in `Stats::link_win_bytes`).
    pub win_bytes: [u64; crate::stats::INLINE_WINDOWS],
    /// `rx_extra_ps[WIRE_DATA]`, here with the data path's other fields.
    pub rx_extra_data_ps: Time,

    // --- line 4: the data wire and the partitions ---
    /// Data frames on the wire (the other classes: `wire_ctl`).
    pub wire_data: VecDeque<Frame<E>>,
    /// Data bytes in this queue per ingress (local index at the owner
    /// bridge): the `per_input` partitions of this output buffer.
    pub bytes_by_ingress: Vec<u64>,
    /// Data frames this port delivered to the station at its far end.
    pub frames_delivered: u64,

    // --- PAUSE at the owner bridge (pause.rs) ---
    /// This port as an ingress: the bytes that came through it, whether its
    /// upstream is paused.
    pub pause_in: IngressPause,
    /// This port's output queue: the ingress ports it holds paused.
    pub holds: OutputHolds,

    // --- rarely touched by a data frame ---
    /// PAUSE frames and notifications on the wire (`WIRE_MAC`, `WIRE_NOTE`).
    pub wire_ctl: [VecDeque<Frame<E>>; 2],
    /// Extra delay at the receiver, per wire class.
    pub rx_extra_ps: [Time; 3],

    // --- PAUSE at this transmitter ---
    pub pause_start: Time,
    pub paused_ever: bool,
    /// The link is down (a `link_down` event): routing leaves it out.
    /// (Beside `paused_ever`: in its padding, the port no larger.)
    pub down: bool,
    /// A PortWake event is pending for this time.
    pub wake_at: Time,
    /// Paused time accumulated inside the measure window.
    pub paused_ps_window: Time,
    /// Paused time per bin (allocated the first time the port is paused).
    pub paused_bins: Option<Vec<f64>>,

    /// A multi-class port's eight class queues and their scheduler (cold
    /// for every other port: only `multiclass` is read on their data path).
    pub classes: Option<Box<ClassQueues<E>>>,
    /// PFC (`pause.mode = "pfc"`) at a bridge: this port as an ingress, its
    /// bytes and XOFF state per priority.
    pub pfc_in: Option<Box<PfcIngress>>,
    /// The PFC watchdog's state for this bridge port's queues (`pause.watchdog`).
    pub watchdog: Option<Box<Watchdog>>,

    // --- cold ---
    /// Rate the link was configured with (PAUSE quanta are counted at it when stopped).
    pub nominal_rate_bps: u64,
    /// A bridge port's own limit on its data queue (bytes) below its
    /// bridge's `per_output` buffer: a `link_rate` event with
    /// `scale_buffers` sets it; `u64::MAX` (none) otherwise. Read only
    /// where the bridge has `port_caps`.
    pub queue_cap: u64,
    pub pause_frames: u64,
    pub cnm_frames: u64,
    /// Display name `FROM->TO`.
    pub name: String,
}

/// What the transmitter keeps of the frame it is sending.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxFrame {
    /// At a bridge: the frame's ingress port and its local index there.
    pub in_port: u32,
    pub len: u16,
    pub in_local: u16,
    pub data: bool,
    /// Its 802.1p priority (PFC's per-priority ingress accounting).
    pub prio: u8,
}

/// `Port::peer_bridge` of a port whose peer is a station.
pub const NO_PEER_BRIDGE: u32 = u32::MAX;

/// `Port::trace` of an untraced port.
pub const NO_TRACE: u32 = u32::MAX;

impl<E: Copy + Default> Port<E> {
    pub fn new(name: String, owner: u32, peer: u32, local: u16, rate_bps: u64, delay_ps: Time, frame_bytes: u32) -> Port<E> {
        let mut p = Port {
            name,
            down: false,
            owner,
            peer,
            reverse: u32::MAX,
            local,
            reverse_local: 0,
            rate_bps,
            nominal_rate_bps: rate_bps,
            queue_cap: u64::MAX,
            ser_data_ps: 0,
            delay_ps,
            rx_extra_ps: [0; 3],
            rx_extra_data_ps: 0,
            data: VecDeque::new(),
            ctrl: VecDeque::new(),
            classes: None,
            pfc_in: None,
            watchdog: None,
            data_bytes: 0,
            busy: false,
            done_at: 0,
            done_pending: false,
            lazy_ok: false,
            drain_lazy: false,
            peer_is_station: false,
            multiclass: false,
            data_prio: crate::frame::DATA_PRIORITY,
            tx: TxFrame::default(),
            wire_data: VecDeque::new(),
            wire_ctl: [VecDeque::new(), VecDeque::new()],
            pause_end: 0,
            pause_start: 0,
            paused_ever: false,
            wake_at: Time::MAX,
            paused_ps_window: 0,
            paused_bins: None,
            pause_in: IngressPause {
                refresh_at: Time::MAX,
                ..IngressPause::default()
            },
            holds: OutputHolds::default(),
            bytes_by_ingress: Vec::new(),
            frames_delivered: 0,
            frames_sent: 0,
            win_bytes: [0; crate::stats::INLINE_WINDOWS],
            bytes_sent: 0,
            pause_frames: 0,
            cnm_frames: 0,
            trace: NO_TRACE,
            peer_bridge: NO_PEER_BRIDGE,
        };
        p.set_rate(rate_bps, frame_bytes);
        p
    }

    pub fn set_rate(&mut self, rate_bps: u64, frame_bytes: u32) {
        self.rate_bps = rate_bps;
        self.ser_data_ps = if rate_bps > 0 {
            serialization_ps(frame_bytes as u64, rate_bps)
        } else {
            0
        };
    }

    /// Serialisation time of `len` bytes at the current rate (rate > 0).
    #[inline]
    pub fn ser_ps(&self, len: u16, frame_bytes: u32) -> Time {
        if len as u32 == frame_bytes {
            self.ser_data_ps
        } else {
            serialization_ps(len as u64, self.rate_bps)
        }
    }

    #[inline]
    pub fn is_paused(&self, now: Time) -> bool {
        now < self.pause_end
    }

    /// Data frames held by this port: queued, being sent, or on the wire.
    pub fn data_frames_in_flight(&self) -> u64 {
        let ctl = self
            .wire_ctl
            .iter()
            .map(|w| w.iter().filter(|f| f.is_data()).count())
            .sum::<usize>();
        let classes = self.classes.as_ref().map_or(0, |c| c.len());
        (self.data.len() + classes + self.wire_data.len() + ctl) as u64
    }

    /// Where an event at this port (`id`) at `at` happens, for the trace.
    #[inline]
    pub fn site(&self, id: PortId, at: Time) -> crate::trace::Site {
        crate::trace::Site {
            at,
            node: self.owner,
            port: id,
        }
    }

    /// Whether data frames wait in this port's queue (its FIFO or its classes).
    #[inline(always)]
    pub fn data_waiting(&self) -> bool {
        !self.data.is_empty() || (self.multiclass && self.classes_waiting())
    }

    #[cold]
    #[inline(never)]
    fn classes_waiting(&self) -> bool {
        self.classes.as_ref().is_some_and(|c| !c.is_empty())
    }

    /// Data bytes queued at priority `prio`: its class queue on a
    /// multi-class port, else the one FIFO (which holds one priority).
    pub fn class_bytes(&self, prio: u8) -> u64 {
        match self.classes.as_ref() {
            Some(q) if self.multiclass => q.bytes((prio & 7) as usize),
            _ => self.data_bytes,
        }
    }

    /// Queues a data frame: in the FIFO, or in its class.
    #[inline(always)]
    pub fn push_data(&mut self, f: Frame<E>) {
        if self.multiclass {
            self.push_class(f)
        } else {
            self.data.push_back(f)
        }
    }

    #[inline(never)]
    fn push_class(&mut self, f: Frame<E>) {
        self.classes.as_mut().expect("a multi-class port has classes").push(f)
    }

    /// The next data frame of a multi-class port to send at `now`, by
    /// transmission selection among the classes PFC does not hold (None:
    /// every class with frames is paused, until [`ClassQueues::resume_at`]).
    #[inline(never)]
    pub fn pop_class(&mut self, now: Time) -> Option<Frame<E>> {
        self.classes.as_mut().and_then(|c| c.pop(now))
    }

    /// The frames of wire class `class` on the wire, oldest first.
    #[inline(always)]
    pub fn wire(&self, class: usize) -> &VecDeque<Frame<E>> {
        match class {
            WIRE_DATA => &self.wire_data,
            WIRE_MAC => &self.wire_ctl[0],
            _ => &self.wire_ctl[1],
        }
    }

    #[inline(always)]
    pub fn wire_mut(&mut self, class: usize) -> &mut VecDeque<Frame<E>> {
        match class {
            WIRE_DATA => &mut self.wire_data,
            WIRE_MAC => &mut self.wire_ctl[0],
            _ => &mut self.wire_ctl[1],
        }
    }

    /// Extra delay at the receiver for wire class `class`.
    #[inline(always)]
    pub fn rx_extra(&self, class: usize) -> Time {
        if class == WIRE_DATA {
            self.rx_extra_data_ps
        } else {
            self.rx_extra_ps[class]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::qcn::QcnExt;
    use std::mem::{offset_of, size_of};

    /// Every field a forwarded data frame reads or writes at its output port
    /// lies in the port's first four cache lines: on a fabric whose ports
    /// outgrow the caches each line is a miss (docs/performance.md).
    #[test]
    fn the_data_path_fields_fit_in_four_cache_lines() {
        type P = Port<QcnExt>;
        let ends = [
            offset_of!(P, ser_data_ps) + size_of::<Time>(),
            offset_of!(P, multiclass) + 1,
            offset_of!(P, data) + size_of::<VecDeque<Frame<QcnExt>>>(),
            offset_of!(P, ctrl) + size_of::<VecDeque<Frame<QcnExt>>>(),
            offset_of!(P, tx) + size_of::<TxFrame>(),
            offset_of!(P, pause_end) + 8,
            offset_of!(P, bytes_sent) + 8,
            offset_of!(P, frames_sent) + 8,
            offset_of!(P, win_bytes) + size_of::<[u64; crate::stats::INLINE_WINDOWS]>(),
            offset_of!(P, rx_extra_data_ps) + 8,
            offset_of!(P, wire_data) + size_of::<VecDeque<Frame<QcnExt>>>(),
            offset_of!(P, bytes_by_ingress) + size_of::<Vec<u64>>(),
        ];
        let last = ends.iter().max().unwrap();
        assert!(*last <= 4 * 64, "the data path ends at byte {last}");
        // Ports start on a cache line, so "the first four lines" are four lines.
        assert_eq!(std::mem::align_of::<P>(), 64);
    }
}

//! Frames are small `Copy` structs moved between ring buffers; they are never
//! boxed, so the per-frame path allocates nothing once queues have grown.
//!
//! A frame has the fields the network itself reads (who sends it where, how
//! long it is, where it entered a bridge) and an extension `E` that belongs
//! to the congestion-management scheme: its tags and marks on data frames,
//! the payload of its notifications, per-hop telemetry. The engine carries
//! the extension without reading it.

use crate::engine::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// A data frame of a flow (source station -> destination station).
    Data = 0,
    /// An 802.3x PAUSE frame (MAC control; consumed by the receiving MAC).
    Pause = 1,
    /// A scheme's notification (CNM, CNP, reflection): forwarded like data
    /// but at control priority, never paused.
    Note = 2,
    /// A transport acknowledgement (cumulative, `seq` = next frame expected),
    /// in the control class like notifications.
    Ack = 3,
    /// A transport negative acknowledgement (go-back-N from `seq`; a
    /// selective transport's: frame `seq` was trimmed, send it again).
    Nack = 4,
    /// A data frame a bridge cut to its header at a full queue (UET's
    /// trimming): in the control class on to its flow's receiver, which
    /// NACKs it. `cpid` is 1 when it was cut at the last hop (the port
    /// into its destination), else 0.
    Trimmed = 5,
}

/// The 802.1p priority of data frames unless their station sets one (the
/// priority RoCE fabrics run lossless: SONiC's default lossless classes are 3
/// and 4).
pub const DATA_PRIORITY: u8 = 3;

/// Node index of "no node".
pub const NO_NODE: u32 = u32::MAX;
/// Flow id of a frame that belongs to no transport flow (open-loop sources).
pub const NO_FLOW: u32 = u32::MAX;
/// `Frame::in_port` of a frame on the wire to a bridge that has no route for it.
pub const NO_PORT_IN: u32 = u32::MAX;

/// Station and port indices are 32 bits (a fabric of a million link
/// directions and of hundreds of thousands of hosts); the frame stays at 40
/// bytes before the scheme's extension, its fields ordered by size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame<E> {
    /// Time the frame was generated (data) or sent (control).
    pub born: Time,
    /// Source and destination station indices (data, notifications).
    pub src: u32,
    pub dst: u32,
    /// Ingress port (global id) at the bridge currently holding the frame;
    /// set when a bridge accepts it. On the wire to a bridge it carries
    /// instead the port that bridge will forward the frame on, routed once
    /// when the frame was sent ([`NO_PORT_IN`]: no route), so neither the
    /// arrival nor its prefetch looks the route up again.
    pub in_port: u32,
    /// Data: the CPID of the rate limiter the frame left (0: none).
    /// Notification: the CP that sent it (0: none, e.g. a destination).
    /// A selective transport's ACK or NACK: the frame it answers (its
    /// `seq`). Trimmed: 1 if cut at the last hop.
    pub cpid: u32,
    /// Transport flow of a data frame, acknowledgement or notification
    /// ([`NO_FLOW`]: open-loop traffic).
    pub flow: u32,
    /// Data: the frame's index in its flow. Ack / Nack: the next frame
    /// expected. PAUSE: pause_time in quanta of 512 bit times (0 = XON).
    /// Notification: the flow it is about, named by the flow's destination
    /// ([`Frame::about`]).
    pub seq: u32,
    /// Length on the wire, bytes.
    pub len: u16,
    /// At a bridge: the local index of `in_port` there (its `per_input` partition).
    pub in_local: u16,
    pub kind: FrameKind,
    /// Data: its 802.1p priority (traffic class, 0-7). PAUSE: the
    /// class-enable vector of a PFC frame (bit p: priority p), 0 for an
    /// 802.3x PAUSE. Other control frames are served ahead of every data
    /// class and carry 0.
    pub prio: u8,
    /// The entropy value ECMP hashes beside the frame's source and
    /// destination (a sprayed transport's path choice, per frame: UET's
    /// entropy; an acknowledgement carries its data frame's); 0 for a frame
    /// that keeps its flow's one path. In the frame's two spare bytes.
    pub entropy: u16,
    /// The scheme's part of the frame.
    pub ext: E,
}

impl<E: Copy + Default> Frame<E> {
    pub fn data(born: Time, src: u32, dst: u32, len: u16) -> Frame<E> {
        Frame {
            born,
            src,
            dst,
            len,
            kind: FrameKind::Data,
            prio: DATA_PRIORITY,
            in_port: NO_PORT_IN,
            in_local: 0,
            cpid: 0,
            flow: NO_FLOW,
            seq: 0,
            entropy: 0,
            ext: E::default(),
        }
    }

    pub fn pause(born: Time, quanta: u16, len: u16) -> Frame<E> {
        Frame {
            born,
            src: NO_NODE,
            dst: NO_NODE,
            len,
            kind: FrameKind::Pause,
            prio: 0,
            in_port: NO_PORT_IN,
            in_local: 0,
            cpid: 0,
            flow: NO_FLOW,
            seq: quanta as u32,
            entropy: 0,
            ext: E::default(),
        }
    }

    /// An 802.1Qbb PFC frame: `quanta` for each priority in `classes` (bit
    /// p: priority p; 0 quanta resumes them).
    pub fn pfc(born: Time, classes: u8, quanta: u16, len: u16) -> Frame<E> {
        Frame {
            prio: classes,
            ..Frame::pause(born, quanta, len)
        }
    }

    /// A notification from `src` (a station, or `NO_NODE` for a bridge) to
    /// station `dst` about the flow to `about`, sent by CP `cpid`.
    pub fn note(born: Time, src: u32, dst: u32, about: u32, cpid: u32, len: u16, ext: E) -> Frame<E> {
        Frame {
            born,
            src,
            dst,
            len,
            kind: FrameKind::Note,
            prio: 0,
            in_port: NO_PORT_IN,
            in_local: 0,
            cpid,
            flow: NO_FLOW,
            seq: about,
            entropy: 0,
            ext,
        }
    }
}

impl<E> Frame<E> {
    /// The same frame with extension `ext` (a scheme made of two schemes
    /// hands each its own part: scheme/dual.rs).
    #[inline]
    pub fn with_ext<F>(&self, ext: F) -> Frame<F> {
        Frame {
            born: self.born,
            src: self.src,
            dst: self.dst,
            in_port: self.in_port,
            cpid: self.cpid,
            flow: self.flow,
            seq: self.seq,
            len: self.len,
            in_local: self.in_local,
            kind: self.kind,
            prio: self.prio,
            entropy: self.entropy,
            ext,
        }
    }

    #[inline]
    pub fn is_data(&self) -> bool {
        self.kind == FrameKind::Data
    }

    /// Notification: the flow it is about, named by its destination
    /// ([`NO_NODE`]: none).
    #[inline]
    pub fn about(&self) -> u32 {
        self.seq
    }

    /// PAUSE: the pause_time it carries (quanta of 512 bit times).
    #[inline]
    pub fn quanta(&self) -> u16 {
        self.seq as u16
    }

    /// A control-class frame (notification or acknowledgement): never
    /// paused, queued in the control FIFO.
    #[inline]
    pub fn is_control(&self) -> bool {
        matches!(self.kind, FrameKind::Note | FrameKind::Ack | FrameKind::Nack | FrameKind::Trimmed)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn frame_stays_small() {
        // Without a scheme extension a frame is 40 bytes (32-bit station and
        // port indices, flow and sequence number included); a scheme's
        // extension adds its own (BCN's 8: scheme/bcn.rs).
        assert!(std::mem::size_of::<super::Frame<()>>() <= 40);
    }
}

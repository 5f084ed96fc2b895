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
    /// A transport negative acknowledgement (go-back-N from `seq`).
    Nack = 4,
}

/// Node index of "no node".
pub const NO_NODE: u16 = u16::MAX;
/// Flow id of a frame that belongs to no transport flow (open-loop sources).
pub const NO_FLOW: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame<E> {
    /// Time the frame was generated (data) or sent (control).
    pub born: Time,
    /// Source and destination station indices (data, notifications).
    pub src: u16,
    pub dst: u16,
    /// Length on the wire, bytes.
    pub len: u16,
    pub kind: FrameKind,
    /// Ingress port (global id; the engine refuses networks of 65,535 ports
    /// or more) at the bridge currently holding the frame; set when a bridge
    /// accepts it. On the wire to a bridge it carries instead the port that
    /// bridge will forward the frame on, routed once when the frame was sent
    /// (`u16::MAX`: no route), so neither the arrival nor its prefetch
    /// looks the route up again.
    pub in_port: u16,
    /// At a bridge: the local index of `in_port` there (its `per_input` partition).
    pub in_local: u16,
    /// Data: the CPID of the rate limiter the frame left (0: none).
    /// Notification: the CP that sent it (0: none, e.g. a destination).
    pub cpid: u16,
    /// Notification: the flow it is about, named by the flow's destination.
    pub about: u16,
    /// Transport flow of a data frame, acknowledgement or notification
    /// ([`NO_FLOW`]: open-loop traffic).
    pub flow: u32,
    /// Data: the frame's index in its flow. Ack / Nack: the next frame
    /// expected. PAUSE: pause_time in quanta of 512 bit times (0 = XON).
    pub seq: u32,
    /// The scheme's part of the frame.
    pub ext: E,
}

impl<E: Copy + Default> Frame<E> {
    pub fn data(born: Time, src: u16, dst: u16, len: u16) -> Frame<E> {
        Frame {
            born,
            src,
            dst,
            len,
            kind: FrameKind::Data,
            in_port: u16::MAX,
            in_local: 0,
            cpid: 0,
            about: NO_NODE,
            flow: NO_FLOW,
            seq: 0,
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
            in_port: u16::MAX,
            in_local: 0,
            cpid: 0,
            about: NO_NODE,
            flow: NO_FLOW,
            seq: quanta as u32,
            ext: E::default(),
        }
    }

    /// A notification from `src` (a station, or `NO_NODE` for a bridge) to
    /// station `dst` about the flow to `about`, sent by CP `cpid`.
    pub fn note(born: Time, src: u16, dst: u16, about: u16, cpid: u16, len: u16, ext: E) -> Frame<E> {
        Frame {
            born,
            src,
            dst,
            len,
            kind: FrameKind::Note,
            in_port: u16::MAX,
            in_local: 0,
            cpid,
            about,
            flow: NO_FLOW,
            seq: 0,
            ext,
        }
    }
}

impl<E> Frame<E> {
    #[inline]
    pub fn is_data(&self) -> bool {
        self.kind == FrameKind::Data
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
        matches!(self.kind, FrameKind::Note | FrameKind::Ack | FrameKind::Nack)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn frame_stays_small() {
        // Without a scheme extension a frame is 32 bytes (flow and sequence
        // number included); BCN's adds 8.
        assert!(std::mem::size_of::<super::Frame<()>>() <= 32);
    }
}

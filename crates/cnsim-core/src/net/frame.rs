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
    /// A scheme's notification (CNM, CNP, reflection, acknowledgement):
    /// forwarded like data but at control priority, never paused.
    Note = 2,
}

/// Node index of "no node".
pub const NO_NODE: u16 = u16::MAX;

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
    /// Ingress port (global id) at the bridge currently holding the frame;
    /// set when a bridge accepts it.
    pub in_port: u32,
    /// At a bridge: the local index of `in_port` there (its `per_input` partition).
    pub in_local: u16,
    /// Data: the CPID of the rate limiter the frame left (0: none).
    /// Notification: the CP that sent it (0: none, e.g. a destination).
    pub cpid: u16,
    /// Notification: the flow it is about, named by the flow's destination.
    pub about: u16,
    /// PAUSE: pause_time in quanta of 512 bit times (0 = XON).
    pub quanta: u16,
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
            in_port: u32::MAX,
            in_local: 0,
            cpid: 0,
            about: NO_NODE,
            quanta: 0,
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
            in_port: u32::MAX,
            in_local: 0,
            cpid: 0,
            about: NO_NODE,
            quanta,
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
            in_port: u32::MAX,
            in_local: 0,
            cpid,
            about,
            quanta: 0,
            ext,
        }
    }
}

impl<E> Frame<E> {
    #[inline]
    pub fn is_data(&self) -> bool {
        self.kind == FrameKind::Data
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn frame_stays_small() {
        // Without a scheme extension a frame is 32 bytes; BCN's adds 8.
        assert!(std::mem::size_of::<super::Frame<()>>() <= 32);
    }
}

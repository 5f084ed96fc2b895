//! Frames are small `Copy` structs moved between ring buffers; they are never
//! boxed, so the per-frame path allocates nothing once queues have grown.

use crate::engine::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// A data frame of a flow (source station -> destination station).
    Data = 0,
    /// An 802.3x PAUSE frame (MAC control; consumed by the receiving MAC).
    Pause = 1,
    /// A congestion-notification message (BCN / ECM / QCN CNM), forwarded
    /// like data but at control priority.
    Cnm = 2,
}

/// Node index of "no node".
pub const NO_NODE: u16 = u16::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    /// Time the frame was generated (data) or sent (control).
    pub born: Time,
    /// Source station index (data, CNM) .
    pub src: u16,
    /// Destination station index (data, CNM).
    pub dst: u16,
    /// Length on the wire, bytes.
    pub len: u16,
    pub kind: FrameKind,
    /// Ingress port (global id) at the bridge currently holding the frame;
    /// set when a bridge accepts it.
    pub in_port: u32,
    /// PAUSE: pause_time in quanta. Other kinds: scheme-specific (e.g. CPID tag).
    pub tag: u16,
    /// Scheme-specific value (e.g. feedback carried by a CNM).
    pub value: f32,
    /// CNM: destination of the flow the notification is about.
    pub flow_dst: u16,
    /// CNM: message kind (scheme-specific). Data: a CP's mark (QCN-3pt qFb).
    pub aux: u8,
    /// Data: the CP that marked this frame (0 = unmarked).
    pub cp_mark: u16,
}

impl Frame {
    pub fn data(born: Time, src: u16, dst: u16, len: u16) -> Frame {
        Frame {
            born,
            src,
            dst,
            len,
            kind: FrameKind::Data,
            in_port: u32::MAX,
            tag: 0,
            value: 0.0,
            flow_dst: NO_NODE,
            aux: 0,
            cp_mark: 0,
        }
    }

    pub fn pause(born: Time, quanta: u16, len: u16) -> Frame {
        Frame {
            born,
            src: NO_NODE,
            dst: NO_NODE,
            len,
            kind: FrameKind::Pause,
            in_port: u32::MAX,
            tag: quanta,
            value: 0.0,
            flow_dst: NO_NODE,
            aux: 0,
            cp_mark: 0,
        }
    }

    #[inline]
    pub fn is_data(&self) -> bool {
        self.kind == FrameKind::Data
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn frame_stays_small() {
        assert!(std::mem::size_of::<super::Frame>() <= 32);
    }
}

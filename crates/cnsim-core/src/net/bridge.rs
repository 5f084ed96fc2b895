//! A bridge: its shared buffer and the rule by which it admits a frame,
//! its latency, whether its output ports are CPs. How the fabric forwards
//! through a bridge (receive, notify, release) is `forwarding.rs`.

use crate::config::{BufferMode, PauseTrigger};
use crate::engine::Time;
use crate::trace::Reason;

/// A bridge: its shared buffer and how it admits frames, its latency, and
/// whether its output ports are CPs.
pub struct Bridge {
    pub node: u32,
    pub buffer_mode: BufferMode,
    pub buffer_bytes: u64,
    /// `dynamic` buffers: alpha of the dynamic threshold.
    pub dt_alpha: f64,
    pub latency_ps: Time,
    pub cp: bool,
    pub trigger: PauseTrigger,
    /// Data bytes held by the whole bridge.
    pub total_bytes: u64,
    pub dropped_cp: u64,
    /// `mmu` buffers: the shared-buffer switch (admission is its own).
    pub mmu: Option<Box<super::mmu::Mmu>>,
    /// Some output port has a queue limit of its own (`Port::queue_cap`,
    /// set by a `link_rate` event with `scale_buffers`), read only then.
    pub port_caps: bool,
}

impl Bridge {
    /// Whether a data frame of `len` bytes may join an output queue that
    /// holds `queue` bytes, `partition()` of them from the frame's ingress
    /// (read only by the buffer mode that needs it).
    #[inline(always)]
    pub fn admits(&self, len: u64, queue: u64, partition: impl FnOnce() -> u64) -> bool {
        match self.buffer_mode {
            BufferMode::PerOutput => queue + len <= self.buffer_bytes,
            BufferMode::PerInput => partition() + len <= self.buffer_bytes,
            BufferMode::Shared => self.total_bytes + len <= self.buffer_bytes,
            BufferMode::Dynamic => {
                let free = self.buffer_bytes.saturating_sub(self.total_bytes);
                len <= free && (queue + len) as f64 <= self.dt_alpha * free as f64
            }
            // Admitted by the MMU (`net::mmu`) before this is asked.
            BufferMode::Infinite | BufferMode::Mmu => true,
        }
    }

    /// Why a frame that [`Bridge::admits`] refuses was refused, and what
    /// the refusing buffer held.
    pub fn refusal(&self, len: u64, queue: u64, partition: u64) -> (Reason, u64) {
        match self.buffer_mode {
            BufferMode::PerOutput | BufferMode::Infinite | BufferMode::Mmu => (Reason::OutputBufferFull, queue),
            BufferMode::PerInput => (Reason::InputPartitionFull, partition),
            BufferMode::Shared => (Reason::SharedBufferFull, self.total_bytes),
            BufferMode::Dynamic if self.total_bytes + len > self.buffer_bytes => (Reason::SharedBufferFull, self.total_bytes),
            BufferMode::Dynamic => (Reason::DynamicThreshold, queue),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bridge(mode: BufferMode, buffer: u64, held: u64) -> Bridge {
        Bridge {
            node: 0,
            buffer_mode: mode,
            buffer_bytes: buffer,
            dt_alpha: 0.5,
            latency_ps: 0,
            cp: false,
            trigger: PauseTrigger::Auto,
            total_bytes: held,
            dropped_cp: 0,
            mmu: None,
            port_caps: false,
        }
    }

    /// Each buffer mode refuses exactly the frame that would overflow the
    /// buffer it models, and says which buffer that was.
    #[test]
    fn each_buffer_mode_admits_up_to_its_own_limit() {
        // 10,000-byte buffers; the bridge holds 6,000 bytes, 4,000 of them in
        // the output queue, 1,000 of those from the frame's ingress.
        let (queue, part) = (4_000, 1_000);
        let b = bridge(BufferMode::PerOutput, 10_000, 6_000);
        assert!(b.admits(6_000, queue, || part) && !b.admits(6_001, queue, || part));
        assert_eq!(b.refusal(6_001, queue, part), (Reason::OutputBufferFull, queue));
        let b = bridge(BufferMode::PerInput, 10_000, 6_000);
        assert!(b.admits(9_000, queue, || part) && !b.admits(9_001, queue, || part));
        assert_eq!(b.refusal(9_001, queue, part), (Reason::InputPartitionFull, part));
        let b = bridge(BufferMode::Shared, 10_000, 6_000);
        assert!(b.admits(4_000, queue, || part) && !b.admits(4_001, queue, || part));
        assert_eq!(b.refusal(4_001, queue, part), (Reason::SharedBufferFull, 6_000));
        // Dynamic threshold: the queue may grow to alpha x the free buffer
        // (0.5 x 4,000 = 2,000 < 4,000 queued): refused though the buffer has room.
        let b = bridge(BufferMode::Dynamic, 10_000, 6_000);
        assert!(!b.admits(100, queue, || part));
        assert_eq!(b.refusal(100, queue, part), (Reason::DynamicThreshold, queue));
        assert!(b.admits(100, 1_000, || part), "1,100 <= 0.5 x 4,000");
        assert_eq!(b.refusal(4_001, 0, 0).0, Reason::SharedBufferFull);
        assert!(bridge(BufferMode::Infinite, 0, u64::MAX / 2).admits(u64::MAX / 4, u64::MAX / 4, || 0));
    }
}

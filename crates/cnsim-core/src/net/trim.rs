//! Packet trimming's state (schemes with [`Scheme::TRIMS`]: the Ultra
//! Ethernet transport): its settings, each port's header-queue bytes, the
//! coin flips and the counts. What a bridge does with a full queue is
//! net/trim_frames.rs.
//!
//! [`Scheme::TRIMS`]: crate::scheme::Scheme::TRIMS

use crate::engine::rng::Stream;
use crate::scheme::Selective;

/// A trimming run's state: its settings, each port's control-queue bytes,
/// the coin flips' stream and what was trimmed.
pub struct Trimming {
    pub cfg: Selective,
    /// Bytes in each port's control queue (bridge ports' header queues).
    pub ctrl_bytes: Vec<u64>,
    pub rng: Stream,
    /// Data frames cut to their header (their payload dropped).
    pub trimmed: u64,
    /// Headers and control frames a full header queue dropped.
    pub header_drops: u64,
}

impl Trimming {
    pub fn new(cfg: Selective, n_ports: usize, rng: Stream) -> Trimming {
        Trimming {
            cfg,
            ctrl_bytes: vec![0; n_ports],
            rng,
            trimmed: 0,
            header_drops: 0,
        }
    }
}

/// Which frame a full queue trims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victim {
    /// The arriving frame.
    Arriving,
    /// The last frame queued (the arriving one then joins the queue).
    Queued,
}

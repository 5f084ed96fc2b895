//! A shared-buffer switch (`buffer_mode = "mmu"`), as Broadcom-style MMUs
//! keep their buffer and as the HPCC ns-3 fork (`switch-mmu.cc`) and
//! SONiC's buffer model describe it (fabrics.md section 1):
//!
//! - per (ingress port, priority in use) a **reserve**, taken first;
//! - then a **shared pool** (the buffer less every reserve and headroom)
//!   with a dynamic threshold: an (ingress port, priority) may hold
//!   `ingress_alpha` x the pool still free beyond its reserve;
//! - for a lossless priority past that threshold, its **headroom**: the
//!   frames still arriving after the XOFF its crossing sent; a lossless
//!   frame is lost only if it fits neither (`headroom_full`);
//! - a lossy priority has no headroom and is never paused: its output
//!   queue may hold `egress_alpha` x the pool still free, and a frame past
//!   that is dropped (`egress_threshold`).
//!
//! PFC follows the ingress accounting: XOFF for (port, priority) when its
//! headroom is in use or its shared bytes reach the threshold; XON when its
//! headroom is empty and its shared bytes + `xon_offset` are within it.
//!
//! The accounting is counters, not per-frame records: a frame leaving
//! frees headroom first, then shared bytes, then reserve. A pure state
//! machine, tested below without a network.

use super::classes::PRIORITIES;
use crate::config::MmuConfig;
use crate::trace::Reason;

/// One bridge's shared buffer.
pub struct Mmu {
    /// Bytes per (ingress port, priority in use) taken before the pool.
    reserve: u64,
    /// Per local ingress port: its dynamic-threshold alpha.
    ingress_alpha: Vec<f64>,
    egress_alpha: f64,
    xon_offset: u64,
    /// The shared pool: the buffer less every reserve and headroom.
    pool: u64,
    /// Shared bytes in use: the sum of every (port, priority)'s bytes
    /// beyond its reserve.
    shared_used: u64,
    /// Bit p: priority p is lossless (paused by PFC, has headroom).
    lossless: u8,
    /// Per local port: its headroom for each lossless priority.
    headroom: Vec<u64>,
    /// Per (local ingress port, priority): bytes held in reserve and pool.
    used: Vec<[u64; PRIORITIES]>,
    /// Per (local ingress port, priority): bytes held in headroom.
    hdrm: Vec<[u64; PRIORITIES]>,
    /// Per (local output port, priority): bytes queued.
    egress: Vec<[u64; PRIORITIES]>,
    /// Per priority, the most headroom one port ever held.
    pub headroom_peak: [u64; PRIORITIES],
}

/// Why the buffer is too small for the settings, for a clear error.
#[derive(Debug, PartialEq, Eq)]
pub struct Oversubscribed {
    pub reserves: u64,
    pub headrooms: u64,
}

impl Mmu {
    /// The MMU of a bridge of `buffer` bytes whose local ports have these
    /// headrooms (per lossless priority), with `in_use` priorities in use
    /// (each gets a reserve on every port) and the `lossless` ones.
    /// `alpha` holds each local ingress port's dynamic-threshold alpha.
    pub fn new(cfg: &MmuConfig, buffer: u64, headroom: Vec<u64>, alpha: Vec<f64>, in_use: u8, lossless: u8) -> Result<Mmu, Oversubscribed> {
        debug_assert_eq!(alpha.len(), headroom.len());
        let ports = headroom.len() as u64;
        let reserves = cfg.reserve_bytes * ports * in_use.count_ones() as u64;
        let headrooms = headroom.iter().sum::<u64>() * (lossless & in_use).count_ones() as u64;
        if reserves + headrooms >= buffer {
            return Err(Oversubscribed { reserves, headrooms });
        }
        let n = headroom.len();
        Ok(Mmu {
            reserve: cfg.reserve_bytes,
            ingress_alpha: alpha,
            egress_alpha: cfg.egress_alpha,
            xon_offset: cfg.xon_offset_bytes,
            pool: buffer - reserves - headrooms,
            shared_used: 0,
            lossless,
            headroom,
            used: vec![[0; PRIORITIES]; n],
            hdrm: vec![[0; PRIORITIES]; n],
            egress: vec![[0; PRIORITIES]; n],
            headroom_peak: [0; PRIORITIES],
        })
    }

    /// The pool still free.
    fn free(&self) -> u64 {
        self.pool - self.shared_used
    }

    /// What one (ingress port, priority) of local port `i` may hold beyond its reserve.
    fn threshold(&self, i: usize) -> u64 {
        (self.ingress_alpha[i] * self.free() as f64) as u64
    }

    fn shared_of(&self, i: usize, p: usize) -> u64 {
        self.used[i][p].saturating_sub(self.reserve)
    }

    /// Admits a data frame of `len` bytes and priority `p` from local
    /// ingress port `i` to local output port `o`, or says why not.
    pub fn admit(&mut self, i: usize, o: usize, p: usize, len: u64) -> Result<(), Reason> {
        let used = self.used[i][p];
        // Bytes beyond the reserve this frame adds.
        let above = (used + len).saturating_sub(self.reserve) - used.saturating_sub(self.reserve);
        let fits_pool = above <= self.free();
        if self.lossless & (1 << p) != 0 {
            if above == 0 || (fits_pool && self.shared_of(i, p) + above <= self.threshold(i)) {
                self.take(i, o, p, len, above);
            } else if self.hdrm[i][p] + len <= self.headroom[i] {
                self.hdrm[i][p] += len;
                self.egress[o][p] += len;
                self.headroom_peak[p] = self.headroom_peak[p].max(self.hdrm[i][p]);
            } else {
                return Err(Reason::HeadroomFull);
            }
            return Ok(());
        }
        if above > 0 {
            if !fits_pool {
                return Err(Reason::SharedBufferFull);
            }
            if (self.egress[o][p] + len) as f64 > self.egress_alpha * self.free() as f64 {
                return Err(Reason::EgressThreshold);
            }
        }
        self.take(i, o, p, len, above);
        Ok(())
    }

    fn take(&mut self, i: usize, o: usize, p: usize, len: u64, above: u64) {
        self.used[i][p] += len;
        self.shared_used += above;
        self.egress[o][p] += len;
    }

    /// A data frame of `len` bytes and priority `p` that came through `i`
    /// left through `o`: headroom is freed first, then shared, then reserve.
    pub fn release(&mut self, i: usize, o: usize, p: usize, len: u64) {
        let from_hdrm = self.hdrm[i][p].min(len);
        self.hdrm[i][p] -= from_hdrm;
        let before = self.shared_of(i, p);
        self.used[i][p] -= len - from_hdrm;
        self.shared_used -= before - self.shared_of(i, p);
        self.egress[o][p] -= len;
    }

    /// Whether lossless (`i`, `p`) must be paused now.
    pub fn should_pause(&self, i: usize, p: usize) -> bool {
        self.lossless & (1 << p) != 0 && (self.hdrm[i][p] > 0 || self.shared_of(i, p) >= self.threshold(i))
    }

    /// Whether a paused (`i`, `p`) may resume now.
    pub fn may_resume(&self, i: usize, p: usize) -> bool {
        let shared = self.shared_of(i, p);
        self.hdrm[i][p] == 0 && (shared == 0 || shared + self.xon_offset <= self.threshold(i))
    }

    /// Headroom bytes (`i`, `p`) holds.
    pub fn headroom_used(&self, i: usize, p: usize) -> u64 {
        self.hdrm[i][p]
    }

    /// The shared pool's size and use.
    pub fn pool(&self) -> (u64, u64) {
        (self.pool, self.shared_used)
    }

    /// Every byte the MMU holds (reserve, pool and headroom).
    pub fn held(&self) -> u64 {
        self.used.iter().chain(&self.hdrm).flatten().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg(reserve: u64, alpha: f64) -> MmuConfig {
        MmuConfig {
            reserve_bytes: reserve,
            ingress_alpha: alpha,
            egress_alpha: 1.0,
            headroom: crate::config::Headroom::Bytes(0),
            xon_offset_bytes: 3072,
            alpha_ref_bps: None,
        }
    }

    const LOSSLESS_3: u8 = 1 << 3;
    const IN_USE: u8 = 1 << 3 | 1;

    /// Two ports, priorities 0 (lossy) and 3 (lossless), 100,000 bytes:
    /// reserves 4 x 1,000, headroom 2 x 5,000: a pool of 86,000.
    fn mmu() -> Mmu {
        Mmu::new(&cfg(1_000, 0.5), 100_000, vec![5_000, 5_000], vec![0.5; 2], IN_USE, LOSSLESS_3).unwrap()
    }

    #[test]
    fn reserve_then_pool_then_headroom_then_loss() {
        let mut m = mmu();
        assert_eq!(m.pool(), (86_000, 0));
        // The reserve first: nothing of the pool is used.
        m.admit(0, 1, 3, 1_000).unwrap();
        assert_eq!(m.pool().1, 0);
        assert!(!m.should_pause(0, 3));
        // Then the pool, up to alpha x the free pool: x <= 0.5 x (86,000 - x).
        let mut shared = 0;
        while m.admit(0, 1, 3, 1_000).is_ok() && m.headroom_used(0, 3) == 0 {
            shared += 1_000;
        }
        // The frame that finds 28,000 in the pool still fits (29,000 <= 0.5 x
        // 58,000); the next (30,000 > 0.5 x 57,000) does not.
        assert_eq!(shared, 29_000);
        // The frame past the threshold went to headroom and asks for XOFF.
        assert_eq!(m.headroom_used(0, 3), 1_000);
        assert!(m.should_pause(0, 3));
        for _ in 0..4 {
            m.admit(0, 1, 3, 1_000).unwrap();
        }
        assert_eq!(m.admit(0, 1, 3, 1_000), Err(Reason::HeadroomFull));
        // Headroom drains first; XON needs it empty and shared + 3,072 within the threshold.
        for _ in 0..5 {
            assert!(!m.may_resume(0, 3));
            m.release(0, 1, 3, 1_000);
        }
        assert_eq!(m.headroom_used(0, 3), 0);
        for _ in 0..3 {
            assert!(!m.may_resume(0, 3), "29,000 .. 27,000 + 3,072 > 0.5 x 57,000 .. 59,000");
            m.release(0, 1, 3, 1_000);
        }
        assert!(m.may_resume(0, 3), "26,000 + 3,072 <= 0.5 x 60,000");
    }

    #[test]
    fn a_lossy_queue_is_capped_at_its_egress_threshold_and_never_paused() {
        let mut m = mmu();
        let mut n = 0u64;
        while m.admit(1, 0, 0, 1_000).is_ok() {
            n += 1;
            assert!(!m.should_pause(1, 0));
        }
        // 1,000 of reserve; then while the queue x + 1,000 <= 1.0 x (86,000 -
        // (x - 1,000)), x <= 43,000: 44 frames in all.
        assert_eq!(n, 44);
        assert_eq!(m.admit(1, 0, 0, 1_000), Err(Reason::EgressThreshold));
        // A lossless priority from the other port still gets its share.
        assert!(m.admit(0, 1, 3, 1_000).is_ok());
    }

    #[test]
    fn a_buffer_smaller_than_its_reserves_and_headroom_is_refused() {
        let e = Mmu::new(&cfg(1_000, 0.5), 14_000, vec![5_000, 5_000], vec![0.5; 2], IN_USE, LOSSLESS_3).err();
        assert_eq!(
            e,
            Some(Oversubscribed {
                reserves: 4_000,
                headrooms: 10_000
            })
        );
    }

    proptest! {
        /// Any sequence of arrivals and departures keeps the books: the pool
        /// is the sum of what each (port, priority) holds beyond its
        /// reserve, never more than its size; headroom within its limit;
        /// everything freed once every frame has left.
        #[test]
        fn the_books_balance(ops in prop::collection::vec((0usize..2, 0usize..2, prop::bool::ANY, 1u64..3_000, prop::bool::ANY), 1..400)) {
            let mut m = mmu();
            let mut held: Vec<(usize, usize, usize, u64)> = Vec::new();
            for (i, o, lossless, len, arrive) in ops {
                let p = if lossless { 3 } else { 0 };
                if arrive || held.is_empty() {
                    if m.admit(i, o, p, len).is_ok() {
                        held.push((i, o, p, len));
                    }
                } else {
                    let (i, o, p, len) = held.remove(len as usize % held.len());
                    m.release(i, o, p, len);
                }
                let beyond: u64 = (0..2).flat_map(|i| [0, 3].map(|p| (i, p))).map(|(i, p)| m.shared_of(i, p)).sum();
                prop_assert_eq!(beyond, m.shared_used);
                prop_assert!(m.shared_used <= m.pool);
                prop_assert!((0..2).all(|i| m.hdrm[i][3] <= m.headroom[i] && m.hdrm[i][0] == 0));
                prop_assert_eq!(m.held(), held.iter().map(|h| h.3).sum::<u64>());
            }
            for (i, o, p, len) in held {
                m.release(i, o, p, len);
            }
            prop_assert_eq!((m.held(), m.shared_used), (0, 0));
        }
    }
}

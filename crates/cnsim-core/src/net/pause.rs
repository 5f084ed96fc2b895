//! IEEE 802.3x PAUSE (schemes.md, "PAUSE"): the two triggers, XOFF / XON,
//! refresh, and the paused transmitter's bookkeeping.
//!
//! - `output_queue`: an output queue reaching XOFF holds every ingress port
//!   that has frames in it, and any ingress whose frame joins it while it is
//!   above XON; at XON it lets them go. An ingress stays paused while any
//!   queue holds it.
//! - `ingress`: bytes in the bridge that arrived through an ingress port;
//!   XOFF pauses that port's upstream, XON releases it.
//! - `partition`: a per-input partition of an output buffer (`per_input`
//!   buffers) at XOFF holds its input paused; at XON it lets it go.
//!
//! A PAUSE frame is a control frame: queued ahead of data, never paused
//! itself, and acted on when fully received (no bridge latency).
//!
//! The decisions ([`on_enqueue`], [`on_dequeue`], [`IngressPause`],
//! [`OutputHolds`]) are plain functions of the queues' bytes, tested here
//! without a network; `pause_frames.rs` is the fabric's part that carries
//! them out (PAUSE frames, refresh timers, the paused transmitter).

use crate::config::PauseTrigger;
use crate::engine::Time;

/// Headroom above XOFF: the bytes of data that can still reach a bridge's
/// queue after it decides to pause the `ingress_ports` ports feeding it, so
/// that a buffer of XOFF plus this much never drops a data frame. Once per
/// queue, the frame whose arrival crossed XOFF (the check runs when a frame
/// joins, so the queue may be up to a frame past XOFF); then through each
/// paused port, at its line rate `rate_bps`: the data frame the PAUSE waits
/// behind on the reverse link, the PAUSE frame (`control_bytes`), the wire
/// both ways (`delay_ps` each), the bridge's latency pipeline
/// (`latency_ps`), and the frame the upstream is sending when the PAUSE
/// lands (it finishes it). Two frames per port plus one per queue: a
/// per-port count of two alone is one frame short. Control frames are never
/// paused and are not counted.
pub fn headroom_bytes(rate_bps: u64, delay_ps: Time, latency_ps: Time, frame_bytes: u64, control_bytes: u64, ingress_ports: u64) -> u64 {
    let ps_per_s = crate::engine::PS_PER_S as u128;
    let at_line_rate = |ps: Time| (rate_bps as u128 * ps as u128).div_ceil(8 * ps_per_s) as u64;
    frame_bytes + ingress_ports * (2 * frame_bytes + control_bytes + at_line_rate(2 * delay_ps + latency_ps))
}

/// PAUSE state of a bridge's port as an ingress: the bytes in the bridge
/// that arrived through it, and whether its upstream is held paused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IngressPause {
    /// Bytes in the owner bridge that arrived through this port.
    pub in_bytes: u64,
    /// Output queues currently holding this ingress paused (output_queue
    /// and partition triggers).
    pub hold_count: u32,
    /// This port's upstream is paused by us (an XOFF was sent and not yet released).
    pub xoff_sent: bool,
    /// When the next PAUSE refresh is due.
    pub refresh_at: Time,
}

impl IngressPause {
    /// One more output queue holds this ingress; true if it was the first
    /// (the upstream must now be paused).
    #[inline]
    pub fn hold(&mut self) -> bool {
        self.hold_count += 1;
        self.hold_count == 1
    }

    /// One output queue lets this ingress go; true if it was the last (the
    /// upstream may resume).
    #[inline]
    pub fn release(&mut self) -> bool {
        self.hold_count -= 1;
        self.hold_count == 0
    }
}

/// PAUSE state of a bridge's output queue: the ingress ports (local
/// indices at the bridge) it holds paused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputHolds {
    /// The queue is above XON after reaching XOFF (output_queue trigger).
    pub oq_xoff: bool,
    pub held: Vec<bool>,
}

impl OutputHolds {
    pub fn new(ports: usize) -> OutputHolds {
        OutputHolds {
            oq_xoff: false,
            held: vec![false; ports],
        }
    }

    /// Holds ingress `local`; true if it was not held.
    #[inline]
    pub fn hold(&mut self, local: usize) -> bool {
        !std::mem::replace(&mut self.held[local], true)
    }

    /// Lets ingress `local` go; true if it was held.
    #[inline]
    pub fn release(&mut self, local: usize) -> bool {
        std::mem::replace(&mut self.held[local], false)
    }
}

/// PFC (IEEE 802.1Qbb) state of a bridge's port as an ingress: the bytes in
/// the bridge that arrived through it, per priority, and the priorities
/// whose upstream it holds paused. Only the lossless priorities are counted
/// against the thresholds; the others are never paused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PfcIngress {
    pub in_bytes: [u64; 8],
    /// Bit p: an XOFF for priority p was sent and not yet released.
    pub xoff: u8,
}

impl PfcIngress {
    /// A data frame of `len` bytes and priority `prio` arrived through this
    /// port; true if priority `prio`'s upstream must now be paused.
    #[inline]
    pub fn on_enqueue(&mut self, prio: u8, len: u64, th: Thresholds, lossless: u8) -> bool {
        let p = (prio & 7) as usize;
        self.in_bytes[p] += len;
        let bit = 1u8 << p;
        if lossless & bit != 0 && self.xoff & bit == 0 && self.in_bytes[p] >= th.xoff {
            self.xoff |= bit;
            return true;
        }
        false
    }

    /// A data frame of `len` bytes and priority `prio` that came through this
    /// port left the bridge; true if priority `prio`'s upstream may resume.
    #[inline]
    pub fn on_dequeue(&mut self, prio: u8, len: u64, th: Thresholds) -> bool {
        let p = (prio & 7) as usize;
        self.in_bytes[p] -= len;
        let bit = 1u8 << p;
        if self.xoff & bit != 0 && self.in_bytes[p] <= th.xon {
            self.xoff &= !bit;
            return true;
        }
        false
    }
}

/// The PFC watchdog (SONiC's) at one bridge port: per lossless priority,
/// whether its queue is stalled (paused with frames waiting) and since when,
/// and whether it is stormed. Polled; a decision of the queues' state alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watchdog {
    /// Since when each priority's queue has been seen stalled (`Time::MAX`: it is not).
    pub stalled_since: [Time; 8],
    /// Bit p: priority p's queue is stormed.
    pub stormed: u8,
    /// When each stormed priority was stormed or last received a PFC frame.
    pub last_pfc: [Time; 8],
}

impl Default for Watchdog {
    fn default() -> Watchdog {
        Watchdog {
            stalled_since: [Time::MAX; 8],
            stormed: 0,
            last_pfc: [0; 8],
        }
    }
}

impl Watchdog {
    /// A poll at `now` that finds the lossless priorities in `stalled` (bit
    /// p) paused with frames waiting: (the priorities stormed now, those
    /// restored now). A queue seen stalled at polls `detection` apart is
    /// stormed; a stormed queue with no PFC frame for `restoration` is restored.
    pub fn poll(&mut self, now: Time, stalled: u8, lossless: u8, detection: Time, restoration: Time) -> (u8, u8) {
        let (mut stormed, mut restored) = (0u8, 0u8);
        for p in (0..8).filter(|&p| lossless & (1 << p) != 0) {
            let bit = 1u8 << p;
            if self.stormed & bit != 0 {
                if now - self.last_pfc[p] >= restoration {
                    self.stormed &= !bit;
                    restored |= bit;
                    self.stalled_since[p] = Time::MAX;
                }
            } else if stalled & bit == 0 {
                self.stalled_since[p] = Time::MAX;
            } else if self.stalled_since[p] == Time::MAX {
                self.stalled_since[p] = now;
            } else if now - self.stalled_since[p] >= detection {
                self.stormed |= bit;
                stormed |= bit;
                self.last_pfc[p] = now;
                self.stalled_since[p] = Time::MAX;
            }
        }
        (stormed, restored)
    }

    /// A PFC frame naming `classes` reached the port at `now`: the stormed
    /// ones among them, which the port ignores (their restoration waits).
    pub fn pfc_seen(&mut self, classes: u8, now: Time) -> u8 {
        let ignored = classes & self.stormed;
        for p in (0..8).filter(|&p| ignored & (1 << p) != 0) {
            self.last_pfc[p] = now;
        }
        ignored
    }
}

/// What a queue change asks of PAUSE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Nothing,
    /// Pause / release the upstream of the frame's ingress (ingress trigger).
    XoffIngress,
    XonIngress,
    /// The output queue holds ingress `local` / every ingress with bytes in it.
    Hold(usize),
    HoldEveryFeeder,
    /// The output queue lets ingress `local` / every ingress go.
    Release(usize),
    ReleaseAll,
}

/// XOFF / XON thresholds, bytes.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    pub xoff: u64,
    pub xon: u64,
}

/// A data frame from ingress `local` (whose state is `ingress`) joined an
/// output queue (`out`) now holding `queue` bytes, `partition` of them from
/// that ingress.
pub fn on_enqueue(
    trigger: PauseTrigger,
    th: Thresholds,
    ingress: &IngressPause,
    out: &mut OutputHolds,
    queue: u64,
    partition: u64,
    local: usize,
) -> Decision {
    match trigger {
        PauseTrigger::Ingress if !ingress.xoff_sent && ingress.in_bytes >= th.xoff => Decision::XoffIngress,
        PauseTrigger::Ingress => Decision::Nothing,
        PauseTrigger::Partition if partition >= th.xoff => Decision::Hold(local),
        PauseTrigger::Partition => Decision::Nothing,
        _ if out.oq_xoff => Decision::Hold(local),
        _ if queue >= th.xoff => {
            out.oq_xoff = true;
            Decision::HoldEveryFeeder
        }
        _ => Decision::Nothing,
    }
}

/// A data frame that came through ingress `local` left an output queue
/// (`out`) now holding `queue` bytes, `partition` of them from that ingress.
pub fn on_dequeue(
    trigger: PauseTrigger,
    th: Thresholds,
    ingress: &IngressPause,
    out: &mut OutputHolds,
    queue: u64,
    partition: u64,
    local: usize,
) -> Decision {
    match trigger {
        PauseTrigger::Ingress if ingress.xoff_sent && ingress.in_bytes <= th.xon => Decision::XonIngress,
        PauseTrigger::Ingress => Decision::Nothing,
        PauseTrigger::Partition if out.held[local] && partition <= th.xon => Decision::Release(local),
        PauseTrigger::Partition => Decision::Nothing,
        _ if out.oq_xoff && queue <= th.xon => {
            out.oq_xoff = false;
            Decision::ReleaseAll
        }
        _ => Decision::Nothing,
    }
}

/// What the PFC deadlock detector (`net::deadlock`) found over the run.
#[derive(Debug, Clone, Default)]
pub struct Deadlocks {
    /// Distinct cycles found (a cycle that persists counts once).
    pub count: u64,
    /// When the first was found (`Time::MAX`: never).
    pub first_at: Option<Time>,
    /// The first, as `priority P: A->B, B->C, C->A`.
    pub first_cycle: String,
    /// The ports of the cycle seen at the last poll, sorted.
    pub last: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The watchdog storms a queue seen stalled across `detection`, not one
    /// that drains in between; it ignores PFC for a stormed queue and
    /// restores it only after `restoration` without a PFC frame.
    #[test]
    fn the_watchdog_storms_a_stuck_queue_and_restores_it_after_a_quiet_spell() {
        let (lossless, det, rest) = (1 << 3 | 1 << 4, 200, 100);
        let mut w = Watchdog::default();
        assert_eq!(w.poll(0, 1 << 3 | 1 << 0, lossless, det, rest), (0, 0), "first sight; 0 is lossy");
        assert_eq!(w.poll(100, 1 << 3 | 1 << 4, lossless, det, rest), (0, 0));
        assert_eq!(w.poll(150, 1 << 3, lossless, det, rest), (0, 0), "4 drained: its clock restarts");
        assert_eq!(w.poll(200, 1 << 3 | 1 << 4, lossless, det, rest), (1 << 3, 0), "3 stalled 0-200");
        assert_eq!(w.stormed, 1 << 3);
        assert_eq!(w.pfc_seen(1 << 3 | 1 << 4, 260), 1 << 3, "PFC for 3 ignored, for 4 obeyed");
        assert_eq!(w.poll(300, 1 << 4, lossless, det, rest), (0, 0), "60 quiet: not yet");
        assert_eq!(w.poll(360, 1 << 4, lossless, det, rest), (0, 1 << 3), "100 quiet: restored");
        assert_eq!(w.poll(400, 1 << 4, lossless, det, rest), (1 << 4, 0), "4 stalled 200-400");
    }

    /// PFC counts each priority of an ingress on its own: a lossless
    /// priority pauses at XOFF and resumes at XON whatever the others hold;
    /// a lossy priority is never paused however much it holds.
    #[test]
    fn pfc_pauses_each_lossless_priority_on_its_own_bytes() {
        let th = Thresholds { xoff: 3_000, xon: 1_000 };
        let lossless = 1 << 3 | 1 << 4;
        let mut i = PfcIngress::default();
        assert!(!i.on_enqueue(0, 100_000, th, lossless), "priority 0 is lossy");
        assert!(!i.on_enqueue(3, 1_500, th, lossless));
        assert!(i.on_enqueue(3, 1_500, th, lossless), "3,000 bytes of priority 3: XOFF");
        assert!(!i.on_enqueue(3, 1_500, th, lossless), "already paused: one XOFF");
        assert!(!i.on_enqueue(4, 1_500, th, lossless), "priority 4 holds its own 1,500");
        assert_eq!(i.xoff, 1 << 3);
        assert!(!i.on_dequeue(3, 1_500, th) && !i.on_dequeue(3, 1_500, th));
        assert!(i.on_dequeue(3, 500, th), "1,000 bytes left: XON");
        assert!(!i.on_dequeue(0, 100_000, th));
        assert_eq!((i.xoff, i.in_bytes[3], i.in_bytes[4]), (0, 1_000, 1_500));
    }

    /// A bridge reduced to what PAUSE reads: per output queue its bytes by
    /// ingress and its holds, per ingress its state; frames join and leave
    /// queues, and the decisions are carried out as `Fabric` does, the PAUSE
    /// frames recorded as (ingress, XOFF or XON).
    struct Model {
        trigger: PauseTrigger,
        th: Thresholds,
        queues: Vec<Vec<u64>>,
        holds: Vec<OutputHolds>,
        ingress: Vec<IngressPause>,
        frames: Vec<(usize, bool)>,
    }

    impl Model {
        fn new(trigger: PauseTrigger, inputs: usize, outputs: usize) -> Model {
            Model {
                trigger,
                th: Thresholds { xoff: 3_000, xon: 1_000 },
                queues: vec![vec![0; inputs]; outputs],
                holds: vec![OutputHolds::new(inputs); outputs],
                ingress: vec![IngressPause::default(); inputs],
                frames: Vec::new(),
            }
        }

        fn paused(&self, i: usize) -> bool {
            self.ingress[i].xoff_sent
        }

        fn carry_out(&mut self, d: Decision, out: usize, i: usize) {
            let hold = |m: &mut Model, l: usize| {
                if m.holds[out].hold(l) && m.ingress[l].hold() {
                    m.ingress[l].xoff_sent = true;
                    m.frames.push((l, true));
                }
            };
            match d {
                Decision::Nothing => {}
                Decision::XoffIngress => {
                    self.ingress[i].xoff_sent = true;
                    self.frames.push((i, true));
                }
                Decision::XonIngress => {
                    self.ingress[i].xoff_sent = false;
                    self.frames.push((i, false));
                }
                Decision::Hold(l) => hold(self, l),
                Decision::HoldEveryFeeder => {
                    for l in 0..self.ingress.len() {
                        if self.queues[out][l] > 0 {
                            hold(self, l);
                        }
                    }
                }
                Decision::Release(l) => self.release(out, l),
                Decision::ReleaseAll => (0..self.ingress.len()).for_each(|l| self.release(out, l)),
            }
        }

        fn release(&mut self, out: usize, l: usize) {
            if self.holds[out].release(l) && self.ingress[l].release() {
                self.ingress[l].xoff_sent = false;
                self.frames.push((l, false));
            }
        }

        fn join(&mut self, i: usize, out: usize, len: u64) {
            self.queues[out][i] += len;
            self.ingress[i].in_bytes += len;
            let q: u64 = self.queues[out].iter().sum();
            let d = on_enqueue(
                self.trigger,
                self.th,
                &self.ingress[i],
                &mut self.holds[out],
                q,
                self.queues[out][i],
                i,
            );
            self.carry_out(d, out, i);
        }

        fn leave(&mut self, i: usize, out: usize, len: u64) {
            self.queues[out][i] -= len;
            self.ingress[i].in_bytes -= len;
            let q: u64 = self.queues[out].iter().sum();
            let d = on_dequeue(
                self.trigger,
                self.th,
                &self.ingress[i],
                &mut self.holds[out],
                q,
                self.queues[out][i],
                i,
            );
            self.carry_out(d, out, i);
        }
    }

    /// output_queue: a queue reaching XOFF pauses every ingress with frames
    /// in it (and no other), and any that joins later while above XON; at
    /// XON it releases them all at once, one XON each.
    #[test]
    fn an_output_queue_at_xoff_holds_its_feeders_until_xon() {
        let mut m = Model::new(PauseTrigger::OutputQueue, 3, 1);
        m.join(0, 0, 1_500);
        m.join(1, 0, 1_000);
        assert!(m.frames.is_empty());
        m.join(0, 0, 500); // 3,000 bytes: XOFF reached
        assert_eq!(m.frames, vec![(0, true), (1, true)]);
        assert!(!m.paused(2), "ingress 2 has nothing in the queue");
        m.join(2, 0, 100); // joins above XON: held too
        assert!(m.paused(2));
        m.leave(0, 0, 2_000); // 1,100 bytes: still above XON
        assert!(m.paused(0) && m.paused(1) && m.paused(2));
        m.leave(2, 0, 100); // 1,000: XON
        assert_eq!(&m.frames[3..], &[(0, false), (1, false), (2, false)]);
        assert!(m.holds[0].held.iter().all(|&h| !h) && m.ingress.iter().all(|i| i.hold_count == 0));
    }

    /// An ingress held by two output queues stays paused until both let it go.
    #[test]
    fn an_ingress_is_paused_while_any_queue_holds_it() {
        let mut m = Model::new(PauseTrigger::OutputQueue, 2, 2);
        m.join(0, 0, 3_000);
        m.join(0, 1, 3_000);
        assert_eq!(m.frames, vec![(0, true)], "one XOFF for two holds");
        assert_eq!(m.ingress[0].hold_count, 2);
        m.leave(0, 0, 2_500);
        assert!(m.paused(0), "queue 1 still holds it");
        m.leave(0, 1, 2_500);
        assert_eq!(m.frames, vec![(0, true), (0, false)]);
    }

    /// ingress: the bytes that came through one port, with hysteresis.
    #[test]
    fn the_ingress_trigger_counts_what_came_through_the_port() {
        let mut m = Model::new(PauseTrigger::Ingress, 2, 2);
        m.join(0, 0, 2_000);
        m.join(0, 1, 999);
        assert!(!m.paused(0));
        m.join(0, 1, 1); // 3,000 through ingress 0, over two queues
        assert!(m.paused(0) && !m.paused(1));
        m.join(0, 0, 100);
        assert_eq!(m.frames.len(), 1, "no second XOFF while paused");
        m.leave(0, 0, 2_000); // 1,100
        assert!(m.paused(0));
        m.leave(0, 0, 100); // 1,000: XON
        assert_eq!(m.frames, vec![(0, true), (0, false)]);
    }

    /// partition: each input's share of one output buffer, on its own.
    #[test]
    fn a_partition_holds_only_its_own_input() {
        let mut m = Model::new(PauseTrigger::Partition, 2, 1);
        m.join(1, 0, 2_999);
        m.join(0, 0, 3_000);
        assert_eq!(m.frames, vec![(0, true)]);
        m.leave(0, 0, 1_999); // 1,001
        assert!(m.paused(0));
        m.leave(0, 0, 1);
        assert_eq!(m.frames, vec![(0, true), (0, false)]);
        assert!(!m.paused(1), "2,999 bytes never reached XOFF");
    }

    /// Under any sequence of joins and leaves, with every trigger: PAUSE
    /// frames alternate XOFF / XON per ingress, an ingress is paused exactly
    /// while what holds it says so, and an empty bridge holds nothing.
    #[test]
    fn pause_frames_alternate_and_an_empty_bridge_pauses_nothing() {
        use rand::{Rng, SeedableRng};
        for trigger in [PauseTrigger::OutputQueue, PauseTrigger::Ingress, PauseTrigger::Partition] {
            let mut rng = crate::engine::rng::Stream::seed_from_u64(5);
            let mut m = Model::new(trigger, 4, 3);
            for _ in 0..20_000 {
                let (i, o) = (rng.gen_range(0..4), rng.gen_range(0..3));
                if rng.gen_bool(0.5) {
                    m.join(i, o, rng.gen_range(64..1_500));
                } else if m.queues[o][i] > 0 {
                    let len = rng.gen_range(1..=m.queues[o][i]);
                    m.leave(i, o, len);
                }
                for (l, ing) in m.ingress.iter().enumerate() {
                    if trigger != PauseTrigger::Ingress {
                        let holders = m.holds.iter().filter(|h| h.held[l]).count() as u32;
                        assert_eq!(ing.hold_count, holders);
                        assert_eq!(ing.xoff_sent, holders > 0);
                    }
                }
            }
            for l in 0..4 {
                let mine: Vec<bool> = m.frames.iter().filter(|f| f.0 == l).map(|f| f.1).collect();
                assert!(mine.windows(2).all(|w| w[0] != w[1]), "{trigger:?}: XOFF and XON alternate");
            }
            for o in 0..3 {
                for i in 0..4 {
                    let len = m.queues[o][i];
                    if len > 0 {
                        m.leave(i, o, len);
                    }
                }
            }
            assert!(m.ingress.iter().all(|i| !i.xoff_sent && i.in_bytes == 0), "{trigger:?}");
        }
    }
}

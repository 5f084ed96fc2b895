//! Selective-repeat loss recovery with selective acknowledgements: the
//! reliable delivery of the Ultra Ethernet transport (UE 1.0's PDS, as the
//! consortium's reference simulator runs it), for schemes that ask for it
//! ([`Scheme::SELECTIVE`](crate::scheme::Scheme::SELECTIVE)). Two pure state
//! machines, tested below without a network:
//!
//! - [`SelSender`]: a send record per packet (PSN) in flight, the PSNs to
//!   send again (lowest first, ahead of new data), the receiver's count of
//!   bytes received (the sender's delivery clock), and one retransmission
//!   timer at the oldest outstanding send plus the RTO. A NACK (the
//!   receiver saw the packet trimmed) or a timeout queues only that PSN
//!   again; nothing is sent twice that was not lost.
//! - [`SelReceiver`]: the cumulative point (every PSN below it received), a
//!   bitmap of the PSNs received beyond it (kept, not discarded), and when
//!   to acknowledge: every `ack_bytes` bytes received, at once for a frame
//!   the scheme marks urgent (ECN CE, ACK requested), for the first frame
//!   and for a duplicate. An acknowledgement carries the cumulative point
//!   and 64 bits of selective acknowledgement from a base.

use crate::engine::Time;
use std::collections::{BTreeSet, VecDeque};

/// One packet's send record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rec {
    /// When it was last sent.
    sent: Time,
    /// Wire length.
    len: u16,
    /// How many times it was sent.
    sends: u8,
    state: State,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Sent, not yet acknowledged, NACKed or timed out.
    Out,
    /// NACKed or timed out: waiting to be sent again.
    Lost,
    /// Selectively acknowledged (above the cumulative point).
    Done,
}

/// The sender's side of one flow.
#[derive(Clone, Debug, Default)]
pub struct SelSender {
    /// PSN of `recs[0]`: the cumulative acknowledgement (every PSN below it
    /// was received).
    base: u32,
    recs: VecDeque<Rec>,
    /// Next PSN never sent.
    next_new: u32,
    /// PSNs to send again, lowest first, and their bytes.
    rtx: BTreeSet<u32>,
    rtx_bytes: u64,
    /// The receiver's count of bytes received, as last heard.
    last_recvd: u64,
    /// The one retransmission timer event pending (`Time::MAX`: none).
    pub rto_event: Time,
}

/// What an acknowledgement tells the sender ([`SelSender::on_ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckOutcome {
    /// Bytes the receiver received since the last acknowledgement heard
    /// (its running count's increase): what left the network.
    pub newly: u64,
    /// Bytes of PSNs queued to be sent again that this acknowledgement
    /// showed received after all (they are no longer lost).
    pub recovered: u64,
    /// The round trip of the packet that triggered it (now minus its send
    /// time), when that is unambiguous: sent once (or twice, answered as a
    /// retransmission) and still on record.
    pub rtt: Option<Time>,
    /// Every packet of the flow is acknowledged.
    pub done: bool,
    /// The cumulative point moved.
    pub advanced: bool,
}

/// A retransmission timer event ([`SelSender::on_timer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelRto {
    /// Not the pending event, or nothing outstanding.
    Stale,
    /// The oldest outstanding send is younger than the RTO: wait until then.
    Rearm(Time),
    /// PSN `psn` (`len` bytes) timed out and is queued to be sent again;
    /// the timer goes on at `next` (the next oldest's deadline) if any.
    Fired { psn: u32, len: u16, next: Option<Time> },
}

impl SelSender {
    pub fn new() -> SelSender {
        SelSender {
            rto_event: Time::MAX,
            ..SelSender::default()
        }
    }

    /// The next PSN to send, if any (`n_frames` in the flow): a lost one
    /// first, else the next new one; and whether it is sent again.
    #[inline]
    pub fn next_psn(&self, n_frames: u32) -> Option<(u32, bool)> {
        if let Some(&p) = self.rtx.first() {
            return Some((p, true));
        }
        (self.next_new < n_frames).then_some((self.next_new, false))
    }

    /// Bytes of the PSNs waiting to be sent again.
    #[inline]
    pub fn rtx_bytes(&self) -> u64 {
        self.rtx_bytes
    }

    /// Whether anything is left to send.
    #[inline]
    pub fn has_pending(&self, n_frames: u32) -> bool {
        !self.rtx.is_empty() || self.next_new < n_frames
    }

    /// The cumulative point: every PSN below it received.
    #[inline]
    pub fn cum(&self) -> u32 {
        self.base
    }

    /// PSNs ever sent (the highest + 1).
    #[inline]
    pub fn sent_max(&self) -> u32 {
        self.next_new
    }

    /// PSN `psn` (`len` bytes) leaves at `now` (taken from
    /// [`SelSender::next_psn`]). Returns when to arm the retransmission
    /// timer, if none is pending (`rto` after now).
    pub fn sent(&mut self, psn: u32, len: u16, now: Time, rto: Time) -> Option<Time> {
        if psn == self.next_new {
            self.recs.push_back(Rec {
                sent: now,
                len,
                sends: 1,
                state: State::Out,
            });
            self.next_new += 1;
        } else {
            if self.rtx.remove(&psn) {
                self.rtx_bytes -= len as u64;
            }
            let r = &mut self.recs[(psn - self.base) as usize];
            r.sent = now;
            r.sends = r.sends.saturating_add(1);
            r.state = State::Out;
        }
        if self.rto_event == Time::MAX {
            self.rto_event = now.saturating_add(rto);
            Some(self.rto_event)
        } else {
            None
        }
    }

    fn rec(&mut self, psn: u32) -> Option<&mut Rec> {
        if psn < self.base {
            return None;
        }
        self.recs.get_mut((psn - self.base) as usize)
    }

    /// An acknowledgement at `now`: every PSN below `cum` received, PSN
    /// `base + i` for each bit i of `bits`, `recvd` bytes received in all;
    /// it answers PSN `acked` (`rtx_echo`: as a retransmission).
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack(
        &mut self,
        cum: u32,
        base: u32,
        bits: u64,
        recvd: u64,
        acked: u32,
        rtx_echo: bool,
        now: Time,
        n_frames: u32,
    ) -> AckOutcome {
        let newly = recvd.saturating_sub(self.last_recvd);
        self.last_recvd = self.last_recvd.max(recvd);
        let rtt = self.rec(acked).and_then(|r| {
            let clean = (r.sends == 1 && !rtx_echo) || (r.sends == 2 && rtx_echo);
            (r.state == State::Out && clean).then(|| now.saturating_sub(r.sent))
        });
        let mut recovered = 0;
        let cum = cum.min(self.next_new);
        let advanced = cum > self.base;
        while self.base < cum {
            let r = self.recs.pop_front().expect("a record below the highest sent");
            if r.state == State::Lost {
                self.rtx.remove(&self.base);
                self.rtx_bytes -= r.len as u64;
                recovered += r.len as u64;
            }
            self.base += 1;
        }
        let mut b = bits;
        while b != 0 {
            let i = b.trailing_zeros();
            b &= b - 1;
            let psn = base.wrapping_add(i);
            if let Some(r) = self.rec(psn) {
                if r.state == State::Lost {
                    let len = r.len as u64;
                    r.state = State::Done;
                    recovered += len;
                    self.rtx.remove(&psn);
                    self.rtx_bytes -= len;
                } else {
                    r.state = State::Done;
                }
            }
        }
        AckOutcome {
            newly,
            recovered,
            rtt,
            done: self.base >= n_frames,
            advanced,
        }
    }

    /// A NACK at `now`: PSN `psn` was trimmed on its way. Returns its
    /// length and round trip if it was outstanding (it is then queued to be
    /// sent again), None if it was not (already acknowledged or handled).
    pub fn on_nack(&mut self, psn: u32, now: Time) -> Option<(u16, Time)> {
        let r = self.rec(psn)?;
        if r.state != State::Out {
            return None;
        }
        r.state = State::Lost;
        let out = (r.len, now.saturating_sub(r.sent));
        self.rtx.insert(psn);
        self.rtx_bytes += out.0 as u64;
        Some(out)
    }

    /// The oldest outstanding send's deadline (`rto` after it).
    fn oldest_deadline(&self, rto: Time) -> Option<(u32, Time)> {
        self.recs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.state == State::Out)
            .min_by_key(|(i, r)| (r.sent, *i))
            .map(|(i, r)| (self.base + i as u32, r.sent.saturating_add(rto)))
    }

    /// The timer event of `now` fired: the oldest outstanding PSN times out
    /// if it has been out for `rto`.
    pub fn on_timer(&mut self, now: Time, rto: Time) -> SelRto {
        if self.rto_event != now {
            return SelRto::Stale;
        }
        self.rto_event = Time::MAX;
        let Some((psn, deadline)) = self.oldest_deadline(rto) else {
            return SelRto::Stale;
        };
        if deadline > now {
            self.rto_event = deadline;
            return SelRto::Rearm(deadline);
        }
        let r = self.rec(psn).expect("outstanding");
        r.state = State::Lost;
        let len = r.len;
        self.rtx.insert(psn);
        self.rtx_bytes += len as u64;
        let next = self.oldest_deadline(rto).map(|(_, d)| d.max(now));
        if let Some(d) = next {
            self.rto_event = d;
        }
        SelRto::Fired { psn, len, next }
    }

    /// Packets sent and not yet acknowledged, NACKed or timed out.
    pub fn outstanding(&self) -> usize {
        self.recs.iter().filter(|r| r.state == State::Out).count()
    }
}

/// One flow's two ends, and the sender's bytes in flight as the reference
/// counts them (up at each send, down by what the receiver reports received
/// and by each NACK or timeout; it may dip below zero for a moment).
#[derive(Clone, Debug, Default)]
pub struct SelFlow {
    pub tx: SelSender,
    pub rx: SelReceiver,
    pub inflight: i64,
}

impl SelFlow {
    pub fn new() -> SelFlow {
        SelFlow {
            tx: SelSender::new(),
            rx: SelReceiver::default(),
            inflight: 0,
        }
    }
}

/// What the receiver does with a data frame ([`SelReceiver::on_data`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxOutcome {
    /// Received before (below the cumulative point or held): not counted.
    pub duplicate: bool,
    /// Beyond a gap: held out of order.
    pub held: bool,
    /// The flow's last missing frame: every frame is now received.
    pub finished: bool,
    /// Acknowledge now.
    pub ack: bool,
}

/// What the receiver answers a trimmed frame with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimReply {
    /// Received before: acknowledge (its data is here).
    Ack,
    /// Not received: NACK it, so that it is sent again at once.
    Nack,
}

/// The receiver's side of one flow.
#[derive(Clone, Debug, Default)]
pub struct SelReceiver {
    /// Next PSN expected: every PSN below it received.
    cum: u32,
    /// PSNs received beyond `cum`, one bit each by PSN (allocated at the
    /// first frame out of order).
    held: Vec<u64>,
    n_held: u32,
    /// Bytes received since the last acknowledgement.
    since_ack: u32,
    /// Bytes received in all (duplicates not counted): echoed in every
    /// acknowledgement, the sender's delivery clock.
    recvd: u64,
    first_seen: bool,
    /// An acknowledgement was asked for beyond a gap: another is due when
    /// the gap closes.
    ack_request: bool,
}

impl SelReceiver {
    #[inline]
    fn is_held(&self, psn: u32) -> bool {
        self.held.get((psn / 64) as usize).is_some_and(|w| w >> (psn % 64) & 1 == 1)
    }

    fn set_held(&mut self, psn: u32, on: bool) {
        let w = (psn / 64) as usize;
        if self.held.len() <= w {
            self.held.resize(w + 1, 0);
        }
        if on {
            self.held[w] |= 1 << (psn % 64);
        } else {
            self.held[w] &= !(1 << (psn % 64));
        }
    }

    /// Every PSN below this received.
    #[inline]
    pub fn cum(&self) -> u32 {
        self.cum
    }

    /// Bytes received in all.
    #[inline]
    pub fn recvd(&self) -> u64 {
        self.recvd
    }

    /// Data frame `psn` of `len` bytes arrived, ECN-marked (`ce`) or asking
    /// for an acknowledgement at once (`ar`); the flow has `n_frames`;
    /// acknowledge every `ack_bytes` bytes received. An `ar` frame is
    /// acknowledged at once, and again when the frames out of order before
    /// it have all arrived.
    pub fn on_data(&mut self, psn: u32, len: u16, ce: bool, ar: bool, n_frames: u32, ack_bytes: u32) -> RxOutcome {
        if psn < self.cum || self.is_held(psn) {
            self.since_ack = 0;
            return RxOutcome {
                duplicate: true,
                held: false,
                finished: false,
                ack: true,
            };
        }
        self.since_ack += len as u32;
        self.recvd += len as u64;
        let first = !self.first_seen;
        self.first_seen = true;
        let mut drained = false;
        if ar {
            self.ack_request = true;
        }
        let held = psn != self.cum;
        if held {
            self.set_held(psn, true);
            self.n_held += 1;
        } else {
            self.cum += 1;
            while self.n_held > 0 && self.is_held(self.cum) {
                self.set_held(self.cum, false);
                self.n_held -= 1;
                self.cum += 1;
            }
            if self.n_held == 0 && !self.held.is_empty() {
                self.held = Vec::new();
            }
            if self.n_held == 0 && self.ack_request {
                drained = true;
                self.ack_request = false;
            }
        }
        let finished = self.cum == n_frames;
        let ack = ce || ar || drained || first || finished || self.since_ack >= ack_bytes;
        if ack {
            self.since_ack = 0;
        }
        RxOutcome {
            duplicate: false,
            held,
            finished,
            ack,
        }
    }

    /// A trimmed frame `psn` arrived: NACK it unless it was received.
    pub fn on_trimmed(&mut self, psn: u32) -> TrimReply {
        if psn < self.cum || self.is_held(psn) {
            TrimReply::Ack
        } else {
            TrimReply::Nack
        }
    }

    /// The selective acknowledgement of an acknowledgement answering `psn`:
    /// its base (`psn` itself when `urgent`, else up to 63 below it but
    /// above the cumulative point) and bit i for PSN base + i held.
    pub fn sack(&self, psn: u32, urgent: bool) -> (u32, u64) {
        let base = if urgent {
            psn
        } else {
            psn.saturating_sub(63).max(self.cum.saturating_add(1))
        };
        let mut bits = 0u64;
        if self.n_held > 0 {
            for i in 0..64 {
                if self.is_held(base.wrapping_add(i)) {
                    bits |= 1 << i;
                }
            }
        }
        (base, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTO: Time = 1_000;
    const ACK_BYTES: u32 = 16_384;

    /// The whole loop without a network: a sender, a receiver, frames
    /// delivered in a chosen order (some trimmed), acknowledgements back.
    #[test]
    fn a_trimmed_frame_is_nacked_and_sent_again_alone() {
        let (mut tx, mut rx) = (SelSender::new(), SelReceiver::default());
        let n = 8;
        for t in 0..6 {
            let (psn, again) = tx.next_psn(n).unwrap();
            assert!(!again);
            tx.sent(psn, 4150, t, RTO);
        }
        // PSN 1 is trimmed; 0, 2, 3, 4, 5 arrive.
        assert!(
            rx.on_data(0, 4150, false, false, n, ACK_BYTES).ack,
            "the first frame is acknowledged"
        );
        assert_eq!(rx.on_trimmed(1), TrimReply::Nack);
        let r = rx.on_data(2, 4150, false, false, n, ACK_BYTES);
        assert!(r.held && !r.ack && !r.duplicate);
        rx.on_data(3, 4150, false, false, n, ACK_BYTES);
        assert!(
            !rx.on_data(4, 4150, false, false, n, ACK_BYTES).ack,
            "12,450 bytes since the last acknowledgement"
        );
        assert!(rx.on_data(5, 4150, false, false, n, ACK_BYTES).ack, "16,600 bytes: at least 16,384");
        assert_eq!(rx.cum(), 1);
        let (base, bits) = rx.sack(5, false);
        assert_eq!((base, bits), (2, 0b1111), "2 to 5 held");
        // The NACK reaches the sender first: PSN 1 alone is queued again.
        assert_eq!(tx.on_nack(1, 10), Some((4150, 9)));
        assert_eq!(tx.on_nack(1, 11), None, "one NACK per send");
        assert_eq!(tx.next_psn(n), Some((1, true)), "the lost PSN goes before new data");
        let a = tx.on_ack(rx.cum(), base, bits, rx.recvd(), 5, false, 12, n);
        assert_eq!(a.newly, 5 * 4150);
        assert_eq!((a.recovered, a.done, a.advanced), (0, false, true));
        assert_eq!(a.rtt, Some(12 - 5));
        tx.sent(1, 4150, 13, RTO);
        assert_eq!(tx.next_psn(n), Some((6, false)), "2 to 5 were selectively acknowledged");
        tx.sent(6, 4150, 14, RTO);
        tx.sent(7, 100, 15, RTO);
        let r = rx.on_data(1, 4150, false, false, n, ACK_BYTES);
        assert!(!r.held && !r.finished);
        assert_eq!(rx.cum(), 6, "the held frames join the cumulative point");
        rx.on_data(6, 4150, false, false, n, ACK_BYTES);
        let r = rx.on_data(7, 100, false, false, n, ACK_BYTES);
        assert!(r.finished && r.ack);
        let a = tx.on_ack(rx.cum(), 8, 0, rx.recvd(), 7, false, 20, n);
        assert!(a.done);
        assert_eq!(tx.next_psn(n), None);
        // Each PSN was received once.
        assert_eq!(rx.recvd(), 7 * 4150 + 100);
    }

    #[test]
    fn a_duplicate_is_acknowledged_at_once_and_not_counted() {
        let mut rx = SelReceiver::default();
        rx.on_data(0, 100, false, false, 10, ACK_BYTES);
        let r = rx.on_data(0, 100, false, false, 10, ACK_BYTES);
        assert!(r.duplicate && r.ack);
        assert_eq!(rx.recvd(), 100);
        rx.on_data(3, 100, false, false, 10, ACK_BYTES);
        assert!(rx.on_data(3, 100, false, false, 10, ACK_BYTES).duplicate, "held counts as received");
        assert_eq!(rx.on_trimmed(3), TrimReply::Ack);
        assert_eq!(rx.on_trimmed(0), TrimReply::Ack);
        assert_eq!(rx.on_trimmed(1), TrimReply::Nack);
    }

    /// An ACK request beyond a gap is answered at once and again when the
    /// gap closes, so that a sender whose window is full hears of both.
    #[test]
    fn an_ack_request_beyond_a_gap_is_answered_again_when_it_closes() {
        let mut rx = SelReceiver::default();
        rx.on_data(0, 100, false, false, 10, ACK_BYTES);
        assert!(rx.on_data(2, 100, false, true, 10, ACK_BYTES).ack, "asked for: at once");
        assert!(!rx.on_data(3, 100, false, false, 10, ACK_BYTES).ack);
        assert!(rx.on_data(1, 100, false, false, 10, ACK_BYTES).ack, "the gap closed: again");
        assert!(!rx.on_data(4, 100, false, false, 10, ACK_BYTES).ack, "and only once");
    }

    #[test]
    fn urgent_frames_are_acknowledged_from_their_own_psn() {
        let mut rx = SelReceiver::default();
        rx.on_data(0, 100, false, false, 100, ACK_BYTES);
        assert!(!rx.on_data(1, 100, false, false, 100, ACK_BYTES).ack);
        assert!(rx.on_data(5, 100, false, true, 100, ACK_BYTES).ack, "CE or ACK requested");
        assert_eq!(rx.sack(5, true), (5, 1));
        rx.on_data(70, 100, false, false, 100, ACK_BYTES);
        // Not urgent: the base is 63 below, but above the cumulative point.
        assert_eq!(rx.sack(70, false), (7, 1 << 63));
        assert_eq!(rx.sack(6, false), (3, 1 << 2));
    }

    /// The timer fires at the oldest outstanding send plus the RTO, times
    /// out that one packet only, and goes on from the next oldest.
    #[test]
    fn a_timeout_queues_the_oldest_outstanding_packet_only() {
        let mut tx = SelSender::new();
        assert_eq!(tx.sent(0, 100, 0, RTO), Some(RTO));
        assert_eq!(tx.sent(1, 100, 10, RTO), None, "already armed");
        tx.sent(2, 100, 20, RTO);
        // PSN 0 is acknowledged at 500: the event at 1,000 waits for PSN 1.
        tx.on_ack(1, 2, 0, 100, 0, false, 500, 3);
        assert_eq!(tx.on_timer(900, RTO), SelRto::Stale, "not the pending event");
        assert_eq!(tx.on_timer(RTO, RTO), SelRto::Rearm(1_010));
        assert_eq!(
            tx.on_timer(1_010, RTO),
            SelRto::Fired {
                psn: 1,
                len: 100,
                next: Some(1_020)
            }
        );
        assert_eq!(tx.next_psn(3), Some((1, true)));
        assert_eq!(tx.on_nack(1, 1_015), None, "already queued");
        tx.sent(1, 100, 1_015, RTO);
        // The retransmission answered as one gives a clean sample; the
        // original's answer would not.
        let a = tx.on_ack(2, 2, 0, 200, 1, true, 1_030, 3);
        assert_eq!(a.rtt, Some(15));
        assert_eq!(a.newly, 100);
    }

    /// A packet queued again that turns out received (the original was
    /// only late) is recovered: its bytes are in flight no more.
    #[test]
    fn a_late_original_recovers_a_queued_retransmission() {
        let mut tx = SelSender::new();
        tx.sent(0, 100, 0, RTO);
        tx.sent(1, 100, 1, RTO);
        assert_eq!(
            tx.on_timer(RTO, RTO),
            SelRto::Fired {
                psn: 0,
                len: 100,
                next: Some(1_001)
            }
        );
        let a = tx.on_ack(2, 2, 0, 200, 1, false, 1_005, 2);
        assert_eq!((a.recovered, a.done), (100, true));
        assert_eq!(tx.next_psn(2), None);
    }
}

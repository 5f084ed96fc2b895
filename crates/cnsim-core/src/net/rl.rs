//! Rate limiters at the reaction point (schemes.md, "Station"): created by
//! feedback, one per CP (CPID) per station, flows mapped by destination. An
//! RL holds its frames in its own queue (RLQ) and releases the head frame at
//! its current rate; the station's link serves the unlimited NIC FIFO and the
//! RLQs round-robin. Frames leaving an RL carry its CPID. An RL back at line
//! rate with an empty queue is released. What moves the rate is the scheme's.

use super::frame::{Frame, NO_NODE};
use super::port::PortId;
use super::sim::{NetSim, EV_RL_TIMER, EV_WAKE};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::scheme::{Feedback, FeedbackKind, RlCore, Scheme};
use crate::stats::QueueTrace;
use std::collections::VecDeque;

/// Rate limiters per station at most (slots; event indices are station * MAX_RL + slot).
pub const MAX_RL: usize = 16;
pub const NO_RL: u8 = u8::MAX;
/// At most this many RLs get rate / RLQ time series.
pub const MAX_RL_TRACES: usize = 256;

pub struct RateLimiter<R> {
    pub cpid: u16,
    pub core: RlCore,
    pub state: R,
    pub queue: VecDeque<Frame>,
    pub bytes: u64,
    /// The head frame may leave at this time (pacing).
    pub next_release: Time,
    pub last_release: Time,
    pub last_len: u16,
    /// The valid pending timer (stale timer events are ignored).
    pub timer_at: Time,
    pub trace: Option<usize>,
}

/// The reaction-point side of one station.
pub struct StationRp<R> {
    pub rls: Vec<Option<RateLimiter<R>>>,
    /// Destination station -> RL slot, or NO_RL.
    pub flow_rl: Vec<u8>,
    pub active: usize,
    /// Round-robin position: 0 = NIC FIFO, 1 + k = RL slot k.
    pub rr: usize,
    /// Scheme randomness of this station's RLs.
    pub rng: Stream,
}

impl<R> StationRp<R> {
    pub fn new(n_stations: usize, rng: Stream) -> Self {
        StationRp {
            rls: (0..MAX_RL).map(|_| None).collect(),
            flow_rl: vec![NO_RL; n_stations],
            active: 0,
            rr: 0,
            rng,
        }
    }

    pub fn frames_queued(&self) -> u64 {
        self.rls.iter().flatten().map(|rl| rl.queue.len() as u64).sum()
    }

    pub fn has_queued(&self) -> bool {
        self.active > 0 && self.rls.iter().flatten().any(|rl| !rl.queue.is_empty())
    }
}

/// Time to send `len` bytes at `rate_bps` (pacing), rounded up.
#[inline]
fn pace_ps(len: u16, rate_bps: f64) -> Time {
    (len as f64 * 8.0e12 / rate_bps).ceil() as Time
}

/// Series recorded per RL: rate (bit/s) and RLQ bytes at bin ends.
pub struct RlTrace {
    pub key: String,
    pub rate: QueueTrace,
    pub bytes: QueueTrace,
}

impl<S: Scheme> NetSim<S> {
    /// A generated data frame of station `s` to `dst`: into its flow's RLQ if
    /// the flow is rate limited. Returns the frame back if it goes to the NIC FIFO.
    #[inline]
    pub(crate) fn rl_admit(&mut self, s: usize, frame: Frame) -> Option<Frame> {
        let rp = &mut self.rps[s];
        if rp.active == 0 {
            return Some(frame);
        }
        let k = rp.flow_rl[frame.dst as usize];
        if k == NO_RL {
            return Some(frame);
        }
        let cap = self.net.stations[s].rlq_bytes;
        let rl = rp.rls[k as usize].as_mut().expect("mapped flows point at live RLs");
        if rl.bytes + frame.len as u64 > cap {
            self.net.stations[s].dropped_rp += 1;
            self.stats.count(self.now, 3);
            return None;
        }
        rl.bytes += frame.len as u64;
        rl.queue.push_back(frame);
        let tr = rl.trace;
        let bytes = rl.bytes;
        self.trace_rl_bytes(tr, bytes);
        None
    }

    /// Picks the next data frame of station `s` round-robin over the NIC FIFO
    /// and the RLs whose head may leave now; schedules a wake-up for the
    /// earliest RL that may leave later.
    pub(crate) fn station_next_data(&mut self, s: usize, port: PortId) -> Option<Frame> {
        let now = self.now;
        let rp = &mut self.rps[s];
        let n = MAX_RL + 1;
        let mut earliest = Time::MAX;
        for i in 0..n {
            let idx = (rp.rr + i) % n;
            if idx == 0 {
                if let Some(f) = self.net.ports[port as usize].data.pop_front() {
                    rp.rr = 1;
                    return Some(f);
                }
                continue;
            }
            let Some(rl) = rp.rls[idx - 1].as_mut() else { continue };
            if rl.queue.is_empty() {
                continue;
            }
            let at = rl.next_release.max(rl.core.stopped_until);
            if at > now {
                earliest = earliest.min(at);
                continue;
            }
            let mut f = rl.queue.pop_front().expect("non-empty");
            rl.bytes -= f.len as u64;
            f.tag = rl.cpid;
            rl.last_release = now;
            rl.last_len = f.len;
            let rate_before = rl.core.rate_bps;
            let timer = self.scheme.rp_on_transmit(&mut rl.core, &mut rl.state, f.len, now, &mut rp.rng);
            rl.next_release = now + pace_ps(f.len, rl.core.rate_bps);
            let rate_changed = rl.core.rate_bps != rate_before;
            rp.rr = (idx + 1) % n;
            let (tr, bytes, rate) = (rl.trace, rl.bytes, rl.core.rate_bps);
            // The frame now occupies the NIC like any frame being sent.
            self.net.ports[port as usize].data_bytes += f.len as u64;
            self.trace_rl_bytes(tr, bytes);
            self.set_rl_timer(s, idx - 1, timer);
            if rate_changed {
                if let Some(t) = tr {
                    let b = self.stats.bin_now();
                    self.rl_traces[t].rate.update(b, rate as u64);
                }
            }
            self.maybe_release(s, idx - 1);
            return Some(f);
        }
        if earliest != Time::MAX {
            self.wake_port_at(port, earliest);
        }
        None
    }

    pub(crate) fn wake_port_at(&mut self, port: PortId, at: Time) {
        let p = &mut self.net.ports[port as usize];
        if p.wake_at <= self.now || at < p.wake_at {
            p.wake_at = at;
            self.q.push(at, EV_WAKE, port);
        }
    }

    /// A CNM reached station `s` (after its processing time).
    pub(crate) fn rp_receive(&mut self, s: usize, cnm: &Frame) {
        let fb = Feedback {
            kind: FeedbackKind::from_u8(cnm.aux),
            fb: cnm.value,
        };
        let cpid = cnm.tag;
        let now = self.now;
        let slot = match self.rps[s].rls.iter().position(|r| r.as_ref().is_some_and(|r| r.cpid == cpid)) {
            Some(k) => k,
            None => {
                if !self.scheme.creates_rl(&fb) {
                    return;
                }
                match self.create_rl(s, cpid) {
                    Some(k) => k,
                    None => return, // every slot busy: the notification is ignored
                }
            }
        };
        if matches!(fb.kind, FeedbackKind::Negative | FeedbackKind::Stop) && cnm.flow_dst != NO_NODE {
            // Map (or re-map to the newer CP) the flow the notification is about.
            self.rps[s].flow_rl[cnm.flow_dst as usize] = slot as u8;
        }
        let rp = &mut self.rps[s];
        let rl = rp.rls[slot].as_mut().expect("live");
        let timer = self.scheme.rp_on_feedback(&mut rl.core, &mut rl.state, &fb, now, &mut rp.rng);
        self.after_rate_change(s, slot, timer);
    }

    fn create_rl(&mut self, s: usize, cpid: u16) -> Option<usize> {
        let now = self.now;
        let k = self.rps[s].rls.iter().position(|r| r.is_none())?;
        let port = self.net.stations[s].port;
        let line = self.net.ports[port as usize].nominal_rate_bps as f64;
        let mut core = RlCore {
            rate_bps: line,
            line_rate_bps: line,
            stopped_until: 0,
        };
        let mut state = self.scheme.new_rl();
        let timer = self.scheme.rp_on_create(&mut core, &mut state, now);
        let trace = self.rl_trace_for(s, cpid);
        self.rps[s].rls[k] = Some(RateLimiter {
            cpid,
            core,
            state,
            queue: VecDeque::new(),
            bytes: 0,
            next_release: 0,
            last_release: now,
            last_len: 0,
            timer_at: Time::MAX,
            trace,
        });
        self.rps[s].active += 1;
        self.set_rl_timer(s, k, timer);
        Some(k)
    }

    fn rl_trace_for(&mut self, s: usize, cpid: u16) -> Option<usize> {
        let key = if S::RL_PER_FLOW {
            format!("{}|{}", self.net.station_name(s), self.net.station_name(cpid as usize - 1))
        } else {
            format!("{}|{}", self.net.station_name(s), self.net.ports[cpid as usize - 1].name)
        };
        if let Some(&i) = self.rl_trace_index.get(&key) {
            return Some(i);
        }
        if let Some(only) = &self.trace_rls {
            if !only.contains(&key) {
                return None;
            }
        }
        if self.rl_traces.len() >= MAX_RL_TRACES {
            return None;
        }
        let n = self.stats.n_bins;
        let mut rate = QueueTrace::new(0, n);
        // Before the RL exists its flows are unlimited: line rate.
        let line = self.net.ports[self.net.stations[s].port as usize].nominal_rate_bps;
        rate.update(0, line);
        rate.update(self.stats.bin_now(), line);
        self.rl_traces.push(RlTrace {
            key: key.clone(),
            rate,
            bytes: QueueTrace::new(0, n),
        });
        self.rl_trace_index.insert(key, self.rl_traces.len() - 1);
        Some(self.rl_traces.len() - 1)
    }

    #[inline]
    fn trace_rl_bytes(&mut self, trace: Option<usize>, bytes: u64) {
        if let Some(t) = trace {
            let b = self.stats.bin_now();
            self.rl_traces[t].bytes.update(b, bytes);
        }
    }

    fn set_rl_timer(&mut self, s: usize, k: usize, timer: Option<Time>) {
        let Some(at) = timer else { return };
        let rl = self.rps[s].rls[k].as_mut().expect("live");
        rl.timer_at = at;
        if at != Time::MAX {
            self.q.push(at, EV_RL_TIMER, (s * MAX_RL + k) as u32);
        }
    }

    pub(crate) fn on_rl_timer(&mut self, index: u32) {
        let (s, k) = (index as usize / MAX_RL, index as usize % MAX_RL);
        let now = self.now;
        let rp = &mut self.rps[s];
        let Some(rl) = rp.rls[k].as_mut() else { return };
        if rl.timer_at != now {
            return;
        }
        rl.timer_at = Time::MAX;
        let timer = self.scheme.rp_on_timer(&mut rl.core, &mut rl.state, now, &mut rp.rng);
        self.after_rate_change(s, k, timer);
    }

    /// The scheme changed RL k of station s: re-pace its head frame, record
    /// the rate, release it if it is back at line rate and empty, and let
    /// the link pick up whatever is now eligible.
    fn after_rate_change(&mut self, s: usize, k: usize, timer: Option<Time>) {
        self.set_rl_timer(s, k, timer);
        let rl = self.rps[s].rls[k].as_mut().expect("live");
        rl.next_release = rl.last_release + pace_ps(rl.last_len, rl.core.rate_bps);
        let (tr, rate) = (rl.trace, rl.core.rate_bps);
        if let Some(t) = tr {
            let b = self.stats.bin_now();
            self.rl_traces[t].rate.update(b, rate as u64);
        }
        self.maybe_release(s, k);
        let port = self.net.stations[s].port;
        self.try_start(port);
    }

    fn maybe_release(&mut self, s: usize, k: usize) {
        let rp = &mut self.rps[s];
        let Some(rl) = rp.rls[k].as_ref() else { return };
        if rl.core.rate_bps < rl.core.line_rate_bps || !rl.queue.is_empty() || rl.core.stopped_until > self.now {
            return;
        }
        let (tr, line) = (rl.trace, rl.core.line_rate_bps);
        rp.rls[k] = None;
        rp.active -= 1;
        for m in rp.flow_rl.iter_mut() {
            if *m == k as u8 {
                *m = NO_RL;
            }
        }
        if let Some(t) = tr {
            let b = self.stats.bin_now();
            self.rl_traces[t].rate.update(b, line as u64);
            self.rl_traces[t].bytes.update(b, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::star_config;
    use crate::engine::{PS_PER_MS, PS_PER_US};
    use crate::scheme::bcn::{Bcn, BcnParams};
    use crate::scheme::FeedbackKind;

    fn sim() -> NetSim<Bcn> {
        let mut cfg = star_config(2, 0.5, 10 * PS_PER_MS, 0);
        cfg.scheme = crate::config::SchemeConfig::Bcn(BcnParams::default());
        NetSim::new(&cfg, 0, Bcn::new(BcnParams::default()).unwrap()).unwrap()
    }

    fn cnm(kind: FeedbackKind, fb: f32, cpid: u16, flow_dst: u16) -> Frame {
        let mut f = Frame::data(0, flow_dst, 0, 64);
        f.kind = super::super::frame::FrameKind::Cnm;
        f.tag = cpid;
        f.value = fb;
        f.flow_dst = flow_dst;
        f.aux = kind as u8;
        f.cp_mark = 0;
        f
    }

    #[test]
    fn negative_feedback_creates_a_mapped_rl_whose_frames_leave_tagged_and_paced() {
        let mut s = sim();
        let d = 2u16; // stations S1, S2, D
        let cpid = 9;
        // Positive feedback for an unknown CP does nothing.
        s.rp_receive(0, &cnm(FeedbackKind::Positive, 100.0, cpid, d));
        assert_eq!(s.rps[0].active, 0);
        s.rp_receive(0, &cnm(FeedbackKind::Negative, -1875.0, cpid, d));
        assert_eq!(s.rps[0].active, 1);
        let k = s.rps[0].flow_rl[d as usize] as usize;
        let rl = s.rps[0].rls[k].as_ref().unwrap();
        assert_eq!(rl.cpid, cpid);
        assert!((rl.core.rate_bps - 0.5125 * 10e9).abs() < 1.0);
        // Frames of the mapped flow queue in the RLQ...
        for i in 0..3 {
            assert!(s.rl_admit(0, Frame::data(i, 0, d, 1500)).is_none());
        }
        assert_eq!(s.rps[0].rls[k].as_ref().unwrap().bytes, 4500);
        // ... and leave tagged with the CPID, one per 8 x 1500 / R.
        let port = s.net.stations[0].port;
        let f = s.station_next_data(0, port).unwrap();
        assert_eq!(f.tag, cpid);
        assert!(s.station_next_data(0, port).is_none(), "the next frame waits for its pacing time");
        let gap = s.rps[0].rls[k].as_ref().unwrap().next_release - s.now;
        assert_eq!(gap, (1500.0f64 * 8e12 / (0.5125 * 10e9)).ceil() as Time);
        s.now += gap;
        assert_eq!(s.station_next_data(0, port).unwrap().tag, cpid);
    }

    #[test]
    fn an_rl_back_at_line_rate_with_an_empty_queue_is_released() {
        let mut s = sim();
        let d = 2u16;
        s.rp_receive(1, &cnm(FeedbackKind::Negative, -100.0, 5, d));
        assert_eq!(s.rps[1].active, 1);
        for _ in 0..20 {
            s.rp_receive(1, &cnm(FeedbackKind::Positive, 1875.0, 5, d));
        }
        assert_eq!(s.rps[1].active, 0);
        assert_eq!(s.rps[1].flow_rl[d as usize], NO_RL);
        // Unmapped again: frames go to the NIC FIFO.
        assert!(s.rl_admit(1, Frame::data(0, 1, d, 1500)).is_some());
    }

    #[test]
    fn a_newer_cp_takes_over_the_flow_and_the_rlq_drops_when_full() {
        let mut s = sim();
        let d = 2u16;
        s.rp_receive(0, &cnm(FeedbackKind::Negative, -1875.0, 5, d));
        let first = s.rps[0].flow_rl[d as usize];
        s.rp_receive(0, &cnm(FeedbackKind::Negative, -1875.0, 6, d));
        let second = s.rps[0].flow_rl[d as usize];
        assert_ne!(first, second);
        assert_eq!(s.rps[0].rls[second as usize].as_ref().unwrap().cpid, 6);
        let cap = s.net.stations[0].rlq_bytes / 1500;
        for i in 0..cap + 5 {
            s.rl_admit(0, Frame::data(i, 0, d, 1500));
        }
        assert_eq!(s.stats.dropped_rp, 5);
        assert_eq!(s.net.stations[0].dropped_rp, 5);
    }

    #[test]
    fn bcn00_stop_holds_the_rl_until_its_random_restart() {
        let mut s = sim();
        let d = 2u16;
        s.rp_receive(0, &cnm(FeedbackKind::Stop, 0.0, 5, d));
        let k = s.rps[0].flow_rl[d as usize] as usize;
        let until = s.rps[0].rls[k].as_ref().unwrap().core.stopped_until;
        assert!(until <= 100 * PS_PER_US);
        s.rl_admit(0, Frame::data(0, 0, d, 1500));
        let port = s.net.stations[0].port;
        if until > 0 {
            assert!(s.station_next_data(0, port).is_none());
        }
        s.now = until;
        assert!(s.station_next_data(0, port).is_some());
    }
}

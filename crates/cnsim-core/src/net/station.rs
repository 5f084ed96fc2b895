//! Stations: the Bernoulli sources (one event per generated frame: the gap
//! to the next success is drawn at once), timed scenario actions (sources
//! starting and stopping, link rates changing), and where a generated frame
//! goes: its flow's rate-limiter queue, or the NIC FIFO (deferred or dropped
//! when PAUSE has filled it).

use super::rl::station_site;
use super::sim::{Action, NetSim, EV_GENERATE};
use super::topology::geometric_gap;
use super::topology::Dest;
use crate::config::NicFull;
use crate::engine::Time;
use crate::frame::Frame;
use crate::scheme::Scheme;
use crate::stats;
use crate::trace::{Kind, Reason, Site, Tracer};
use rand::Rng;

impl<S: Scheme, T: Tracer<S>> NetSim<S, T> {
    pub(crate) fn on_scenario(&mut self, i: usize) {
        match self.actions[i] {
            Action::Start(s) => {
                let st = &mut self.net.stations[s as usize];
                if st.active || st.load <= 0.0 {
                    return;
                }
                st.active = true;
                let gap = geometric_gap(st.load, st.inv_ln_q, &st.q_pow, &mut st.rng);
                st.next_gen = self.now.saturating_add(gap.saturating_mul(st.slot_ps));
                self.q.push(st.next_gen, EV_GENERATE, s);
            }
            Action::Stop(s) => {
                let st = &mut self.net.stations[s as usize];
                st.active = false;
                st.next_gen = Time::MAX;
            }
            Action::LinkRate(p, rate) => {
                self.net.ports[p as usize].set_rate(rate, self.frame_bytes);
                if rate > 0 {
                    self.try_start(p);
                }
            }
        }
    }

    /// One Bernoulli success: a frame is generated in this slot.
    pub(crate) fn on_generate(&mut self, s: u32) {
        let now = self.now;
        let n_st = self.net.stations.len();
        let st = &mut self.net.stations[s as usize];
        if !st.active || st.next_gen != now {
            return; // stale (the source was stopped or restarted)
        }
        let dst = match &st.dest {
            Dest::Fixed(d) => *d,
            Dest::Uniform => {
                let r = st.rng.gen_range(0..n_st as u16 - 1);
                if r >= s as u16 {
                    r + 1
                } else {
                    r
                }
            }
            Dest::Hotspot { hot, fraction } => {
                if *hot as u32 != s && st.rng.gen::<f64>() < *fraction {
                    *hot
                } else {
                    let r = st.rng.gen_range(0..n_st as u16 - 1);
                    if r >= s as u16 {
                        r + 1
                    } else {
                        r
                    }
                }
            }
            Dest::Weighted { stations, cumulative } => {
                let x = st.rng.gen::<f64>() * cumulative[cumulative.len() - 1];
                let i = cumulative.partition_point(|&c| c <= x).min(stations.len() - 1);
                stations[i]
            }
        };
        let gap = geometric_gap(st.load, st.inv_ln_q, &st.q_pow, &mut st.rng);
        st.next_gen = now.saturating_add((gap + 1).saturating_mul(st.slot_ps));
        let next = st.next_gen;
        let port = st.port;
        let cap = st.nic_buffer_bytes;
        let nic_full = st.nic_full;
        self.q.push(next, EV_GENERATE, s);

        let frame = Frame::data(now, s as u16, dst, self.frame_bytes as u16);
        if let Some(id) = self.rps[s as usize].rl_of(dst) {
            // A rate-limited flow: into its RLQ, or dropped there when full.
            self.count_generated(s, dst);
            if T::ON {
                let site = self.station_site(s as usize);
                self.tracer.frame(&self.scheme, site, Kind::Generate, Reason::None, &frame, None);
            }
            if self.rl_enqueue(id, frame) {
                self.try_start(port);
            }
            return;
        }
        self.settle(port);
        if self.net.ports[port as usize].data_bytes + frame.len as u64 > cap {
            // Only PAUSE (or a stopped link) fills the NIC FIFO.
            if T::ON {
                let site = self.station_site(s as usize);
                let held = Some(self.net.ports[port as usize].data_bytes);
                if nic_full == NicFull::Drop {
                    self.tracer.frame(&self.scheme, site, Kind::Generate, Reason::None, &frame, None);
                    self.tracer.frame(&self.scheme, site, Kind::Drop, Reason::NicFull, &frame, held);
                } else {
                    self.tracer.frame(&self.scheme, site, Kind::Defer, Reason::NicFull, &frame, held);
                }
            }
            let st = &mut self.net.stations[s as usize];
            match nic_full {
                NicFull::Defer => {
                    st.deferred += 1;
                    self.stats.count(now, stats::DEFERRED);
                }
                NicFull::Drop => {
                    st.dropped_nic += 1;
                    self.count_generated(s, dst);
                    self.stats.count(now, stats::DROPPED_NIC);
                }
            }
            return;
        }
        self.count_generated(s, dst);
        let p = &mut self.net.ports[port as usize];
        p.data_bytes += frame.len as u64;
        if T::ON {
            let site = station_site!(self, s as usize);
            self.tracer.frame(&self.scheme, site, Kind::Generate, Reason::None, &frame, None);
            self.tracer
                .frame(&self.scheme, site, Kind::Enqueue, Reason::Nic, &frame, Some(p.data_bytes));
        }
        if !p.busy && p.data.is_empty() && p.ctrl.is_empty() && p.rate_bps > 0 && !p.is_paused(now) && !self.rps[s as usize].active() {
            // An idle NIC (settled above) sends the frame at once: what
            // `try_start` would take from the FIFO, without the round trip.
            self.queue_changed(port);
            self.start_tx(port, frame, false);
            return;
        }
        p.data.push_back(frame);
        self.queue_changed(port);
        self.try_start(port);
    }

    #[inline(always)]
    pub(crate) fn count_generated(&mut self, s: u32, dst: u16) {
        let n_st = self.n_stations;
        self.net.stations[s as usize].generated += 1;
        self.stats.count(self.now, stats::GENERATED);
        if self.stats.per_flow {
            self.stats.flow_generated[s as usize * n_st + dst as usize] += 1;
        }
    }
}

//! The PFC watchdog and PFC storms as the fabric carries them out: a
//! station's NIC that keeps sending PFC frames (a storm, `pfc_storm`
//! events), and the bridges' watchdog (`pause.watchdog`) that finds a
//! lossless queue stuck behind such a storm and, for a while, drops its
//! frames or sends them regardless. The watchdog's decisions are
//! [`Watchdog`]'s (pause.rs), tested there without a network.

use super::ctx::{Ctx, EV_PAUSE_REFRESH, EV_WATCHDOG};
use super::fabric::{Fabric, Nic};
use super::node::NodeKind;
use super::pause::PfcIngress;
use super::port::{PortId, TxFrame};
use crate::config::WatchdogAction;
use crate::engine::time::ms_to_ps;
use crate::engine::Time;
use crate::scheme::Scheme;
use crate::stats;
use crate::trace::{Kind, Reason, Tracer};

impl<S: Scheme> Fabric<S> {
    /// A `pfc_storm` event: the NIC on `port` (a station's) starts (`on`)
    /// or stops sending PFC frames that pause `prio`: an XOFF now, renewed
    /// before it expires by the port's refresh timer, as a stuck receiver
    /// would. Stopping sends nothing: the last pause runs out.
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_storm<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, prio: u8, on: bool, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &mut self.ports[port as usize];
        let state = p.pfc_in.get_or_insert_with(|| Box::new(PfcIngress::default()));
        let bit = 1u8 << (prio & 7);
        if !on {
            state.xoff &= !bit;
            if state.xoff == 0 {
                p.pause_in.refresh_at = Time::MAX;
            }
            return;
        }
        state.xoff |= bit;
        if p.pause_in.refresh_at == Time::MAX {
            let at = ctx.now + self.refresh_interval(port);
            self.ports[port as usize].pause_in.refresh_at = at;
            ctx.schedule(at, EV_PAUSE_REFRESH, port);
        }
        self.send_pause_frame(port, bit, self.pause.quanta, Reason::Xoff, ctx, nic);
    }

    /// The lossless priorities whose queue at bridge port `port` is paused
    /// with frames waiting, as a bit set.
    pub(super) fn stalled(&self, port: PortId, now: Time) -> u8 {
        let p = &self.ports[port as usize];
        match p.classes.as_ref() {
            Some(c) if p.multiclass => c.waiting() & c.paused(now),
            _ if p.is_paused(now) && p.data_waiting() => 1 << (p.data_prio & 7),
            _ => 0,
        }
    }

    /// A periodic poll (`EV_WATCHDOG`): the deadlock detector's
    /// (`POLL_DEADLOCK`) or the watchdog's.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_poll<T: Tracer<S>, N: Nic<S>>(&mut self, index: u32, ctx: &mut Ctx<S, T>, nic: &mut N) {
        if index >= super::ctx::POLL_PULL {
            nic.on_pull((index - super::ctx::POLL_PULL) as usize, ctx, self);
        } else if index == super::ctx::POLL_DEADLOCK {
            self.on_deadlock_poll(ctx);
        } else {
            self.on_watchdog_poll(ctx, nic);
        }
    }

    /// The watchdog's poll: every bridge port's lossless queues looked at;
    /// the next poll scheduled.
    fn on_watchdog_poll<T: Tracer<S>, N: Nic<S>>(&mut self, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let now = ctx.now;
        let lossless = self.pause.lossless_mask();
        let detection = ms_to_ps(self.pause.watchdog_detection_ms);
        let restoration = ms_to_ps(self.pause.watchdog_restoration_ms);
        for port in 0..self.ports.len() as PortId {
            if self.ports[port as usize].watchdog.is_none() {
                continue;
            }
            let stalled = self.stalled(port, now);
            let w = self.ports[port as usize].watchdog.as_mut().expect("checked");
            let (stormed, restored) = w.poll(now, stalled, lossless, detection, restoration);
            for prio in 0..8u8 {
                if stormed & (1 << prio) != 0 {
                    self.storm_detected(port, prio, ctx, nic);
                }
                if T::ON && restored & (1 << prio) != 0 {
                    let site = self.ports[port as usize].site(port, now);
                    ctx.tracer.watchdog(site, prio, Reason::Restored);
                }
            }
        }
        let next = now + ms_to_ps(self.pause.watchdog_poll_ms).max(1);
        if next < ctx.run.duration {
            ctx.schedule(next, EV_WATCHDOG, 0);
        }
    }

    /// Priority `prio`'s queue at `port` is stormed: it is paused no longer
    /// (PFC frames for it are ignored until it is restored) and, with the
    /// drop action, its frames are dropped.
    fn storm_detected<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, prio: u8, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let now = ctx.now;
        self.watchdog_storms[prio as usize] += 1;
        if T::ON {
            let site = self.ports[port as usize].site(port, now);
            ctx.tracer.watchdog(site, prio, Reason::Stormed);
        }
        let measure = ctx.run.measure;
        let p = &mut self.ports[port as usize];
        match p.classes.as_mut() {
            Some(c) if p.multiclass => c.set_pause(prio as usize, now, now, measure),
            _ => p.pause_end = p.pause_end.min(now),
        }
        if self.pause.watchdog_action == WatchdogAction::Drop {
            self.discard_queued(port, prio, ctx, nic);
        }
        self.try_start(port, ctx, nic);
    }

    /// Drops the frames of priority `prio` waiting at bridge port `port`,
    /// freeing their buffer as if they had left.
    fn discard_queued<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, prio: u8, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &mut self.ports[port as usize];
        let frames = match p.classes.as_mut() {
            Some(c) if p.multiclass => c.take_class(prio as usize),
            _ => std::mem::take(&mut p.data).into_iter().collect(),
        };
        let NodeKind::Bridge(b) = self.nodes[p.owner as usize].kind else {
            unreachable!("the watchdog watches bridge ports")
        };
        for f in frames {
            let len = f.len as u64;
            let p = &mut self.ports[port as usize];
            p.data_bytes -= len;
            p.bytes_by_ingress[f.in_local as usize] -= len;
            let bridge = &mut self.bridges[b as usize];
            bridge.total_bytes -= len;
            bridge.dropped_cp += 1;
            ctx.stats.count(ctx.now, stats::DROPPED_CP);
            self.watchdog_drops[(f.prio & 7) as usize] += 1;
            if T::ON {
                let site = self.ports[port as usize].site(port, ctx.now);
                ctx.tracer.frame(&ctx.scheme, site, Kind::Drop, Reason::Watchdog, &f, None);
            }
            if self.bridges[b as usize].mmu.is_some() {
                let tx = TxFrame {
                    in_port: f.in_port,
                    len: f.len,
                    in_local: f.in_local,
                    data: true,
                    prio: f.prio,
                };
                self.mmu_release(b, port, &tx, ctx, nic);
            } else {
                self.pfc_on_dequeue(f.in_port, f.prio, len, ctx, nic);
            }
        }
        self.queue_changed(port, ctx);
    }

    /// Whether a data frame of priority `prio` for output `out` is dropped
    /// because its queue is stormed (the drop action).
    #[cold]
    #[inline(never)]
    pub(crate) fn stormed_drop(&self, out: PortId, prio: u8) -> bool {
        self.ports[out as usize]
            .watchdog
            .as_ref()
            .is_some_and(|w| w.stormed & (1 << (prio & 7)) != 0)
    }
}

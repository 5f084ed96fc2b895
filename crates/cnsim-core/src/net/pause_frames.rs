//! PAUSE as the fabric carries it out (schemes.md, "PAUSE"): the decisions
//! of `pause.rs` acted on at a bridge's ports: PAUSE frames sent, refresh
//! timers, the paused transmitter's bookkeeping.

use super::ctx::{Ctx, EV_PAUSE_REFRESH};
use super::fabric::{Fabric, Nic};
use super::node::NodeKind;
use super::pause::{on_dequeue, on_enqueue, Decision, Thresholds};
use super::port::{PortId, TxFrame};
use crate::engine::time::pause_quanta_ps;
use crate::engine::Time;
use crate::frame::Frame;
use crate::io::wire;
use crate::scheme::Scheme;
use crate::stats::{overlap, Stats};
use crate::trace::{Reason, Tracer};

impl<S: Scheme> Fabric<S> {
    fn thresholds(&self) -> Thresholds {
        Thresholds {
            xoff: self.pause.xoff_bytes,
            xon: self.pause.xon_bytes,
        }
    }

    /// A data frame from `ingress` joined output queue `out` of bridge `b`.
    #[inline(always)]
    pub(crate) fn pause_on_enqueue<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        out: PortId,
        ingress: PortId,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let th = self.thresholds();
        let trigger = self.bridges[b as usize].trigger;
        let ing = &self.ports[ingress as usize];
        let (local, state) = (ing.local as usize, ing.pause_in);
        let o = &mut self.ports[out as usize];
        let decision = on_enqueue(trigger, th, &state, &mut o.holds, o.data_bytes, o.bytes_by_ingress[local], local);
        if decision != Decision::Nothing {
            self.carry_out(decision, b, out, ingress, ctx, nic);
        }
    }

    /// A data frame that came through `ingress` left output queue `out` of bridge `b`.
    #[inline(always)]
    pub(crate) fn pause_on_dequeue<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        out: PortId,
        ingress: PortId,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let th = self.thresholds();
        let trigger = self.bridges[b as usize].trigger;
        let ing = &self.ports[ingress as usize];
        let (local, state) = (ing.local as usize, ing.pause_in);
        let o = &mut self.ports[out as usize];
        let decision = on_dequeue(trigger, th, &state, &mut o.holds, o.data_bytes, o.bytes_by_ingress[local], local);
        if decision != Decision::Nothing {
            self.carry_out(decision, b, out, ingress, ctx, nic);
        }
    }

    fn carry_out<T: Tracer<S>, N: Nic<S>>(&mut self, d: Decision, b: u32, out: PortId, ingress: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        match d {
            Decision::Nothing => {}
            Decision::XoffIngress => self.send_xoff(ingress, ctx, nic),
            Decision::XonIngress => self.send_xon(ingress, ctx, nic),
            Decision::Hold(local) => self.hold(b, out, local, ctx, nic),
            Decision::HoldEveryFeeder => {
                for local in 0..self.ports[out as usize].bytes_by_ingress.len() {
                    if self.ports[out as usize].bytes_by_ingress[local] > 0 {
                        self.hold(b, out, local, ctx, nic);
                    }
                }
            }
            Decision::Release(local) => self.release(b, out, local, ctx, nic),
            Decision::ReleaseAll => {
                for local in 0..self.ports[out as usize].holds.held.len() {
                    self.release(b, out, local, ctx, nic);
                }
            }
        }
    }

    /// Output queue `out` holds the ingress with local index `local` paused.
    fn hold<T: Tracer<S>, N: Nic<S>>(&mut self, b: u32, out: PortId, local: usize, ctx: &mut Ctx<S, T>, nic: &mut N) {
        if !self.ports[out as usize].holds.hold(local) {
            return;
        }
        let ing = self.nodes[self.bridges[b as usize].node as usize].ports[local];
        if self.ports[ing as usize].pause_in.hold() {
            self.send_xoff(ing, ctx, nic);
        }
    }

    /// Output queue `out` lets the ingress with local index `local` go.
    fn release<T: Tracer<S>, N: Nic<S>>(&mut self, b: u32, out: PortId, local: usize, ctx: &mut Ctx<S, T>, nic: &mut N) {
        if !self.ports[out as usize].holds.release(local) {
            return;
        }
        let ing = self.nodes[self.bridges[b as usize].node as usize].ports[local];
        if self.ports[ing as usize].pause_in.release() {
            self.send_xon(ing, ctx, nic);
        }
    }

    /// How often an asserted pause is refreshed: at half its duration, so
    /// the upstream never resumes while we are above XON.
    pub(super) fn refresh_interval(&self, port: PortId) -> Time {
        (pause_quanta_ps(self.pause.quanta, self.ports[port as usize].nominal_rate_bps) / 2).max(1)
    }

    fn send_xoff<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let at = ctx.now + self.refresh_interval(port);
        let p = &mut self.ports[port as usize].pause_in;
        p.xoff_sent = true;
        p.refresh_at = at;
        ctx.schedule(at, EV_PAUSE_REFRESH, port);
        self.send_pause_frame(port, 0, self.pause.quanta, Reason::Xoff, ctx, nic);
    }

    fn send_xon<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &mut self.ports[port as usize].pause_in;
        p.xoff_sent = false;
        p.refresh_at = Time::MAX;
        self.send_pause_frame(port, 0, 0, Reason::Xon, ctx, nic);
    }

    /// An `mmu` bridge admitted a data frame of priority `prio` through
    /// `ingress` (local index `in_local`): PFC as its ingress accounting says.
    #[inline(never)]
    pub(crate) fn mmu_on_enqueue<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        ingress: PortId,
        in_local: usize,
        prio: u8,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let p = (prio & 7) as usize;
        let port = &self.ports[ingress as usize];
        let Some(state) = port.pfc_in.as_deref() else {
            return; // PFC off: nothing is lossless
        };
        if state.xoff & (1 << p) != 0 {
            return;
        }
        let NodeKind::Bridge(b) = self.nodes[port.owner as usize].kind else {
            unreachable!("an ingress port of a bridge")
        };
        let m = self.bridges[b as usize].mmu.as_deref().expect("an mmu bridge has its MMU");
        if m.should_pause(in_local, p) {
            self.pfc_xoff(ingress, prio, ctx, nic);
        }
    }

    /// A data frame left `mmu` bridge `b` through `out`: its bytes freed,
    /// and its ingress priority resumed if the accounting allows.
    #[inline(never)]
    pub(crate) fn mmu_release<T: Tracer<S>, N: Nic<S>>(&mut self, b: u32, out: PortId, f: &TxFrame, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let (i, p) = (f.in_local as usize, (f.prio & 7) as usize);
        let m = self.bridges[b as usize].mmu.as_deref_mut().expect("an mmu bridge has its MMU");
        m.release(i, self.ports[out as usize].local as usize, p, f.len as u64);
        let ingress = f.in_port as PortId;
        let held = self.ports[ingress as usize]
            .pfc_in
            .as_deref()
            .is_some_and(|s| s.xoff & (1 << p) != 0);
        if held && m.may_resume(i, p) {
            self.pfc_xon(ingress, f.prio, ctx, nic);
        }
    }

    /// PFC: pause priority `prio` of `ingress`'s upstream.
    fn pfc_xoff<T: Tracer<S>, N: Nic<S>>(&mut self, ingress: PortId, prio: u8, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let state = self.ports[ingress as usize]
            .pfc_in
            .as_deref_mut()
            .expect("PFC state on every bridge port");
        state.xoff |= 1 << (prio & 7);
        // One refresh timer per port renews every priority it holds.
        if self.ports[ingress as usize].pause_in.refresh_at == Time::MAX {
            let at = ctx.now + self.refresh_interval(ingress);
            self.ports[ingress as usize].pause_in.refresh_at = at;
            ctx.schedule(at, EV_PAUSE_REFRESH, ingress);
        }
        self.send_pause_frame(ingress, 1 << (prio & 7), self.pause.quanta, Reason::Xoff, ctx, nic);
    }

    /// PFC: let priority `prio` of `ingress`'s upstream go.
    fn pfc_xon<T: Tracer<S>, N: Nic<S>>(&mut self, ingress: PortId, prio: u8, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let state = self.ports[ingress as usize]
            .pfc_in
            .as_deref_mut()
            .expect("PFC state on every bridge port");
        state.xoff &= !(1 << (prio & 7));
        if state.xoff == 0 {
            self.ports[ingress as usize].pause_in.refresh_at = Time::MAX;
        }
        self.send_pause_frame(ingress, 1 << (prio & 7), 0, Reason::Xon, ctx, nic);
    }

    /// PFC: a data frame of priority `prio` and `len` bytes arrived through
    /// `ingress` and joined an output queue.
    #[inline(never)]
    pub(crate) fn pfc_on_enqueue<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        ingress: PortId,
        prio: u8,
        len: u64,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let (th, lossless) = (self.thresholds(), self.pause.lossless_mask());
        let state = self.ports[ingress as usize]
            .pfc_in
            .as_mut()
            .expect("PFC state on every bridge port");
        if state.on_enqueue(prio, len, th, lossless) {
            self.pfc_xoff(ingress, prio, ctx, nic);
        }
    }

    /// PFC: a data frame of priority `prio` and `len` bytes that came through
    /// `ingress` left the bridge.
    #[inline(never)]
    pub(crate) fn pfc_on_dequeue<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        ingress: PortId,
        prio: u8,
        len: u64,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let th = self.thresholds();
        let state = self.ports[ingress as usize]
            .pfc_in
            .as_mut()
            .expect("PFC state on every bridge port");
        if state.on_dequeue(prio, len, th) {
            self.pfc_xon(ingress, prio, ctx, nic);
        }
    }

    pub(crate) fn on_pause_refresh<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let p = &self.ports[port as usize];
        // PFC: the priorities this port holds paused, renewed in one frame.
        let classes = p.pfc_in.as_ref().map_or(0, |s| s.xoff);
        let held = if p.pfc_in.is_some() { classes != 0 } else { p.pause_in.xoff_sent };
        if !held || p.pause_in.refresh_at != ctx.now {
            return; // released, or superseded by a newer refresh
        }
        let at = ctx.now + self.refresh_interval(port);
        self.ports[port as usize].pause_in.refresh_at = at;
        ctx.schedule(at, EV_PAUSE_REFRESH, port);
        self.send_pause_frame(port, classes, self.pause.quanta, Reason::Refresh, ctx, nic);
    }

    /// Queues a PAUSE frame on `port`: 802.3x when `classes` is 0, else a PFC
    /// frame for the priorities in `classes`.
    pub(super) fn send_pause_frame<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        port: PortId,
        classes: u8,
        quanta: u16,
        why: Reason,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let f = Frame::pfc(ctx.now, classes, quanta, ctx.run.ctrl_bytes);
        let p = &mut self.ports[port as usize];
        if T::ON {
            let site = p.site(port, ctx.now);
            let held = match &p.pfc_in {
                Some(s) => (0..8).filter(|&c| classes & (1 << c) != 0).map(|c| s.in_bytes[c]).sum(),
                None => p.pause_in.in_bytes,
            };
            ctx.tracer.pause_sent(site, wire::pause_priority(classes), quanta, why, held);
        }
        p.ctrl.push_back(f);
        p.pause_frames += 1;
        for (c, n) in self.pfc_frames.iter_mut().enumerate() {
            *n += (classes >> c & 1) as u64;
        }
        self.try_start(port, ctx, nic);
    }

    /// A PAUSE(quanta) was fully received by the owner of `port`: that
    /// transmitter pauses (a new PAUSE replaces the remaining time; 0 resumes).
    /// A PFC frame (`classes` not 0) pauses only the priorities it names:
    /// a multi-class port's classes each on its own, a single-class port
    /// (a station's) when it names the priority of its data. Out of line:
    /// kept out of the arrival path of every data frame.
    #[inline(never)]
    pub(crate) fn receive_pause<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        port: PortId,
        classes: u8,
        quanta: u16,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let now = ctx.now;
        let (was_pfc, was_classes) = (classes != 0, classes);
        let p = &mut self.ports[port as usize];
        let rate = if p.rate_bps > 0 { p.rate_bps } else { p.nominal_rate_bps };
        let end = now + pause_quanta_ps(quanta, rate);
        // PFC is honoured for the lossless priorities only (a port's
        // PFC-enable vector), and not for a queue the watchdog stormed.
        let classes = if classes != 0 { classes & self.lossless } else { 0 };
        let ignored = p.watchdog.as_mut().map_or(0, |w| w.pfc_seen(classes, now));
        let classes = classes & !ignored;
        if was_pfc && (classes == 0 || (!p.multiclass && classes & (1 << p.data_prio) == 0)) {
            if T::ON {
                let site = p.site(port, now);
                ctx.tracer.pause_received(site, was_classes, None, quanta, now);
            }
            return;
        }
        if classes != 0 && (p.multiclass || classes & (1 << p.data_prio) == 0) {
            let measure = ctx.run.measure;
            let until = match p.classes.as_mut() {
                Some(c) if p.multiclass => {
                    for prio in (0..8).filter(|&c| classes & (1 << c) != 0) {
                        c.set_pause(prio, now, end, measure);
                    }
                    end
                }
                _ => now, // not for this port's data
            };
            if T::ON {
                let site = p.site(port, now);
                let honoured = p.multiclass.then_some(classes); // else not for this port's data
                ctx.tracer.pause_received(site, was_classes, honoured, quanta, until);
            }
            if quanta == 0 {
                self.try_start(port, ctx, nic);
            }
            return;
        }
        if p.is_paused(now) {
            p.pause_end = end;
        } else if quanta > 0 {
            self.account_pause_interval(port, ctx);
            let p = &mut self.ports[port as usize];
            p.pause_start = now;
            p.pause_end = end;
            p.paused_ever = true;
        }
        if T::ON {
            let p = &self.ports[port as usize];
            let until = if p.is_paused(now) { p.pause_end } else { now };
            let site = p.site(port, now);
            // A single-class port (a station's) pauses its data's priority.
            let honoured = if was_pfc { 1 << p.data_prio } else { 0 };
            ctx.tracer.pause_received(site, was_classes, Some(honoured), quanta, until);
        }
        if quanta == 0 {
            self.try_start(port, ctx, nic);
        }
    }

    /// Adds the last (finished) pause interval of `port` to its statistics.
    fn account_pause_interval<T: Tracer<S>>(&mut self, port: PortId, ctx: &mut Ctx<S, T>) {
        let (m0, m1) = ctx.run.measure;
        let bin_ps = ctx.stats.bin_ps;
        let max_bins = ctx.stats.max_bins;
        let p = &mut self.ports[port as usize];
        if !p.paused_ever || p.pause_end <= p.pause_start {
            return;
        }
        let (a, b) = (p.pause_start, p.pause_end.min(ctx.run.duration));
        p.paused_ps_window += overlap(a, b, m0, m1);
        if ctx.stats.paused_series {
            let bins = p.paused_bins.get_or_insert_with(Vec::new);
            Stats::add_interval_to_bins(bins, bin_ps, max_bins, a, b);
        }
        // Mark as accounted.
        p.pause_start = p.pause_end;
    }

    pub(crate) fn close_pause_intervals<T: Tracer<S>>(&mut self, end: Time, ctx: &mut Ctx<S, T>) {
        for port in 0..self.ports.len() as PortId {
            let p = &mut self.ports[port as usize];
            if p.pause_end > end {
                p.pause_end = end;
            }
            if let Some(c) = p.classes.as_mut() {
                c.close_pauses(end, ctx.run.measure);
            }
            self.account_pause_interval(port, ctx);
        }
    }
}

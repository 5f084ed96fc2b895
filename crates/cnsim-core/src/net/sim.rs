//! The simulation: the clock and the event queue (in [`Ctx`]), the elements
//! ([`Fabric`]: ports, bridges, PAUSE; [`Hosts`]: stations, rate limiters,
//! transport flows), and the event loop that hands each event to the
//! element it is for. Built by build.rs; results assembled by results.rs
//! when the run ends.

use super::build::{assemble, Assembled};
use super::ctx::*;
use super::fabric::Fabric;
use super::hosts::Hosts;
use super::port::{Port, PortId, NO_PEER_BRIDGE, WIRE_DATA};
use super::results::Wall;
pub use super::run::Run;
use super::station::Station;
use crate::config::{ConfigError, SimConfig};
use crate::engine::Time;
use crate::frame::{Frame, NO_PORT_IN};
use crate::scheme::{AnyScheme, Scheme};
use crate::stats::{FrameCounts, RunResult};
use crate::trace::record::{TraceNet, TracePlan};
use crate::trace::{NoTrace, Recorder, TraceOutput, Tracer};
use std::time::Instant;

/// Events between two looks at the clock in a run with a wall-time
/// deadline (`run_for`): ~0.1-0.5 ms of work, a read of the clock per step.
const DEADLINE_EVERY: u32 = 4096;

/// How many events ahead the loop prefetches the next event's port or station.
const PREFETCH_AHEAD: usize = 8;

/// Hints the cache to load the line at `addr` (no effect on results).
#[inline(always)]
fn prefetch_line(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, reads nothing into
    // the program's state and writes nothing, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(addr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// One run of one scenario with scheme `S`, traced by `T` (by default
/// [`NoTrace`]: no trace, every hook compiled away).
pub struct NetSim<S: Scheme, T: Tracer<S> = NoTrace> {
    /// The clock, the event queue, the statistics, the scheme and the tracer.
    pub(crate) ctx: Ctx<S, T>,
    pub(crate) fabric: Fabric<S>,
    pub(crate) hosts: Hosts<S>,
    /// The timed scenario actions (`EV_SCENARIO` indexes them).
    pub(crate) actions: Vec<Action>,
    pub(crate) window_names: Vec<String>,
    /// What the scheme's check of the built network warned about (one line each).
    pub(crate) warnings: Vec<String>,
    /// The event loop prefetches (a large network in a calendar-queue run).
    pub(crate) prefetch: bool,
    /// Wall time spent building the network and running events (engine
    /// figures only: never part of a result).
    pub(crate) wall: Wall,
    pub(crate) finished: bool,
}

impl<S: Scheme, T: Tracer<S>> NetSim<S, T> {
    /// Builds the network of `cfg` for run `seed` with a tracer that needs
    /// nothing to be made ([`NoTrace`]); every configuration error (the
    /// trace's included) is reported here, before anything runs.
    pub fn new(cfg: &SimConfig, seed: u64, scheme: S) -> Result<Self, ConfigError>
    where
        T: Default,
    {
        Self::with_tracer(cfg, seed, scheme, |_, _| Ok(T::default()))
    }

    /// Builds the network of `cfg` for run `seed`, traced by the tracer
    /// `tracer` makes from the checked trace config and the network's names.
    pub fn with_tracer(
        cfg: &SimConfig,
        seed: u64,
        scheme: S,
        tracer: impl FnOnce(TracePlan, TraceNet) -> Result<T, ConfigError>,
    ) -> Result<Self, ConfigError> {
        let started = Instant::now();
        let Assembled {
            ctx,
            fabric,
            hosts,
            actions,
            warnings,
            prefetch,
        } = assemble(cfg, seed, scheme, tracer)?;
        Ok(NetSim {
            ctx,
            fabric,
            hosts,
            actions,
            window_names: cfg.windows.iter().map(|w| w.name.clone()).collect(),
            warnings,
            prefetch,
            wall: Wall {
                build_s: started.elapsed().as_secs_f64(),
                run_s: 0.0,
            },
            finished: false,
        })
    }

    fn run_until_deadline(&mut self, t: Time, deadline: Option<Instant>) -> bool {
        let t = t.min(self.ctx.run.duration);
        let started = Instant::now();
        // Two copies of the loop: prefetching only where it pays (ports far
        // larger than the caches, in a calendar-queue run); the others keep a
        // lean loop.
        let cut_short = if self.prefetch {
            self.event_loop::<true>(t, deadline)
        } else {
            self.event_loop::<false>(t, deadline)
        };
        let run = &mut self.ctx.run;
        if cut_short {
            // The deadline passed: `now` stays at the last event taken.
        } else if run.stop_at <= t {
            // Every flow has finished: the run ends here.
            run.duration = run.stop_at.max(self.ctx.now);
            self.ctx.now = run.duration;
        } else {
            self.ctx.now = self.ctx.now.max(t);
        }
        self.wall.run_s += started.elapsed().as_secs_f64();
        self.ctx.now >= self.ctx.run.duration
    }

    /// Takes events before `t`; returns true if it stopped because
    /// `deadline` passed first.
    #[inline(always)]
    fn event_loop<const PREFETCH: bool>(&mut self, t: Time, deadline: Option<Instant>) -> bool {
        let mut countdown = DEADLINE_EVERY;
        while let Some(et) = self.ctx.q.peek_time() {
            if et >= t || et >= self.ctx.run.stop_at {
                break;
            }
            countdown -= 1;
            if countdown == 0 {
                countdown = DEADLINE_EVERY;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return true;
                }
            }
            let ev = self.ctx.q.pop().expect("peeked");
            if PREFETCH {
                self.prefetch_ahead();
            }
            self.ctx.now = ev.time;
            if ev.time >= self.ctx.stats.next_edge {
                self.ctx.stats.advance_bin(ev.time);
            }
            let (ctx, fabric, hosts) = (&mut self.ctx, &mut self.fabric, &mut self.hosts);
            match ev.kind {
                EV_GENERATE => hosts.on_generate(ev.index, ctx, fabric),
                EV_TX_DONE => fabric.on_tx_done(ev.index, ctx, hosts),
                k if (EV_ARRIVE..EV_ARRIVE + 3).contains(&k) => fabric.on_arrive(ev.index, (k - EV_ARRIVE) as usize, ctx, hosts),
                EV_WAKE => fabric.on_wake(ev.index, ctx, hosts),
                EV_PAUSE_REFRESH => fabric.on_pause_refresh(ev.index, ctx, hosts),
                EV_SCENARIO => match self.actions[ev.index as usize] {
                    Action::Start(s) => hosts.start_source(s, ctx),
                    Action::Stop(s) => hosts.stop_source(s),
                    Action::LinkRate(p, rate, scale) => fabric.set_rate(p, rate, scale, ctx, hosts),
                    Action::PfcStorm(p, prio, on) => fabric.pfc_storm(p, prio, on, ctx, hosts),
                    Action::LinkState(p, up) => fabric.set_link(p, up, ctx, hosts),
                },
                EV_WATCHDOG => fabric.on_poll(ev.index, ctx, hosts),
                EV_RL_TIMER => hosts.on_rl_timer(ev.index, ctx, fabric),
                EV_FLOW_START => hosts.on_flow_start(ev.index, ctx, fabric),
                EV_FLOW_ARRIVAL => hosts.on_flow_arrival(ev.index, ctx, fabric),
                EV_FLOW_RTO => hosts.on_flow_rto(ev.index, ctx, fabric),
                k => unreachable!("unknown event kind {k}"),
            }
        }
        false
    }

    /// On a large fabric (the calendar queue's runs) the ports and stations
    /// an event touches are rarely in cache: ask now for those of the events
    /// a few places ahead in the current bucket, in stages (the event's own
    /// port or station, then the frame it will take off the wire, then the
    /// output port that frame joins), each stage reading only what the one
    /// before brought in. Hints only: nothing here changes a result.
    #[inline(always)]
    fn prefetch_ahead(&self) {
        let q = &self.ctx.q;
        let ports = &self.fabric.ports;
        if let Some((kind, index)) = q.ahead(PREFETCH_AHEAD) {
            let addr: *const u8 = match kind {
                EV_GENERATE => match self.hosts.stations.get(index as usize) {
                    Some(st) => (st as *const Station).cast(),
                    None => std::ptr::null(),
                },
                EV_TX_DONE | EV_ARRIVE..=EV_WAKE => match ports.get(index as usize) {
                    Some(p) => (p as *const Port<S::Ext>).cast(),
                    None => std::ptr::null(),
                },
                _ => std::ptr::null(),
            };
            if !addr.is_null() {
                prefetch_line(addr);
                prefetch_line(addr.wrapping_add(64));
            }
        }
        if let Some((kind, index)) = q.ahead(PREFETCH_AHEAD / 2) {
            // For an arrival, the frame it will take off the wire (its port,
            // prefetched earlier, is in cache by now).
            if (EV_ARRIVE..EV_ARRIVE + 3).contains(&kind) {
                if let Some(f) = ports.get(index as usize).and_then(|p| p.wire((kind - EV_ARRIVE) as usize).front()) {
                    prefetch_line((f as *const Frame<S::Ext>).cast());
                }
            }
        }
        if let Some((kind, index)) = q.ahead(2) {
            if kind == EV_GENERATE {
                if let Some(st) = self.hosts.stations.get(index as usize) {
                    prefetch_line((&ports[st.port as usize] as *const Port<S::Ext>).cast());
                }
            } else if kind == EV_TX_DONE {
                // The partition counter the departing frame frees.
                if let Some(p) = ports.get(index as usize) {
                    if let Some(x) = p.bytes_by_ingress.get(p.tx.in_local as usize) {
                        prefetch_line((x as *const u64).cast());
                    }
                }
            } else if let Some((out, _)) = self.output_of(kind, index) {
                let o: *const u8 = (&ports[out as usize] as *const Port<S::Ext>).cast();
                prefetch_line(o);
                prefetch_line(o.wrapping_add(64));
            }
        }
        if let Some((kind, index)) = q.ahead(1) {
            if let Some((out, in_local)) = self.output_of(kind, index) {
                let o = &ports[out as usize];
                if let Some(x) = o.bytes_by_ingress.get(in_local as usize) {
                    prefetch_line((x as *const u64).cast());
                }
                if let Some(Some(cp)) = self.fabric.cps.get(out as usize) {
                    prefetch_line((cp as *const S::Cp).cast());
                }
            }
        }
    }

    /// For a data frame arriving at a bridge: the output port it will join
    /// and its ingress partition there.
    #[inline(always)]
    fn output_of(&self, kind: u8, index: u32) -> Option<(PortId, u16)> {
        if kind != EV_ARRIVE + WIRE_DATA as u8 {
            return None;
        }
        let p = self.fabric.ports.get(index as usize)?;
        if p.peer_bridge == NO_PEER_BRIDGE {
            return None;
        }
        let f = p.wire_data.front()?;
        (f.in_port != NO_PORT_IN).then_some((f.in_port as PortId, p.reverse_local))
    }

    /// Closes the statistics, checks frame conservation and builds the results.
    fn close(&mut self) -> Result<RunResult, String> {
        let (now, end) = (self.ctx.now, self.ctx.run.duration);
        if now < end {
            return Err(format!("run not finished: at {now} ps of {end} ps"));
        }
        self.finished = true;
        if self.ctx.overflow {
            return Err(format!(
                "more than {} rate limiters (or flows) were live at once, more than the engine indexes",
                crate::engine::queue::MAX_INDEX
            ));
        }
        let (ctx, fabric, hosts) = (&mut self.ctx, &mut self.fabric, &mut self.hosts);
        for port in 0..fabric.ports.len() {
            if fabric.ports[port].drain_lazy {
                // What its TxDone events before the end would have sent.
                fabric.drain_until(port as PortId, end, false, ctx, hosts);
            }
        }
        fabric.close_pause_intervals(end, ctx);
        let trace = if T::ON { ctx.tracer.finish(end)? } else { None };
        let stats = &mut ctx.stats;
        let n_bins = stats.bins_reached(end);
        for t in &mut stats.queue_traces {
            t.finish(n_bins);
        }
        for h in &mut stats.queue_hists {
            let q = h.last_q_bytes();
            h.record(end, q);
        }
        stats.finish_station_sums();
        let in_flight = fabric.data_frames_in_flight() + hosts.rl_frames_queued();
        for t in &mut hosts.rl_traces {
            t.rate.finish(n_bins);
            t.bytes.finish(n_bins);
            if let Some(w) = &mut t.window {
                w.finish(n_bins);
            }
        }
        let frames = FrameCounts::new(stats.counts, in_flight);
        frames
            .check_conservation()
            .map_err(|books| format!("frame conservation violated (seed {}): {books}", ctx.run.seed))?;
        let mut result = super::results::build_result(&self.ctx, &self.fabric, &self.hosts, &self.window_names, self.wall, frames);
        result.trace = trace;
        Ok(result)
    }
}

impl<S: Scheme, T: Tracer<S>> Run for NetSim<S, T> {
    fn run_for(&mut self, wall: std::time::Duration) -> bool {
        self.run_until_deadline(Time::MAX, Some(Instant::now() + wall))
    }
    fn run_until(&mut self, t: Time) -> bool {
        self.run_until_deadline(t, None)
    }
    fn finish(&mut self) -> Result<RunResult, String> {
        self.close()
    }
    fn now(&self) -> Time {
        self.ctx.now
    }
    fn duration(&self) -> Time {
        self.ctx.run.duration
    }
    fn is_finished(&self) -> bool {
        self.finished || self.ctx.now >= self.ctx.run.duration
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// A simulation of one scenario and seed, whatever its scheme.
pub struct Sim {
    inner: Box<dyn Run>,
}

impl Sim {
    /// A built simulation (`Sim::new` makes it).
    fn from_run(inner: Box<dyn Run>) -> Sim {
        Sim { inner }
    }

    pub fn run_until(&mut self, t: Time) -> bool {
        self.inner.run_until(t)
    }

    /// Runs for about `wall` of wall-clock time, or to the end; true once
    /// the run has reached its end (see [`Run::run_for`]).
    pub fn run_for(&mut self, wall: std::time::Duration) -> bool {
        self.inner.run_for(wall)
    }

    pub fn finish(&mut self) -> Result<RunResult, String> {
        self.inner.finish()
    }

    /// Runs to the end and returns the results (conservation checked).
    pub fn run(mut self) -> Result<RunResult, String> {
        self.inner.run_until(Time::MAX);
        self.inner.finish()
    }

    pub fn now(&self) -> Time {
        self.inner.now()
    }

    pub fn duration(&self) -> Time {
        self.inner.duration()
    }

    /// What only the built network reveals about the parameters and is
    /// legal but almost certainly unintended (a delay threshold below a
    /// flow's base RTT): one line each, naming the parameter.
    pub fn warnings(&self) -> &[String] {
        self.inner.warnings()
    }
}

#[cfg(test)]
mod rp_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod transport_tests;

/// The simulation of `cfg` for run `seed`, with the scheme it names; with
/// `out`, recording the trace the config asks for there (one more
/// instantiation per scheme: the untraced one has no hook at all).
pub(crate) fn build(cfg: &SimConfig, seed: u64, out: Option<&TraceOutput>) -> Result<Box<dyn Run>, ConfigError> {
    let scheme = AnyScheme::from_config(&cfg.scheme)?;
    if let Some(cs) = &cfg.class_scheme {
        return build_dual(cfg, seed, out, scheme, cs);
    }
    Ok(match out.filter(|_| cfg.trace.records()) {
        Some(out) => crate::with_scheme!(scheme, s => Box::new(NetSim::with_tracer(cfg, seed, s, |plan, net| {
            Recorder::new(plan, net, out, seed)
        })?) as Box<dyn Run>),
        None => crate::with_scheme!(scheme, s => Box::new(NetSim::with_tracer(cfg, seed, s, |_, _| Ok(NoTrace))?) as Box<dyn Run>),
    })
}

/// `build` for a run of two schemes: `cs`'s for its priorities, `a` for
/// the others (scheme/dual.rs).
fn build_dual(
    cfg: &SimConfig,
    seed: u64,
    out: Option<&TraceOutput>,
    a: AnyScheme,
    cs: &crate::config::ClassScheme,
) -> Result<Box<dyn Run>, ConfigError> {
    if let Some(p) = cs.priorities.iter().find(|&&p| p > 7) {
        return crate::error::fail("workloads.priority", format!("{p} is not a priority; expected 0-7"));
    }
    if cs.priorities.is_empty() {
        return crate::error::fail(
            "workloads.priority",
            "no priority given for the workloads of a scheme of their own; expected some of 0-7",
        );
    }
    let mask = cs.priorities.iter().fold(0u8, |m, &p| m | (1 << p));
    let b = AnyScheme::from_config(&cs.scheme)?;
    let (a_name, b_name) = (cfg.scheme.name.clone(), cs.scheme.name.clone());
    let built = match out.filter(|_| cfg.trace.records()) {
        Some(out) => crate::with_dual!(a, b, mask, s => Box::new(NetSim::with_tracer(cfg, seed, s, |plan, net| {
            Recorder::new(plan, net, out, seed)
        })?) as Box<dyn Run>),
        None => crate::with_dual!(a, b, mask, s => Box::new(NetSim::with_tracer(cfg, seed, s, |_, _| Ok(NoTrace))?) as Box<dyn Run>),
    };
    built.or_else(|pairs| {
        crate::error::fail(
            "workloads.scheme",
            format!("{b_name} beside {a_name} is not a pair one run can hold; the pairs built: {pairs}"),
        )
    })
}

impl Sim {
    /// Builds the network and scheme of `cfg` for run `seed`; every
    /// configuration error is reported here, before anything runs.
    pub fn new(cfg: &SimConfig, seed: u64) -> Result<Sim, ConfigError> {
        if cfg.fidelity == crate::flow::Fidelity::Flow {
            return Ok(Sim::from_run(Box::new(crate::flow::FlowSim::new(cfg, seed, |c, s| {
                build(c, s, None)
            })?)));
        }
        Ok(Sim::from_run(build(cfg, seed, None)?))
    }

    /// As `new`, recording the trace the config asks for (`cfg.trace`:
    /// events.parquet, pcapng captures) into `out`; a config that asks for
    /// none builds the untraced simulation.
    pub fn with_trace(cfg: &SimConfig, seed: u64, out: &TraceOutput) -> Result<Sim, ConfigError> {
        if cfg.fidelity == crate::flow::Fidelity::Flow {
            // No frames to trace: the flow-level model says so in its warnings.
            return Sim::new(cfg, seed);
        }
        Ok(Sim::from_run(build(cfg, seed, Some(out))?))
    }
}

//! Packet trimming at bridges (schemes with [`Scheme::TRIMS`]: the Ultra
//! Ethernet transport), as the consortium's reference simulator's trimming
//! queue does it: a data frame that finds its output queue full is not
//! simply lost. With probability 1/2 the last frame queued there is the
//! victim (it leaves the queue and the arriving frame takes its place),
//! otherwise the arriving frame is. The victim is cut to its header
//! (`trim_bytes`) and goes on in the port's control queue, served ahead of
//! data, to its flow's receiver, which NACKs it at once; its payload counts
//! as dropped at the bridge. The control queue holds at most twice the
//! port's data queue: a header (or an acknowledgement) beyond that is
//! dropped. With trimming off (`Selective::trim`) the same victim is
//! dropped whole.

use super::ctx::Ctx;
use super::fabric::{Fabric, Nic};
use super::port::{PortId, TxFrame};
use super::trim::Victim;
use crate::frame::{Frame, FrameKind};
use crate::scheme::Scheme;
use crate::stats;
use crate::trace::{Kind, Reason, Site, Tracer};
use rand::Rng;

impl<S: Scheme> Fabric<S> {
    /// Bridge `b`'s output `out` cannot take data frame `f`: trims (or
    /// drops) the arriving frame or the last one queued. Returns the frame
    /// back when the queued one was the victim: it now joins the queue.
    #[cold]
    #[inline(never)]
    pub(crate) fn overflow<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        out: PortId,
        f: Frame<S::Ext>,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) -> Option<Frame<S::Ext>> {
        let tr = self.trim.as_mut().expect("a trimming run");
        let tail = tr.rng.gen::<bool>();
        let o = &self.ports[out as usize];
        if tail && !o.multiclass && !o.data.is_empty() {
            let victim = self.ports[out as usize].data.pop_back().expect("non-empty");
            let len = victim.len as u64;
            // Its buffer, as its departure would have freed it.
            self.ports[out as usize].data_bytes -= len;
            let tx = TxFrame {
                in_port: victim.in_port,
                len: victim.len,
                in_local: victim.in_local,
                data: true,
                prio: victim.prio,
            };
            self.bridge_release(b, out, &tx, ctx, nic);
            self.queue_changed(out, ctx);
            self.cut(b, out, victim, Victim::Queued, ctx, nic);
            return Some(f);
        }
        self.cut(b, out, f, Victim::Arriving, ctx, nic);
        None
    }

    /// Trims data frame `f` at `out` of bridge `b` (or drops it with
    /// trimming off): its payload is dropped, its header goes on.
    fn cut<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        b: u32,
        out: PortId,
        mut f: Frame<S::Ext>,
        victim: Victim,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let bridge = &mut self.bridges[b as usize];
        bridge.dropped_cp += 1;
        self.buffer_drops[(f.prio & 7) as usize] += 1;
        ctx.stats.count(ctx.now, stats::DROPPED_CP);
        let node = bridge.node;
        let site = Site {
            at: ctx.now,
            node,
            port: out,
        };
        let reason = match victim {
            Victim::Arriving => Reason::Arriving,
            Victim::Queued => Reason::Queued,
        };
        let tr = self.trim.as_mut().expect("a trimming run");
        if !tr.cfg.trim {
            if T::ON {
                let held = Some(self.ports[out as usize].data_bytes);
                ctx.tracer.frame(&ctx.scheme, site, Kind::Drop, reason, &f, held);
            }
            return;
        }
        tr.trimmed += 1;
        if T::ON {
            let held = Some(self.ports[out as usize].data_bytes);
            ctx.tracer.frame(&ctx.scheme, site, Kind::Trim, reason, &f, held);
        }
        f.kind = FrameKind::Trimmed;
        f.len = tr.cfg.trim_bytes;
        // Cut at the last hop: the receiver's NACK says so (RCCC and the
        // balancers read it).
        f.cpid = self.ports[out as usize].peer_is_station as u32;
        let limit = self.header_limit(b, out);
        self.push_control(out, limit, f, ctx, nic);
    }

    /// Control frame `f` joins the header queue of `out` (at most `limit`
    /// bytes), or is dropped there.
    pub(crate) fn push_control<T: Tracer<S>, N: Nic<S>>(
        &mut self,
        out: PortId,
        limit: u64,
        f: Frame<S::Ext>,
        ctx: &mut Ctx<S, T>,
        nic: &mut N,
    ) {
        let tr = self.trim.as_mut().expect("a trimming run");
        let q = &mut tr.ctrl_bytes[out as usize];
        if *q + f.len as u64 > limit {
            tr.header_drops += 1;
            if T::ON {
                let p = &self.ports[out as usize];
                let site = Site {
                    at: ctx.now,
                    node: p.owner,
                    port: out,
                };
                ctx.tracer
                    .frame(&ctx.scheme, site, Kind::Drop, Reason::HeaderQueueFull, &f, Some(*q));
            }
            return;
        }
        *q += f.len as u64;
        self.ports[out as usize].ctrl.push_back(f);
        self.try_start(out, ctx, nic);
    }
}

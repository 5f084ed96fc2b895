//! Two schemes in one run, each for its own priorities: RoCE flows under
//! DCQCN in a lossless class beside TCP flows under DCTCP in a lossy one
//! (the `rdma_tcp` scenario). `Dual<A, B>` is itself a [`Scheme`]: every
//! hook goes to `B` for a frame or RL of one of `B`'s priorities and to `A`
//! otherwise, so the engine runs it as it runs one scheme.
//!
//! - A CP is both schemes' CPs: a frame is seen by its class's scheme
//!   (with eight class queues, its view is its class's queue).
//! - An NP is both schemes' NPs; an RL is one scheme's, chosen by
//!   [`RlCore::prio`] when it is made.
//! - A frame's extension is one scheme's ([`DualExt`]); a data frame of
//!   `B`'s priorities whose extension is still `A`'s default (made before
//!   any hook of `B` wrote it) is seen by `B` with `B`'s default.
//!
//! The pairs a run may hold are listed once, in [`with_dual!`](crate::with_dual):
//! each is one more instantiation of the whole simulator.

use super::{AckView, CpFields, ExtFields, NetView, QueueView, Red, RlCore, Scheme};
use crate::engine::rng::{splitmix64, stream_from_u64, Stream};
use crate::engine::Time;
use crate::error::ConfigError;
use crate::frame::Frame;
use rand::Rng;

/// `A` for every priority but those in `b_priorities` (bit p: priority p).
pub struct Dual<A, B> {
    pub a: A,
    pub b: B,
    pub b_priorities: u8,
}

/// A frame's extension: the part of the scheme that owns the frame.
#[derive(Clone, Copy, Debug)]
pub enum DualExt<X, Y> {
    A(X),
    B(Y),
}

impl<X: Default, Y> Default for DualExt<X, Y> {
    fn default() -> Self {
        DualExt::A(X::default())
    }
}

/// One RL: `A`'s or `B`'s.
pub enum DualRl<X, Y> {
    A(X),
    B(Y),
}

impl<A: Scheme, B: Scheme> Dual<A, B> {
    #[inline]
    fn is_b(&self, prio: u8) -> bool {
        self.b_priorities & (1 << (prio & 7)) != 0
    }
}

/// `A`'s part of an extension (its default if the frame is `B`'s).
#[inline]
fn ext_a<X: Copy + Default, Y>(e: &DualExt<X, Y>) -> X {
    match e {
        DualExt::A(x) => *x,
        DualExt::B(_) => X::default(),
    }
}

/// `B`'s part of an extension (its default if the frame is `A`'s).
#[inline]
fn ext_b<X, Y: Copy + Default>(e: &DualExt<X, Y>) -> Y {
    match e {
        DualExt::B(y) => *y,
        DualExt::A(_) => Y::default(),
    }
}

/// Runs `$hook` of scheme `$s` on `$frame` seen with extension `$ext`, then
/// writes the extension back as variant `$v`; evaluates to the hook's value.
macro_rules! on_frame {
    ($frame:expr, $ext:expr, $v:path, |$f:ident| $hook:expr) => {{
        let mut $f = $frame.with_ext($ext);
        let out = $hook;
        $frame.ext = $v($f.ext);
        out
    }};
}

impl<A: Scheme, B: Scheme> Scheme for Dual<A, B> {
    type Ext = DualExt<A::Ext, B::Ext>;
    type Cp = (A::Cp, B::Cp);
    type Np = (A::Np, B::Np);
    type Rl = DualRl<A::Rl, B::Rl>;

    const NP_EVENTS: bool = A::NP_EVENTS || B::NP_EVENTS;
    const CP_ON_DEQUEUE: bool = A::CP_ON_DEQUEUE || B::CP_ON_DEQUEUE;
    const NOTIFIES: bool = A::NOTIFIES || B::NOTIFIES;
    const MARKS_ECN: bool = A::MARKS_ECN || B::MARKS_ECN;
    const SCALES_CP: bool = A::SCALES_CP || B::SCALES_CP;

    fn scale_cp(&self, cp: &mut Self::Cp, ratio: f64) {
        self.a.scale_cp(&mut cp.0, ratio);
        self.b.scale_cp(&mut cp.1, ratio);
    }

    fn new_cp(&self, rng: Stream, red: Option<Red>) -> Self::Cp {
        // B's stream is seeded from A's first draw (A's stream unchanged).
        let b_seed = splitmix64(rng.clone().gen::<u64>() ^ 0xB);
        (self.a.new_cp(rng, red), self.b.new_cp(stream_from_u64(b_seed), red))
    }

    fn cp_on_enqueue(&self, cp: &mut Self::Cp, frame: &mut Frame<Self::Ext>, q: QueueView, cpid: u32) -> Option<Self::Ext> {
        if self.is_b(frame.prio) {
            on_frame!(frame, ext_b(&frame.ext), DualExt::B, |f| self
                .b
                .cp_on_enqueue(&mut cp.1, &mut f, q, cpid)
                .map(DualExt::B))
        } else {
            on_frame!(frame, ext_a(&frame.ext), DualExt::A, |f| self
                .a
                .cp_on_enqueue(&mut cp.0, &mut f, q, cpid)
                .map(DualExt::A))
        }
    }

    fn cp_samples_dropped(&self) -> bool {
        self.a.cp_samples_dropped() || self.b.cp_samples_dropped()
    }

    fn cp_on_dequeue(&self, cp: &mut Self::Cp, frame: &mut Frame<Self::Ext>, q: QueueView, cpid: u32) {
        if self.is_b(frame.prio) {
            if B::CP_ON_DEQUEUE {
                on_frame!(frame, ext_b(&frame.ext), DualExt::B, |f| self
                    .b
                    .cp_on_dequeue(&mut cp.1, &mut f, q, cpid));
            }
        } else if A::CP_ON_DEQUEUE {
            on_frame!(frame, ext_a(&frame.ext), DualExt::A, |f| self
                .a
                .cp_on_dequeue(&mut cp.0, &mut f, q, cpid));
        }
    }

    fn np_on_data(&self, np: &mut Self::Np, frame: &Frame<Self::Ext>, now: Time, rng: &mut Stream) -> Option<(Self::Ext, u32)> {
        if self.is_b(frame.prio) {
            let f = frame.with_ext(ext_b(&frame.ext));
            self.b.np_on_data(&mut np.1, &f, now, rng).map(|(e, c)| (DualExt::B(e), c))
        } else {
            let f = frame.with_ext(ext_a(&frame.ext));
            self.a.np_on_data(&mut np.0, &f, now, rng).map(|(e, c)| (DualExt::A(e), c))
        }
    }

    fn creates_rl(&self, note: &Self::Ext) -> bool {
        match note {
            DualExt::A(x) => self.a.creates_rl(x),
            DualExt::B(y) => self.b.creates_rl(y),
        }
    }

    fn slows(&self, note: &Self::Ext) -> bool {
        match note {
            DualExt::A(x) => self.a.slows(x),
            DualExt::B(y) => self.b.slows(y),
        }
    }

    fn new_rl(&self, core: &mut RlCore, now: Time) -> (Self::Rl, Option<Time>) {
        if self.is_b(core.prio) {
            let (rl, t) = self.b.new_rl(core, now);
            (DualRl::B(rl), t)
        } else {
            let (rl, t) = self.a.new_rl(core, now);
            (DualRl::A(rl), t)
        }
    }

    fn rp_on_note(&self, core: &mut RlCore, rl: &mut Self::Rl, note: &Self::Ext, cpid: u32, now: Time, rng: &mut Stream) -> Option<Time> {
        // A notification is about its flow's frames, so of the RL's scheme.
        match rl {
            DualRl::A(r) => self.a.rp_on_note(core, r, &ext_a(note), cpid, now, rng),
            DualRl::B(r) => self.b.rp_on_note(core, r, &ext_b(note), cpid, now, rng),
        }
    }

    fn rp_on_send(&self, core: &mut RlCore, rl: &mut Self::Rl, frame: &mut Frame<Self::Ext>, now: Time, rng: &mut Stream) -> Option<Time> {
        match rl {
            DualRl::A(r) => on_frame!(frame, ext_a(&frame.ext), DualExt::A, |f| self
                .a
                .rp_on_send(core, r, &mut f, now, rng)),
            DualRl::B(r) => on_frame!(frame, ext_b(&frame.ext), DualExt::B, |f| self
                .b
                .rp_on_send(core, r, &mut f, now, rng)),
        }
    }

    fn rp_on_timer(&self, core: &mut RlCore, rl: &mut Self::Rl, now: Time, rng: &mut Stream) -> Option<Time> {
        match rl {
            DualRl::A(r) => self.a.rp_on_timer(core, r, now, rng),
            DualRl::B(r) => self.b.rp_on_timer(core, r, now, rng),
        }
    }

    fn rp_on_ack(
        &self,
        core: &mut RlCore,
        rl: &mut Self::Rl,
        ack: &AckView,
        echo: &Self::Ext,
        now: Time,
        rng: &mut Stream,
    ) -> Option<Time> {
        match rl {
            DualRl::A(r) => self.a.rp_on_ack(core, r, ack, &ext_a(echo), now, rng),
            DualRl::B(r) => self.b.rp_on_ack(core, r, ack, &ext_b(echo), now, rng),
        }
    }

    fn check_network(&self, net: &NetView) -> Result<Vec<String>, ConfigError> {
        let mut warnings = self.a.check_network(net)?;
        warnings.extend(self.b.check_network(net)?);
        Ok(warnings)
    }

    fn ack_echo(&self, data: &Self::Ext) -> Self::Ext {
        match data {
            DualExt::A(x) => DualExt::A(self.a.ack_echo(x)),
            DualExt::B(y) => DualExt::B(self.b.ack_echo(y)),
        }
    }

    fn ext_fields(&self, ext: &Self::Ext) -> ExtFields {
        match ext {
            DualExt::A(x) => self.a.ext_fields(x),
            DualExt::B(y) => self.b.ext_fields(y),
        }
    }

    fn cp_fields(&self, cp: &Self::Cp, q: QueueView) -> Option<CpFields> {
        // The trace's sample fields are A's (the scheme the run is named by).
        self.a.cp_fields(&cp.0, q)
    }
}

/// `with_dual!(a, b, mask, s => expr)`: evaluates `expr` with `s` bound to
/// the [`Dual`] of the two [`AnyScheme`](crate::scheme::AnyScheme)s `a`
/// (every priority but `mask`'s) and `b`, for the pairs built (listed once,
/// below: one arm each); `Err(PAIRS)` for any other.
#[macro_export]
macro_rules! with_dual {
    ($a:expr, $b:expr, $mask:expr, $s:ident => $body:expr) => {
        $crate::with_dual!(@pairs ($a, $b, $mask, $s, $body) Dcqcn Dctcp, Hpcc Dctcp, Timely Dctcp, NoCm Dctcp)
    };
    (@pairs ($a:expr, $b:expr, $mask:expr, $s:ident, $body:expr) $($x:ident $y:ident),+) => {{
        use $crate::scheme::dual::Dual;
        use $crate::scheme::AnyScheme as S;
        match ($a, $b) {
            $((S::$x(a), S::$y(b)) => {
                let $s = Dual { a, b, b_priorities: $mask };
                Ok($body)
            })+
            _ => Err($crate::scheme::dual::PAIRS),
        }
    }};
}

/// The pairs of schemes a run may hold (`with_dual!`), as a message says
/// them: the schemes of RoCE's lossless class (and PFC alone) beside TCP's
/// DCTCP. Each pair is two more copies of the simulator (traced and not),
/// so pairs are built where a study needs them.
pub const PAIRS: &str = "dcqcn, hpcc, timely or nocm (PFC alone) beside dctcp";

//! No congestion management: no CP, no RP (PAUSE is configured separately).

use super::{Feedback, RlCore, Scheme};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::net::Frame;

pub struct NoCm;

impl Scheme for NoCm {
    type Cp = ();
    type Rl = ();

    fn new_cp(&self, _rng: Stream) {}
    fn new_rl(&self) {}

    fn cp_on_enqueue(&self, _cp: &mut (), _frame: &mut Frame, _q: u64, _cpid: u16) -> Option<Feedback> {
        None
    }

    fn creates_rl(&self, _fb: &Feedback) -> bool {
        false
    }

    fn rp_on_feedback(&self, _c: &mut RlCore, _rl: &mut (), _fb: &Feedback, _now: Time, _rng: &mut Stream) -> Option<Time> {
        None
    }

    fn rp_on_timer(&self, _c: &mut RlCore, _rl: &mut (), _now: Time, _rng: &mut Stream) -> Option<Time> {
        None
    }
}

//! No congestion management: no CP, no NP, no RP (PAUSE is configured separately).

use super::{RlCore, Scheme};
use crate::config::{err, ConfigError, SchemeConfig};
use crate::engine::rng::Stream;
use crate::engine::Time;

pub struct NoCm;

impl NoCm {
    pub fn from_config(s: &SchemeConfig) -> Result<NoCm, ConfigError> {
        if let Some(k) = s.params.keys().next() {
            return err(format!("{}: '{k}' is not a parameter; nocm has none", s.table()));
        }
        Ok(NoCm)
    }
}

impl Scheme for NoCm {
    type Ext = ();
    type Cp = ();
    type Np = ();
    type Rl = ();

    fn new_cp(&self, _rng: Stream) {}

    fn creates_rl(&self, _note: &()) -> bool {
        false
    }

    fn slows(&self, _note: &()) -> bool {
        false
    }

    fn new_rl(&self, _core: &mut RlCore, _now: Time) -> ((), Option<Time>) {
        ((), None)
    }

    fn rp_on_note(&self, _c: &mut RlCore, _rl: &mut (), _n: &(), _cpid: u16, _now: Time, _rng: &mut Stream) -> Option<Time> {
        None
    }

    fn rp_on_timer(&self, _c: &mut RlCore, _rl: &mut (), _now: Time, _rng: &mut Stream) -> Option<Time> {
        None
    }
}

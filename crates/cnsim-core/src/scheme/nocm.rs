//! No congestion management: no CP, no NP, no RP (PAUSE is configured separately).

use super::params::SchemeConfig;
use super::{Red, RlCore, Scheme};
use crate::engine::rng::Stream;
use crate::engine::Time;
use crate::error::{fail, ConfigError};

pub struct NoCm;

impl NoCm {
    pub fn from_config(s: &SchemeConfig) -> Result<NoCm, ConfigError> {
        if let Some(k) = s.params.keys().next() {
            return fail(s.table(), format!("'{k}' is not a parameter; nocm has none"));
        }
        Ok(NoCm)
    }
}

impl Scheme for NoCm {
    type Ext = ();
    type Cp = ();
    type Np = ();
    type Rl = ();
    const NOTIFIES: bool = false;

    fn new_cp(&self, _rng: Stream, _red: Option<Red>) {}

    fn new_rl(&self, _core: &mut RlCore, _now: Time) -> ((), Option<Time>) {
        ((), None)
    }
}

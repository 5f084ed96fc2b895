//! The discrete-event engine: simulated time, the event queue and the
//! seeded random-number streams. Nothing here knows about networks.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::{Event, EventQueue};
pub use time::{ms_to_ps, us_to_ps, Time, PS_PER_MS, PS_PER_S, PS_PER_US};

//! The flow-level model (`fidelity = "flow"`, docs/flow-level.md): the same
//! scenario as the packet engine (topology, routing by the same ECMP hash,
//! the same flows for the same seed), answered per flow without simulating
//! every frame.
//!
//! 1. **Flows and paths.** The arrival processes of the packet engine
//!    (`net::transport::FlowGen`) draw the same flows; each flow's path is
//!    the packet engine's routing (`Fabric::path`), its ideal FCT the packet
//!    engine's (`Fabric::ideal_fct`).
//! 2. **Idle floor.** A flow alone on its path under the scheme (a DCTCP
//!    window's slow start) can take longer than the ideal: measured once per
//!    path class and size by the packet engine on that path alone (`idle`).
//! 3. **Decomposition (Parsimon's).** Each link direction with flows becomes
//!    a small network of its own: its flows' sources behind links of their
//!    own line rate, the link, the destinations behind fast links, delays
//!    set so that every flow keeps its base RTT (`linksim`). Every such link
//!    is simulated as a max-min fair fluid (`fluid`, rates recomputed at
//!    each arrival and departure), which gives each flow its own share of
//!    that link. The links are clustered (same tier and rate, similar load);
//!    one representative of each cluster is simulated by the packet engine,
//!    whose delays against the fluid's give the cluster's correction (the
//!    queueing, the transport's dynamics, PAUSE inside that link).
//! 4. **Aggregation.** A flow's FCT is its idle FCT plus, over the links
//!    of its path, its delay there: the packet engine's own on a
//!    representative link, else its fluid delay plus a correction drawn from
//!    the representative's flows of the same size and the same congestion
//!    (flows active at arrival).
//!
//! What it cannot see: PAUSE spreading from link to link, synchronised
//! incast bursts shorter than an RTT across links, correlation between the
//! links of a path (delays add as if independent), and transients of the
//! fabric as a whole.

pub mod fabric;
pub mod flows;
pub mod fluid;
mod idle;
mod linksim;
pub mod params;
mod pool;
mod result;
mod setup;
mod sim;

pub use fabric::Fabric;
pub use params::{Fidelity, FlowModel, FlowParams};
pub use sim::FlowSim;

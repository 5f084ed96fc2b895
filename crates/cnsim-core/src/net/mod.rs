//! The network model: frames, ports (one per link direction), stations,
//! bridges, IEEE 802.3x PAUSE, and the simulation loop that drives them.
//! Nothing here knows about a specific congestion-management scheme.

pub mod bridge;
pub mod build;
pub mod classes;
pub mod credit;
pub mod ctx;
mod deadlock;
pub mod deps;
pub mod fabric;
mod flows;
mod forwarding;
pub mod hosts;
mod link_state;
pub mod mmu;
pub mod node;
mod paths;
pub mod pause;
mod pause_frames;
pub mod port;
pub mod results;
pub mod rl;
pub mod routing;
mod rp;
pub mod run;
pub mod sack;
mod sel_flows;
pub mod sim;
pub mod station;
pub mod topology;
pub mod transport;
pub mod trim;
mod trim_frames;
mod watchdog;

pub use crate::frame::{Frame, FrameKind};
pub use port::{Port, PortId};

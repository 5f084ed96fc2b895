//! A node of the network, a station or a bridge, and the ports it sends on
//! (below both the topology that builds nodes and the routing that reads them).

use super::port::PortId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Station(u32),
    Bridge(u32),
}

pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    /// Egress ports of this node, in link order.
    pub ports: Vec<PortId>,
}

//! The flows of a flow-level run and their paths (link directions).

use crate::engine::Time;
use crate::net::port::PortId;

/// The flows of a run (the packet engine's, in its order: flows given one
/// by one, then arrivals by time) and their paths.
pub struct Flows {
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub size: Vec<u64>,
    pub start: Vec<Time>,
    /// Flow f's ports: `path[path_off[f]..path_off[f + 1]]`.
    pub path_off: Vec<u32>,
    pub path: Vec<PortId>,
}

impl Flows {
    pub fn len(&self) -> usize {
        self.src.len()
    }

    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    pub fn path(&self, f: u32) -> &[PortId] {
        &self.path[self.path_off[f as usize] as usize..self.path_off[f as usize + 1] as usize]
    }
}

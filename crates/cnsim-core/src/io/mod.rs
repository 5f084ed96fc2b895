//! Files the engine writes itself: the event trace (`events`) and packet
//! captures (`pcap`, with the frames laid out by `wire`).

pub mod events;
pub mod pcap;
pub mod wire;

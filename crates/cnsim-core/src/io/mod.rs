//! Files the engine writes itself, straight from the columns it recorded
//! (arrow-rs), so that a run's results never pass through rows of Python
//! objects or a dataframe library: result tables and time series as Parquet
//! (`parquet`), the event trace (`events`) and packet captures (`pcap`, with
//! the frames laid out by `wire`).

pub mod events;
pub mod matrix;
pub mod parquet;
pub mod pcap;
pub mod wire;

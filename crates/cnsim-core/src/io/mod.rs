//! Files the engine writes itself: result tables and time series as Parquet
//! (arrow-rs), straight from the columns it recorded, so that a run's results
//! never pass through rows of Python objects or a dataframe library.

pub mod parquet;

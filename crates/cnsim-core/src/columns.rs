//! The column of a result table (stats.rs builds the tables; the Python
//! binding hands them over as buffers).

/// One column of a result table.
#[derive(Debug, Clone)]
pub enum Column {
    U64(Vec<u64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Str(Vec<String>),
}

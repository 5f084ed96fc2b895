//! The schemes' parameter tables and the scheme names users write, as data.
//!
//! Each scheme declares its parameter [`Table`] once (`crate::params`: name,
//! unit, type, default, range, rules, help); the engine's defaults and checks,
//! the Python tables, `cnsim show`'s comments and the generated docs all
//! derive from it. Parameters are in the user's units; a scheme converts
//! them once when it is built (`ru_mbps` to bit/s, `tmax_us` to picoseconds).

pub use crate::params::{num, Bound, Kind, Param, Range, Rule, Table, Values, MAX_MS};
use serde::{Deserialize, Serialize};

/// A scheme as users name it: which engine scheme runs, with which table,
/// and what its name sets in that table (`bcnmax` sets `bcn_max = true`).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub name: &'static str,
    pub engine: &'static str,
    pub table: Option<&'static str>,
    pub sets: &'static [(&'static str, bool)],
    pub description: &'static str,
}

/// The congestion-management scheme: its name and its parameters. Each
/// scheme reads (and checks) its own parameters, so a new scheme adds no
/// field here.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SchemeConfig {
    /// `nocm`, `bcn`, `qcn`, `dcqcn`, ... (`scheme::build`).
    pub name: String,
    /// The parameter table as the user named it (`ecm`, `qcn2pt`, ...), for
    /// error messages; default: `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The scheme's parameters, in the scheme's own units.
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

impl SchemeConfig {
    /// No congestion management.
    pub fn nocm() -> SchemeConfig {
        SchemeConfig {
            name: "nocm".into(),
            ..SchemeConfig::default()
        }
    }

    /// Scheme `name` with parameters `params` (any serialisable parameter struct).
    pub fn of<P: Serialize>(name: &str, params: &P) -> SchemeConfig {
        let params = match serde_json::to_value(params) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        SchemeConfig {
            name: name.into(),
            table: None,
            params,
        }
    }

    /// The table name errors use.
    pub fn table(&self) -> &str {
        self.table.as_deref().unwrap_or(&self.name)
    }
}

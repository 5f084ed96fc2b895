//! The schemes' parameter tables and the scheme names users write, as data.
//!
//! Each scheme declares its parameter [`Table`] once (`crate::params`: name,
//! unit, type, default, range, rules, help); the engine's defaults and checks,
//! the Python tables, `cnsim show`'s comments and the generated docs all
//! derive from it. Parameters are in the user's units; a scheme converts
//! them once when it is built (`ru_mbps` to bit/s, `tmax_us` to picoseconds).

use crate::error::ConfigError;
pub use crate::params::{num, Bound, Kind, Param, Range, Rule, Table, Values, MAX_MS};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

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

/// Every table and scheme name, as data (`cnsim.schemes` reads it).
pub fn declarations() -> Value {
    let tables: Vec<Value> = super::tables().iter().map(Table::to_json).collect();
    let schemes: Vec<Value> = super::SCHEMES
        .iter()
        .map(|e| {
            let sets: Map<String, Value> = e.sets.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            json!({"name": e.name, "engine": e.engine, "table": e.table, "sets": sets, "description": e.description})
        })
        .collect();
    json!({"tables": tables, "schemes": schemes})
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

    /// The parameters as the scheme's struct: unknown keys and wrong types
    /// are errors naming `table.key`.
    pub fn parse<P: serde::de::DeserializeOwned>(&self) -> Result<P, ConfigError> {
        let v = serde_json::Value::Object(self.params.clone());
        serde_path_to_error::deserialize(v).map_err(|e| ConfigError::at(self.table(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_matches_its_struct_and_its_defaults_pass_its_checks() {
        for table in crate::scheme::tables() {
            table
                .check(table.name, &Map::new())
                .unwrap_or_else(|e| panic!("{}: {e}", table.name));
        }
        // Each struct reads its table's defaults (deny_unknown_fields, no
        // serde defaults: a field the declaration lacks, or a declared
        // parameter the struct lacks, fails here).
        let _: crate::scheme::bcn::BcnParams = crate::scheme::bcn::table().default_params();
        let _: crate::scheme::bcn::BcnParams = crate::scheme::bcn::ecm_table().default_params();
        let _: crate::scheme::qcn::QcnParams = crate::scheme::qcn::table().default_params();
        let _: crate::scheme::qcn::QcnParams = crate::scheme::qcn::table_2pt().default_params();
        let _: crate::scheme::qcn::QcnParams = crate::scheme::qcn::table_3pt().default_params();
        let _: crate::scheme::dcqcn::DcqcnParams = crate::scheme::dcqcn::table().default_params();
        let _: crate::scheme::dctcp::DctcpParams = crate::scheme::dctcp::table().default_params();
        let _: crate::scheme::timely::TimelyParams = crate::scheme::timely::table().default_params();
        let _: crate::scheme::hpcc::HpccParams = crate::scheme::hpcc::table().default_params();
        let _: crate::scheme::swift::SwiftParams = crate::scheme::swift::table().default_params();
        // Every table above: ten, as many as `tables()` declares.
        assert_eq!(crate::scheme::tables().len(), 10, "a new table needs its struct read here");
    }

    #[test]
    fn every_scheme_names_a_declared_table_and_sets_declared_switches() {
        let tables = crate::scheme::tables();
        for e in crate::scheme::SCHEMES {
            if let Some(t) = e.table {
                let table = tables
                    .iter()
                    .find(|x| x.name == t)
                    .unwrap_or_else(|| panic!("{}: no table {t}", e.name));
                for (k, _) in e.sets {
                    assert_eq!(table.get(k).map(|p| &p.kind), Some(&Kind::Bool), "{}: sets {k}", e.name);
                }
            }
        }
    }
}

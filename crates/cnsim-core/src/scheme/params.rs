//! Scheme parameters, each declared once (in the style of ns-3 attributes).
//!
//! A scheme declares its parameter [`Table`]: for every parameter its name
//! (the unit is in the name: `_bytes`, `_mbps`, `_us`, ...), type, default,
//! allowed range and help text, and the rules that tie parameters together
//! (`pmin <= pmax`). Everything else is derived from that one declaration:
//!
//! - the engine's defaults (`Default` of each scheme's parameter struct) and
//!   its validation ([`Table::check`], which also names the parameter as the
//!   user wrote it, `qcn2pt.pmin`);
//! - the Python parameter tables (`cnsim.schemes` builds them from
//!   [`declarations`]), hence scenario-file validation, `cnsim show`'s
//!   comments and the generated tables of docs/scenario-format.md.
//!
//! Parameters are in the user's units; a scheme converts them once when it is
//! built (`ru_mbps` to bit/s, `tmax_us` to picoseconds, ...).

use crate::config::{err, ConfigError};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

/// The largest time parameter (ms): 1e18 ps, well inside the u64 clock.
pub const MAX_MS: f64 = 1e9;

/// One end of an allowed range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    pub value: f64,
    pub inclusive: bool,
}

/// The allowed range of a number.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Range {
    pub min: Option<Bound>,
    pub max: Option<Bound>,
}

impl Range {
    /// Any finite number.
    pub fn any() -> Range {
        Range::default()
    }
    /// Greater than `v`.
    pub fn gt(v: f64) -> Range {
        Range {
            min: Some(Bound {
                value: v,
                inclusive: false,
            }),
            max: None,
        }
    }
    /// At least `v`.
    pub fn ge(v: f64) -> Range {
        Range {
            min: Some(Bound { value: v, inclusive: true }),
            max: None,
        }
    }
    /// And less than `v`.
    pub fn lt(self, v: f64) -> Range {
        Range {
            max: Some(Bound {
                value: v,
                inclusive: false,
            }),
            ..self
        }
    }
    /// And at most `v`.
    pub fn le(self, v: f64) -> Range {
        Range {
            max: Some(Bound { value: v, inclusive: true }),
            ..self
        }
    }

    fn contains(&self, x: f64) -> bool {
        let lo = self.min.is_none_or(|b| if b.inclusive { x >= b.value } else { x > b.value });
        let hi = self.max.is_none_or(|b| if b.inclusive { x <= b.value } else { x < b.value });
        x.is_finite() && lo && hi
    }

    /// "> 0", ">= 0 and < 1", "" for any number.
    pub fn text(&self) -> String {
        let lo = self
            .min
            .map(|b| format!("{} {}", if b.inclusive { ">=" } else { ">" }, num(b.value)));
        let hi = self
            .max
            .map(|b| format!("{} {}", if b.inclusive { "<=" } else { "<" }, num(b.value)));
        [lo, hi].into_iter().flatten().collect::<Vec<_>>().join(" and ")
    }
}

fn num(v: f64) -> String {
    // Shortest form that reads back: 0, 1, 0.5, 65535, 1e-12, 1e300.
    if v != 0.0 && (v.abs() < 1e-4 || v.abs() >= 1e16) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A value as the user would have written it: 80000, not 80000.0.
fn shown(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if v.is_f64() => num(x),
        _ => v.to_string(),
    }
}

/// A parameter's type.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Float(Range),
    Int(Range),
    Bool,
    Choice(&'static [&'static str]),
}

/// One declared parameter.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Value,
    pub help: &'static str,
    /// Set by the scheme's name (`qcn3pt` sets `three_point`), not by the
    /// user: absent from the user's table.
    pub fixed: bool,
}

/// The values of a table, as a rule reads them.
pub struct Values<'a>(&'a Map<String, Value>);

impl Values<'_> {
    /// A number (0 when absent, which a checked table never is).
    pub fn f(&self, name: &str) -> f64 {
        self.0.get(name).and_then(Value::as_f64).unwrap_or(0.0)
    }
}

/// A rule tying parameters together, e.g. `pmin <= pmax`.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The parameters it reads, named in its error.
    pub params: &'static [&'static str],
    /// The rule as users read it.
    pub text: &'static str,
    pub holds: fn(&Values) -> bool,
}

/// A scheme's parameter table: what `[bcn]`, `[qcn2pt]`, ... may hold.
#[derive(Clone, Debug)]
pub struct Table {
    pub name: &'static str,
    pub doc: &'static str,
    pub params: Vec<Param>,
    pub rules: Vec<Rule>,
}

impl Table {
    pub fn new(name: &'static str, doc: &'static str) -> Table {
        Table {
            name,
            doc,
            params: Vec::new(),
            rules: Vec::new(),
        }
    }

    fn push(mut self, name: &'static str, kind: Kind, default: Value, help: &'static str) -> Table {
        assert!(self.get(name).is_none(), "{}.{name} declared twice", self.name);
        self.params.push(Param {
            name,
            kind,
            default,
            help,
            fixed: false,
        });
        self
    }

    /// A number (f64) in `range`. A time (`_us`, `_ms`) is also bounded
    /// above so that it fits the picosecond clock with room for sums (at
    /// most 1e9 ms, 11.6 simulated days).
    pub fn float(self, name: &'static str, default: f64, range: Range, help: &'static str) -> Table {
        let limit = if name.ends_with("_ms") {
            Some(MAX_MS)
        } else if name.ends_with("_us") {
            Some(MAX_MS * 1e3)
        } else {
            None
        };
        let range = match (range.max, limit) {
            (None, Some(l)) => range.le(l),
            _ => range,
        };
        self.push(name, Kind::Float(range), json!(default), help)
    }
    /// A whole number in `range`.
    pub fn int(self, name: &'static str, default: i64, range: Range, help: &'static str) -> Table {
        self.push(name, Kind::Int(range), json!(default), help)
    }
    /// A switch.
    pub fn flag(self, name: &'static str, default: bool, help: &'static str) -> Table {
        self.push(name, Kind::Bool, json!(default), help)
    }
    /// One of `choices`.
    pub fn choice(self, name: &'static str, choices: &'static [&'static str], default: &'static str, help: &'static str) -> Table {
        assert!(choices.contains(&default), "{}.{name}: default not a choice", self.name);
        self.push(name, Kind::Choice(choices), json!(default), help)
    }
    /// A rule over `params`.
    pub fn rule(mut self, params: &'static [&'static str], text: &'static str, holds: fn(&Values) -> bool) -> Table {
        for p in params {
            assert!(self.get(p).is_some(), "{}: rule '{text}' reads undeclared {p}", self.name);
        }
        self.rules.push(Rule { params, text, holds });
        self
    }

    /// The same parameters under another name (a variant with its own defaults).
    pub fn variant(&self, name: &'static str, doc: &'static str) -> Table {
        Table { name, doc, ..self.clone() }
    }

    /// Another default (and help) for `name` in this table.
    pub fn with_default(mut self, name: &str, default: impl Into<Value>, help: Option<&'static str>) -> Table {
        let table = self.name;
        let p = self
            .params
            .iter_mut()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("{table}.{name} undeclared"));
        p.default = default.into();
        if let Some(h) = help {
            p.help = h;
        }
        self
    }

    /// `name` is set by the scheme's name, not by the user.
    pub fn fixed(mut self, name: &str) -> Table {
        let table = self.name;
        self.params
            .iter_mut()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("{table}.{name} undeclared"))
            .fixed = true;
        self
    }

    pub fn get(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Every parameter at its default.
    pub fn defaults(&self) -> Map<String, Value> {
        self.params.iter().map(|p| (p.name.to_string(), p.default.clone())).collect()
    }

    /// `given` completed with the defaults and checked: no unknown names,
    /// every value of its type and in its range, every rule holding. Errors
    /// name parameters `label.name` (`label`: the table as the user named it).
    pub fn check(&self, label: &str, given: &Map<String, Value>) -> Result<Map<String, Value>, ConfigError> {
        let mut values = self.defaults();
        for (k, v) in given {
            let Some(p) = self.get(k) else {
                let known: Vec<&str> = self.params.iter().filter(|p| !p.fixed).map(|p| p.name).collect();
                return err(format!("{label}.{k}: unknown parameter; known: {}", known.join(", ")));
            };
            let shown = shown(v);
            let expected = match &p.kind {
                Kind::Float(r) => match v.as_f64() {
                    Some(x) if r.contains(x) => None,
                    _ => Some(format!("a number {}", r.text())),
                },
                Kind::Int(r) => match v.as_i64() {
                    Some(x) if r.contains(x as f64) => None,
                    _ => Some(format!("an integer {}", r.text())),
                },
                Kind::Bool => (!v.is_boolean()).then(|| "true or false".to_string()),
                Kind::Choice(c) => match v.as_str() {
                    Some(s) if c.contains(&s) => None,
                    _ => Some(format!("one of {}", c.join(", "))),
                },
            };
            if let Some(e) = expected {
                return err(format!("{label}.{k}: {shown} is not allowed; expected {}", e.trim_end()));
            }
            values.insert(k.clone(), v.clone());
        }
        for r in &self.rules {
            if !(r.holds)(&Values(&values)) {
                let names: Vec<String> = r.params.iter().map(|p| format!("{label}.{p}")).collect();
                let shown: Vec<String> = r.params.iter().map(|p| shown(&values[*p])).collect();
                return err(format!(
                    "{}: {} not allowed; expected {}",
                    names.join(" / "),
                    shown.join(" / "),
                    r.text
                ));
            }
        }
        Ok(values)
    }

    /// `given` checked and read as the scheme's parameter struct.
    pub fn parse<P: DeserializeOwned>(&self, label: &str, given: &Map<String, Value>) -> Result<P, ConfigError> {
        let values = self.check(label, given)?;
        serde_json::from_value(Value::Object(values)).map_err(|e| ConfigError::new(label, e.to_string()))
    }

    /// The parameter struct at the table's defaults.
    pub fn default_params<P: DeserializeOwned>(&self) -> P {
        serde_json::from_value(Value::Object(self.defaults()))
            .unwrap_or_else(|e| panic!("{}: the declaration does not match the parameter struct: {e}", self.name))
    }

    /// The declaration as data, for the Python tables and the docs.
    pub fn to_json(&self) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                let (kind, range, choices) = match &p.kind {
                    Kind::Float(r) => ("float", Some(*r), None),
                    Kind::Int(r) => ("int", Some(*r), None),
                    Kind::Bool => ("bool", None, None),
                    Kind::Choice(c) => ("choice", None, Some(c.to_vec())),
                };
                let bound = |b: Option<Bound>| b.map(|b| json!({"value": b.value, "inclusive": b.inclusive}));
                json!({
                    "name": p.name,
                    "type": kind,
                    "default": p.default,
                    "min": bound(range.and_then(|r| r.min)),
                    "max": bound(range.and_then(|r| r.max)),
                    "range": range.map(|r| r.text()).unwrap_or_default(),
                    "choices": choices,
                    "help": p.help,
                    "fixed": p.fixed,
                })
            })
            .collect();
        let rules: Vec<Value> = self.rules.iter().map(|r| json!({"params": r.params, "text": r.text})).collect();
        json!({"name": self.name, "doc": self.doc, "params": params, "rules": rules})
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Table {
        Table::new("x", "test")
            .float("a_bytes", 1.0, Range::gt(0.0), "a")
            .float("p", 0.5, Range::gt(0.0).le(1.0), "p")
            .int("n", 5, Range::ge(1.0), "n")
            .flag("on", false, "on")
            .choice("mode", &["one", "two"], "one", "mode")
            .rule(&["a_bytes", "p"], "p <= a_bytes", |v| v.f("p") <= v.f("a_bytes"))
    }

    fn m(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_fill_what_is_not_given() {
        let v = t().check("x", &m(json!({"p": 0.25}))).unwrap();
        assert_eq!(v["p"], json!(0.25));
        assert_eq!(v["n"], json!(5));
        assert_eq!(v["mode"], json!("one"));
    }

    #[test]
    fn errors_name_the_users_table_and_the_range() {
        let e = |given| t().check("mine", &m(given)).unwrap_err().line();
        assert_eq!(e(json!({"a_bytes": 0.0})), "mine.a_bytes: 0 is not allowed; expected a number > 0");
        assert_eq!(e(json!({"p": 2})), "mine.p: 2 is not allowed; expected a number > 0 and <= 1");
        assert_eq!(e(json!({"n": 1.5})), "mine.n: 1.5 is not allowed; expected an integer >= 1");
        assert_eq!(e(json!({"on": 1})), "mine.on: 1 is not allowed; expected true or false");
        assert_eq!(
            e(json!({"mode": "three"})),
            "mine.mode: \"three\" is not allowed; expected one of one, two"
        );
        assert!(e(json!({"nope": 1})).starts_with("mine.nope: unknown parameter; known: a_bytes, p, n, on, mode"));
        assert_eq!(
            e(json!({"a_bytes": 0.1, "p": 0.2})),
            "mine.a_bytes / mine.p: 0.1 / 0.2 not allowed; expected p <= a_bytes"
        );
    }

    #[test]
    fn range_text_reads_as_written() {
        assert_eq!(Range::gt(0.0).text(), "> 0");
        assert_eq!(Range::ge(0.0).lt(1.0).text(), ">= 0 and < 1");
        assert_eq!(Range::any().text(), "");
        assert!(!Range::any().contains(f64::INFINITY));
    }

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
        let _: crate::scheme::dcqcn::DcqcnParams = crate::scheme::dcqcn::table().default_params();
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

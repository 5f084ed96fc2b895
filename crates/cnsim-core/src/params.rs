//! Parameters, each declared once (in the style of ns-3 attributes).
//!
//! A section of the scenario (`[pause]`, `[defaults]`, ...) or a scheme
//! declares its parameter [`Table`]: for every parameter its name, its
//! [`Unit`] (typed: a time, a rate, a size; read from the name's suffix,
//! `_us`, `_gbps`, `_bytes`, so the name users write always says it), type,
//! default, allowed range and help text, and the rules that tie parameters
//! together (`pmin <= pmax`). Everything else is derived from that one
//! declaration:
//!
//! - the engine's defaults and its validation ([`Table::check`], which names
//!   the parameter as the user wrote it, `qcn2pt.pmin`, `pause.xon_bytes`);
//! - the Python models (`cnsim.schemes` and `cnsim.sections` build them from
//!   `declarations.json`, written from the engine by `python -m cnsim.docs`),
//!   hence scenario-file validation, `cnsim show`'s comments, the CLI help
//!   and the generated tables of docs/scenario-format.md.
//!
//! Parameters are in the user's units; the configuration compiled from them
//! (`crate::config`) holds the engine's (picoseconds, bit/s, bytes).

use crate::error::{fail, ConfigError};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

/// The largest time parameter (ms): 1e18 ps, well inside the u64 clock.
pub const MAX_MS: f64 = 1e9;
/// The largest time parameter in microseconds.
pub const MAX_US: f64 = MAX_MS * 1e3;
/// Largest buffer, threshold or flow: 1 TiB (the byte counters' room).
pub const MAX_BYTES: u64 = 1 << 40;
/// The slowest link: 1 bit/s (the engine counts whole bits per second).
pub const MIN_GBPS: f64 = 1e-9;
/// The fastest link: 1 Pbit/s.
pub const MAX_GBPS: f64 = 1e6;
/// A whole number's largest value unless its range says otherwise (u32).
pub const MAX_U32: f64 = u32::MAX as f64;

/// Most stations a network may hold, and most link directions (ports): an
/// event names the station or port it is for by its key's index field
/// (`engine::queue::MAX_INDEX`, 22 bits); frames and ports hold 32-bit ids.
pub const MAX_STATIONS: u64 = crate::engine::queue::MAX_INDEX as u64;
/// See [`MAX_STATIONS`].
pub const MAX_PORTS: u64 = crate::engine::queue::MAX_INDEX as u64;

/// The engine's limits on the user's values, as data (declarations.json:
/// the Python layer's one source of them).
pub fn limits() -> Value {
    json!({
        "max_stations": MAX_STATIONS,
        "max_ports": MAX_PORTS,
        "max_ms": MAX_MS,
        "max_us": MAX_US,
        "max_bytes": MAX_BYTES,
        "min_gbps": MIN_GBPS,
        "max_gbps": MAX_GBPS,
        "max_u32": MAX_U32,
    })
}

/// What a number measures, and in which of the user's units: the quantity
/// decides the engine unit it converts to (a time to picoseconds, a rate to
/// bit/s, a size to bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A plain number (a probability, a gain, a count).
    One,
    Ms,
    Us,
    Bytes,
    /// 64-byte pages (BCN's queue thresholds).
    Pages,
    Gbps,
    Mbps,
    /// A multiple of the scheme's equilibrium queue Qeq (BCN's thresholds).
    Qeq,
}

impl Unit {
    /// The unit a parameter's name ends in (`tmax_us`: microseconds).
    pub fn of_name(name: &str) -> Unit {
        match name.rsplit('_').next() {
            Some("ms") if name.contains('_') => Unit::Ms,
            Some("us") if name.contains('_') => Unit::Us,
            Some("bytes") => Unit::Bytes,
            Some("pages") => Unit::Pages,
            Some("gbps") => Unit::Gbps,
            Some("mbps") => Unit::Mbps,
            Some("qeq") => Unit::Qeq,
            _ => Unit::One,
        }
    }

    /// Every unit a name can end in, with its suffix (`_us`), symbol and
    /// quantity, as data: the one statement of the unit-from-name rule that
    /// the Python layer and the docs read (declarations.json).
    pub fn suffixes() -> Value {
        let all = [
            ("_ms", Unit::Ms),
            ("_us", Unit::Us),
            ("_bytes", Unit::Bytes),
            ("_pages", Unit::Pages),
            ("_gbps", Unit::Gbps),
            ("_mbps", Unit::Mbps),
            ("_qeq", Unit::Qeq),
        ];
        all.iter()
            .map(|(suffix, u)| {
                debug_assert_eq!(Unit::of_name(&format!("x{suffix}")), *u);
                json!({"suffix": suffix, "symbol": u.symbol(), "quantity": u.quantity()})
            })
            .collect()
    }

    /// `time`, `rate`, `size` or `` (a plain number).
    pub fn quantity(self) -> &'static str {
        match self {
            Unit::One | Unit::Qeq => "",
            Unit::Ms | Unit::Us => "time",
            Unit::Bytes | Unit::Pages => "size",
            Unit::Gbps | Unit::Mbps => "rate",
        }
    }

    /// The symbol shown in docs and help (`us`, `Gbit/s`, ...).
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::One => "",
            Unit::Ms => "ms",
            Unit::Us => "us",
            Unit::Bytes => "bytes",
            Unit::Pages => "64-byte pages",
            Unit::Gbps => "Gbit/s",
            Unit::Mbps => "Mbit/s",
            Unit::Qeq => "x Qeq",
        }
    }
}

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

pub fn num(v: f64) -> String {
    // Shortest form that reads back: 0, 1, 0.5, 65535, 1e-12, 1e300.
    if v != 0.0 && (v.abs() < 1e-4 || v.abs() >= 1e16) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A value as the user would have written it: 80000, not 80000.0.
pub(crate) fn shown(v: &Value) -> String {
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
    /// A switch, or one of these words (`auto`: decided from the scenario).
    FlagOr(&'static [&'static str]),
    /// A string (a name: a node, a port `FROM->TO`, ...; what it must name
    /// is a rule against the rest of the scenario, not of the table).
    Str,
    /// A list of strings.
    Strs,
    /// A list, each element one of these words.
    Choices(&'static [&'static str]),
    /// An integer in the range, or one of these words (`auto`: derived
    /// from the network when it is built).
    IntOr(Range, &'static [&'static str]),
    /// A list of integers, each in the range; of exactly this many
    /// elements when the length is not 0 (a value per priority).
    Ints(Range, usize),
    /// A count N in the range (meaning 0, 1, ..., N-1), or a list of
    /// distinct integers >= 0 and < 2^63 (replications' seeds).
    CountOrList(Range),
    /// A value of a form only the Python layer reads (a node's `dest`: a
    /// name or a table; a workload's `cdf`: a name or points), named by
    /// its reader (`cnsim.records.READERS`): the declaration owns its name,
    /// help and default, and the engine checks what it resolves to (the
    /// station's destinations, the arrivals' CDF) in its config.
    Opaque(&'static str),
}

/// Largest element of a `CountOrList` list (an i64 seed).
const MAX_LISTED: u64 = i64::MAX as u64;

/// Whether `v` is a list of strings, each (with `words`) one of them.
fn strings_in(v: &Value, words: Option<&[&str]>) -> bool {
    v.as_array()
        .is_some_and(|a| a.iter().all(|x| x.as_str().is_some_and(|s| words.is_none_or(|w| w.contains(&s)))))
}

/// One declared parameter.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: &'static str,
    pub unit: Unit,
    pub kind: Kind,
    pub default: Value,
    pub help: &'static str,
    /// Set by the scheme's name (`qcn3pt` sets `three_point`), not by the
    /// user: absent from the user's table.
    pub fixed: bool,
    /// Must be given (its default is null).
    pub required: bool,
    /// May be left unset (null, its default): what applies then.
    pub unset: Option<&'static str>,
    /// A string that may not be empty (a node's name).
    pub nonempty: bool,
}

/// The values of a table, as a rule reads them.
pub struct Values<'a>(&'a Map<String, Value>);

impl Values<'_> {
    /// A number (0 when absent, which a checked table never is).
    pub fn f(&self, name: &str) -> f64 {
        self.0.get(name).and_then(Value::as_f64).unwrap_or(0.0)
    }
    /// A number, None when unset.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.get(name).and_then(Value::as_f64)
    }
    /// A string (a name, a choice), None when unset.
    pub fn s(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }
    /// A switch (false when unset).
    pub fn flag(&self, name: &str) -> bool {
        self.0.get(name).and_then(Value::as_bool).unwrap_or(false)
    }
    /// A list of integers (empty when unset).
    pub fn ints(&self, name: &str) -> Vec<i64> {
        let list = self.0.get(name).and_then(Value::as_array);
        list.map(|a| a.iter().filter_map(Value::as_i64).collect()).unwrap_or_default()
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
    /// Parameters a `[[nodes]]` entry may set for itself (a station's or a
    /// bridge's table; empty elsewhere).
    pub per_node: &'static [&'static str],
    /// The parameters only an entry of one kind holds (`[[nodes]]`: a
    /// station's `load`, a bridge's `ports`), by kind; empty elsewhere.
    pub kinds: &'static [(&'static str, &'static [&'static str])],
}

impl Table {
    pub fn new(name: &'static str, doc: &'static str) -> Table {
        Table {
            name,
            doc,
            params: Vec::new(),
            rules: Vec::new(),
            per_node: &[],
            kinds: &[],
        }
    }

    /// Which parameters belong to entries of which kind only.
    pub fn kinds(self, kinds: &'static [(&'static str, &'static [&'static str])]) -> Table {
        Table { kinds, ..self }
    }

    /// `names` may also be set per node.
    pub fn per_node(self, names: &'static [&'static str]) -> Table {
        Table { per_node: names, ..self }
    }

    fn push(mut self, name: &'static str, kind: Kind, default: Value, help: &'static str) -> Table {
        assert!(self.get(name).is_none(), "{}.{name} declared twice", self.name);
        self.params.push(Param {
            name,
            unit: Unit::of_name(name),
            kind,
            default,
            help,
            fixed: false,
            required: false,
            unset: None,
            nonempty: false,
        });
        self
    }

    fn last(&mut self, name: &str) -> &mut Param {
        let table = self.name;
        self.params
            .iter_mut()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("{table}.{name} undeclared"))
    }

    /// `name` has no default: it must be given.
    pub fn required(mut self, name: &str) -> Table {
        let p = self.last(name);
        p.required = true;
        p.default = Value::Null;
        self
    }

    /// String `name` may not be empty.
    pub fn nonempty(mut self, name: &str) -> Table {
        let p = self.last(name);
        assert_eq!(p.kind, Kind::Str, "{name}: only a string is non-empty");
        p.nonempty = true;
        self
    }

    /// `name` may be left unset (its default); `meaning`: what applies then.
    pub fn optional(mut self, name: &str, meaning: &'static str) -> Table {
        let p = self.last(name);
        p.unset = Some(meaning);
        p.default = Value::Null;
        self
    }

    /// A number (f64) in `range`. A time (`_us`, `_ms`) is also bounded
    /// above so that it fits the picosecond clock with room for sums (at
    /// most 1e9 ms, 11.6 simulated days).
    pub fn float(self, name: &'static str, default: f64, range: Range, help: &'static str) -> Table {
        let limit = if name.ends_with("_ms") {
            Some(MAX_MS)
        } else if name.ends_with("_us") {
            Some(MAX_US)
        } else {
            None
        };
        let range = match (range.max, limit) {
            (None, Some(l)) => range.le(l),
            _ => range,
        };
        self.push(name, Kind::Float(range), json!(default), help)
    }
    /// A whole number in `range`, at most `u32::MAX` unless the range says
    /// otherwise (the parameter structs hold them as u32: a larger value
    /// must be refused here, naming the parameter, not by serde).
    pub fn int(self, name: &'static str, default: i64, range: Range, help: &'static str) -> Table {
        let range = if range.max.is_none() { range.le(MAX_U32) } else { range };
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
    /// A switch or one of `words` (`true`, `false` or `auto`).
    pub fn flag_or(self, name: &'static str, words: &'static [&'static str], default: impl Into<Value>, help: &'static str) -> Table {
        let default = default.into();
        assert!(
            default.is_boolean() || default.as_str().is_some_and(|d| words.contains(&d)),
            "{}.{name}: default neither a switch nor one of its words",
            self.name
        );
        self.push(name, Kind::FlagOr(words), default, help)
    }
    /// A string.
    pub fn string(self, name: &'static str, default: &'static str, help: &'static str) -> Table {
        self.push(name, Kind::Str, json!(default), help)
    }
    /// A list of strings (default: empty).
    pub fn strings(self, name: &'static str, help: &'static str) -> Table {
        self.push(name, Kind::Strs, json!([]), help)
    }
    /// A list of words, each one of `choices` (default: empty).
    pub fn choices(self, name: &'static str, choices: &'static [&'static str], help: &'static str) -> Table {
        self.push(name, Kind::Choices(choices), json!([]), help)
    }
    /// An integer in `range` or one of `words`.
    pub fn int_or(
        self,
        name: &'static str,
        words: &'static [&'static str],
        default: impl Into<Value>,
        range: Range,
        help: &'static str,
    ) -> Table {
        let default = default.into();
        assert!(
            default.as_i64().is_some_and(|d| range.contains(d as f64)) || default.as_str().is_some_and(|d| words.contains(&d)),
            "{}.{name}: default neither an integer in range nor one of its words",
            self.name
        );
        self.push(name, Kind::IntOr(range, words), default, help)
    }
    /// A list of integers in `range`, of `len` elements (0: any number).
    pub fn ints(self, name: &'static str, default: &[i64], range: Range, len: usize, help: &'static str) -> Table {
        self.push(name, Kind::Ints(range, len), json!(default), help)
    }
    /// A count in `range` or a list of distinct integers >= 0.
    pub fn count_or_list(self, name: &'static str, default: i64, range: Range, help: &'static str) -> Table {
        self.push(name, Kind::CountOrList(range), json!(default), help)
    }
    /// A value only the Python layer reads, by its reader `kind`
    /// ([`Kind::Opaque`]).
    pub fn opaque(self, name: &'static str, kind: &'static str, default: impl Into<Value>, help: &'static str) -> Table {
        self.push(name, Kind::Opaque(kind), default.into(), help)
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

    /// The table of only these parameters (none required) and the rules
    /// that read no other: to check what an engine config holds of a
    /// section (a station's load, the transport's acknowledgements).
    pub fn only(&self, names: &[&str]) -> Table {
        let params = self
            .params
            .iter()
            .filter(|p| names.contains(&p.name))
            .map(|p| Param {
                required: false,
                ..p.clone()
            })
            .collect();
        let rules = self
            .rules
            .iter()
            .filter(|r| r.params.iter().all(|p| names.contains(p)))
            .cloned()
            .collect();
        Table {
            params,
            rules,
            per_node: &[],
            ..self.clone()
        }
    }

    /// Every parameter at its default.
    pub fn defaults(&self) -> Map<String, Value> {
        self.params.iter().map(|p| (p.name.to_string(), p.default.clone())).collect()
    }

    /// `given` completed with the defaults and checked: no unknown names,
    /// every value of its type and in its range, every rule holding. Errors
    /// name parameters `label.name` (`label`: the table as the user named it).
    pub fn check(&self, label: &str, given: &Map<String, Value>) -> Result<Map<String, Value>, ConfigError> {
        // The top level's keys (label "") are named alone: `duration_ms`.
        let at = |k: &str| if label.is_empty() { k.to_string() } else { format!("{label}.{k}") };
        let mut values = self.defaults();
        for (k, v) in given {
            let Some(p) = self.get(k) else {
                let known: Vec<&str> = self.params.iter().filter(|p| !p.fixed).map(|p| p.name).collect();
                return fail(at(k), format!("unknown parameter; known: {}", known.join(", ")));
            };
            let shown = shown(v);
            if v.is_null() && p.unset.is_some() {
                values.insert(k.clone(), Value::Null);
                continue;
            }
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
                Kind::FlagOr(w) => match v.as_str() {
                    Some(s) if w.contains(&s) => None,
                    _ if v.is_boolean() => None,
                    _ => Some(format!(
                        "true, false or {}",
                        w.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(", ")
                    )),
                },
                Kind::IntOr(r, w) => match (v.as_i64(), v.as_str()) {
                    (Some(x), _) if r.contains(x as f64) => None,
                    (_, Some(s)) if w.contains(&s) => None,
                    _ => Some(format!(
                        "an integer {} or {}",
                        r.text(),
                        w.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(", ")
                    )),
                },
                Kind::Str => match v.as_str() {
                    Some("") if p.nonempty => Some("a non-empty string".to_string()),
                    Some(_) => None,
                    None => Some("a string".to_string()),
                },
                Kind::Strs => (!strings_in(v, None)).then(|| "a list of strings".to_string()),
                Kind::Choices(c) => (!strings_in(v, Some(c))).then(|| format!("a list of: {}", c.join(", "))),
                Kind::Ints(r, len) => {
                    let ok = v.as_array().is_some_and(|a| {
                        (*len == 0 || a.len() == *len) && a.iter().all(|x| x.as_i64().is_some_and(|x| r.contains(x as f64)))
                    });
                    let n = if *len == 0 { String::new() } else { format!("{len} ") };
                    (!ok).then(|| format!("a list of {n}integers {}", r.text()))
                }
                Kind::CountOrList(r) => {
                    let count = v.as_i64().is_some_and(|x| r.contains(x as f64));
                    let list = v.as_array().is_some_and(|a| {
                        let mut seen = std::collections::HashSet::new();
                        !a.is_empty() && a.iter().all(|x| x.as_u64().is_some_and(|x| x <= MAX_LISTED && seen.insert(x)))
                    });
                    (!count && !list).then(|| format!("a count {} or a list of distinct integers >= 0 and < 2^63", r.text()))
                }
                // Read (and refused, naming the parameter) by the Python reader.
                Kind::Opaque(_) => None,
            };
            if let Some(e) = expected {
                return fail(at(k), format!("{shown} is not allowed; expected {}", e.trim_end()));
            }
            values.insert(k.clone(), v.clone());
        }
        if let Some(p) = self.params.iter().find(|p| p.required && values[p.name].is_null()) {
            return fail(at(p.name), "required parameter is missing");
        }
        for r in &self.rules {
            if !(r.holds)(&Values(&values)) {
                let names: Vec<String> = r.params.iter().map(|p| at(p)).collect();
                let shown: Vec<String> = r.params.iter().map(|p| shown(&values[*p])).collect();
                return fail(names.join(" / "), format!("{} not allowed; expected {}", shown.join(" / "), r.text));
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
                    Kind::FlagOr(w) => ("flag_or", None, Some(w.to_vec())),
                    Kind::Str => ("str", None, None),
                    Kind::Strs => ("strs", None, None),
                    Kind::Choices(c) => ("choices", None, Some(c.to_vec())),
                    Kind::Ints(r, _) => ("ints", Some(*r), None),
                    Kind::IntOr(r, w) => ("int_or", Some(*r), Some(w.to_vec())),
                    Kind::CountOrList(r) => ("count_or_list", Some(*r), None),
                    Kind::Opaque(reader) => (*reader, None, None),
                };
                let bound = |b: Option<Bound>| b.map(|b| json!({"value": b.value, "inclusive": b.inclusive}));
                json!({
                    "name": p.name,
                    "unit": p.unit.symbol(),
                    "quantity": p.unit.quantity(),
                    "type": kind,
                    "default": p.default,
                    "min": bound(range.and_then(|r| r.min)),
                    "max": bound(range.and_then(|r| r.max)),
                    "range": range.map(|r| r.text()).unwrap_or_default(),
                    "choices": choices,
                    "help": p.help,
                    "fixed": p.fixed,
                    "required": p.required,
                    "unset": p.unset,
                    "nonempty": p.nonempty,
                    "length": match p.kind { Kind::Ints(_, n) if n > 0 => json!(n), _ => Value::Null },
                })
            })
            .collect();
        let rules: Vec<Value> = self.rules.iter().map(|r| json!({"params": r.params, "text": r.text})).collect();
        let mut out = json!({"name": self.name, "doc": self.doc, "params": params, "rules": rules, "per_node": self.per_node});
        if !self.kinds.is_empty() {
            out["kinds"] = self
                .kinds
                .iter()
                .map(|(k, names)| (k.to_string(), json!(names)))
                .collect::<Map<String, Value>>()
                .into();
        }
        out
    }
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
            .flag_or("auto", &["auto"], "auto", "auto")
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
        assert_eq!(
            e(json!({"n": 1.5})),
            "mine.n: 1.5 is not allowed; expected an integer >= 1 and <= 4294967295"
        );
        assert_eq!(
            e(json!({"n": 4294967296u64})),
            "mine.n: 4294967296 is not allowed; expected an integer >= 1 and <= 4294967295"
        );
        assert_eq!(e(json!({"on": 1})), "mine.on: 1 is not allowed; expected true or false");
        assert_eq!(
            e(json!({"mode": "three"})),
            "mine.mode: \"three\" is not allowed; expected one of one, two"
        );
        assert!(e(json!({"nope": 1})).starts_with("mine.nope: unknown parameter; known: a_bytes, p, n, on, mode, auto"));
        assert_eq!(e(json!({"auto": 1})), "mine.auto: 1 is not allowed; expected true, false or 'auto'");
        assert_eq!(
            e(json!({"auto": "yes"})),
            "mine.auto: \"yes\" is not allowed; expected true, false or 'auto'"
        );
        for ok in [json!(true), json!(false), json!("auto")] {
            assert!(t().check("mine", &m(json!({ "auto": ok }))).is_ok());
        }
        assert_eq!(
            e(json!({"a_bytes": 0.1, "p": 0.2})),
            "mine.a_bytes / mine.p: 0.1 / 0.2 not allowed; expected p <= a_bytes"
        );
    }

    #[test]
    fn required_and_unset_parameters() {
        let t = Table::new("w", "test")
            .float("start_ms", 0.0, Range::ge(0.0), "start")
            .required("start_ms")
            .float("end_ms", 0.0, Range::gt(0.0), "end")
            .optional("end_ms", "the run end")
            .rule(&["start_ms", "end_ms"], "start_ms < end_ms", |v| {
                v.get("end_ms").is_none_or(|e| v.f("start_ms") < e)
            });
        let e = |given| t.check("w", &m(given)).map_err(|e| e.line());
        assert_eq!(e(json!({})).unwrap_err(), "w.start_ms: required parameter is missing");
        assert_eq!(e(json!({"start_ms": 1.0})).unwrap()["end_ms"], Value::Null);
        assert_eq!(e(json!({"start_ms": 1.0, "end_ms": null})).unwrap()["end_ms"], Value::Null);
        assert!(e(json!({"start_ms": null}))
            .unwrap_err()
            .starts_with("w.start_ms: null is not allowed"));
        assert_eq!(
            e(json!({"start_ms": 2.0, "end_ms": 1.0})).unwrap_err(),
            "w.start_ms / w.end_ms: 2 / 1 not allowed; expected start_ms < end_ms"
        );
        assert_eq!(t.to_json()["params"][1]["unset"], "the run end");
    }

    #[test]
    fn non_empty_names_opaque_values_and_sub_tables() {
        let t = Table::new("n", "test")
            .string("name", "", "a name")
            .required("name")
            .nonempty("name")
            .opaque("dest", "dest", "uniform", "read by Python")
            .float("start_ms", 0.0, Range::ge(0.0), "start")
            .float("stop_ms", 0.0, Range::ge(0.0), "stop")
            .optional("stop_ms", "never")
            .float("load", 0.0, Range::ge(0.0).le(1.0), "load")
            .rule(&["start_ms", "stop_ms"], "start_ms < stop_ms", |v| {
                v.get("stop_ms").is_none_or(|s| v.f("start_ms") < s)
            });
        let e = |given| t.check("n", &m(given)).map_err(|e| e.line());
        assert_eq!(
            e(json!({"name": ""})).unwrap_err(),
            "n.name: \"\" is not allowed; expected a non-empty string"
        );
        // The engine leaves an opaque value to its Python reader.
        for dest in [json!("S"), json!({"A": 1.0}), json!([1, 2])] {
            assert!(e(json!({"name": "S", "dest": dest})).is_ok());
        }
        let j = t.to_json();
        assert_eq!(
            (j["params"][0]["nonempty"].clone(), j["params"][1]["type"].clone()),
            (json!(true), json!("dest"))
        );
        // A sub-table: only its parameters, none required, the rules among them.
        let only = t.only(&["load"]);
        assert!(only.check("nodes.S", &m(json!({"load": 0.5}))).is_ok());
        assert_eq!(
            only.check("nodes.S", &m(json!({"load": 1.5}))).unwrap_err().line(),
            "nodes.S.load: 1.5 is not allowed; expected a number >= 0 and <= 1"
        );
        assert!(only.rules.is_empty() && t.only(&["start_ms", "stop_ms"]).rules.len() == 1);
    }

    #[test]
    fn units_come_from_the_name() {
        assert_eq!(Unit::of_name("tmax_us"), Unit::Us);
        assert_eq!(Unit::of_name("us"), Unit::One);
        assert_eq!(Unit::of_name("xoff_bytes").quantity(), "size");
        assert_eq!(Unit::of_name("rai_mbps").quantity(), "rate");
        assert_eq!(Unit::of_name("qeq_pages").symbol(), "64-byte pages");
        assert_eq!(t().get("a_bytes").map(|p| p.unit), Some(Unit::Bytes));
    }

    #[test]
    fn range_text_reads_as_written() {
        assert_eq!(Range::gt(0.0).text(), "> 0");
        assert_eq!(Range::ge(0.0).lt(1.0).text(), ">= 0 and < 1");
        assert_eq!(Range::any().text(), "");
        assert!(!Range::any().contains(f64::INFINITY));
    }

    #[test]
    fn strings_lists_and_counts() {
        let t = Table::new("s", "test")
            .string("node", "", "a name")
            .required("node")
            .strings("ports", "ports")
            .optional("ports", "every port")
            .choices("kinds", &["all", "drop"], "kinds")
            .count_or_list("seeds", 1, Range::ge(1.0).le(10.0), "seeds");
        let e = |given| t.check("s", &m(given)).map_err(|e| e.line());
        let ok = e(json!({"node": "A"})).unwrap();
        assert_eq!(
            (ok["ports"].clone(), ok["kinds"].clone(), ok["seeds"].clone()),
            (Value::Null, json!([]), json!(1))
        );
        assert_eq!(e(json!({"node": 1})).unwrap_err(), "s.node: 1 is not allowed; expected a string");
        assert!(e(json!({"node": "A", "ports": ["A->B"], "kinds": ["all", "drop"], "seeds": [0, 7]})).is_ok());
        assert_eq!(
            e(json!({"node": "A", "ports": ["A->B", 3]})).unwrap_err(),
            "s.ports: [\"A->B\",3] is not allowed; expected a list of strings"
        );
        assert_eq!(
            e(json!({"node": "A", "kinds": ["drops"]})).unwrap_err(),
            "s.kinds: [\"drops\"] is not allowed; expected a list of: all, drop"
        );
        for bad in [json!(0), json!(11), json!([]), json!([1, 1]), json!([-1]), json!(2.5)] {
            assert!(
                e(json!({"node": "A", "seeds": bad.clone()}))
                    .unwrap_err()
                    .ends_with("expected a count >= 1 and <= 10 or a list of distinct integers >= 0 and < 2^63"),
                "{bad}"
            );
        }
        // The top level's keys are named alone.
        assert_eq!(
            t.check("", &m(json!({"node": 2}))).unwrap_err().line(),
            "node: 2 is not allowed; expected a string"
        );
        let j = t.to_json();
        let types: Vec<&str> = j["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["str", "strs", "choices", "count_or_list"]);
        assert_eq!(j["params"][2]["choices"], json!(["all", "drop"]));
        assert_eq!(j["params"][3]["range"], ">= 1 and <= 10");
    }
}

//! Connection matrices: the workload files of the Ultra Ethernet reference
//! simulator (uet-htsim's `datacenter/connection_matrices/*.cm`), read as
//! that simulator reads them, so that any of its experiments runs as it is
//! (`workload.kind = "matrix"`).
//!
//! The format: header lines `Nodes N`, `Connections C`, `Triggers T`,
//! `Failures F` (any order; `#` comments and unknown header lines ignored),
//! then one line per connection,
//!
//! ```text
//! SRC->DST [id K] [start T | trigger J] size B [send_done_trigger J] [recv_done_trigger J] [prio P]
//! ```
//!
//! (hosts numbered from 0, the start in microseconds, sizes in bytes), and
//! `trigger id J oneshot|multishot|barrier [count N]` lines. Tokens are
//! separated by single spaces; a flow names `start` or `trigger`, not both.
//! A flow with `trigger J` starts when trigger J fires, and J fires when the
//! flows naming it as their `send_done_trigger` have finished (cnsim: when
//! each was received whole; the reference waits for the sender's last
//! acknowledgement). Every error names its line.

use std::collections::BTreeMap;

/// One connection of a matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    /// Its line in the file (from 1).
    pub line: usize,
    pub src: u32,
    pub dst: u32,
    pub id: Option<u32>,
    pub start_us: Option<f64>,
    pub trigger: Option<u32>,
    pub size: u64,
    pub send_done: Option<u32>,
}

/// How a trigger fires its targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerKind {
    /// Its targets start when it fires (once).
    Oneshot,
    /// Each activation starts its next target.
    Multishot,
    /// Its targets start after `count` activations.
    Barrier(u32),
}

/// A parsed matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub nodes: u32,
    pub connections: Vec<Connection>,
    pub triggers: BTreeMap<u32, (usize, TriggerKind)>,
    /// `Failures` lines (link failures: not modelled; refused by the caller).
    pub failures: usize,
}

/// A matrix error: the line (from 1; 0: the file as a whole) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixError {
    pub line: usize,
    pub what: String,
}

fn err<T>(line: usize, what: impl Into<String>) -> Result<T, MatrixError> {
    Err(MatrixError { line, what: what.into() })
}

fn num<T: std::str::FromStr>(line: usize, key: &str, v: Option<&str>) -> Result<T, MatrixError> {
    let Some(v) = v else {
        return err(line, format!("'{key}' has no value"));
    };
    v.parse().or_else(|_| err(line, format!("'{key} {v}': expected a number")))
}

/// Most connections a matrix may hold: what a run's flows may number.
pub const MAX_CONNECTIONS: usize = 4_000_000;

/// Reads a matrix's text.
pub fn parse(text: &str) -> Result<Matrix, MatrixError> {
    let mut nodes = None;
    let mut declared = BTreeMap::new();
    let mut connections = Vec::new();
    let mut triggers = BTreeMap::new();
    let mut failures = 0;
    let mut in_header = true;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim_end_matches('\r');
        if l.is_empty() {
            continue;
        }
        let toks: Vec<&str> = l.split(' ').collect();
        if toks.iter().any(|t| t.is_empty()) {
            return err(line, "tokens are separated by single spaces (an empty token here)");
        }
        let first = toks[0];
        if in_header && !(first.contains("->") || first == "trigger" || first == "failure") {
            if first.starts_with('#') {
                continue;
            }
            if let Some(key @ ("Nodes" | "Connections" | "Triggers" | "Failures")) = Some(first) {
                if toks.len() != 2 {
                    return err(line, format!("expected '{key} N'"));
                }
                let n: usize = num(line, key, Some(toks[1]))?;
                if key == "Nodes" {
                    nodes = Some(u32::try_from(n).or_else(|_| err(line, "too many nodes"))?);
                } else {
                    declared.insert(key, (n, line));
                }
            }
            continue; // the reference ignores other header lines
        }
        in_header = false;
        if first == "trigger" {
            triggers_line(line, &toks, &mut triggers)?;
        } else if first == "failure" {
            failures += 1;
        } else if let Some((a, b)) = first.split_once("->") {
            if connections.len() >= MAX_CONNECTIONS {
                return err(line, format!("more than {MAX_CONNECTIONS} connections"));
            }
            connections.push(connection(line, a, b, &toks[1..])?);
        } else {
            return err(line, format!("'{first}': expected SRC->DST, trigger or failure"));
        }
    }
    let Some(nodes) = nodes else {
        return err(0, "no 'Nodes N' line");
    };
    for c in &connections {
        for (what, n) in [("source", c.src), ("destination", c.dst)] {
            if n >= nodes {
                return err(c.line, format!("{what} {n} is not a node (Nodes {nodes}: 0 to {})", nodes - 1));
            }
        }
        if let Some(t) = c.trigger.or(c.send_done) {
            if !triggers.contains_key(&t) {
                return err(c.line, format!("trigger {t} is never defined (a 'trigger id {t} ...' line)"));
            }
        }
    }
    for (key, count) in [
        ("Connections", connections.len()),
        ("Triggers", triggers.len()),
        ("Failures", failures),
    ] {
        if let Some(&(n, line)) = declared.get(key) {
            if n != count {
                return err(line, format!("'{key} {n}' but the file has {count}"));
            }
        } else if key == "Connections" {
            return err(0, "no 'Connections C' line");
        }
    }
    Ok(Matrix {
        nodes,
        connections,
        triggers,
        failures,
    })
}

fn connection(line: usize, a: &str, b: &str, rest: &[&str]) -> Result<Connection, MatrixError> {
    let host = |s: &str| -> Result<u32, MatrixError> { s.parse().or_else(|_| err(line, format!("'{a}->{b}': expected two host numbers"))) };
    let mut c = Connection {
        line,
        src: host(a)?,
        dst: host(b)?,
        id: None,
        start_us: None,
        trigger: None,
        size: 0,
        send_done: None,
    };
    let mut size = None;
    let mut it = rest.iter();
    while let Some(&key) = it.next() {
        let v = it.next().copied();
        match key {
            "id" => {
                let id: u32 = num(line, key, v)?;
                if id == 0 {
                    return err(line, "'id 0': ids start at 1");
                }
                c.id = Some(id);
            }
            "start" => {
                let t: f64 = num(line, key, v)?;
                if !(t >= 0.0 && t.is_finite()) {
                    return err(line, format!("'start {t}': expected a time >= 0 (microseconds)"));
                }
                c.start_us = Some(t);
            }
            "size" => size = Some(num::<u64>(line, key, v)?),
            "trigger" => c.trigger = Some(num(line, key, v)?),
            "send_done_trigger" => c.send_done = Some(num(line, key, v)?),
            "recv_done_trigger" | "prio" | "msg" => {
                let _: f64 = num(line, key, v)?;
                if key == "msg" {
                    return err(line, "'msg' (connection reuse) is not modelled");
                }
            }
            other => return err(line, format!("unknown token '{other}'")),
        }
    }
    match (c.start_us, c.trigger) {
        (None, None) => return err(line, "a connection needs 'start T' or 'trigger J'"),
        (Some(_), Some(_)) => return err(line, "a connection has 'start' or 'trigger', not both"),
        _ => {}
    }
    match size {
        None => return err(line, "a connection needs 'size B' (bytes)"),
        Some(0) => return err(line, "'size 0': a connection carries at least 1 byte"),
        Some(s) => c.size = s,
    }
    if c.src == c.dst {
        return err(line, format!("{}->{}: a host does not send to itself", c.src, c.dst));
    }
    Ok(c)
}

fn triggers_line(line: usize, toks: &[&str], triggers: &mut BTreeMap<u32, (usize, TriggerKind)>) -> Result<(), MatrixError> {
    // trigger id J oneshot|multishot|barrier [count N]
    if toks.get(1) != Some(&"id") {
        return err(line, "expected 'trigger id J oneshot|multishot|barrier [count N]'");
    }
    let id: u32 = num(line, "id", toks.get(2).copied())?;
    let kind = match toks.get(3).copied() {
        Some("oneshot") => TriggerKind::Oneshot,
        Some("multishot") => TriggerKind::Multishot,
        Some("barrier") => {
            if toks.get(4) != Some(&"count") {
                return err(line, "a barrier needs 'count N'");
            }
            TriggerKind::Barrier(num(line, "count", toks.get(5).copied())?)
        }
        Some(t) => return err(line, format!("'{t}': expected oneshot, multishot or barrier")),
        None => return err(line, "a trigger needs its type: oneshot, multishot or barrier"),
    };
    if triggers.insert(id, (line, kind)).is_some() {
        return err(line, format!("trigger {id} is defined twice"));
    }
    Ok(())
}

/// Each connection's dependencies: the connections (indices) whose
/// completion it waits for (through its `trigger`). A oneshot trigger fired
/// by one connection, or a barrier of `count` connections, is "after all of
/// them"; a multishot trigger, or a oneshot fired by several (the first to
/// finish), is not modelled and is refused, naming the line.
pub fn dependencies(m: &Matrix) -> Result<Vec<Vec<u32>>, MatrixError> {
    let mut firers: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, c) in m.connections.iter().enumerate() {
        if let Some(t) = c.send_done {
            firers.entry(t).or_default().push(i as u32);
        }
    }
    let mut out = vec![Vec::new(); m.connections.len()];
    for (i, c) in m.connections.iter().enumerate() {
        let Some(t) = c.trigger else { continue };
        let (tline, kind) = m.triggers[&t];
        let by = firers.get(&t).cloned().unwrap_or_default();
        match kind {
            TriggerKind::Oneshot if by.len() <= 1 => {}
            TriggerKind::Barrier(n) if by.len() == n as usize => {}
            TriggerKind::Barrier(n) => {
                return err(
                    tline,
                    format!("barrier {t} counts {n} activations but {} connections fire it", by.len()),
                )
            }
            TriggerKind::Oneshot => {
                return err(
                    tline,
                    format!(
                        "oneshot trigger {t} is fired by {} connections (the first to finish): not modelled; use a barrier",
                        by.len()
                    ),
                )
            }
            TriggerKind::Multishot => return err(tline, format!("multishot trigger {t}: not modelled")),
        }
        if by.is_empty() {
            return err(
                c.line,
                format!("trigger {t} is fired by no connection (send_done_trigger {t}): it would never start"),
            );
        }
        out[i] = by;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_format_reads_as_the_reference_reads_it() {
        let m = parse("Nodes 4\nConnections 2\n\n0->3 id 1 start 1.5 size 2000000\n1->3 start 0 size 10 prio 3\n").unwrap();
        assert_eq!(m.nodes, 4);
        assert_eq!(m.connections.len(), 2);
        let c = &m.connections[0];
        assert_eq!(
            (c.src, c.dst, c.id, c.start_us, c.size, c.line),
            (0, 3, Some(1), Some(1.5), 2_000_000, 4)
        );
    }

    #[test]
    fn every_error_names_its_line() {
        let cases = [
            ("Nodes 4\nConnections 1\n0->9 start 0 size 5\n", 3, "not a node"),
            ("Nodes 4\nConnections 1\n0->1 start 0\n", 3, "size"),
            ("Nodes 4\nConnections 1\n0->1 start 0 size 0\n", 3, "at least 1 byte"),
            ("Nodes 4\nConnections 1\n0->1 start 0  size 5\n", 3, "single spaces"),
            ("Nodes 4\nConnections 1\n0->1 begin 0 size 5\n", 3, "unknown token 'begin'"),
            (
                "Nodes 4\nConnections 2\n0->1 start 0 size 5\n",
                2,
                "'Connections 2' but the file has 1",
            ),
            (
                "Nodes 4\nConnections 1\n0->1 start 0 trigger 1 size 5\ntrigger id 1 oneshot\n",
                3,
                "not both",
            ),
            ("Nodes 4\nConnections 1\n0->1 trigger 2 size 5\n", 3, "never defined"),
            ("Nodes 4\nConnections 1\na->1 start 0 size 5\n", 3, "host numbers"),
            ("Connections 1\n0->1 start 0 size 5\n", 0, "Nodes"),
        ];
        for (text, line, what) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e:?}");
            assert!(e.what.contains(what), "{text:?}: {e:?}");
        }
    }

    #[test]
    fn triggers_become_dependencies() {
        let m = parse(
            "Nodes 3\nConnections 3\nTriggers 1\n0->1 id 1 start 0 size 5 send_done_trigger 7\n1->2 id 2 start 0 size 5 send_done_trigger 7\n2->0 id 3 trigger 7 size 5\ntrigger id 7 barrier count 2\n",
        )
        .unwrap();
        assert_eq!(dependencies(&m).unwrap(), vec![vec![], vec![], vec![0, 1]]);
        let one = parse(
            "Nodes 3\nConnections 2\n0->1 id 1 start 0 size 5 send_done_trigger 7\n2->0 id 3 trigger 7 size 5\ntrigger id 7 oneshot\n",
        )
        .unwrap();
        assert_eq!(dependencies(&one).unwrap(), vec![vec![], vec![0]]);
        let bad = parse("Nodes 3\nConnections 3\n0->1 id 1 start 0 size 5 send_done_trigger 7\n1->2 id 2 start 0 size 5 send_done_trigger 7\n2->0 id 3 trigger 7 size 5\ntrigger id 7 oneshot\n").unwrap();
        assert_eq!(dependencies(&bad).unwrap_err().line, 6);
    }

    #[test]
    fn the_published_matrices_read() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/cnsim/matrices");
        for (f, nodes, conns) in [
            ("one.cm", 16, 1),
            ("incast.cm", 16, 15),
            ("incast_128.cm", 128, 127),
            ("perm_16n_16c_2MB.cm", 16, 16),
            ("perm_1024n_1024c_0u_2000000b.cm", 1024, 1024),
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{f}")).unwrap();
            let m = parse(&text).unwrap_or_else(|e| panic!("{f}: {e:?}"));
            assert_eq!((m.nodes, m.connections.len()), (nodes, conns), "{f}");
            assert!(m.connections.iter().all(|c| c.size == 2_000_000), "{f}");
        }
    }
}

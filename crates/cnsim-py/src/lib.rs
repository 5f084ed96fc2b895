//! PyO3 binding of the cnsim engine (`cnsim._core`). Converts at the
//! boundary only: a config in (a Python dict read by serde through
//! pythonize, or JSON text); out, typed tables (each column one
//! little-endian numeric buffer, or a list of strings), the run's counters
//! as dicts serialised from the engine's own structs, and the binned series
//! as one float64 buffer with an index. Parquet files are written here from
//! columns, by the engine's writer. Simulation releases the GIL, so Python
//! threads run replications in parallel.

// pyo3 0.22's #[pymethods] expansion converts PyErr into itself; not our code.
#![allow(clippy::useless_conversion)]
// pyo3 0.22's create_exception! tests a `gil-refs` feature this crate does not have.
#![allow(unexpected_cfgs)]

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use cnsim_core::config::ConfigError;
use cnsim_core::io::parquet::{self as pq, SeriesRun};
use cnsim_core::stats::Column;
use cnsim_core::trace::TraceOutput;
use cnsim_core::{RunResult, Sim, SimConfig};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

create_exception!(
    _core,
    EngineConfigError,
    PyValueError,
    "A bad engine config: `path` names the parameter (a dotted path, or empty), `message` what is wrong."
);

fn config_error(py: Python<'_>, e: ConfigError) -> PyErr {
    if e.path == "trace" {
        if let Some(os) = trace_os_error(&e.message) {
            return os;
        }
    }
    let err = EngineConfigError::new_err(e.line());
    let value = err.value_bound(py);
    let _ = value.setattr("path", e.path.as_str());
    let _ = value.setattr("message", e.message.as_str());
    err
}

/// A checked, resolved configuration (`compile`): what every seed of a run
/// is built from, held by the engine so that no seed reads or checks it
/// again. It pickles (as its JSON) for worker processes and Dask, and is
/// read back unchecked: it was checked when it was compiled.
#[pyclass(module = "cnsim._core", frozen)]
struct Compiled {
    cfg: Arc<SimConfig>,
    warnings: Vec<String>,
    /// Which compile this is (the network it built is kept under it).
    id: u64,
}

/// The network the latest `compile` built to check its config (seed 0,
/// untraced), kept for the first run of that seed: the build is not done
/// twice. One per process, so a sweep that compiles every point up front
/// holds one network, not one per point; a later compile replaces it.
static BUILT: Mutex<Option<(u64, Sim)>> = Mutex::new(None);
static COMPILES: AtomicU64 = AtomicU64::new(1);

/// The kept network of compile `id`, if it is still there (taken: the next
/// run of that seed builds its own).
fn take_built(id: u64) -> Option<Sim> {
    let mut kept = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    match kept.take() {
        Some((k, sim)) if k == id => Some(sim),
        other => {
            *kept = other;
            None
        }
    }
}

#[pymethods]
impl Compiled {
    /// What the engine found while checking the network: legal but almost
    /// certainly unintended parameters, one line each.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    #[getter]
    fn duration_ps(&self) -> u64 {
        self.cfg.duration_ps
    }

    /// Whether the run keeps per-flow counters (`stats.per_flow` resolved).
    #[getter]
    fn per_flow(&self) -> bool {
        self.cfg.per_flow
    }

    /// The configuration as JSON text (docs/engine-interface.md).
    fn json(&self) -> String {
        serde_json::to_string(&*self.cfg).expect("a config serialises")
    }

    /// The configuration as Python data (dicts and lists), as `json` reads.
    fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize::pythonize(py, &*self.cfg)?)
    }

    /// One top-level part of the configuration as Python data (`stations`,
    /// `bridges` or `scheme`), without the rest: a run of millions of
    /// flows would otherwise make gigabytes of dicts to read a station's
    /// priority.
    fn part<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let c = &*self.cfg;
        Ok(match name {
            "stations" => pythonize::pythonize(py, &c.stations)?,
            "bridges" => pythonize::pythonize(py, &c.bridges)?,
            "scheme" => pythonize::pythonize(py, &c.scheme)?,
            _ => {
                return Err(pyo3::exceptions::PyKeyError::new_err(format!(
                    "no part '{name}' of the engine config: stations, bridges or scheme"
                )))
            }
        })
    }

    /// Pickled as Python data, not JSON text: serde_json reads a float from
    /// text to within a unit in the last place, and a worker must run the
    /// very configuration that was compiled.
    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<(PyObject, (PyObject, Vec<String>))> {
        let py = slf.py();
        let this = slf.get();
        let rebuild = py.import_bound("cnsim._core")?.getattr("_compiled")?.unbind();
        Ok((rebuild, (this.data(py)?.unbind(), this.warnings.clone())))
    }
}

/// Whether the network compile `id` built is still kept for its first run
/// (tests: the build is not done twice).
#[pyfunction]
fn _kept(compiled: &Bound<'_, Compiled>) -> bool {
    BUILT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|(k, _)| *k == compiled.get().id)
}

/// A `Compiled` from its pickle (its data and warnings), read without a check.
#[pyfunction]
fn _compiled(py: Python<'_>, config: &Bound<'_, PyAny>, warnings: Vec<String>) -> PyResult<Compiled> {
    let cfg = read_config(py, config)?;
    Ok(Compiled {
        cfg: Arc::new(cfg),
        warnings,
        id: COMPILES.fetch_add(1, Ordering::Relaxed),
    })
}

/// Compiles an engine config (a dict, JSON text) and the sections it holds
/// only resolved, as the user wrote them (`written`:
/// `cnsim_core::sections::check_written`), into a checked configuration:
/// every value, every rule, the topology and its routes, in one crossing.
/// Raises EngineConfigError (a ValueError) naming the first bad parameter
/// in its `path`.
#[pyfunction]
#[pyo3(signature = (config, written = None))]
fn compile(py: Python<'_>, config: &Bound<'_, PyAny>, written: Option<&Bound<'_, PyDict>>) -> PyResult<Compiled> {
    if let Some(written) = written {
        check_written(py, written)?;
    }
    let cfg = if is_input(config) {
        resolve_input(py, config)?
    } else {
        read_config(py, config)?
    };
    let id = COMPILES.fetch_add(1, Ordering::Relaxed);
    let warnings = py
        .allow_threads(|| {
            // The network an earlier compile kept goes first (outside the GIL:
            // dropping it is work too), so that no more than one network is
            // held at a time, as before networks were kept.
            drop(BUILT.lock().unwrap_or_else(|e| e.into_inner()).take());
            Sim::new(&cfg, 0).map(|sim| {
                let warnings = sim.warnings().to_vec();
                *BUILT.lock().unwrap_or_else(|e| e.into_inner()) = Some((id, sim));
                warnings
            })
        })
        .map_err(|e| config_error(py, e))?;
    Ok(Compiled {
        cfg: Arc::new(cfg),
        warnings,
        id,
    })
}

/// Whether `config` is what the front end hands the compiler (a dict with
/// `scenario`: `cnsim_core::compile::Input`) rather than an engine config.
fn is_input(config: &Bound<'_, PyAny>) -> bool {
    config.downcast::<PyDict>().is_ok_and(|d| d.contains("scenario").unwrap_or(false))
}

/// The engine config of the front end's input (`cnsim_core::compile`),
/// read in the dicts' own order (a node's weights), unchecked.
fn resolve_input(py: Python<'_>, input: &Bound<'_, PyAny>) -> PyResult<SimConfig> {
    let mut de = pythonize::Depythonizer::from_object(input);
    let input: cnsim_core::compile::Input =
        serde_path_to_error::deserialize(&mut de).map_err(|e| config_error(py, ConfigError::at("", e)))?;
    cnsim_core::compile::resolve(input).map_err(|e| config_error(py, e))
}

/// The engine config (a dict, as `Compiled.data`) the front end's input
/// resolves to, unchecked: `compile` checks.
#[pyfunction]
fn resolve<'py>(py: Python<'py>, input: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let cfg = resolve_input(py, input)?;
    Ok(pythonize::pythonize(py, &cfg)?)
}

/// A config given as a `Compiled` (shared, not read again), or read as
/// `read_config` reads it.
fn shared_config(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Arc<SimConfig>> {
    match config.downcast::<Compiled>() {
        Ok(c) => Ok(Arc::clone(&c.get().cfg)),
        Err(_) => read_config(py, config).map(Arc::new),
    }
}

/// A trace file the engine could not write (`[trace: ]cannot write PATH:
/// ... (os error N)`, from crate::trace and crate::io) as Python's
/// `OSError(errno, strerror, filename)`, as other write errors are (see
/// `write_error`): the caller names its output directory and the cause, as
/// for a full disk or `ulimit -f` while saving. None for another error.
fn trace_os_error(message: &str) -> Option<PyErr> {
    let rest = message.strip_prefix("trace: ").unwrap_or(message);
    let rest = rest.strip_prefix("cannot write ")?;
    let code_at = rest.rfind(" (os error ")?;
    let code: i32 = rest[code_at + 11..].strip_suffix(')')?.parse().ok()?;
    let path = rest.split_once(": ").map_or(rest, |(p, _)| p);
    let text = std::io::Error::from_raw_os_error(code).to_string();
    let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
    Some(PyOSError::new_err((code, strerror, path.to_string())))
}

/// A config given as a dict (the resolver's) or as JSON text.
fn read_config(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<SimConfig> {
    if let Ok(text) = config.downcast::<PyString>() {
        return SimConfig::from_json(text.to_str()?).map_err(|e| config_error(py, e));
    }
    // Through a JSON value, so that a value is read as its Python type says,
    // as from a JSON text: 0 is not a switch, 2.0 not an integer (reading the
    // dict directly, pythonize takes any truthy value as true). A value JSON
    // cannot hold (an integer beyond 64 bits) is located by reading the dict
    // directly, which names where it is.
    let located = |mut e: ConfigError| {
        // The scheme's parameters are flattened into `scheme`: name them by
        // the table the user wrote (`timely.hai_after`, not `scheme.hai_after`).
        if let Some(key) = e.path.strip_prefix("scheme.") {
            let table = config
                .get_item("scheme")
                .ok()
                .and_then(|s| s.get_item("table").or_else(|_| s.get_item("name")).ok())
                .and_then(|t| t.extract::<String>().ok());
            if let Some(table) = table {
                e.path = format!("{table}.{key}");
            }
        }
        if e.message.contains("as u128") {
            e.message = "the value is too large (at most 18446744073709551615)".into();
        }
        config_error(py, e)
    };
    let value: serde_json::Value = match pythonize::depythonize(config) {
        Ok(v) => v,
        Err(_) => {
            let mut de = pythonize::Depythonizer::from_object(config);
            return serde_path_to_error::deserialize(&mut de).map_err(|e| located(ConfigError::at("", e)));
        }
    };
    serde_path_to_error::deserialize(value).map_err(|e| located(ConfigError::at("", e)))
}

/// Where each series lies in one buffer: (series, key, offset, length).
type SeriesIndex = Vec<(String, String, usize, usize)>;

/// One replication: a scenario (engine config) and a seed.
#[pyclass(module = "cnsim._core")]
struct Simulation {
    sim: Option<Sim>,
    result: Option<RunResult>,
    duration_ps: u64,
    warnings: Vec<String>,
}

#[pymethods]
impl Simulation {
    /// `trace_dir`: where a config that asks for a trace (`trace.events`,
    /// `trace.pcap`) writes it (events.seed<K>.parquet, pcap/); without it
    /// the run records none. `trace_run`: (key, value) pairs naming the run,
    /// kept in every trace file beside the seed.
    #[new]
    #[pyo3(signature = (config, seed, trace_dir=None, trace_run=Vec::new()))]
    fn new(
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        seed: u64,
        trace_dir: Option<std::path::PathBuf>,
        trace_run: Vec<(String, String)>,
    ) -> PyResult<Self> {
        let cfg = shared_config(py, config)?;
        // Seed 0 untraced of a config just compiled: the network its check built.
        let built = match config.downcast::<Compiled>() {
            Ok(c) if seed == 0 && trace_dir.is_none() => take_built(c.get().id),
            _ => None,
        };
        let sim = py
            .allow_threads(|| match (built, trace_dir) {
                (Some(sim), _) => Ok(sim),
                (None, Some(dir)) => Sim::with_trace(&cfg, seed, &TraceOutput { dir, run: trace_run }),
                (None, None) => Sim::new(&cfg, seed),
            })
            .map_err(|e| config_error(py, e))?;
        Ok(Simulation {
            duration_ps: sim.duration(),
            warnings: sim.warnings().to_vec(),
            sim: Some(sim),
            result: None,
        })
    }

    /// What the engine found while building the network: legal but almost
    /// certainly unintended parameters, one line each.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    #[getter]
    fn duration_ps(&self) -> u64 {
        self.duration_ps
    }

    #[getter]
    fn now_ps(&self) -> u64 {
        match &self.sim {
            Some(s) => s.now(),
            None => self.result.as_ref().map_or(self.duration_ps, |r| r.end_ps),
        }
    }

    /// Advances to `t_ps` with the GIL released; True once the run is over.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        let Some(sim) = self.sim.as_mut() else { return Ok(true) };
        let done = py.allow_threads(|| sim.run_until(t_ps));
        self.finish_if(py, done)
    }

    /// Runs for about `wall_s` seconds of wall-clock time (the engine looks
    /// at the clock every few thousand events), or to the end, with the GIL
    /// released; True once the run is over.
    fn run_for(&mut self, py: Python<'_>, wall_s: f64) -> PyResult<bool> {
        let Some(sim) = self.sim.as_mut() else { return Ok(true) };
        let wall = Duration::from_secs_f64(wall_s.clamp(0.0, 3600.0));
        let done = py.allow_threads(|| sim.run_for(wall));
        self.finish_if(py, done)
    }

    fn run(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run_until(py, u64::MAX)?;
        Ok(())
    }

    /// The run's results: `{"seed", "end_ps", "bin_ps", "n_bins", "frames":
    /// {...}, "engine": {...}, "tables": {TABLE: {COLUMN: (dtype, bytes) or
    /// [str]}}}` with dtype `<u8` (u64), `<f8` (f64) or `|b1` (bool). The
    /// counters are the engine's structs serialised as they are declared.
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.result()?;
        let d = PyDict::new_bound(py);
        d.set_item("seed", r.seed)?;
        d.set_item("end_ps", r.end_ps)?;
        d.set_item("bin_ps", r.bin_ps)?;
        d.set_item("n_bins", r.n_bins)?;
        // The run-wide counters, frames' and the transport's, as one dict.
        d.set_item("frames", pythonize::pythonize(py, &r.counters())?)?;
        d.set_item("engine", pythonize::pythonize(py, &r.engine)?)?;
        let tables = PyDict::new_bound(py);
        for (name, cols) in r.tables() {
            let t = PyDict::new_bound(py);
            for (col, values) in cols {
                match values {
                    Column::U64(v) => t.set_item(col, ("<u8", le_bytes(py, &v, |x| x.to_le_bytes())))?,
                    Column::F64(v) => t.set_item(col, ("<f8", le_bytes(py, &v, |x| x.to_le_bytes())))?,
                    Column::Bool(v) => t.set_item(col, ("|b1", le_bytes(py, &v, |&x| [x as u8])))?,
                    Column::Str(v) => t.set_item(col, interned_list(py, &v))?,
                }
            }
            tables.set_item(name, t)?;
        }
        d.set_item("tables", tables)?;
        Ok(d)
    }

    /// The binned series as `([(series, key, offset, length)], values)`:
    /// every series' values (one per bin) in one float64 little-endian buffer.
    fn series_buffer<'py>(&self, py: Python<'py>) -> PyResult<(SeriesIndex, Bound<'py, PyBytes>)> {
        let r = self.result()?;
        let mut index = Vec::with_capacity(r.series.len());
        let total: usize = r.series.iter().map(|s| s.values.len()).sum();
        let mut off = 0;
        for s in &r.series {
            index.push((s.series.clone(), s.key.clone(), off, s.values.len()));
            off += s.values.len();
        }
        let bytes = PyBytes::new_bound_with(py, total * 8, |buf| {
            let mut i = 0;
            for s in &r.series {
                for v in &s.values {
                    buf[i..i + 8].copy_from_slice(&v.to_le_bytes());
                    i += 8;
                }
            }
            Ok(())
        })?;
        Ok((index, bytes))
    }

    /// Everything the finished run recorded, in one crossing: `(results(),
    /// *series_buffer(), trace_summary())`.
    #[allow(clippy::type_complexity)]
    fn output<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, SeriesIndex, Bound<'py, PyBytes>, Option<String>)> {
        let (index, values) = self.series_buffer(py)?;
        Ok((self.results(py)?, index, values, self.trace_summary()?))
    }

    /// `[(series, key, float64 little-endian bytes)]`, one value per bin.
    fn series<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, String, Bound<'py, PyBytes>)>> {
        let r = self.result()?;
        Ok(r.series
            .iter()
            .map(|s| (s.series.clone(), s.key.clone(), le_bytes(py, &s.values, |v| v.to_le_bytes())))
            .collect())
    }

    /// What a traced run wrote, as JSON (`{"events_file", "rows",
    /// "max_rows", "capped_at_ps", "pcap": [{"port", "file", "frames"}]}`),
    /// or None for a run without a trace.
    fn trace_summary(&self) -> PyResult<Option<String>> {
        let r = self.result()?;
        Ok(r.trace.as_ref().map(|t| serde_json::to_string(t).expect("plain data")))
    }
}

fn le_bytes<'py, T, const N: usize>(py: Python<'py>, v: &[T], f: impl Fn(&T) -> [u8; N]) -> Bound<'py, PyBytes> {
    PyBytes::new_bound_with(py, v.len() * N, |buf| {
        for (chunk, x) in buf.chunks_exact_mut(N).zip(v) {
            chunk.copy_from_slice(&f(x));
        }
        Ok(())
    })
    .expect("the closure cannot fail")
}

impl Simulation {
    fn result(&self) -> PyResult<&RunResult> {
        self.result
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the run has not finished; call run() first"))
    }

    fn finish_if(&mut self, py: Python<'_>, done: bool) -> PyResult<bool> {
        if done {
            let mut sim = self.sim.take().expect("present");
            // What the run itself found (the flow-level model's link runs).
            self.warnings = sim.warnings().to_vec();
            let res = py
                .allow_threads(|| sim.finish())
                .map_err(|e| trace_os_error(&e).unwrap_or_else(|| PyRuntimeError::new_err(e)))?;
            self.result = Some(res);
        }
        Ok(done)
    }
}

/// One column to write: its Arrow field and values.
fn column_array(name: &str, kind: &str, data: &Bound<'_, PyAny>) -> PyResult<(Field, ArrayRef)> {
    let py = data.py();
    let bad = |what: &str| PyValueError::new_err(format!("write_parquet: column {name}: {what}"));
    Ok(match kind {
        "seed" => {
            let (seed, n): (i64, usize) = data.extract()?;
            (Field::new(name, DataType::Int64, false), Arc::new(Int64Array::from(vec![seed; n])))
        }
        "<u8" => {
            let b = PyBuffer::<u64>::get_bound(data)?;
            (
                Field::new(name, DataType::UInt64, false),
                Arc::new(UInt64Array::from(b.to_vec(py)?)),
            )
        }
        "<i8" => {
            let b = PyBuffer::<i64>::get_bound(data)?;
            (Field::new(name, DataType::Int64, false), Arc::new(Int64Array::from(b.to_vec(py)?)))
        }
        "<f8" => {
            let b = PyBuffer::<f64>::get_bound(data)?;
            (
                Field::new(name, DataType::Float64, false),
                Arc::new(Float64Array::from(b.to_vec(py)?)),
            )
        }
        "|b1" => {
            // Booleans as bytes 0 / 1 (a '?' memoryview cast to 'B').
            let b = PyBuffer::<u8>::get_bound(data)?;
            let v: Vec<bool> = b.to_vec(py)?.into_iter().map(|x| x != 0).collect();
            (Field::new(name, DataType::Boolean, false), Arc::new(BooleanArray::from(v)))
        }
        "str" => {
            let v: Vec<Option<String>> = data.extract()?;
            (Field::new(name, DataType::Utf8, true), Arc::new(StringArray::from(v)))
        }
        "i64" => {
            let v: Vec<Option<i64>> = data.extract()?;
            (Field::new(name, DataType::Int64, true), Arc::new(Int64Array::from(v)))
        }
        "f64" => {
            let v: Vec<Option<f64>> = data.extract()?;
            (Field::new(name, DataType::Float64, true), Arc::new(Float64Array::from(v)))
        }
        "bool" => {
            let v: Vec<Option<bool>> = data.extract()?;
            (Field::new(name, DataType::Boolean, true), Arc::new(BooleanArray::from(v)))
        }
        other => return Err(bad(&format!("unknown kind {other:?}"))),
    })
}

/// A write error as Python's `OSError(errno, strerror, filename)` when an
/// operating-system error lies under it (a full disk, `ulimit -f`, a name
/// too long), so the caller can name the file and the cause; otherwise an
/// OSError with the message.
fn write_error(e: pq::WriteError) -> PyErr {
    match e.os_error().and_then(|io| io.raw_os_error().map(|code| (code, io))) {
        Some((code, io)) => {
            let text = io.to_string();
            let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
            PyOSError::new_err((code, strerror, e.path().to_string()))
        }
        None => PyOSError::new_err(e.to_string()),
    }
}

/// Writes tables of one schema as one Parquet file: `chunks` is a list of
/// tables (one row group each), each a list of `(name, kind, data)` with
/// kind `<u8` / `<i8` / `<f8` / `|b1` (data: a buffer of that type), `str`,
/// `i64`, `f64`, `bool` (data: a list, None for null) or `seed` (data:
/// `(seed, rows)`, an Int64 column of one value). A column is nullable
/// whenever any chunk gives it as a list.
/// `metadata`: key-value pairs for the file's footer.
#[pyfunction]
#[pyo3(signature = (path, chunks, metadata = Vec::new()))]
fn write_parquet(
    py: Python<'_>,
    path: &str,
    chunks: Vec<Vec<(String, String, Bound<'_, PyAny>)>>,
    metadata: Vec<(String, String)>,
) -> PyResult<()> {
    let mut fields: Vec<Field> = Vec::new();
    let mut arrays: Vec<Vec<ArrayRef>> = Vec::new();
    for chunk in &chunks {
        let mut cols = Vec::with_capacity(chunk.len());
        for (i, (name, kind, data)) in chunk.iter().enumerate() {
            let (f, a) = column_array(name, kind, data)?;
            match fields.get_mut(i) {
                None => fields.push(f),
                Some(g) if g.name() != f.name() || g.data_type() != f.data_type() => {
                    return Err(PyValueError::new_err(format!(
                        "write_parquet {path}: column {i} is {} {} in one table and {} {} in another",
                        g.name(),
                        g.data_type(),
                        f.name(),
                        f.data_type()
                    )))
                }
                Some(g) => {
                    if f.is_nullable() && !g.is_nullable() {
                        *g = g.clone().with_nullable(true);
                    }
                }
            }
            cols.push(a);
        }
        if chunk.len() != fields.len() {
            return Err(PyValueError::new_err(format!(
                "write_parquet {path}: tables with different columns"
            )));
        }
        arrays.push(cols);
    }
    let schema = Arc::new(Schema::new(fields));
    let p = Path::new(path);
    let batches = arrays
        .into_iter()
        .map(|cols| pq::batch(p, &schema, cols))
        .collect::<Result<Vec<RecordBatch>, _>>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.allow_threads(|| pq::write_batches(p, schema, &batches, &metadata))
        .map_err(write_error)
}

/// Writes timeseries.parquet (seed, time_ms, series, key, value) from the
/// runs' series buffers: `runs` is a list of `(seed, bin_ps, index, values)`
/// as `Simulation.series_buffer` gives them; `metadata` as for write_parquet.
#[pyfunction]
#[pyo3(signature = (path, runs, metadata = Vec::new()))]
fn write_timeseries(
    py: Python<'_>,
    path: &str,
    runs: Vec<(i64, u64, SeriesIndex, Bound<'_, PyAny>)>,
    metadata: Vec<(String, String)>,
) -> PyResult<()> {
    let mut values = Vec::with_capacity(runs.len());
    for (_, _, _, data) in &runs {
        let bytes: &[u8] = if let Ok(b) = data.downcast::<PyBytes>() {
            b.as_bytes()
        } else {
            return Err(PyValueError::new_err("write_timeseries: values must be bytes"));
        };
        values.push(
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect::<Vec<f64>>(),
        );
    }
    let series: Vec<SeriesRun<'_>> = runs
        .iter()
        .zip(&values)
        .map(|((seed, bin_ps, index, _), v)| SeriesRun {
            seed: *seed,
            bin_ps: *bin_ps,
            index,
            values: v,
        })
        .collect();
    py.allow_threads(|| pq::write_series(Path::new(path), &series, &metadata))
        .map_err(write_error)
}

/// The nodes each flow (source, destination) visits in the network of
/// `config` for run `seed`: `[[name, ...]]`, empty for a flow that never
/// arrives.
#[pyfunction]
fn paths(py: Python<'_>, config: &Bound<'_, PyAny>, seed: u64, flows: Vec<(String, String)>) -> PyResult<Vec<Vec<String>>> {
    let cfg = shared_config(py, config)?;
    py.allow_threads(|| cnsim_core::net::topology::paths(&cfg, seed, &flows))
        .map_err(|e| config_error(py, e))
}

/// The `cnsim bench` workload (performance.md): the 4-to-1 incast.
#[pyfunction]
fn incast_config_json(duration_ps: u64) -> String {
    cnsim_core::bench::incast_config(duration_ps).to_json()
}

/// Integrates a fluid model (`cnsim_core::fluid`, config JSON) with the GIL
/// released; returns its bin means as JSON.
#[pyfunction]
fn fluid_json(py: Python<'_>, config_json: &str) -> PyResult<String> {
    let cfg = cnsim_core::fluid::FluidConfig::from_json(config_json).map_err(|e| config_error(py, e))?;
    let res = py
        .allow_threads(|| cnsim_core::fluid::integrate(&cfg))
        .map_err(|e| config_error(py, e))?;
    Ok(res.to_json())
}

/// Checks an engine config as the engine would before a run (every value,
/// every cross-parameter rule of its scheme, the topology), without running
/// it: raises EngineConfigError (a ValueError) naming the first bad
/// parameter in its `path`; returns the engine's warnings (one line each,
/// as `Simulation.warnings`).
#[pyfunction]
fn check_config(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let cfg = read_config(py, config)?;
    py.allow_threads(|| Sim::new(&cfg, 0).map(|s| s.warnings().to_vec()))
        .map_err(|e| config_error(py, e))
}

/// Checks the scenario's sections that the engine config does not hold as
/// the user wrote them (`[hotspot]`, `[trace]`, ...:
/// `cnsim_core::sections::check_written`) against their declarations.
fn check_written(py: Python<'_>, written: &Bound<'_, PyDict>) -> PyResult<()> {
    let value: serde_json::Value = pythonize::depythonize(written).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let serde_json::Value::Object(map) = value else {
        return Err(PyValueError::new_err("check_sections: expected a dict of sections"));
    };
    cnsim_core::sections::check_written(&map).map_err(|e| config_error(py, e))
}

/// The parameter declarations (`cnsim_core::params`) as JSON: every scheme
/// table and every section of the scenario (`cnsim_core::sections`) with its
/// parameters, units, ranges, rules and help, and every scheme name with its
/// table. `cnsim.schemes` and `cnsim.sections` build their models from it.
#[pyfunction]
fn scheme_declarations() -> String {
    let mut d = cnsim_core::scheme::declarations();
    d["sections"] = cnsim_core::sections::tables().iter().map(|t| t.to_json()).collect();
    // The engine's limits and the unit-from-name rule, stated once, here.
    d["limits"] = cnsim_core::params::limits();
    d["units"] = cnsim_core::params::Unit::suffixes();
    // The results' files, columns and series (docs/results.md is generated from them).
    d["outputs"] = cnsim_core::outputs::to_json();
    // The results' files, columns and series (docs/results.md is generated from them).
    d["outputs"] = cnsim_core::outputs::to_json();
    // Each scheme also says whether the fluid model integrates it.
    if let Some(schemes) = d["schemes"].as_array_mut() {
        for s in schemes {
            let scheme = cnsim_core::config::SchemeConfig {
                name: s["engine"].as_str().unwrap_or_default().to_string(),
                table: s["table"].as_str().map(str::to_string),
                params: s["sets"].as_object().cloned().unwrap_or_default(),
            };
            s["fluid"] = cnsim_core::fluid::has_model(&scheme).into();
        }
    }
    d.to_string()
}

/// PAUSE headroom above XOFF in bytes (`cnsim_core::net::pause::headroom_bytes`),
/// for links of `link_rate_gbps` and `link_delay_us` and a bridge latency of
/// `latency_us` (the scenario's units, converted as the compiler converts them).
#[pyfunction]
fn pause_headroom_bytes(
    link_rate_gbps: f64,
    link_delay_us: f64,
    latency_us: f64,
    frame_bytes: u64,
    control_bytes: u64,
    ingress_ports: u64,
) -> u64 {
    use cnsim_core::compile::{gbps_to_bps, us_to_ps};
    cnsim_core::net::pause::headroom_bytes(
        gbps_to_bps(link_rate_gbps),
        us_to_ps(link_delay_us),
        us_to_ps(latency_us),
        frame_bytes,
        control_bytes,
        ingress_ports,
    )
}

#[pyfunction]
fn version() -> &'static str {
    cnsim_core::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_class::<Compiled>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(_compiled, m)?)?;
    m.add_function(wrap_pyfunction!(_kept, m)?)?;
    m.add("EngineConfigError", m.py().get_type_bound::<EngineConfigError>())?;
    m.add_function(wrap_pyfunction!(paths, m)?)?;
    m.add_function(wrap_pyfunction!(incast_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(fluid_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_declarations, m)?)?;
    m.add_function(wrap_pyfunction!(write_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(write_timeseries, m)?)?;
    m.add_function(wrap_pyfunction!(pause_headroom_bytes, m)?)?;
    Ok(())
}

/// A list of strings in which equal strings are one Python object: a
/// column of node names repeats a few thousand names over millions of rows
/// (a flow's source and destination), and a new object per row would cost
/// about 50 bytes each. Only looked up, never iterated: no order leaks.
fn interned_list<'py>(py: Python<'py>, values: &[String]) -> Bound<'py, PyList> {
    let mut seen: std::collections::HashMap<&str, Bound<'py, pyo3::types::PyString>> = std::collections::HashMap::new();
    let items: Vec<Bound<'py, pyo3::types::PyString>> = values
        .iter()
        .map(|v| {
            seen.entry(v.as_str())
                .or_insert_with(|| pyo3::types::PyString::new_bound(py, v))
                .clone()
        })
        .collect();
    PyList::new_bound(py, items)
}

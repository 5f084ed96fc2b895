//! PyO3 binding of the cnsim engine (`cnsim._core`). Converts at the
//! boundary only: a JSON config in; out, typed tables (each column a
//! little-endian numeric buffer for numpy, or a list of strings), counters
//! as dicts and the binned series as float64 buffers. Simulation releases
//! the GIL, so Python threads run replications in parallel.

// pyo3 0.22's #[pymethods] expansion converts PyErr into itself; not our code.
#![allow(clippy::useless_conversion)]

use cnsim_core::stats::Column;
use cnsim_core::trace::TraceOutput;
use cnsim_core::{RunResult, Sim, SimConfig};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// One replication: a scenario (engine config JSON) and a seed.
#[pyclass(module = "cnsim._core")]
struct Simulation {
    sim: Option<Sim>,
    result: Option<RunResult>,
    duration_ps: u64,
}

#[pymethods]
impl Simulation {
    /// `trace_dir`: where a config that asks for a trace (`trace.events`,
    /// `trace.pcap`) writes it (events.seed<K>.parquet, pcap/); without it
    /// the run records none.
    #[new]
    #[pyo3(signature = (config_json, seed, trace_dir=None))]
    fn new(config_json: &str, seed: u64, trace_dir: Option<std::path::PathBuf>) -> PyResult<Self> {
        let cfg = SimConfig::from_json(config_json).map_err(|e| PyValueError::new_err(e.0))?;
        let sim = match trace_dir {
            Some(dir) => Sim::with_trace(&cfg, seed, &TraceOutput { dir }),
            None => Sim::new(&cfg, seed),
        }
        .map_err(|e| PyValueError::new_err(e.0))?;
        Ok(Simulation {
            duration_ps: sim.duration(),
            sim: Some(sim),
            result: None,
        })
    }

    #[getter]
    fn duration_ps(&self) -> u64 {
        self.duration_ps
    }

    #[getter]
    fn now_ps(&self) -> u64 {
        match &self.sim {
            Some(s) => s.now(),
            None => self.duration_ps,
        }
    }

    /// Advances to `t_ps` with the GIL released; True once the run is over.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        let Some(sim) = self.sim.as_mut() else { return Ok(true) };
        let done = py.allow_threads(|| sim.run_until(t_ps));
        if done {
            let mut sim = self.sim.take().expect("present");
            let res = py.allow_threads(|| sim.finish()).map_err(PyRuntimeError::new_err)?;
            self.result = Some(res);
        }
        Ok(done)
    }

    fn run(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run_until(py, u64::MAX)?;
        Ok(())
    }

    /// The run's results: `{"seed", "end_ps", "bin_ps", "n_bins", "frames":
    /// {...}, "engine": {...}, "tables": {TABLE: {COLUMN: (dtype, bytes) or
    /// [str]}}}` with dtype `<u8` (u64), `<f8` (f64) or `|b1` (bool).
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.result()?;
        let d = PyDict::new_bound(py);
        d.set_item("seed", r.seed)?;
        d.set_item("end_ps", r.end_ps)?;
        d.set_item("bin_ps", r.bin_ps)?;
        d.set_item("n_bins", r.n_bins)?;
        let f = &r.frames;
        let frames = PyDict::new_bound(py);
        frames.set_item("generated", f.generated)?;
        frames.set_item("delivered", f.delivered)?;
        frames.set_item("dropped_cp", f.dropped_cp)?;
        frames.set_item("dropped_rp", f.dropped_rp)?;
        frames.set_item("dropped_rl", f.dropped_rl)?;
        frames.set_item("dropped_nic", f.dropped_nic)?;
        frames.set_item("deferred", f.deferred)?;
        frames.set_item("in_flight", f.in_flight)?;
        frames.set_item("delay_sum_ps", f.delay_sum_ps)?;
        frames.set_item("delay_max_ps", f.delay_max_ps)?;
        frames.set_item("reordered", f.reordered)?;
        frames.set_item("note_bytes_measure", f.note_bytes_measure)?;
        let t = &r.transport;
        frames.set_item("acks", t.acks)?;
        frames.set_item("nacks", t.nacks)?;
        frames.set_item("discarded", t.discarded)?;
        frames.set_item("timeouts", t.timeouts)?;
        d.set_item("frames", frames)?;
        let engine = PyDict::new_bound(py);
        engine.set_item("events", r.engine.events)?;
        engine.set_item("wall_s", r.engine.wall_s)?;
        d.set_item("engine", engine)?;
        let tables = PyDict::new_bound(py);
        for (name, cols) in r.tables() {
            let t = PyDict::new_bound(py);
            for (col, values) in cols {
                match values {
                    Column::U64(v) => t.set_item(col, ("<u8", bytes_of(py, v.iter().flat_map(|x| x.to_le_bytes()))))?,
                    Column::F64(v) => t.set_item(col, ("<f8", bytes_of(py, v.iter().flat_map(|x| x.to_le_bytes()))))?,
                    Column::Bool(v) => t.set_item(col, ("|b1", bytes_of(py, v.iter().map(|&x| x as u8))))?,
                    Column::Str(v) => t.set_item(col, PyList::new_bound(py, v))?,
                }
            }
            tables.set_item(name, t)?;
        }
        d.set_item("tables", tables)?;
        Ok(d)
    }

    /// `[(series, key, float64 little-endian bytes)]`, one value per bin.
    fn series<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, String, Bound<'py, PyBytes>)>> {
        let r = self.result()?;
        Ok(r.series
            .iter()
            .map(|s| {
                let bytes: Vec<u8> = s.values.iter().flat_map(|v| v.to_le_bytes()).collect();
                (s.series.clone(), s.key.clone(), PyBytes::new_bound(py, &bytes))
            })
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

fn bytes_of<'py>(py: Python<'py>, it: impl Iterator<Item = u8>) -> Bound<'py, PyBytes> {
    let v: Vec<u8> = it.collect();
    PyBytes::new_bound(py, &v)
}

impl Simulation {
    fn result(&self) -> PyResult<&RunResult> {
        self.result
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the run has not finished; call run() first"))
    }
}

/// The nodes each flow (source, destination) visits in the network of
/// `config_json` for run `seed`: `[[name, ...]]`, empty for a flow that
/// never arrives.
#[pyfunction]
fn paths(py: Python<'_>, config_json: &str, seed: u64, flows: Vec<(String, String)>) -> PyResult<Vec<Vec<String>>> {
    let cfg = SimConfig::from_json(config_json).map_err(|e| PyValueError::new_err(e.0))?;
    py.allow_threads(|| cnsim_core::net::topology::paths(&cfg, seed, &flows))
        .map_err(|e| PyValueError::new_err(e.0))
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
    let cfg = cnsim_core::fluid::FluidConfig::from_json(config_json).map_err(|e| PyValueError::new_err(e.0))?;
    let res = py
        .allow_threads(|| cnsim_core::fluid::integrate(&cfg))
        .map_err(|e| PyValueError::new_err(e.0))?;
    Ok(res.to_json())
}

/// Checks an engine config as the engine would before a run (every value,
/// every cross-parameter rule of its scheme, the topology), without running
/// it: raises ValueError naming the first bad parameter.
#[pyfunction]
fn check_config(py: Python<'_>, config_json: &str) -> PyResult<()> {
    let cfg = SimConfig::from_json(config_json).map_err(|e| PyValueError::new_err(e.0))?;
    py.allow_threads(|| Sim::new(&cfg, 0).map(|_| ()))
        .map_err(|e| PyValueError::new_err(e.0))
}

/// The schemes' parameter declarations (`cnsim_core::scheme::params`) as
/// JSON: every table with its parameters, ranges, rules and help, and every
/// scheme name with its table. `cnsim.schemes` builds its tables from it.
#[pyfunction]
fn scheme_declarations() -> String {
    cnsim_core::scheme::params::declarations().to_string()
}

#[pyfunction]
fn version() -> &'static str {
    cnsim_core::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(paths, m)?)?;
    m.add_function(wrap_pyfunction!(incast_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(fluid_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_declarations, m)?)?;
    Ok(())
}

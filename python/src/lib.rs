//! `rocprof_classify._native`: the library pipeline for Python. Thin glue only: options become
//! a [`Config`], the pipeline runs on its own thread without the GIL (Ctrl-C cancels it), and
//! its outputs cross as the CLI's bytes (the feed, Markdown, HTML) or as an Arrow C stream (the
//! activity table). The Python package (`rocprof_classify/__init__.py`) wraps these.

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict};
use rocprof_classify::analysis::AnalysisOptions;
use rocprof_classify::analysis::StepRange;
use rocprof_classify::classify::RuleSet;
use rocprof_classify::error::RunError;
use rocprof_classify::ingest::Cancel;
use rocprof_classify::model::Format;
use rocprof_classify::recommend::Catalog;
use rocprof_classify::report;
use rocprof_classify::{Config, Run};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

create_exception!(
    rocprof_classify,
    InputError,
    PyValueError,
    "An input could not be read: `.path` names it, `.offset` is the byte offset of the problem \
     (None when there is none), `.line` the line of a CSV input."
);
create_exception!(
    rocprof_classify,
    NothingToAnalyze,
    InputError,
    "The inputs hold no GPU activity (no kernel, copy or fill): the command line exits 3 \
     (`exit_code`); `allow_empty=True` reports them anyway."
);
create_exception!(
    rocprof_classify,
    RulesError,
    PyValueError,
    "A rule directory (`rules=`) could not be loaded or its rules failed their own examples."
);

/// Formats `input_format=` accepts (the CLI's `--input-format`).
const FORCIBLE: [Format; 6] = [
    Format::Kineto,
    Format::RocprofV1,
    Format::RocprofV2Csv,
    Format::RocprofV3Csv,
    Format::RocprofV3Json,
    Format::Rocpd,
];

/// The options every analysis takes, as the Python functions pass them (a dict).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Options {
    rules: Vec<PathBuf>,
    torch_logs: Vec<PathBuf>,
    steps: Option<String>,
    skip_warmup: bool,
    threads: Option<usize>,
    top: usize,
    strict: bool,
    input_format: Option<String>,
    attribution: bool,
    env: Option<PathBuf>,
    dispatch_threshold_us: f64,
    max_gunzip_ratio: Option<u64>,
    iteration_marker: Option<String>,
    phase: Option<String>,
    what_if: Vec<String>,
    flex_density: Option<f64>,
    force: bool,
    allow_empty: bool,
}

/// A step range argument (`"2..10"`), or None.
fn step_range(s: Option<String>) -> PyResult<Option<StepRange>> {
    s.map(|s| {
        s.parse::<StepRange>()
            .map_err(|e| PyValueError::new_err(format!("steps {s:?}: {e}")))
    })
    .transpose()
}

impl Options {
    fn config(&self) -> PyResult<Config> {
        let steps = match &self.steps {
            Some(s) => Some(
                s.parse::<StepRange>()
                    .map_err(|e| PyValueError::new_err(format!("steps={s:?}: {e}")))?,
            ),
            None => None,
        };
        if !(self.dispatch_threshold_us >= 0.0 && self.dispatch_threshold_us.is_finite()) {
            return Err(PyValueError::new_err(
                "dispatch_threshold_us must be a non-negative number",
            ));
        }
        let force_format = match &self.input_format {
            None => None,
            Some(name) => Some(
                FORCIBLE
                    .into_iter()
                    .find(|f| f.as_str() == name)
                    .ok_or_else(|| {
                        let known: Vec<&str> = FORCIBLE.iter().map(|f| f.as_str()).collect();
                        PyValueError::new_err(format!(
                            "input_format={name:?}: not one of {}",
                            known.join(", ")
                        ))
                    })?,
            ),
        };
        let phase = match &self.phase {
            Some(p) => Some(
                p.parse()
                    .map_err(|e: String| PyValueError::new_err(format!("phase={p:?}: {e}")))?,
            ),
            None => None,
        };
        if let Some(d) = self.flex_density {
            if !(d > 0.0 && d <= 1.0) {
                return Err(PyValueError::new_err(format!(
                    "flex_density={d}: the share of blocks the mask keeps, in (0, 1]"
                )));
            }
        }
        if self.threads == Some(0) {
            return Err(PyValueError::new_err("threads must be at least 1"));
        }
        Ok(Config {
            analysis: AnalysisOptions {
                top: self.top,
                steps,
                skip_warmup: self.skip_warmup,
                attribution: self.attribution,
                regions: true,
                dispatch_threshold_ns: (self.dispatch_threshold_us * 1000.0).round() as i64,
                iteration_marker: self.iteration_marker.clone(),
                phase,
                op_series: false,
                what_if: Vec::new(),
                replay_profiled: false,
                flex_density: self.flex_density,
                ..Default::default()
            },
            strict: self.strict,
            force_format,
            max_gunzip_ratio: self.max_gunzip_ratio,
            rule_dirs: self.rules.clone(),
            torch_logs: self.torch_logs.clone(),
            env_file: self.env.clone(),
            what_if: self.what_if.clone(),
            force: self.force,
            allow_empty: self.allow_empty,
            ..Config::default()
        })
    }
}

/// Runs `work` on its own thread, without the GIL, while this thread watches for Ctrl-C: a
/// pending KeyboardInterrupt sets the pipeline's cancellation flag, waits for the work to stop
/// (reading stops at its next block) and is raised. A panic becomes a RuntimeError.
fn without_gil<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    work: impl FnOnce(Cancel) -> Result<T, RunError> + Send,
) -> PyResult<T> {
    // Its own pool for `threads=`: the global one is sized once per process.
    let pool = match threads {
        Some(n) => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| PyRuntimeError::new_err(format!("starting {n} threads: {e}")))?,
        ),
        None => None,
    };
    let cancel = Cancel::default();
    let waiter = std::thread::current();
    let outcome = std::thread::scope(|scope| {
        let flag = cancel.clone();
        let worker = scope.spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(|| match &pool {
                Some(pool) => pool.install(|| work(flag)),
                None => work(flag),
            }));
            waiter.unpark();
            result
        });
        loop {
            py.detach(|| std::thread::park_timeout(Duration::from_millis(50)));
            if worker.is_finished() {
                break;
            }
            if let Err(interrupt) = py.check_signals() {
                cancel.set();
                // The worker stops at its next block; its result no longer matters.
                let _ = py.detach(|| worker.join());
                return Err(interrupt);
            }
        }
        Ok(py.detach(|| worker.join()))
    })?;
    match outcome {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(e))) => Err(run_error(py, e)),
        Ok(Err(panic)) | Err(panic) => Err(PyRuntimeError::new_err(format!(
            "rocprof-classify internal error (a bug; please report it with the input): {}",
            panic_message(&panic)
        ))),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// The Python exception for a pipeline error: InputError (with .path, .offset, .line),
/// RulesError, or KeyboardInterrupt for a cancelled run.
fn run_error(py: Python<'_>, e: RunError) -> PyErr {
    let message = e.to_string();
    let (path, offset, line) = match &e {
        RunError::Ingest(ingest) => (
            Some(ingest.path().to_string()),
            ingest.offset(),
            ingest.line(),
        ),
        RunError::Env { path, .. } => (Some(path.clone()), None, None),
        RunError::Rules(_) => return RulesError::new_err(message),
        RunError::Cancelled => return PyKeyboardInterrupt::new_err(message),
        RunError::WhatIf { .. } => return PyValueError::new_err(message),
        RunError::Partial { path, .. } => (Some(path.clone()), None, None),
        RunError::MixedJob { other, .. } => (Some(other.clone()), None, None),
        RunError::NoGpuWork { paths, .. } => {
            let err = NothingToAnalyze::new_err(message);
            let value = err.value(py);
            let _ = value.setattr("path", paths.clone());
            let _ = value.setattr("offset", None::<u64>);
            let _ = value.setattr("line", None::<u64>);
            return err;
        }
        _ => (None, None, None),
    };
    let err = InputError::new_err(message);
    let value = err.value(py);
    let _ = value.setattr("path", path);
    let _ = value.setattr("offset", offset);
    let _ = value.setattr("line", line);
    err
}

/// One analysis, kept for rendering: the feed, the reports and the activity table.
#[pyclass(frozen, module = "rocprof_classify._native")]
struct NativeRun {
    run: Arc<Run>,
}

#[pymethods]
impl NativeRun {
    /// The JSON feed (FEED.md), byte for byte what `--json -` writes.
    fn feed_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &report::json::render(&self.run))
    }

    /// The Markdown summary (`--markdown`).
    fn markdown(&self) -> String {
        report::markdown::render(&self.run)
    }

    /// The self-contained HTML report (`--html`).
    fn html(&self) -> String {
        report::html::render(&self.run)
    }

    /// The terminal table, without color, `width` columns wide.
    fn table(&self, width: u16) -> String {
        let opts = report::text::TableOptions {
            color: false,
            width,
        };
        String::from_utf8_lossy(&report::text::render(&self.run, &opts)).into_owned()
    }

    /// The report's one-line headline (what the HTML and Markdown open with), plain text.
    fn headline(&self) -> String {
        report::Sections::of(&self.run).headline().replace("**", "")
    }

    /// Writes the classified activity table as a Parquet dataset partitioned by rank
    /// (`--export-parquet-dir`); returns each file written and its row count.
    fn write_dataset(&self, py: Python<'_>, dir: PathBuf) -> PyResult<Vec<(String, usize)>> {
        let run = Arc::clone(&self.run);
        let files = py
            .detach(move || report::write_dataset(&run, &dir))
            .map_err(|e| PyRuntimeError::new_err(format!("writing the dataset: {e}")))?;
        Ok(files
            .into_iter()
            .map(|(path, rows)| (path.display().to_string(), rows))
            .collect())
    }

    /// The classified activity table as an Arrow C stream (PyCapsule protocol).
    fn activities(&self) -> PyResult<ArrowStream> {
        let stream = report::arrow_stream(Arc::clone(&self.run))
            .map_err(|e| PyRuntimeError::new_err(format!("building the activity table: {e}")))?;
        Ok(ArrowStream {
            stream: std::sync::Mutex::new(Some(stream)),
        })
    }
}

/// An Arrow C stream, handed out once through the Arrow PyCapsule protocol
/// (`pyarrow.table(stream)`, `polars.DataFrame(stream)`).
#[pyclass(frozen, module = "rocprof_classify._native")]
struct ArrowStream {
    stream: std::sync::Mutex<Option<report::ArrowArrayStream>>,
}

#[pymethods]
impl ArrowStream {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the table has one schema; consumers cast if they must
        let stream = self
            .stream
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the stream's lock is poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this Arrow stream was consumed already"))?;
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

/// Reads `paths` and analyzes them (`rocprof-classify PATH…`).
#[pyfunction]
fn run(py: Python<'_>, paths: Vec<PathBuf>, options: Options) -> PyResult<NativeRun> {
    let config = options.config()?;
    let run = without_gil(py, options.threads, |cancel| {
        rocprof_classify::run(
            &paths,
            &Config {
                cancel: Some(cancel),
                ..config
            },
        )
    })?;
    Ok(NativeRun { run: Arc::new(run) })
}

/// One rank's partial result (`rocprof-classify partial`), as its JSON bytes.
#[pyfunction]
#[pyo3(signature = (paths, options, rank=None))]
fn partial<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    options: Options,
    rank: Option<u32>,
) -> PyResult<Bound<'py, PyBytes>> {
    let config = options.config()?;
    let bytes = without_gil(py, options.threads, |cancel| {
        let config = Config {
            cancel: Some(cancel),
            ..config
        };
        Ok(rocprof_classify::pipeline::partial(&paths, &config, rank)?.to_json())
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// The job from its ranks' partials, `(name, JSON bytes)` each (`rocprof-classify merge`).
#[pyfunction]
fn merge(
    py: Python<'_>,
    partials: Vec<(String, Vec<u8>)>,
    options: Options,
) -> PyResult<NativeRun> {
    let config = options.config()?;
    let run = without_gil(py, options.threads, |_| {
        rocprof_classify::pipeline::merge(&partials, &config)
    })?;
    Ok(NativeRun { run: Arc::new(run) })
}

/// The before/after comparison of two runs as the JSON of `rocprof-classify diff --json -`,
/// with its Markdown and HTML.
#[pyfunction]
#[pyo3(signature = (base, new, options, base_steps=None, new_steps=None, applied=Vec::new()))]
fn diff<'py>(
    py: Python<'py>,
    base: PathBuf,
    new: PathBuf,
    options: Options,
    base_steps: Option<String>,
    new_steps: Option<String>,
    applied: Vec<String>,
) -> PyResult<(Bound<'py, PyBytes>, String, String)> {
    let config = Config {
        applied,
        ..options.config()?
    };
    let (base_steps, new_steps) = (step_range(base_steps)?, step_range(new_steps)?);
    let rendered = without_gil(py, options.threads, |cancel| {
        let config = Config {
            cancel: Some(cancel),
            ..config
        };
        let steps = (base_steps, new_steps);
        let d = rocprof_classify::pipeline::diff((&base, &new), &config, steps, |_, path, c| {
            rocprof_classify::run(&[path.to_path_buf()], &c)
        })?;
        Ok((
            report::diff::json(&d),
            report::diff::markdown(&d),
            report::diff::html::render(&d),
        ))
    })?;
    Ok((PyBytes::new(py, &rendered.0), rendered.1, rendered.2))
}

fn load_rules(dirs: &[PathBuf]) -> PyResult<RuleSet> {
    RuleSet::load(dirs).map_err(|e| RulesError::new_err(format!("loading the rules: {e}")))
}

/// Why a kernel name lands where it does: the normalized name and every matching rule,
/// winner first.
#[pyfunction]
#[pyo3(signature = (name, rules=Vec::new()))]
fn explain_rule<'py>(
    py: Python<'py>,
    name: &str,
    rules: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let set = load_rules(&rules)?;
    let ex = set.explain(name);
    let class = set.classify(name);
    let out = PyDict::new(py);
    out.set_item("name", name)?;
    out.set_item("normalized", &ex.normalized)?;
    out.set_item("bucket", class.bucket.as_str())?;
    out.set_item("family", class.family)?;
    out.set_item("library", class.library)?;
    let matched = ex
        .matched
        .iter()
        .map(|&i| rule_dict(py, &set, i))
        .collect::<PyResult<Vec<_>>>()?;
    out.set_item("rule", matched.first())?;
    out.set_item("matches", matched)?;
    out.set_item("text", report::explain::rule_explanation(&set, name))?;
    Ok(out)
}

fn rule_dict<'py>(py: Python<'py>, set: &RuleSet, i: usize) -> PyResult<Bound<'py, PyDict>> {
    let r = &set.rules[i];
    let d = PyDict::new(py);
    d.set_item("id", &r.def.id)?;
    d.set_item("bucket", r.def.bucket.as_str())?;
    d.set_item("family", &r.def.family)?;
    d.set_item("library", r.def.library.as_deref())?;
    d.set_item("priority", r.def.priority)?;
    d.set_item("file", r.file.display().to_string())?;
    Ok(d)
}

/// Every rule (built-in, then `rules` directories), in the order they are tried.
#[pyfunction]
#[pyo3(signature = (rules=Vec::new()))]
fn list_rules<'py>(py: Python<'py>, rules: Vec<PathBuf>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let set = load_rules(&rules)?;
    (0..set.rules.len())
        .map(|i| rule_dict(py, &set, i))
        .collect()
}

/// A name's class as Python sees it: (bucket, family, library, rule id or None).
type ClassTuple = (String, String, String, Option<String>);

/// The class of each kernel name.
#[pyfunction]
#[pyo3(signature = (names, rules=Vec::new()))]
fn classify_names(names: Vec<String>, rules: Vec<PathBuf>) -> PyResult<Vec<ClassTuple>> {
    let set = load_rules(&rules)?;
    Ok(names
        .iter()
        .map(|n| {
            let c = set.classify(n);
            (
                c.bucket.as_str().to_string(),
                c.family.to_string(),
                c.library.to_string(),
                c.rule.map(|i| set.rules[i].def.id.clone()),
            )
        })
        .collect())
}

/// What a finding or recommendation id means (`rocprof-classify explain ID`).
#[pyfunction]
#[pyo3(signature = (id, rules=Vec::new()))]
fn explain_id(id: &str, rules: Vec<PathBuf>) -> PyResult<String> {
    let catalog = Catalog::load(&rules)
        .map_err(|e| RulesError::new_err(format!("loading the ladder catalog: {e}")))?;
    report::explain::explain_id(&catalog, id).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown id {id:?}; known ids: {}",
            report::explain::known_ids(&catalog).join(", ")
        ))
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // Each exception's `exit_code`: what the command line exits with for the same error.
    use rocprof_classify::error::{EXIT_ERROR, EXIT_GATE, EXIT_NOTHING, EXIT_OK};
    py.get_type::<InputError>()
        .setattr("exit_code", EXIT_ERROR)?;
    py.get_type::<RulesError>()
        .setattr("exit_code", EXIT_ERROR)?;
    py.get_type::<NothingToAnalyze>()
        .setattr("exit_code", EXIT_NOTHING)?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("NothingToAnalyze", py.get_type::<NothingToAnalyze>())?;
    m.add("RulesError", py.get_type::<RulesError>())?;
    m.add("EXIT_OK", EXIT_OK)?;
    m.add("EXIT_GATE", EXIT_GATE)?;
    m.add("EXIT_ERROR", EXIT_ERROR)?;
    m.add("EXIT_NOTHING", EXIT_NOTHING)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FEED_SCHEMA", report::json::FEED_SCHEMA)?;
    m.add_class::<NativeRun>()?;
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(partial, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(explain_rule, m)?)?;
    m.add_function(wrap_pyfunction!(list_rules, m)?)?;
    m.add_function(wrap_pyfunction!(classify_names, m)?)?;
    m.add_function(wrap_pyfunction!(explain_id, m)?)?;
    Ok(())
}

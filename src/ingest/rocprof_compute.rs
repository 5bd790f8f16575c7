//! rocprof-compute (omniperf) workload directories (`reference/formats.md` §4): `sysinfo.csv`
//! (the GPU), `timestamps.csv` (dispatch times, omniperf ≤ 2.x), `pmc_perf.csv[.gz]` (counters,
//! wide with `[n]` channel columns and `_1` duplicates, or long with `Counter_Name`/`Counter_Value`)
//! and `roofline.csv` (measured peaks).
//!
//! Raw counters become the physical quantities rocprof-compute's own analysis derives (its
//! speed-of-light formulas): FLOPs per pipe, HBM and L2 bytes, and the kernel's resources.

use super::rocprof_csv::read_csv;
use super::rocprof_csv::rows::{agent_number, new_input, ns, CsvKind, InputState};
use super::ReadOptions;
use crate::error::IngestError;
use crate::model::{
    Activity, ActivityKind, DeviceSpec, DispatchCounters, Format, KernelResources, PeakSource,
    Pipe, PipeOps, Trace,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The files of a rocprof-compute (omniperf) workload directory: `sysinfo.csv` plus
/// `timestamps.csv` or `pmc_perf.csv[.gz]`.
pub struct Workload {
    pub sysinfo: PathBuf,
    pub timestamps: Option<PathBuf>,
    pub pmc_perf: Option<PathBuf>,
    pub roofline: Option<PathBuf>,
}

pub fn rocprof_compute_dir(dir: &Path) -> Option<Workload> {
    let sysinfo = dir.join("sysinfo.csv");
    if !sysinfo.is_file() {
        return None;
    }
    let pmc_perf = ["pmc_perf.csv", "pmc_perf.csv.gz"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file());
    let timestamps = Some(dir.join("timestamps.csv")).filter(|p| p.is_file());
    let roofline = Some(dir.join("roofline.csv")).filter(|p| p.is_file());
    (pmc_perf.is_some() || timestamps.is_some()).then_some(Workload {
        sysinfo,
        timestamps,
        pmc_perf,
        roofline,
    })
}

/// Reads a rocprof-compute workload as one input: dispatches from `timestamps.csv` when present,
/// else from `pmc_perf.csv`'s dispatch columns; counters from `pmc_perf.csv`; the GPU from
/// `sysinfo.csv`, with peaks from `roofline.csv` when it was measured.
pub fn read_rocprof_compute_dir(
    dir: &Path,
    w: &Workload,
    trace: &mut Trace,
    opts: &ReadOptions,
) -> Result<(), IngestError> {
    let label = dir.display().to_string();
    let input = new_input(trace, &label, Format::RocprofCompute);
    let mut state = InputState::default();
    if let Some(ts) = &w.timestamps {
        let src = super::open(ts)?;
        read_csv(
            src.into_reader(),
            &ts.display().to_string(),
            CsvKind::V2Timestamps,
            input,
            trace,
            &mut state,
            opts,
        )?;
    }
    let spec = device_spec(&w.sysinfo, w.roofline.as_deref(), &mut state.warnings);
    let arch = spec.as_ref().map_or("", |s| s.arch.as_str());
    if let Some(pmc) = &w.pmc_perf {
        read_pmc_perf(pmc, input, trace, &mut state, w.timestamps.is_none(), arch)?;
    }
    state.finish(trace, input);
    let meta = &mut trace.inputs[input as usize];
    for d in &mut meta.devices {
        d.name = spec
            .as_ref()
            .map_or_else(String::new, |s| match s.arch.is_empty() {
                true => s.model.clone(),
                false => format!("{} ({})", s.model, s.arch),
            });
    }
    meta.hardware = spec;
    Ok(())
}

/// A CSV's first data row as name → value, trimmed (`sysinfo.csv`, `roofline.csv`).
fn first_row(path: &Path) -> HashMap<String, String> {
    let Ok(mut rdr) = csv::ReaderBuilder::new().flexible(true).from_path(path) else {
        return HashMap::new();
    };
    let headers: Vec<String> = rdr
        .headers()
        .map(|h| h.iter().map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    let Some(Ok(row)) = rdr.records().next() else {
        return HashMap::new();
    };
    headers
        .into_iter()
        .zip(row.iter().map(|v| v.trim().to_string()))
        .collect()
}

/// Matrix-core FLOPs per CU per clock, by architecture (CDNA1-4 ISA documents; these reproduce
/// the published peaks, e.g. MI300X bf16 2100 MHz × 304 CU × 2048 = 1307 TFLOP/s).
fn mfma_flops_per_cu_clock(arch: &str, pipe: Pipe) -> f64 {
    let family = arch.get(..6).unwrap_or(arch);
    match (family, pipe) {
        ("gfx908", Pipe::MfmaF16 | Pipe::MfmaI8) => 1024.0,
        ("gfx908", Pipe::MfmaBf16) => 512.0,
        ("gfx908", Pipe::MfmaF32) => 256.0,
        ("gfx90a", Pipe::MfmaF16 | Pipe::MfmaBf16 | Pipe::MfmaI8) => 1024.0,
        ("gfx90a", Pipe::MfmaF32 | Pipe::MfmaF64) => 256.0,
        ("gfx940" | "gfx941" | "gfx942", Pipe::MfmaF16 | Pipe::MfmaBf16) => 2048.0,
        ("gfx940" | "gfx941" | "gfx942", Pipe::MfmaF8 | Pipe::MfmaI8) => 4096.0,
        ("gfx940" | "gfx941" | "gfx942", Pipe::MfmaF32 | Pipe::MfmaF64) => 256.0,
        ("gfx950", Pipe::MfmaF16 | Pipe::MfmaBf16) => 4096.0,
        ("gfx950", Pipe::MfmaF8 | Pipe::MfmaI8) => 8192.0,
        ("gfx950", Pipe::MfmaF32) => 256.0,
        ("gfx950", Pipe::MfmaF64) => 128.0,
        // Vector ALU: 64 lanes × FMA (2), doubled where packed math runs two per lane.
        ("gfx908", Pipe::ValuF32 | Pipe::ValuF16) => 128.0,
        ("gfx908", Pipe::ValuF64) => 64.0,
        (_, Pipe::ValuF32 | Pipe::ValuF16) => 256.0,
        (_, Pipe::ValuF64) => 128.0,
        _ => 0.0,
    }
}

/// The GPU from `sysinfo.csv`; peaks from `roofline.csv` when present (measured), else computed
/// from the clocks (theoretical). Unknown peaks stay `None`, with a warning.
fn device_spec(
    sysinfo: &Path,
    roofline: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Option<DeviceSpec> {
    let row = first_row(sysinfo);
    if row.is_empty() {
        warnings.push(format!("{}: no GPU description", sysinfo.display()));
        return None;
    }
    let num = |k: &str| {
        row.get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let int = |k: &str, default: u32| num(k).map_or(default, |v| v as u32);
    let arch = row.get("gpu_arch").cloned().unwrap_or_default();
    let mut spec = DeviceSpec {
        model: row.get("gpu_model").cloned().unwrap_or_default(),
        lds_bytes_per_cu: if arch.starts_with("gfx950") {
            160 * 1024
        } else {
            64 * 1024
        },
        arch,
        cu_count: int("cu_per_gpu", 0),
        simd_per_cu: int("simd_per_cu", 4),
        max_waves_per_cu: int("max_waves_per_cu", 32),
        wave_size: int("wave_size", 64),
        num_xcd: int("num_xcd", 1),
        peak_gflops: [None; 9],
        peak_hbm_gbps: None,
        peak_l2_gbps: None,
        peak_source: None,
    };
    if let Some(rf) = roofline.and_then(read_roofline) {
        let col = |k: &str| rf.get(k).copied().filter(|v| *v > 0.0);
        for (pipe, key) in [
            (Pipe::ValuF16, "FP16Flops"),
            (Pipe::ValuF32, "FP32Flops"),
            (Pipe::ValuF64, "FP64Flops"),
            (Pipe::MfmaF8, "MFMAF8Flops"),
            (Pipe::MfmaF16, "MFMAF16Flops"),
            (Pipe::MfmaBf16, "MFMABF16Flops"),
            (Pipe::MfmaF32, "MFMAF32Flops"),
            (Pipe::MfmaF64, "MFMAF64Flops"),
            (Pipe::MfmaI8, "MFMAI8Ops"),
        ] {
            spec.peak_gflops[pipe.index()] = col(key);
        }
        spec.peak_hbm_gbps = col("HBMBw");
        spec.peak_l2_gbps = col("L2Bw");
        spec.peak_source = Some(PeakSource::Roofline);
    } else if let Some(sclk) = num("max_sclk") {
        let cu = spec.cu_count as f64;
        for pipe in Pipe::ALL {
            let per_clock = mfma_flops_per_cu_clock(&spec.arch, pipe);
            spec.peak_gflops[pipe.index()] = (per_clock > 0.0).then(|| sclk * cu * per_clock / 1e3);
        }
        // v2 sysinfo states the HBM bandwidth; v3 gives memory clock and channels.
        spec.peak_hbm_gbps = num("hbm_bw")
            .or_else(|| Some(num("max_mclk")? / 1e3 * 32.0 * num("num_hbm_channels")?));
        let l2_line = if spec.arch.starts_with("gfx908") {
            64.0
        } else {
            128.0
        };
        spec.peak_l2_gbps = num("total_l2_chan").map(|ch| sclk * ch * l2_line / 1e3);
        spec.peak_source = Some(PeakSource::Sysinfo);
        if spec.peak_hbm_gbps.is_none() {
            warnings.push(format!(
                "{}: no memory clock (max_mclk) or hbm_bw: the HBM peak is unknown",
                sysinfo.display()
            ));
        }
    } else {
        warnings.push(format!(
            "{}: no clock speed (max_sclk) and no roofline.csv: fractions of peak are unknown",
            sysinfo.display()
        ));
    }
    Some(spec)
}

/// `roofline.csv`'s row for device 0 (peaks in GB/s and GFLOP/s).
fn read_roofline(path: &Path) -> Option<HashMap<String, f64>> {
    let row: HashMap<String, f64> = first_row(path)
        .into_iter()
        .filter_map(|(h, v)| Some((h, v.parse::<f64>().ok()?)))
        .collect();
    (!row.is_empty()).then_some(row)
}

/// The counters the derived metrics need. Names are matched exactly, so the per-channel
/// `TCC_EA0_RDREQ[3]` and duplicate `SQ_WAVES_1` columns are ignored.
const COUNTERS: &[&str] = &[
    "SQ_INSTS_VALU_ADD_F16",
    "SQ_INSTS_VALU_MUL_F16",
    "SQ_INSTS_VALU_TRANS_F16",
    "SQ_INSTS_VALU_FMA_F16",
    "SQ_INSTS_VALU_ADD_F32",
    "SQ_INSTS_VALU_MUL_F32",
    "SQ_INSTS_VALU_TRANS_F32",
    "SQ_INSTS_VALU_FMA_F32",
    "SQ_INSTS_VALU_ADD_F64",
    "SQ_INSTS_VALU_MUL_F64",
    "SQ_INSTS_VALU_TRANS_F64",
    "SQ_INSTS_VALU_FMA_F64",
    "SQ_INSTS_VALU_MFMA_MOPS_F8",
    "SQ_INSTS_VALU_MFMA_MOPS_F16",
    "SQ_INSTS_VALU_MFMA_MOPS_BF16",
    "SQ_INSTS_VALU_MFMA_MOPS_F32",
    "SQ_INSTS_VALU_MFMA_MOPS_F64",
    "SQ_INSTS_VALU_MFMA_MOPS_I8",
    // HBM traffic: the TCC→EA requests (`TCC_EA_*` before MI300, `TCC_EA0_*` from MI300).
    "TCC_EA_RDREQ_sum",
    "TCC_EA_RDREQ_32B_sum",
    "TCC_EA_WRREQ_sum",
    "TCC_EA_WRREQ_64B_sum",
    "TCC_EA0_RDREQ_sum",
    "TCC_EA0_RDREQ_32B_sum",
    "TCC_EA0_WRREQ_sum",
    "TCC_EA0_WRREQ_64B_sum",
    "TCC_BUBBLE_sum",
    "TCC_REQ_sum",
];

/// Derives a dispatch's FLOPs and bytes from its counters (rocprof-compute's formulas).
fn derive(
    c: &HashMap<&'static str, f64>,
    arch: &str,
) -> (Option<PipeOps>, Option<(f64, f64)>, Option<f64>) {
    let get = |k: &str| c.get(k).copied().unwrap_or(0.0);
    let has = |k: &str| c.contains_key(k);
    let ops = (has("SQ_INSTS_VALU_FMA_F32") || has("SQ_INSTS_VALU_MFMA_MOPS_F16")).then(|| {
        let mut ops: PipeOps = [0.0; 9];
        for (pipe, p) in [
            (Pipe::ValuF16, "F16"),
            (Pipe::ValuF32, "F32"),
            (Pipe::ValuF64, "F64"),
        ] {
            // 64 lanes per VALU instruction; an FMA is two operations.
            ops[pipe.index()] = 64.0
                * (get(&format!("SQ_INSTS_VALU_ADD_{p}"))
                    + get(&format!("SQ_INSTS_VALU_MUL_{p}"))
                    + get(&format!("SQ_INSTS_VALU_TRANS_{p}"))
                    + 2.0 * get(&format!("SQ_INSTS_VALU_FMA_{p}")));
        }
        for (pipe, p) in [
            (Pipe::MfmaF8, "F8"),
            (Pipe::MfmaF16, "F16"),
            (Pipe::MfmaBf16, "BF16"),
            (Pipe::MfmaF32, "F32"),
            (Pipe::MfmaF64, "F64"),
            (Pipe::MfmaI8, "I8"),
        ] {
            // One MOPS unit is 512 operations.
            ops[pipe.index()] = 512.0 * get(&format!("SQ_INSTS_VALU_MFMA_MOPS_{p}"));
        }
        ops
    });
    let ea = if has("TCC_EA0_RDREQ_sum") {
        "TCC_EA0"
    } else {
        "TCC_EA"
    };
    let hbm = has(&format!("{ea}_RDREQ_sum")).then(|| {
        let (rd, rd32) = (
            get(&format!("{ea}_RDREQ_sum")),
            get(&format!("{ea}_RDREQ_32B_sum")),
        );
        // MI300 counts 128-byte reads as TCC_BUBBLE; the rest are 64 or 32 bytes.
        let rd128 = get("TCC_BUBBLE_sum");
        let read = 128.0 * rd128 + 64.0 * (rd - rd128 - rd32).max(0.0) + 32.0 * rd32;
        let (wr, wr64) = (
            get(&format!("{ea}_WRREQ_sum")),
            get(&format!("{ea}_WRREQ_64B_sum")),
        );
        let write = 64.0 * wr64 + 32.0 * (wr - wr64).max(0.0);
        (read, write)
    });
    let line = if arch.starts_with("gfx908") {
        64.0
    } else {
        128.0
    };
    let l2 = has("TCC_REQ_sum").then(|| line * get("TCC_REQ_sum"));
    (ops, hbm, l2)
}

/// The columns of `pmc_perf.csv` the analysis reads, parsed by polars with projection: a wide
/// file has up to 2,700 counter columns, of which a few dozen matter. Values stay strings here
/// (times like `8.1097E+14` are parsed by [`ns`]); polars types do not leave this function.
struct PmcColumns {
    /// Header names of the projected columns, in projection order.
    headers: Vec<String>,
    columns: Vec<Vec<Option<String>>>,
    rows: usize,
    /// The file ended mid-row: the partial row was dropped.
    truncated: bool,
}

fn load_pmc_columns(path: &Path, label: &str) -> Result<PmcColumns, IngestError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    super::open(path)?
        .into_reader()
        .read_to_end(&mut bytes)
        .map_err(|e| IngestError::Csv {
            path: label.into(),
            line: 0,
            message: format!("read error: {e}"),
        })?;
    if bytes.starts_with("\u{feff}".as_bytes()) {
        bytes.drain(..3);
    }
    // A file cut mid-row (a profiler that died while writing) keeps its complete rows.
    let truncated = !bytes.is_empty() && !bytes.ends_with(b"\n");
    if truncated {
        let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(keep);
    }
    let all: Vec<String> = csv::ReaderBuilder::new()
        .from_reader(&bytes[..])
        .headers()
        .map_err(|e| IngestError::Csv {
            path: label.into(),
            line: 1,
            message: e.to_string(),
        })?
        .iter()
        .map(str::to_string)
        .collect();
    let wanted = wanted_columns(&all);
    let (headers, columns, rows) = project(bytes, &all, &wanted, label)?;
    Ok(PmcColumns {
        headers,
        columns,
        rows,
        truncated,
    })
}

type Projected = (Vec<String>, Vec<Vec<Option<String>>>, usize);

/// The `wanted` columns of a CSV as text, through polars' projecting reader.
#[cfg(feature = "polars")]
fn project(
    bytes: Vec<u8>,
    _header: &[String],
    wanted: &[String],
    label: &str,
) -> Result<Projected, IngestError> {
    use polars::prelude::{CsvReadOptions, DataType, PlSmallStr, SerReader};
    let names: std::sync::Arc<[PlSmallStr]> = wanted
        .iter()
        .map(|h| PlSmallStr::from(h.as_str()))
        .collect();
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_columns(Some(names))
        // Every column as text: the readers own number parsing (exponent times, empty cells).
        .with_infer_schema_length(Some(0))
        .with_n_threads(Some(1))
        .into_reader_with_file_handle(std::io::Cursor::new(bytes))
        .finish()
        .map_err(|e| IngestError::Csv {
            path: label.into(),
            line: 0,
            message: format!("unreadable counter table: {e}"),
        })?;
    let mut headers = Vec::new();
    let mut columns = Vec::new();
    for c in df.columns() {
        let text = c.cast(&DataType::String).map_err(|e| IngestError::Csv {
            path: label.into(),
            line: 0,
            message: e.to_string(),
        })?;
        let values = text.str().map_err(|e| IngestError::Csv {
            path: label.into(),
            line: 0,
            message: e.to_string(),
        })?;
        headers.push(c.name().to_string());
        columns.push(
            (0..values.len())
                .map(|i| values.get(i).map(str::to_string))
                .collect(),
        );
    }
    Ok((headers, columns, df.height()))
}

/// The `wanted` columns of a CSV as text, through the csv crate (builds without polars).
#[cfg(not(feature = "polars"))]
fn project(
    bytes: Vec<u8>,
    header: &[String],
    wanted: &[String],
    label: &str,
) -> Result<Projected, IngestError> {
    // Flexible like polars' reader: a short row reads as missing values.
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(&bytes[..]);
    let at: Vec<usize> = wanted
        .iter()
        .filter_map(|w| header.iter().position(|h| h == w))
        .collect();
    let mut columns = vec![Vec::new(); at.len()];
    let mut rows = 0;
    for record in reader.records() {
        let record = record.map_err(|e| IngestError::Csv {
            path: label.into(),
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        })?;
        for (c, &i) in at.iter().enumerate() {
            columns[c].push(record.get(i).filter(|v| !v.is_empty()).map(str::to_string));
        }
        rows += 1;
    }
    Ok((
        at.iter().map(|&i| header[i].to_string()).collect(),
        columns,
        rows,
    ))
}

/// The columns of a `pmc_perf.csv` header the analysis reads, in header order, each once.
pub fn wanted_columns(header: &[String]) -> Vec<String> {
    let mut wanted: Vec<String> = Vec::new();
    for h in header {
        if (PMC_COLUMNS.contains(&h.as_str()) || COUNTERS.contains(&h.as_str()))
            && !wanted.contains(h)
        {
            wanted.push(h.clone());
        }
    }
    wanted
}

/// Dispatch and resource columns of `pmc_perf.csv` besides the counters.
const PMC_COLUMNS: &[&str] = &[
    "Kernel_Name",
    "Start_Timestamp",
    "End_Timestamp",
    "Dispatch_ID",
    "GPU_ID",
    "Counter_Name",
    "Counter_Value",
    "Grid_Size",
    "Workgroup_Size",
    "Wave_Size",
    "wave_size",
    "Arch_VGPR",
    "Accum_VGPR",
    "LDS_Per_Workgroup",
];

/// Reads `pmc_perf.csv` (wide: a row per dispatch; long: a row per counter per dispatch): the
/// counters of every dispatch, and the dispatches themselves when `with_dispatches`.
fn read_pmc_perf(
    path: &Path,
    input: u32,
    trace: &mut Trace,
    state: &mut InputState,
    with_dispatches: bool,
    arch: &str,
) -> Result<(), IngestError> {
    let label = path.display().to_string();
    let table = load_pmc_columns(path, &label)?;
    if table.truncated {
        state.truncated = true;
        state.warnings.push(format!(
            "{label}: truncated at line {}: the complete rows are analyzed",
            table.rows + 2
        ));
    }
    let headers = &table.headers;
    let col = |n: &str| headers.iter().position(|h| h == n);
    let need = |n: &str| {
        col(n).ok_or_else(|| IngestError::Csv {
            path: label.clone(),
            line: 1,
            message: format!("missing required column '{n}'"),
        })
    };
    let (c_name, c_start, c_end) = (
        need("Kernel_Name")?,
        need("Start_Timestamp")?,
        need("End_Timestamp")?,
    );
    let (c_id, c_gpu) = (col("Dispatch_ID"), col("GPU_ID"));
    // Long format: one counter per row.
    let long = col("Counter_Name").zip(col("Counter_Value"));
    let wide: Vec<(&'static str, usize)> = COUNTERS
        .iter()
        .filter_map(|&k| Some((k, col(k)?)))
        .collect();
    let resource_cols = [
        col("Grid_Size"),
        col("Workgroup_Size"),
        col("Wave_Size").or_else(|| col("wave_size")),
        col("Arch_VGPR"),
        col("Accum_VGPR"),
        col("LDS_Per_Workgroup"),
    ];
    // Dispatch key → index into `found` (first-seen order keeps the output deterministic).
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut found: Vec<(DispatchCounters, HashMap<&'static str, f64>)> = Vec::new();
    for row in 0..table.rows {
        // Header is line 1; quoted fields never hold newlines in these files.
        let line = (row + 2) as u64;
        let field = |c: usize| table.columns[c][row].as_deref().unwrap_or("").trim();
        let key = (
            c_gpu.map_or("", field).to_string(),
            c_id.map_or_else(|| line.to_string(), |c| field(c).to_string()),
        );
        let slot = match index.get(&key) {
            Some(&i) => i,
            None => {
                let time = |c: usize| {
                    ns(field(c)).ok_or_else(|| IngestError::Csv {
                        path: label.clone(),
                        line,
                        message: format!("column '{}': not a time: '{}'", headers[c], field(c)),
                    })
                };
                let (start, end) = (time(c_start)?, time(c_end)?);
                let device = c_gpu.and_then(|c| agent_number(field(c))).unwrap_or(0);
                let name = trace.names.intern(field(c_name));
                if with_dispatches {
                    state.devices.insert(device);
                    trace.activities.push(Activity {
                        kind: ActivityKind::Kernel,
                        name,
                        input,
                        device,
                        stream: 0,
                        ts_ns: start,
                        dur_ns: end.saturating_sub(start).max(0),
                        correlation: 0,
                        external_id: 0,
                        workgroups: 0,
                        comm: crate::model::NameId::NONE,
                    });
                }
                let n = |i: usize| {
                    resource_cols[i]
                        .and_then(|c| field(c).parse::<f64>().ok())
                        .filter(|v| v.is_finite() && *v >= 0.0)
                        .unwrap_or(0.0)
                };
                let resources = KernelResources {
                    grid_size: n(0) as u64,
                    workgroup_size: n(1) as u32,
                    wave_size: match n(2) as u32 {
                        0 => 64,
                        w => w,
                    },
                    arch_vgpr: n(3) as u32,
                    accum_vgpr: n(4) as u32,
                    lds_per_workgroup: n(5) as u32,
                };
                found.push((
                    DispatchCounters {
                        input,
                        name,
                        dur_ns: end.saturating_sub(start).max(0),
                        resources,
                        ..Default::default()
                    },
                    HashMap::new(),
                ));
                index.insert(key, found.len() - 1);
                found.len() - 1
            }
        };
        let values = &mut found[slot].1;
        let value = |c: usize| field(c).parse::<f64>().ok().filter(|v| v.is_finite());
        match long {
            Some((c_counter, c_value)) => {
                if let Some(&k) = COUNTERS.iter().find(|&&k| k == field(c_counter)) {
                    if let Some(v) = value(c_value) {
                        values.insert(k, v);
                    }
                }
            }
            None => {
                for &(k, c) in &wide {
                    if let Some(v) = value(c) {
                        values.insert(k, v);
                    }
                }
            }
        }
    }
    let timeless = found.iter().filter(|(d, _)| d.dur_ns == 0).count();
    if timeless > 0 {
        state.warnings.push(format!(
            "{label}: {timeless} of {} counter dispatches have no duration (timestamps rounded, e.g. 8.1097E+14): their rates are unknown",
            found.len()
        ));
    }
    for (mut d, values) in found {
        (d.ops, d.hbm_bytes, d.l2_bytes) = derive(&values, arch);
        trace.counters.push(d);
    }
    Ok(())
}

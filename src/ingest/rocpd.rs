//! rocpd SQLite databases, rocprofv3's default output since ROCm 7.0 (`reference/formats.md`
//! §4.3): read through the published schema's views (`kernels`, `memory_copies`, `regions`),
//! which join the uuid-suffixed tables.

use super::{ReadOptions, Reader, Source};
use crate::error::IngestError;
use crate::model::{
    Activity, ActivityKind, Device, Format, HostEvent, HostKind, InputMeta, NameId, Trace, Vendor,
};
use rusqlite::{Connection, OpenFlags};
use std::collections::{BTreeMap, HashMap};

pub struct RocpdReader;

impl Reader for RocpdReader {
    fn format(&self) -> Format {
        Format::Rocpd
    }
    fn looks_for(&self) -> &'static str {
        "an SQLite file with rocpd's `kernels` view"
    }
    fn sniff(&self, head: &[u8]) -> Option<bool> {
        Some(head.starts_with(b"SQLite format 3\0"))
    }
    fn read(&self, src: Source, trace: &mut Trace, _opts: &ReadOptions) -> Result<(), IngestError> {
        let label = src.label.clone();
        let Some(path) = src.path.clone() else {
            return Err(IngestError::Database {
                path: label,
                message: "a rocpd database must be a file (SQLite cannot read a stream)".into(),
            });
        };
        let db = |e: rusqlite::Error| IngestError::Database {
            path: label.clone(),
            message: e.to_string(),
        };
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(db)?;
        let has_view = |name: &str| -> bool {
            conn.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = ?1",
                [name],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .unwrap_or(false)
        };
        if !has_view("kernels") {
            return Err(IngestError::Database {
                path: label,
                message: "an SQLite database without rocpd's `kernels` view: not a rocpd profile"
                    .into(),
            });
        }
        let input = trace.inputs.len() as u32;
        let mut devices: BTreeMap<u32, String> = BTreeMap::new();
        let mut streams: HashMap<String, u32> = HashMap::new();
        let mut stream_of = |s: String| {
            let n = streams.len() as u32;
            *streams.entry(s).or_insert(n)
        };
        {
            let mut q = conn
                .prepare("SELECT name, start, end, agent_log_index, coalesce(stream, ''), coalesce(queue, ''), coalesce(corr_id, 0) FROM kernels ORDER BY start, id")
                .map_err(db)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, i64>(6)?,
                    ))
                })
                .map_err(db)?;
            for row in rows {
                let (name, start, end, agent, stream, queue, corr) = row.map_err(db)?;
                let device = agent.max(0) as u32;
                devices.entry(device).or_default();
                let name = trace.names.intern(&name);
                let stream = stream_of(if stream.is_empty() { queue } else { stream });
                trace.activities.push(Activity {
                    kind: ActivityKind::Kernel,
                    name,
                    input,
                    device,
                    stream,
                    ts_ns: start,
                    dur_ns: end.saturating_sub(start).max(0),
                    correlation: corr.max(0) as u64,
                    external_id: 0,
                });
            }
        }
        if has_view("memory_copies") {
            let mut q = conn
                .prepare("SELECT coalesce(name, 'MEMORY_COPY'), start, end, coalesce(dst_agent_log_index, 0), coalesce(stream_name, ''), coalesce(corr_id, 0) FROM memory_copies ORDER BY start, id")
                .map_err(db)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                })
                .map_err(db)?;
            for row in rows {
                let (name, start, end, agent, stream, corr) = row.map_err(db)?;
                let name = trace.names.intern(&name);
                let stream = stream_of(stream);
                trace.activities.push(Activity {
                    kind: ActivityKind::Memcpy,
                    name,
                    input,
                    device: agent.max(0) as u32,
                    stream,
                    ts_ns: start,
                    dur_ns: end.saturating_sub(start).max(0),
                    correlation: corr.max(0) as u64,
                    external_id: 0,
                });
            }
        }
        let mut api_calls = 0u64;
        if has_view("regions") {
            let mut q = conn
                .prepare("SELECT category, name, coalesce(pid, 0), coalesce(tid, 0), start, end, coalesce(corr_id, 0) FROM regions ORDER BY start, id")
                .map_err(db)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                        r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, i64>(5)?,
                        r.get::<_, i64>(6)?,
                    ))
                })
                .map_err(db)?;
            for row in rows {
                let (category, name, pid, tid, start, end, corr) = row.map_err(db)?;
                let kind = if category.starts_with("HIP_RUNTIME") {
                    HostKind::Runtime
                } else if category.starts_with("MARKER") {
                    HostKind::Annotation
                } else {
                    continue;
                };
                api_calls += 1;
                let name = trace.names.intern(&name);
                trace.host.push(HostEvent {
                    kind,
                    name,
                    input,
                    pid: pid.max(0) as u64,
                    tid: tid.max(0) as u64,
                    ts_ns: start,
                    dur_ns: end.saturating_sub(start).max(0),
                    correlation: corr.max(0) as u64,
                    external_id: 0,
                    input_dims: NameId::NONE,
                    input_types: NameId::NONE,
                    concrete_inputs: NameId::NONE,
                    input_strides: NameId::NONE,
                });
            }
        }
        // Device names from the agents table (`gfx942`, …).
        if let Ok(mut q) = conn.prepare("SELECT logical_index, coalesce(product_name, name, '') FROM rocpd_info_agent WHERE type = 'GPU'") {
            if let Ok(rows) = q.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))) {
                for (idx, name) in rows.flatten() {
                    if let Some(n) = devices.get_mut(&(idx.max(0) as u32)) {
                        *n = name;
                    }
                }
            }
        }
        let mut warnings = Vec::new();
        if api_calls == 0 {
            warnings.push("no HIP API regions in the database (run rocprofv3 with --hip-trace): idle time cannot be attributed".into());
        }
        trace.inputs.push(InputMeta {
            path: label,
            format: Format::Rocpd,
            vendor: Vendor::Amd,
            devices: devices
                .into_iter()
                .map(|(id, name)| Device { id, name })
                .collect(),
            rank: None,
            truncated: false,
            warnings,
            hardware: None,
            base_time_ns: None,
        });
        Ok(())
    }
}

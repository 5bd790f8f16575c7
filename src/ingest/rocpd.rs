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
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(db_error(&label))?;
        if !has_view(&conn, "kernels") {
            return Err(IngestError::Database {
                path: label,
                message: "an SQLite database without rocpd's `kernels` view: not a rocpd profile"
                    .into(),
            });
        }
        let mut db = RocpdInput {
            conn: &conn,
            label: &label,
            input: trace.inputs.len() as u32,
            devices: BTreeMap::new(),
            streams: HashMap::new(),
        };
        db.read_kernels(trace)?;
        if has_view(&conn, "memory_copies") {
            db.read_memory_copies(trace)?;
        }
        let mut api_calls = 0u64;
        if has_view(&conn, "regions") {
            api_calls = db.read_regions(trace)?;
        }
        db.name_devices();
        let devices = db.devices;
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
                .map(|(id, name)| Device::named(id, name))
                .collect(),
            rank: None,
            truncated: false,
            warnings,
            hardware: None,
            base_time_ns: None,
            distributed: None,
        });
        Ok(())
    }
}

/// Turns an SQLite error into an ingest error naming the database.
fn db_error(label: &str) -> impl Fn(rusqlite::Error) -> IngestError + '_ {
    move |e: rusqlite::Error| IngestError::Database {
        path: label.to_string(),
        message: e.to_string(),
    }
}

/// Does the database define this view? (The optional views depend on what was traced.)
fn has_view(conn: &Connection, name: &str) -> bool {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .unwrap_or(false)
}

/// One rocpd database being read into one input: the devices and streams seen so far.
struct RocpdInput<'a> {
    conn: &'a Connection,
    label: &'a str,
    input: u32,
    devices: BTreeMap<u32, String>,
    /// Stream (or queue) names mapped to small numbers, in the order first seen.
    streams: HashMap<String, u32>,
}

impl RocpdInput<'_> {
    /// The small number of a stream name, given in the order the names are first seen.
    fn stream_of(&mut self, s: String) -> u32 {
        let n = self.streams.len() as u32;
        *self.streams.entry(s).or_insert(n)
    }

    /// Kernel dispatches from the `kernels` view.
    fn read_kernels(&mut self, trace: &mut Trace) -> Result<(), IngestError> {
        let db = db_error(self.label);
        let mut q = self
            .conn
            .prepare("SELECT name, start, end, agent_log_index, coalesce(stream, ''), coalesce(queue, ''), coalesce(corr_id, 0) FROM kernels ORDER BY start, id")
            .map_err(&db)?;
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
            .map_err(&db)?;
        for row in rows {
            let (name, start, end, agent, stream, queue, corr) = row.map_err(&db)?;
            let device = agent.max(0) as u32;
            self.devices.entry(device).or_default();
            let name = trace.names.intern(&name);
            let stream = self.stream_of(if stream.is_empty() { queue } else { stream });
            trace.activities.push(Activity {
                kind: ActivityKind::Kernel,
                name,
                input: self.input,
                device,
                stream,
                ts_ns: start,
                dur_ns: end.saturating_sub(start).max(0),
                correlation: corr.max(0) as u64,
                external_id: 0,
                workgroups: 0,
                comm: NameId::NONE,
            });
        }
        Ok(())
    }

    /// Memory copies from the `memory_copies` view.
    fn read_memory_copies(&mut self, trace: &mut Trace) -> Result<(), IngestError> {
        let db = db_error(self.label);
        let mut q = self
            .conn
            .prepare("SELECT coalesce(name, 'MEMORY_COPY'), start, end, coalesce(dst_agent_log_index, 0), coalesce(stream_name, ''), coalesce(corr_id, 0) FROM memory_copies ORDER BY start, id")
            .map_err(&db)?;
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
            .map_err(&db)?;
        for row in rows {
            let (name, start, end, agent, stream, corr) = row.map_err(&db)?;
            let name = trace.names.intern(&name);
            let stream = self.stream_of(stream);
            trace.activities.push(Activity {
                kind: ActivityKind::Memcpy,
                name,
                input: self.input,
                device: agent.max(0) as u32,
                stream,
                ts_ns: start,
                dur_ns: end.saturating_sub(start).max(0),
                correlation: corr.max(0) as u64,
                external_id: 0,
                workgroups: 0,
                comm: NameId::NONE,
            });
        }
        Ok(())
    }

    /// HIP runtime calls and markers from the `regions` view; returns how many were kept.
    fn read_regions(&self, trace: &mut Trace) -> Result<u64, IngestError> {
        let db = db_error(self.label);
        let mut api_calls = 0u64;
        let mut q = self
            .conn
            .prepare("SELECT category, name, coalesce(pid, 0), coalesce(tid, 0), start, end, coalesce(corr_id, 0) FROM regions ORDER BY start, id")
            .map_err(&db)?;
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
            .map_err(&db)?;
        for row in rows {
            let (category, name, pid, tid, start, end, corr) = row.map_err(&db)?;
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
                input: self.input,
                pid: pid.max(0) as u64,
                tid: tid.max(0) as u64,
                ts_ns: start,
                dur_ns: end.saturating_sub(start).max(0),
                correlation: corr.max(0) as u64,
                input_dims: NameId::NONE,
                input_types: NameId::NONE,
                concrete_inputs: NameId::NONE,
                input_strides: NameId::NONE,
                comm: NameId::NONE,
                inductor: NameId::NONE,
            });
        }
        Ok(api_calls)
    }

    /// Device names from the agents table (`gfx942`, …).
    fn name_devices(&mut self) {
        if let Ok(mut q) = self.conn.prepare("SELECT logical_index, coalesce(product_name, name, '') FROM rocpd_info_agent WHERE type = 'GPU'") {
            if let Ok(rows) = q.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))) {
                for (idx, name) in rows.flatten() {
                    if let Some(n) = self.devices.get_mut(&(idx.max(0) as u32)) {
                        *n = name;
                    }
                }
            }
        }
    }
}

//! rocprofv3 `--output-format json` (`reference/formats.md` §4.2): kernel dispatches, memory
//! copies and HIP API calls from `buffer_records`, with kernel names joined from
//! `kernel_symbols` by `kernel_id` and devices from `agents` by handle.

use super::{ReadOptions, Reader, Source};
use crate::error::IngestError;
use crate::model::{
    Activity, ActivityKind, Device, Format, HostEvent, HostKind, InputMeta, NameId, Trace, Vendor,
};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

pub struct RocprofV3JsonReader;

#[derive(Deserialize)]
struct Root {
    #[serde(rename = "rocprofiler-sdk-tool")]
    tool: Vec<Tool>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Tool {
    agents: Vec<Agent>,
    kernel_symbols: Vec<Symbol>,
    buffer_records: Buffers,
    strings: Strings,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct Handle {
    handle: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Agent {
    id: Handle,
    #[serde(rename = "type")]
    kind: u32,
    name: String,
    product_name: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Symbol {
    kernel_id: u64,
    kernel_name: String,
    formatted_kernel_name: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Buffers {
    kernel_dispatch: Vec<Dispatch>,
    memory_copy: Vec<Copy>,
    hip_api: Vec<Api>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Corr {
    internal: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DispatchInfo {
    agent_id: Handle,
    queue_id: Handle,
    kernel_id: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Dispatch {
    correlation_id: Corr,
    start_timestamp: i64,
    end_timestamp: i64,
    dispatch_info: DispatchInfo,
    stream_id: Option<Handle>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Copy {
    operation: u32,
    correlation_id: Corr,
    start_timestamp: i64,
    end_timestamp: i64,
    dst_agent_id: Handle,
    stream_id: Option<Handle>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Api {
    kind: u32,
    operation: u32,
    thread_id: u64,
    correlation_id: Corr,
    start_timestamp: i64,
    end_timestamp: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Strings {
    buffer_records: Vec<OperationNames>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct OperationNames {
    kind: String,
    operations: Vec<String>,
}

impl Reader for RocprofV3JsonReader {
    fn format(&self) -> Format {
        Format::RocprofV3Json
    }
    fn looks_for(&self) -> &'static str {
        "a JSON object with a \"rocprofiler-sdk-tool\" key"
    }
    fn sniff(&self, head: &[u8]) -> Option<bool> {
        Some(memchr::memmem::find(head, b"\"rocprofiler-sdk-tool\"").is_some())
    }
    fn read(&self, src: Source, trace: &mut Trace, _opts: &ReadOptions) -> Result<(), IngestError> {
        let label = src.label.clone();
        let root: Root = serde_json::from_reader(std::io::BufReader::new(src.into_reader()))
            .map_err(|e| {
                let message = e.to_string();
                if e.is_eof() {
                    IngestError::Truncated {
                        path: label.clone(),
                        offset: 0,
                        events: 0,
                    }
                } else {
                    IngestError::Json {
                        path: label.clone(),
                        offset: 0,
                        message,
                    }
                }
            })?;
        for (k, tool) in root.tool.into_iter().enumerate() {
            let input = trace.inputs.len() as u32;
            let path = if k == 0 {
                label.clone()
            } else {
                format!("{label}#{k}")
            };
            // GPU agents numbered in their order, named by product.
            let mut device_of: HashMap<u64, u32> = HashMap::new();
            let mut names: BTreeMap<u32, String> = BTreeMap::new();
            for a in tool.agents.iter().filter(|a| a.kind == 2) {
                let id = device_of.len() as u32;
                device_of.insert(a.id.handle, id);
                names.insert(
                    id,
                    if a.product_name.is_empty() {
                        a.name.clone()
                    } else {
                        a.product_name.clone()
                    },
                );
            }
            let symbols: HashMap<u64, &Symbol> = tool
                .kernel_symbols
                .iter()
                .map(|s| (s.kernel_id, s))
                .collect();
            let mut used = std::collections::BTreeSet::new();
            let mut queues: HashMap<u64, u32> = HashMap::new();
            for d in &tool.buffer_records.kernel_dispatch {
                let name = match symbols.get(&d.dispatch_info.kernel_id) {
                    Some(s) if !s.formatted_kernel_name.is_empty() => {
                        s.formatted_kernel_name.as_str()
                    }
                    Some(s) => s.kernel_name.as_str(),
                    None => "",
                };
                let device = device_of
                    .get(&d.dispatch_info.agent_id.handle)
                    .copied()
                    .unwrap_or(0);
                used.insert(device);
                let q = d
                    .stream_id
                    .map(|s| s.handle)
                    .filter(|&h| h != 0)
                    .unwrap_or(d.dispatch_info.queue_id.handle);
                let n = queues.len() as u32;
                let stream = *queues.entry(q).or_insert(n);
                let name = trace.names.intern(name);
                trace.activities.push(Activity {
                    kind: ActivityKind::Kernel,
                    name,
                    input,
                    device,
                    stream,
                    ts_ns: d.start_timestamp,
                    dur_ns: (d.end_timestamp - d.start_timestamp).max(0),
                    correlation: d.correlation_id.internal,
                    external_id: 0,
                });
            }
            let op_name = |kind: &str, op: u32| {
                tool.strings
                    .buffer_records
                    .iter()
                    .find(|b| b.kind == kind)
                    .and_then(|b| b.operations.get(op as usize))
                    .cloned()
            };
            for c in &tool.buffer_records.memory_copy {
                let device = device_of.get(&c.dst_agent_id.handle).copied().unwrap_or(0);
                let name =
                    op_name("MEMORY_COPY", c.operation).unwrap_or_else(|| "MEMORY_COPY".into());
                let n = queues.len() as u32;
                let stream = *queues
                    .entry(c.stream_id.map_or(0, |s| s.handle))
                    .or_insert(n);
                let name = trace.names.intern(&name);
                trace.activities.push(Activity {
                    kind: ActivityKind::Memcpy,
                    name,
                    input,
                    device,
                    stream,
                    ts_ns: c.start_timestamp,
                    dur_ns: (c.end_timestamp - c.start_timestamp).max(0),
                    correlation: c.correlation_id.internal,
                    external_id: 0,
                });
            }
            let kinds: Vec<String> = tool
                .strings
                .buffer_records
                .iter()
                .map(|b| b.kind.clone())
                .collect();
            for a in &tool.buffer_records.hip_api {
                let kind_name = kinds
                    .get(a.kind as usize)
                    .map(String::as_str)
                    .unwrap_or("HIP_RUNTIME_API");
                let name = op_name(kind_name, a.operation)
                    .unwrap_or_else(|| format!("hip_api_{}", a.operation));
                let name = trace.names.intern(&name);
                trace.host.push(HostEvent {
                    kind: HostKind::Runtime,
                    name,
                    input,
                    pid: 0,
                    tid: a.thread_id,
                    ts_ns: a.start_timestamp,
                    dur_ns: (a.end_timestamp - a.start_timestamp).max(0),
                    correlation: a.correlation_id.internal,
                    external_id: 0,
                    input_dims: NameId::NONE,
                    input_types: NameId::NONE,
                    concrete_inputs: NameId::NONE,
                    input_strides: NameId::NONE,
                });
            }
            let mut warnings = Vec::new();
            if tool.buffer_records.hip_api.is_empty() {
                warnings.push("no HIP API records (run rocprofv3 with --hip-trace): idle time cannot be attributed".into());
            }
            trace.inputs.push(InputMeta {
                path,
                format: Format::RocprofV3Json,
                vendor: Vendor::Amd,
                devices: used
                    .into_iter()
                    .map(|id| Device {
                        id,
                        name: names.get(&id).cloned().unwrap_or_default(),
                    })
                    .collect(),
                rank: None,
                truncated: false,
                warnings,
                hardware: None,
                base_time_ns: None,
            });
        }
        Ok(())
    }
}

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
        let root = parse_root(src, &label)?;
        for (k, tool) in root.tool.into_iter().enumerate() {
            let path = if k == 0 {
                label.clone()
            } else {
                format!("{label}#{k}")
            };
            read_tool(&tool, path, trace);
        }
        Ok(())
    }
}

/// Deserializes the whole file; a file that ends early is reported as truncated.
fn parse_root(src: Source, label: &str) -> Result<Root, IngestError> {
    serde_json::from_reader(std::io::BufReader::new(src.into_reader())).map_err(|e| {
        let message = e.to_string();
        if e.is_eof() {
            IngestError::Truncated {
                path: label.to_string(),
                offset: 0,
                events: 0,
            }
        } else {
            IngestError::Json {
                path: label.to_string(),
                offset: 0,
                message,
            }
        }
    })
}

/// Adds one tool entry (one profiled process) to the trace as an input of its own.
fn read_tool(tool: &Tool, path: String, trace: &mut Trace) {
    let mut records = ToolRecords {
        tool,
        input: trace.inputs.len() as u32,
        gpus: Gpus::of(&tool.agents),
        used: std::collections::BTreeSet::new(),
        queues: HashMap::new(),
    };
    records.push_dispatches(trace);
    records.push_copies(trace);
    records.push_hip_api(trace);
    let ToolRecords { gpus, used, .. } = records;
    let mut warnings = Vec::new();
    if tool.buffer_records.hip_api.is_empty() {
        warnings.push(
            "no HIP API records (run rocprofv3 with --hip-trace): idle time cannot be attributed"
                .into(),
        );
    }
    trace.inputs.push(InputMeta {
        path,
        format: Format::RocprofV3Json,
        vendor: Vendor::Amd,
        devices: used
            .into_iter()
            .map(|id| Device::named(id, gpus.names.get(&id).cloned().unwrap_or_default()))
            .collect(),
        rank: None,
        truncated: false,
        warnings,
        hardware: None,
        base_time_ns: None,
        distributed: None,
    });
}

/// GPU agents numbered in their order, named by product.
struct Gpus {
    device_of: HashMap<u64, u32>,
    names: BTreeMap<u32, String>,
}

impl Gpus {
    fn of(agents: &[Agent]) -> Gpus {
        let mut device_of: HashMap<u64, u32> = HashMap::new();
        let mut names: BTreeMap<u32, String> = BTreeMap::new();
        for a in agents.iter().filter(|a| a.kind == 2) {
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
        Gpus { device_of, names }
    }

    /// The device number of an agent handle (0 for an unknown one).
    fn device(&self, agent: Handle) -> u32 {
        self.device_of.get(&agent.handle).copied().unwrap_or(0)
    }
}

/// One tool entry being read: its devices, the devices its kernels ran on, its queue numbers.
struct ToolRecords<'a> {
    tool: &'a Tool,
    input: u32,
    gpus: Gpus,
    used: std::collections::BTreeSet<u32>,
    /// Queue or stream handles mapped to small numbers, in the order first seen.
    queues: HashMap<u64, u32>,
}

impl ToolRecords<'_> {
    /// The small number of a queue or stream handle.
    fn stream_of(&mut self, handle: u64) -> u32 {
        let n = self.queues.len() as u32;
        *self.queues.entry(handle).or_insert(n)
    }

    /// An operation's name from the `strings` table of its buffer kind.
    fn op_name(&self, kind: &str, op: u32) -> Option<String> {
        self.tool
            .strings
            .buffer_records
            .iter()
            .find(|b| b.kind == kind)
            .and_then(|b| b.operations.get(op as usize))
            .cloned()
    }

    /// Kernel dispatches, named from `kernel_symbols` by kernel id.
    fn push_dispatches(&mut self, trace: &mut Trace) {
        let tool = self.tool;
        let symbols: HashMap<u64, &Symbol> = tool
            .kernel_symbols
            .iter()
            .map(|s| (s.kernel_id, s))
            .collect();
        for d in &tool.buffer_records.kernel_dispatch {
            let name = match symbols.get(&d.dispatch_info.kernel_id) {
                Some(s) if !s.formatted_kernel_name.is_empty() => s.formatted_kernel_name.as_str(),
                Some(s) => s.kernel_name.as_str(),
                None => "",
            };
            let device = self.gpus.device(d.dispatch_info.agent_id);
            self.used.insert(device);
            let q = d
                .stream_id
                .map(|s| s.handle)
                .filter(|&h| h != 0)
                .unwrap_or(d.dispatch_info.queue_id.handle);
            let stream = self.stream_of(q);
            let name = trace.names.intern(name);
            trace.activities.push(Activity {
                kind: ActivityKind::Kernel,
                name,
                input: self.input,
                device,
                stream,
                ts_ns: d.start_timestamp,
                dur_ns: (d.end_timestamp - d.start_timestamp).max(0),
                correlation: d.correlation_id.internal,
                external_id: 0,
                workgroups: 0,
                comm: NameId::NONE,
            });
        }
    }

    /// Memory copies, named by their operation.
    fn push_copies(&mut self, trace: &mut Trace) {
        for c in &self.tool.buffer_records.memory_copy {
            let device = self.gpus.device(c.dst_agent_id);
            let name = self
                .op_name("MEMORY_COPY", c.operation)
                .unwrap_or_else(|| "MEMORY_COPY".into());
            let stream = self.stream_of(c.stream_id.map_or(0, |s| s.handle));
            let name = trace.names.intern(&name);
            trace.activities.push(Activity {
                kind: ActivityKind::Memcpy,
                name,
                input: self.input,
                device,
                stream,
                ts_ns: c.start_timestamp,
                dur_ns: (c.end_timestamp - c.start_timestamp).max(0),
                correlation: c.correlation_id.internal,
                external_id: 0,
                workgroups: 0,
                comm: NameId::NONE,
            });
        }
    }

    /// HIP API calls, named by their buffer kind's operation names.
    fn push_hip_api(&self, trace: &mut Trace) {
        let kinds: Vec<String> = self
            .tool
            .strings
            .buffer_records
            .iter()
            .map(|b| b.kind.clone())
            .collect();
        for a in &self.tool.buffer_records.hip_api {
            let kind_name = kinds
                .get(a.kind as usize)
                .map(String::as_str)
                .unwrap_or("HIP_RUNTIME_API");
            let name = self
                .op_name(kind_name, a.operation)
                .unwrap_or_else(|| format!("hip_api_{}", a.operation));
            let name = trace.names.intern(&name);
            trace.host.push(HostEvent {
                kind: HostKind::Runtime,
                name,
                input: self.input,
                pid: 0,
                tid: a.thread_id,
                ts_ns: a.start_timestamp,
                dur_ns: (a.end_timestamp - a.start_timestamp).max(0),
                correlation: a.correlation_id.internal,
                input_dims: NameId::NONE,
                input_types: NameId::NONE,
                concrete_inputs: NameId::NONE,
                input_strides: NameId::NONE,
                comm: NameId::NONE,
                inductor: NameId::NONE,
            });
        }
    }
}

//! The Kineto reader on small documents.

use super::*;
use crate::ingest::{open, sniff};
use crate::model::ActivityKind;
use event::workgroups;

fn read_str(doc: &str) -> Result<Trace, IngestError> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.json");
    std::fs::write(&p, doc).unwrap();
    let src = open(&p)?;
    let readers = crate::ingest::readers();
    let r = sniff(&src, &readers)?;
    let mut t = Trace::default();
    r.read(src, &mut t, &ReadOptions::default())?;
    Ok(t)
}

#[test]
fn reads_current_kineto_events() {
    let t = read_str(
            r#"{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"AMD Instinct MI300X","warpSize":64}],
            "traceEvents":[
             {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":8,"ts":100.5,"dur":10,"args":{"External id":3,"Input Dims":[[2,3],[3,4]]}},
             {"ph":"X","cat":"cuda_runtime","name":"hipExtModuleLaunchKernel","pid":7,"tid":8,"ts":101,"dur":2.25,"args":{"correlation":9,"External id":3}},
             {"ph":"X","cat":"kernel","name":"Cijk_Alik_Bljk_HHS_BH_MT128x128x32","pid":0,"tid":1,"ts":104.001,"dur":3.5,"args":{"External id":3,"device":0,"stream":1,"correlation":9}},
             {"ph":"s","id":9,"cat":"ac2g","name":"ac2g","pid":7,"tid":8,"ts":101},
             {"ph":"X","cat":"python_function","name":"f","pid":7,"tid":8,"ts":1,"dur":1}
            ],"distributedInfo":{"rank":3}}"#,
        )
        .unwrap();
    assert_eq!(t.activities.len(), 1);
    assert_eq!(t.activities.ts_ns[0], 104_001);
    assert_eq!(t.activities.dur_ns[0], 3_500);
    assert_eq!(t.activities.correlation.get(0), 9);
    assert_eq!(t.host.len(), 3);
    assert_eq!(t.host.kind[2], HostKind::Python);
    assert_eq!(t.names.get(t.host.input_dims(0)), "[[2,3],[3,4]]");
    assert_eq!(t.host.correlation.get(1), 9);
    let meta = &t.inputs[0];
    assert_eq!(
        (meta.vendor, meta.rank, meta.truncated),
        (Vendor::Amd, Some(3), false)
    );
    assert_eq!(
        meta.devices,
        vec![Device {
            id: 0,
            name: "AMD Instinct MI300X".into(),
            arch: Some("gfx942".into()),
            compute_units: None,
            memory_bytes: None,
        }]
    );
}

#[test]
fn reads_2021_kineto_events() {
    let t = read_str(
            r#"{"schemaVersion":1,"traceEvents":[
             {"ph":"X","cat":"Operator","name":"aten::empty","pid":25738,"tid":"25738","ts":1623142623460111,"dur":25,"args":{"External id":2}},
             {"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":25738,"tid":"25738","ts":1623142623529088,"dur":20,"args":{"cbid":211,"correlation":34417,"external id":537}},
             {"ph":"X","cat":"Kernel","name":"volta_sgemm_64x64_nn","pid":0,"tid":"stream 7","ts":1623142623531625,"dur":2,"args":{"correlation":34417,"external id":537}},
             {"ph":"X","cat":"Memset","name":"Memset (Device)","pid":0,"tid":"stream 7","ts":1623142623579729,"dur":1,"args":{}}
            ]}"#,
        )
        .unwrap();
    assert_eq!(t.activities.len(), 2);
    assert_eq!(t.activities.stream[0], 7);
    assert_eq!(t.activities.external_id.get(0), 537);
    assert_eq!(t.activities.kind[1], ActivityKind::Memset);
    assert_eq!(t.host.tid(0), 25738);
    assert_eq!(t.inputs[0].vendor, Vendor::Nvidia);
}

#[test]
fn record_function_ranges_of_2021_are_annotations() {
    let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"Operator","name":"ProfilerStep#5","pid":1,"tid":"1","ts":100,"dur":900,"args":{"Call stack":"a/torch/autograd/profiler.py(614): __enter__;b.py(54): <module>"}},
             {"ph":"X","cat":"Operator","name":"Optimizer.step#SGD.step","pid":1,"tid":"1","ts":200,"dur":100,"args":{}},
             {"ph":"X","cat":"Operator","name":"forward","pid":1,"tid":"1","ts":300,"dur":100,"args":{"Call stack":"x/torch/autograd/profiler.py(614): __enter__;train.py(9): <module>"}},
             {"ph":"X","cat":"Operator","name":"aten::add_","pid":1,"tid":"1","ts":310,"dur":10,"args":{"Call stack":"x/torch/nn/modules/module.py(1051): _call_impl;train.py(9): <module>"}},
             {"ph":"X","cat":"Operator","name":"AddmmBackward","pid":1,"tid":"2","ts":400,"dur":10,"args":{}},
             {"ph":"X","cat":"cpu_op","name":"odd#name","pid":1,"tid":"1","ts":500,"dur":10,"args":{}}
            ]}"#,
        )
        .unwrap();
    let kinds: Vec<HostKind> = t.host.kind.clone();
    use HostKind::{Annotation, CpuOp};
    // Ranges: PyTorch's own (a '#'), a user's (record_function's __enter__ frame); ops stay
    // ops, and today's cpu_op category is never reinterpreted.
    assert_eq!(
        kinds,
        [Annotation, Annotation, Annotation, CpuOp, CpuOp, CpuOp]
    );
}

#[test]
fn per_event_ranks_split_one_file_into_inputs() {
    let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"kernel","name":"k","pid":2,"tid":4,"ts":1,"dur":1,"args":{"rank":0}},
             {"ph":"X","cat":"kernel","name":"k","pid":102,"tid":4,"ts":1,"dur":1,"args":{"rank":1}}]}"#,
        )
        .unwrap();
    assert_eq!(t.inputs.len(), 2);
    assert_eq!(
        t.inputs.iter().map(|m| m.rank).collect::<Vec<_>>(),
        vec![Some(0), Some(1)]
    );
}

#[test]
fn invalid_utf8_spoils_one_event_not_its_batch() {
    // The batch-wide UTF-8 check fails; events are then parsed one by one and only the
    // event with the bad byte is lost, named by its offset.
    let mut doc = br#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"a","ts":1,"dur":1},
             {"ph":"X","cat":"kernel","name":"b?","ts":2,"dur":1},
             {"ph":"X","cat":"kernel","name":"c","ts":3,"dur":1}]}"#
        .to_vec();
    let at = doc.iter().position(|&b| b == b'?').unwrap();
    doc[at] = 0xff;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.json");
    std::fs::write(&p, &doc).unwrap();
    let src = open(&p).unwrap();
    let mut t = Trace::default();
    KinetoReader
        .read(src, &mut t, &ReadOptions::default())
        .unwrap();
    let names: Vec<&str> = (0..t.activities.len())
        .map(|i| t.names.get(t.activities.name[i]))
        .collect();
    assert_eq!(names, ["a", "c"]);
    let warning = &t.inputs[0].warnings[0];
    assert!(warning.contains("skipped 1 unreadable events"), "{warning}");
    let starts: Vec<usize> = (0..doc.len())
        .filter(|&i| doc[i..].starts_with(br#"{"ph""#))
        .collect();
    let byte: usize = warning
        .split("first at byte ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!((starts[1]..starts[2]).contains(&byte), "{warning}");
}

#[test]
fn bad_events_are_counted_not_fatal() {
    let t = read_str(
        r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":"x","dur":1},
             {"ph":"X","cat":"kernel","name":"k","ts":5,"dur":1}]}"#,
    )
    .unwrap();
    assert_eq!(t.activities.len(), 1);
    assert!(
        t.inputs[0].warnings[0].contains("skipped 1 unreadable events"),
        "{:?}",
        t.inputs[0].warnings
    );
}

#[test]
fn collective_arguments_are_read_from_kernels_and_ops_in_any_spelling() {
    use crate::model::comms::CommArgs;
    let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":1,"dur":9,"args":{"Collective name":"allreduce","In msg size":1024,"Out msg size":1024,"dtype":"Float","Process Group Name":"0","Process Group Ranks":"[0, 1]","Seq":7}},
             {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_RING_LL","ts":5,"dur":1,"args":{"Collective name":"_allgather_base","In msg nelems":8,"Out msg nelems":16,"Group size":2,"dtype":"BFloat16"}},
             {"ph":"X","cat":"kernel","name":"odd","ts":6,"dur":1,"args":{"Collective name":5,"dtype":["x"]}},
             {"ph":"X","cat":"kernel","name":"plain","ts":7,"dur":1,"args":{"dtype":{"a":1}}}]}"#,
        )
        .unwrap();
    // Values of other types under these keys spoil nothing.
    assert_eq!(t.activities.len(), 3);
    assert!(
        t.inputs[0].warnings.is_empty(),
        "{:?}",
        t.inputs[0].warnings
    );
    let kernel = CommArgs::decode(t.names.get(t.activities.comm(0))).unwrap();
    assert_eq!(
        (
            kernel.collective.as_str(),
            kernel.in_nelems,
            kernel.out_nelems
        ),
        ("_allgather_base", Some(8), Some(16))
    );
    assert_eq!(
        (kernel.group_size, kernel.dtype.as_deref()),
        (Some(2), Some("BFloat16"))
    );
    assert_eq!(t.activities.comm(2), NameId::NONE);
    assert_eq!(
        CommArgs::decode(t.names.get(t.activities.comm(1)))
            .unwrap()
            .collective,
        "5"
    );
    // The 2023 spelling of the element counts, and the newest Seq, on the op.
    let op = CommArgs::decode(t.names.get(t.host.op_args(0).comm)).unwrap();
    assert_eq!(
        (op.in_nelems, op.seq, op.process_group_ranks.as_deref()),
        (Some(1024), Some(7), Some("[0, 1]"))
    );
}

#[test]
fn rocprof_v1_json_is_not_kineto() {
    let head = br#"{ "traceEvents":[{}
,{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name","sort_index":0}"#;
    assert_eq!(KinetoReader.sniff(head), Some(false));
    assert!(looks_like_rocprof_v1_json(head));
    assert_eq!(
        KinetoReader.sniff(br#"{"traceEvents":[{"ph":"X"}]}"#),
        Some(true)
    );
    assert_eq!(KinetoReader.sniff(b"Index,KernelName"), Some(false));
}

#[test]
fn grids_in_work_items_are_divided_by_the_block() {
    // hipExtModuleLaunchKernel (Tensile): grid in work-items; hipLaunchKernel: in blocks.
    let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"cuda_runtime","name":"hipExtModuleLaunchKernel","pid":7,"tid":8,"ts":100,"dur":2,"args":{"correlation":9}},
             {"ph":"X","cat":"kernel","name":"Cijk_Alik_Bljk_BBS_BH_MT16x16x512","pid":0,"tid":1,"ts":104,"dur":8,"args":{"device":0,"stream":1,"correlation":9,"grid":[61440,1,1],"block":[256,1,1]}},
             {"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":7,"tid":8,"ts":120,"dur":2,"args":{"correlation":10}},
             {"ph":"X","cat":"kernel","name":"vectorized_gather_kernel","pid":0,"tid":1,"ts":124,"dur":3,"args":{"device":0,"stream":1,"correlation":10,"grid":[77,2,1],"block":[512,1,1]}},
             {"ph":"X","cat":"kernel","name":"no_grid","pid":0,"tid":1,"ts":130,"dur":3,"args":{"device":0,"stream":1,"correlation":11}}
            ]}"#,
        )
        .unwrap();
    assert_eq!(t.activities.workgroups, vec![240, 154, 0]);
    assert_eq!(workgroups("[4294967296, 2, 1]"), u32::MAX);
    assert_eq!(workgroups("not a grid"), 0);
}

/// The short path for lists as Kineto writes them gives what splitting the text gives, and
/// leaves every other form to it.
#[test]
fn grids_read_alike_on_either_path() {
    for raw in [
        "[240, 1, 1]",
        "[61440,1,1]",
        "[7]",
        "[ 3 , 4 ]",
        "[]",
        "[1, 2, 3, 4]",
        "[1,,2]",
        "[1, x, 2]",
        "[+5, 2]",
        "[1 2, 3]",
        "[\t4, 5]",
        "[[2, 3]]",
        "[4294967296, 2, 1]",
        "[9999999999999999999, 9999999999999999999, 2]",
        "[99999999999999999999, 2]",
        "[0, 5, 5]",
        " [6, 7] ",
        "\"[6, 7]\"",
        "null",
    ] {
        assert_eq!(workgroups(raw), event::listed_workgroups(raw), "{raw}");
    }
}

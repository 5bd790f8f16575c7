//! Each finding's evidence as a type: the one place its keys are named. A finding carries a
//! [`Detail`] (one variant per [`FindingId`], holding that finding's struct) and what the
//! layers around the detectors add: torch.compile's log, the fixes, and on a merged job the
//! rank shown and each rank's time at stake. It serializes to the feed's `evidence` object,
//! keys in alphabetical order (through `serde_json::Value`, whose maps sort), and reads back
//! from it by the finding's id (the partials' findings).

use super::FindingId;
use crate::model::compile_log::{Fix, GraphBreak, Recompile};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// What a finding's evidence says beyond its detail: the keys other layers add.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    /// The finding's own evidence.
    pub detail: Detail,
    /// `log`: what torch.compile's logs say (the graph-break, recompile and fallback findings).
    pub log: Option<CompileLog>,
    /// `fixes`: the fixes named for this finding's causes.
    pub fixes: Option<Vec<Fix>>,
    /// `rank_shown` and `ranks`: on a merged job, the rank whose evidence is shown and each
    /// member rank's time at stake.
    pub ranks: Option<(Option<u32>, Vec<RankStake>)>,
}

impl Evidence {
    /// The evidence as the feed writes it.
    pub fn to_json(&self) -> Value {
        let mut map = match self.detail.to_value() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        if let Some(log) = &self.log {
            map.insert("log".into(), to_value(log));
        }
        if let Some(fixes) = &self.fixes {
            map.insert("fixes".into(), to_value(fixes));
        }
        if let Some((shown, ranks)) = &self.ranks {
            map.insert("rank_shown".into(), to_value(shown));
            map.insert("ranks".into(), to_value(ranks));
        }
        Value::Object(map)
    }

    /// The evidence of a finding `id` as the feed wrote it.
    pub fn from_json(id: FindingId, value: Value) -> Result<Evidence, serde_json::Error> {
        let Value::Object(mut map) = value else {
            return Err(de::Error::custom("a finding's evidence is an object"));
        };
        let log = map.remove("log").map(serde_json::from_value).transpose()?;
        let fixes = map
            .remove("fixes")
            .map(serde_json::from_value)
            .transpose()?;
        // `ranks` is the merge's only beside `rank_shown` (the straggler's own `ranks` is not).
        let ranks = match map.remove("rank_shown") {
            Some(shown) => Some((
                serde_json::from_value(shown)?,
                serde_json::from_value(map.remove("ranks").unwrap_or_default())?,
            )),
            None => None,
        };
        Ok(Evidence {
            detail: Detail::from_value(id, Value::Object(map))?,
            log,
            fixes,
            ranks,
        })
    }

    /// Whether the evidence's `key` is set: present, not null, false or empty.
    pub fn has(&self, key: &str) -> bool {
        match &self.to_json()[key] {
            Value::Null | Value::Bool(false) => false,
            Value::Array(v) => !v.is_empty(),
            _ => true,
        }
    }
}

impl From<Detail> for Evidence {
    fn from(detail: Detail) -> Self {
        Evidence {
            detail,
            log: None,
            fixes: None,
            ranks: None,
        }
    }
}

impl Serialize for Evidence {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("evidence serializes")
}

/// The names serde reads for a type: a struct's fields or a unit enum's variants (empty for
/// anything else). The ladder's `evidence_key` and `finding_kind` are checked against them.
fn serde_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Names(&'static [&'static str]);
    impl<'de> Deserializer<'de> for &mut Names {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("names only"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(de::Error::custom("names only"))
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = variants;
            Err(de::Error::custom("names only"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map identifier
            ignored_any
        }
    }
    let mut names = Names(&[]);
    let _ = T::deserialize(&mut names);
    names.0
}

/// What the ladder may ask of a finding's evidence: its keys and its kinds.
pub trait Shape: for<'de> Deserialize<'de> {
    /// The keys this evidence can have.
    fn keys() -> Vec<&'static str> {
        serde_names::<Self>().to_vec()
    }
    /// The values its `kind` can take (none when it has no kind).
    fn kinds() -> Vec<&'static str> {
        Vec::new()
    }
    /// Its `kind`.
    fn kind(&self) -> Option<&'static str> {
        None
    }
}

/// A `kind` field's enum: its names are the kinds.
macro_rules! kinded {
    ($($ty:ty: $kind:ty),* $(,)?) => {$(
        impl Shape for $ty {
            fn kinds() -> Vec<&'static str> {
                crate::detect::evidence::serde_names::<$kind>().to_vec()
            }
            fn kind(&self) -> Option<&'static str> {
                Some(crate::model::variant_name(&self.kind))
            }
        }
    )*};
}

/// Evidence of several shapes (serde tries them in order; each refuses the others' keys).
macro_rules! shapes {
    ($($ty:ident { $($variant:ident($inner:ty)),* }),* $(,)?) => {$(
        impl Shape for $ty {
            fn keys() -> Vec<&'static str> {
                let mut keys = Vec::new();
                $(keys.extend(<$inner as Shape>::keys());)*
                keys.sort_unstable();
                keys.dedup();
                keys
            }
            fn kinds() -> Vec<&'static str> {
                let mut kinds = Vec::new();
                $(kinds.extend(<$inner as Shape>::kinds());)*
                kinds.sort_unstable();
                kinds.dedup();
                kinds
            }
            fn kind(&self) -> Option<&'static str> {
                match self {
                    $($ty::$variant(e) => e.kind(),)*
                }
            }
        }
    )*};
}

macro_rules! details {
    ($($id:ident($ty:ty)),* $(,)?) => {
        /// A finding's own evidence: one variant per finding id, named as the id.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Detail {
            $(#[doc = concat!("The evidence of [`FindingId::", stringify!($id), "`].")]
            $id($ty),)*
        }

        impl Detail {
            /// The finding this evidence belongs to.
            pub fn id(&self) -> FindingId {
                match self {
                    $(Detail::$id(_) => FindingId::$id,)*
                }
            }
            fn to_value(&self) -> Value {
                match self {
                    $(Detail::$id(e) => to_value(e),)*
                }
            }
            fn from_value(id: FindingId, v: Value) -> Result<Detail, serde_json::Error> {
                Ok(match id {
                    $(FindingId::$id => Detail::$id(serde_json::from_value(v)?),)*
                })
            }
            /// Its `kind`: which variant of the finding fired.
            pub fn kind(&self) -> Option<&'static str> {
                match self {
                    $(Detail::$id(e) => e.kind(),)*
                }
            }
            /// The keys the evidence of finding `id` can have (the layers' keys included).
            pub fn keys(id: FindingId) -> Vec<&'static str> {
                let mut keys = match id {
                    $(FindingId::$id => <$ty as Shape>::keys(),)*
                };
                keys.extend(["log", "fixes", "rank_shown", "ranks"]);
                keys
            }
            /// The kinds the evidence of finding `id` can take.
            pub fn kinds(id: FindingId) -> Vec<&'static str> {
                match id {
                    $(FindingId::$id => <$ty as Shape>::kinds(),)*
                }
            }
        }
    };
}

mod compile;
mod gpu;
mod host;
mod job;
pub use compile::*;
pub use gpu::*;
pub use host::*;
pub use job::*;

details! {
    GraphBreaks(GraphBreaks),
    CompiledLoop(CompiledLoop),
    Recompiles(Recompiles),
    CompileInWindow(CompileInWindow),
    CudagraphsInUse(CudagraphsInUse),
    LaunchBound(LaunchBound),
    HostBound(HostBound),
    SyncStalls(SyncStalls),
    ManualAttention(ManualAttention),
    UnfusedProjections(UnfusedProjections),
    Fp32Gemm(Fp32Gemm),
    GemmBackend(GemmBackend),
    ElementwiseHeavy(ElementwiseHeavy),
    ConvLayoutTransposes(ConvLayoutTransposes),
    ExposedCommunication(ExposedCommunication),
    MemcpyHeavy(MemcpyHeavy),
    UnclassifiedTime(UnclassifiedTime),
    HighStepVariance(HighStepVariance),
    WarmupInWindow(WarmupInWindow),
    StragglerRank(StragglerRank),
    InductorFallbacks(InductorFallbacks),
    LowOccupancy(CounterKernels),
    MemoryBoundGemm(CounterKernels),
    LowGemmEfficiency(LowGemmEfficiency),
    NoMatrixCores(CounterKernels),
    AllocatorChurn(AllocatorChurn),
    PerParameterOptimizer(PerParameterOptimizer),
    UnrepresentativeProfile(UnrepresentativeProfile),
    ConvHeavy(ConvHeavy),
    EagerModules(EagerModules),
    NormActivationHeavy(NormActivationHeavy),
    PagedAttentionHeavy(PagedAttentionHeavy),
    SlowCollective(SlowCollective),
    PipelineBubble(Pipeline),
    PipelineImbalance(Pipeline),
    DdpAccumulationSync(DdpAccumulation),
    ExpertGemmLoop(ExpertLoop),
    MemoryPressure(MemoryPressure),
    MemoryHeadroom(MemoryHeadroom),
    LowBandwidthEfficiency(LowBandwidthEfficiency),
}

impl Detail {
    /// The largest grid among the finding's kernels, in workgroups (tile advice needs enough).
    pub fn max_workgroups(&self) -> Option<u64> {
        match self {
            Detail::LowOccupancy(c) | Detail::MemoryBoundGemm(c) | Detail::NoMatrixCores(c) => {
                c.max_workgroups
            }
            Detail::LowGemmEfficiency(LowGemmEfficiency::Kernels(c)) => c.max_workgroups,
            Detail::LowGemmEfficiency(LowGemmEfficiency::Ops(o)) => o.max_workgroups.map(u64::from),
            _ => None,
        }
    }
}

// ---- shared pieces ----

/// A kernel (or family, library, kind) and its time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedTime {
    pub name: String,
    pub ns: i64,
    pub launches: u64,
}

/// An op and how often it was called.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpCalls {
    pub op: String,
    pub calls: usize,
}

/// A runtime API, its calls and their time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiCalls {
    pub api: String,
    pub calls: u64,
    pub ns: i64,
}

/// A member rank of a merged finding and its time at stake.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankStake {
    pub rank: Option<u32>,
    pub time_at_stake_ns: i64,
}

/// What torch.compile's logs say about a finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompileLog {
    pub paths: Vec<String>,
    pub matched_by: String,
    /// The distinct breaks, most frequent first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaks: Option<Vec<BreakSeen>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompiles: Option<Vec<RecompileSeen>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_time_s: Option<f64>,
}

/// A distinct graph break of the log and how often it was logged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakSeen {
    #[serde(flatten)]
    pub graph_break: GraphBreak,
    pub count: usize,
}

/// A recompile of the log, with its compile id and line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecompileSeen {
    #[serde(flatten)]
    pub recompile: Recompile,
    pub compile_id: Option<String>,
    pub line: usize,
}

/// No evidence of its own (a finding the log alone made).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromLogOnly {}
impl Shape for FromLogOnly {}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_reads_keys_and_kinds_from_the_types() {
        assert_eq!(
            Detail::kinds(FindingId::UnrepresentativeProfile),
            ["one_call", "warmup"]
        );
        assert_eq!(Detail::kinds(FindingId::Fp32Gemm), ["simt", "mfma"]);
        assert!(Detail::kinds(FindingId::HostBound).is_empty());
        // Both shapes of low_gemm_efficiency: the ops' and the counters'.
        let keys = Detail::keys(FindingId::LowGemmEfficiency);
        assert!(keys.contains(&"stride_hotspot_bytes") && keys.contains(&"share_pct"));
        for (id, _) in super::super::DEFINITIONS {
            // Its own keys beside the four the other layers add.
            assert!(Detail::keys(*id).len() > 4, "{id}");
        }
    }

    #[test]
    fn evidence_writes_its_keys_in_order_and_reads_back() {
        let mut e = Evidence::from(Detail::CudagraphsInUse(CudagraphsInUse {
            graph_launches: 2,
            replayed_kernels: 10,
            replayed_kernel_ns: 500,
            kernels_per_launch: 5.0,
        }));
        e.ranks = Some((
            None,
            vec![RankStake {
                rank: None,
                time_at_stake_ns: 0,
            }],
        ));
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(
            text,
            r#"{"graph_launches":2,"kernels_per_launch":5.0,"rank_shown":null,"ranks":[{"rank":null,"time_at_stake_ns":0}],"replayed_kernel_ns":500,"replayed_kernels":10}"#
        );
        let back = Evidence::from_json(
            FindingId::CudagraphsInUse,
            serde_json::from_str(&text).unwrap(),
        )
        .unwrap();
        assert_eq!(back, e);
        // Another finding's evidence does not read as this one's.
        assert!(
            Evidence::from_json(FindingId::HostBound, serde_json::from_str(&text).unwrap())
                .is_err()
        );
    }
}

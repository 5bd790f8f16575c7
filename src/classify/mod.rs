//! Classification of GPU activity names into buckets by priority-ordered regex rules.
//!
//! Names are normalized first (Itanium-demangled, rocprof's `.kd` suffixes stripped), every
//! pattern is compiled once into a `RegexSet`, and each *distinct* name is classified once, in
//! parallel: a trace with 45k kernels often has a few dozen distinct names.

pub(crate) mod devices;
pub(crate) mod ops;
pub(crate) mod rules;

use crate::error::RuleError;
use crate::model::{ActivityKind, NameId, Trace};
use rayon::prelude::*;
use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub use rules::{Library, Rule, RuleDef};

/// Where GPU activity time goes (the feed's `buckets[].bucket`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    /// Matrix multiplies: vendor BLAS libraries, CUTLASS/CK and Inductor templates.
    Gemm,
    /// Fused attention kernels (FlashAttention, SDPA, paged attention).
    Attention,
    /// Convolutions, implicit-GEMM ones included.
    Conv,
    /// Pointwise math, reductions, norms, softmax, optimizer steps, transposes and casts.
    Elementwise,
    /// Collectives and point-to-point transfers (NCCL/RCCL, custom all-reduce).
    Communication,
    /// memcpy/memset activities and the runtime's copy and fill kernels.
    Memory,
    /// Unclassified names, and kernels a rule knows that do no model work.
    #[default]
    Other,
}

impl Bucket {
    /// All seven buckets, in a fixed order.
    pub const ALL: [Bucket; 7] = [
        Bucket::Gemm,
        Bucket::Attention,
        Bucket::Conv,
        Bucket::Elementwise,
        Bucket::Communication,
        Bucket::Memory,
        Bucket::Other,
    ];
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// A kernel class the detectors look for, as a rule tags it (`tag = "..."` in `rules/*.toml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelTag {
    /// A GEMM in fp32 without matrix/tensor cores (`fp32_gemm`).
    Fp32Gemm,
    /// A softmax (`manual_attention` looks for GEMM → softmax → GEMM).
    Softmax,
    /// An NCHW↔NHWC layout transpose (`conv_layout_transposes`).
    LayoutTranspose,
    /// A GEMM on 8-bit or narrower operands (fp8, mxfp4, int8): no FP8 advice for it.
    LowPrecisionGemm,
    /// A kernel Inductor generated (`triton_poi/red/per/tem_fused_*`): torch.compile ran.
    Inductor,
    /// A paged-attention decode kernel (vLLM, SGLang): no flash-attention advice for it.
    PagedAttention,
    /// A grouped expert GEMM of a mixture of experts (triton_kernels `_matmul_ogs`,
    /// `fused_moe`): no library GEMM does its work.
    MoeGemm,
}

/// The verdict for one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    /// Where its time goes.
    pub bucket: Bucket,
    /// The kind of kernel in the bucket (`gemm_fp32`, `softmax`; `unclassified`).
    pub family: String,
    /// The winning rule's tag, what detectors key on.
    pub tag: Option<KernelTag>,
    /// The library it comes from (`unknown` when no pattern names one).
    pub library: String,
    /// The winning rule; `None` when nothing matched (unclassified, counted in `other`).
    pub rule: Option<usize>,
}

impl Class {
    fn unclassified() -> Class {
        Class {
            bucket: Bucket::Other,
            family: "unclassified".into(),
            tag: None,
            library: "unknown".into(),
            rule: None,
        }
    }
}

/// Compiled rules.
pub struct RuleSet {
    /// The loaded rules, in load order; [`Class::rule`] indexes them.
    pub rules: Vec<Rule>,
    /// Buckets that the launching op decides (`rules/ops.toml`).
    pub ops: ops::OpRules,
    /// Device peaks for GEMM efficiency (`rules/devices.toml`, after any `devices.toml` of
    /// the `--rules` directories).
    pub devices: Vec<devices::DevicePeaks>,
    /// The `[[library]]` patterns, user ones first; the first match wins.
    pub libraries: Vec<Library>,
    set: RegexSet,
    /// The `[[library]]` patterns in order: the lowest index that matches wins.
    library_set: RegexSet,
    /// Whether each table needed Unicode ([`compile_set`]): rules, libraries.
    unicode: (bool, bool),
}

/// Why a name got its class: every matching rule, best first.
pub struct Explanation {
    /// The name as rules see it (demangled, `.kd` suffix stripped).
    pub normalized: String,
    /// Indices into [`RuleSet::rules`], winner first.
    pub matched: Vec<usize>,
}

impl RuleSet {
    /// Built-in rules plus `extra_dirs`, with the user rules' own examples checked.
    ///
    /// Each table is compiled once, as a `RegexSet`. The built-in rules' examples are checked
    /// by the tests and `rules check` ([`RuleSet::check_examples`]), not on every run: that
    /// compiled each pattern a second time, alone, most of a small trace's run.
    pub fn load(extra_dirs: &[PathBuf]) -> Result<RuleSet, RuleError> {
        let (rules, libraries) = rules::load(extra_dirs)?;
        let (library_set, library_unicode) = compile_set(
            libraries
                .iter()
                .map(|l| (&l.file, format!("library {}", l.def.name), &l.def.pattern)),
        )?;
        let (set, rules_unicode) = compile_set(
            rules
                .iter()
                .map(|r| (&r.file, r.def.id.clone(), &r.def.pattern)),
        )?;
        let rs = RuleSet {
            rules,
            ops: ops::OpRules::builtin()?,
            devices: devices::load_devices(extra_dirs)?,
            libraries,
            set,
            library_set,
            unicode: (rules_unicode, library_unicode),
        };
        rs.check_examples(false)?;
        Ok(rs)
    }

    /// Each rule's pattern matches its `match` examples and none of its `no_match` examples,
    /// and each library pattern its examples: the user ones, and the built-in ones too with
    /// `builtin`.
    pub fn check_examples(&self, builtin: bool) -> Result<(), RuleError> {
        for l in self.libraries.iter().filter(|l| builtin || !l.builtin) {
            let id = format!("library {}", l.def.name);
            let re = compiled(&l.file, &id, &l.def.pattern, self.unicode.1)?;
            if let Some(ex) = l.def.matches.iter().find(|ex| !matches(&re, ex)) {
                return Err(RuleError::Example {
                    file: l.file.clone(),
                    id,
                    message: format!("pattern does not match its example {ex:?}"),
                });
            }
        }
        for r in self.rules.iter().filter(|r| builtin || !r.builtin) {
            let err = |message: String| RuleError::Example {
                file: r.file.clone(),
                id: r.def.id.clone(),
                message,
            };
            if r.def.matches.is_empty() {
                return Err(err("has no `match` examples".into()));
            }
            let re = compiled(&r.file, &r.def.id, &r.def.pattern, self.unicode.0)?;
            if let Some(ex) = r.def.matches.iter().find(|ex| !matches(&re, ex)) {
                return Err(err(format!("pattern does not match its example {ex:?}")));
            }
            if let Some(ex) = r.def.no_match.iter().find(|ex| matches(&re, ex)) {
                return Err(err(format!(
                    "pattern matches its `no_match` example {ex:?}"
                )));
            }
        }
        Ok(())
    }

    /// Stronger check for `rules check` and the tests: every `match` example is *won* by its
    /// rule against the whole set, so priorities agree with the examples.
    pub fn check_winners(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            for ex in &r.def.matches {
                let c = self.classify(ex);
                if c.rule != Some(i) {
                    let winner = c.rule.map_or("nothing".to_string(), |w| {
                        format!("rule '{}'", self.rules[w].def.id)
                    });
                    problems.push(format!(
                        "{}: rule '{}': its example {ex:?} is won by {winner}",
                        r.file.display(),
                        r.def.id
                    ));
                }
            }
        }
        problems
    }

    /// Every rule matching `name`, winner first.
    pub fn explain(&self, name: &str) -> Explanation {
        let normalized = normalize(name).into_owned();
        let mut matched: Vec<usize> = self
            .set
            .matches(normalized.as_bytes())
            .into_iter()
            .collect();
        matched.sort_by_key(|&i| (-self.rules[i].def.priority, self.rules[i].order));
        Explanation {
            normalized,
            matched,
        }
    }

    /// Classifies one raw name.
    pub fn classify(&self, name: &str) -> Class {
        let ex = self.explain(name);
        match ex.matched.first() {
            Some(&i) => {
                let d = &self.rules[i].def;
                let library = match &d.library {
                    Some(l) => l.clone(),
                    None => self.library_of(&ex.normalized).to_string(),
                };
                Class {
                    bucket: d.bucket,
                    family: d.family.clone(),
                    tag: d.tag,
                    library,
                    rule: Some(i),
                }
            }
            None => Class {
                library: self.library_of(&ex.normalized).to_string(),
                ..Class::unclassified()
            },
        }
    }

    /// The library a (normalized) name belongs to, by the `[[library]]` table.
    pub fn library_of(&self, normalized: &str) -> &str {
        // A set's matches come in pattern order: the first is the first in the table.
        self.library_set
            .matches(normalized.as_bytes())
            .iter()
            .next()
            .map_or("unknown", |i| self.libraries[i].def.name.as_str())
    }

    /// Classifies every distinct name that some GPU activity carries. Memcpy and memset
    /// activities that no rule names still go to `memory`: their kind says what they are.
    pub fn classify_trace(&self, trace: &Trace) -> Classified {
        let mut used = vec![None::<ActivityKind>; trace.names.len()];
        for (&n, &k) in trace.activities.name.iter().zip(&trace.activities.kind) {
            used[n.index()].get_or_insert(k);
        }
        let todo: Vec<(NameId, ActivityKind)> = used
            .iter()
            .enumerate()
            .filter_map(|(i, k)| k.map(|k| (NameId(i as u32), k)))
            .collect();
        let classes: Vec<(NameId, Class)> = todo
            .par_iter()
            .map(|&(id, kind)| {
                let mut c = self.classify(trace.names.get(id));
                if c.rule.is_none() && kind != ActivityKind::Kernel {
                    c = Class {
                        bucket: Bucket::Memory,
                        family: kind_family(kind).into(),
                        tag: None,
                        library: "runtime".into(),
                        rule: None,
                    };
                }
                (id, c)
            })
            .collect();
        let mut by_name = vec![None; trace.names.len()];
        for (id, c) in classes {
            by_name[id.index()] = Some(c);
        }
        Classified { by_name }
    }
}

/// Whether `re` matches example `ex` as the rules see names.
fn matches(re: &Regex, ex: &str) -> bool {
    re.is_match(normalize(ex).as_bytes())
}

/// Rule `id`'s pattern compiled alone, in its table's mode; an error names its file and rule.
fn compiled(file: &Path, id: &str, pattern: &str, unicode: bool) -> Result<Regex, RuleError> {
    RegexBuilder::new(pattern)
        .unicode(unicode)
        .build()
        .or_else(|_| RegexBuilder::new(pattern).build())
        .map_err(|e| RuleError::Pattern {
            file: file.to_path_buf(),
            id: id.to_string(),
            message: e.to_string(),
        })
}

/// One `RegexSet` of `(file, rule id, pattern)`s, and whether it needed Unicode. Names are
/// matched as bytes with ASCII classes (`\w`, `\d`, `\s`, case folding): kernel and op names
/// are C++ and Python identifiers, and Unicode's classes made compiling the tables most of a
/// small trace's run (callgrind: 205 M of 373 M instructions). A table with a pattern that
/// needs Unicode (`\p{…}`) is compiled with it. A pattern that does not compile is named by
/// its file and rule (found by compiling each alone, on that error only).
fn compile_set<'a>(
    patterns: impl Iterator<Item = (&'a PathBuf, String, &'a String)> + Clone,
) -> Result<(RegexSet, bool), RuleError> {
    let texts = || patterns.clone().map(|p| p.2);
    if let Ok(set) = RegexSetBuilder::new(texts()).unicode(false).build() {
        return Ok((set, false));
    }
    let set = RegexSetBuilder::new(texts()).build().map_err(|set_error| {
        patterns
            .clone()
            .filter_map(|(file, id, pattern)| compiled(file, &id, pattern, true).err())
            .next()
            .unwrap_or_else(|| RuleError::Pattern {
                file: Path::new("rules").to_path_buf(),
                id: "(set)".into(),
                message: set_error.to_string(),
            })
    })?;
    Ok((set, true))
}

fn kind_family(kind: ActivityKind) -> &'static str {
    match kind {
        ActivityKind::Memcpy => "memcpy",
        ActivityKind::Memset => "memset",
        ActivityKind::Kernel => "kernel",
    }
}

/// The class of every name used by a GPU activity, indexed by `NameId`.
#[derive(Clone, Debug, Default)]
pub struct Classified {
    by_name: Vec<Option<Class>>,
}

impl Classified {
    /// Adds the classes of names `other` has and these lack (two parts of one trace, which
    /// share its names).
    pub fn absorb(&mut self, other: Classified) {
        if self.by_name.len() < other.by_name.len() {
            self.by_name.resize(other.by_name.len(), None);
        }
        for (mine, theirs) in self.by_name.iter_mut().zip(other.by_name) {
            if mine.is_none() {
                *mine = theirs;
            }
        }
    }
    /// The class of a name; unclassified when it has none.
    pub fn get(&self, id: NameId) -> &Class {
        static UNCLASSIFIED: std::sync::OnceLock<Class> = std::sync::OnceLock::new();
        self.by_name
            .get(id.index())
            .and_then(|c| c.as_ref())
            .unwrap_or_else(|| UNCLASSIFIED.get_or_init(Class::unclassified))
    }
    /// Whether the name matched no rule (counted as unclassified).
    pub fn is_unclassified(&self, id: NameId) -> bool {
        let c = self.get(id);
        c.rule.is_none() && c.family == "unclassified"
    }
}

/// The form rules match against: Itanium-mangled names demangled (CK and aiter kernels are often
/// left mangled in ROCm traces), rocprof's `.kd` / ` [clone .kd]` / ` (.kd)` suffixes removed.
pub fn normalize(name: &str) -> Cow<'_, str> {
    let trimmed = strip_kd(name.trim());
    if trimmed.starts_with("_Z") {
        if let Some(d) = demangle(trimmed) {
            return Cow::Owned(d);
        }
    }
    if trimmed.len() == name.len() {
        Cow::Borrowed(name)
    } else {
        Cow::Borrowed(trimmed)
    }
}

fn strip_kd(s: &str) -> &str {
    for suffix in [" [clone .kd]", " (.kd)", ".kd"] {
        if let Some(x) = s.strip_suffix(suffix) {
            return x.trim_end();
        }
    }
    s
}

fn demangle(s: &str) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(s).ok()?;
    let opts = cpp_demangle::DemangleOptions::new().no_return_type();
    sym.demangle(&opts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_strips_suffixes_and_demangles() {
        assert_eq!(normalize("Cijk_Foo.kd"), "Cijk_Foo");
        assert_eq!(
            normalize("void at::native::k<float>() [clone .kd]"),
            "void at::native::k<float>()"
        );
        assert_eq!(normalize("vecCopy (.kd)"), "vecCopy");
        let d = normalize("_ZN5aiter24add_rmsnorm_quant_kernelILi1EEEvPf");
        assert!(d.starts_with("aiter::add_rmsnorm_quant_kernel<1>"), "{d}");
        // Not a valid mangling: kept as is.
        assert_eq!(normalize("_Zgarbage"), "_Zgarbage");
    }

    #[test]
    fn tables_match_bytes_with_ascii_classes_unless_a_pattern_needs_unicode() {
        // The built-in tables need no Unicode: `\w` and case folding are ASCII.
        let builtin = RuleSet::load(&[]).unwrap();
        assert_eq!(builtin.unicode, (false, false));
        // A user pattern with a Unicode class compiles its table with Unicode, and its
        // examples are checked in that mode.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("greek.toml"),
            r#"schema = 1
[[rule]]
id = "ew.greek"
bucket = "elementwise"
family = "greek"
pattern = '^\p{Greek}+_kernel$'
priority = 90
match = ["αβγ_kernel"]
no_match = ["abc_kernel"]
"#,
        )
        .unwrap();
        let rs = RuleSet::load(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(rs.unicode, (true, false));
        assert_eq!(
            rs.rules[rs.classify("αβγ_kernel").rule.unwrap()].def.id,
            "ew.greek"
        );
        // Names classify as before either way.
        for name in [
            "nvjet_sm90_tst_64x24_64x16_2x4_h_bz_TNT",
            "void at::native::vectorized_elementwise_kernel<4>",
        ] {
            assert_eq!(
                rs.classify(name).rule,
                builtin.classify(name).rule,
                "{name}"
            );
        }
    }

    #[test]
    fn builtin_rules_load_and_their_examples_win() {
        let rs = RuleSet::load(&[]).unwrap();
        assert!(rs.rules.len() > 50);
        rs.check_examples(true).unwrap();
        let problems = rs.check_winners();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        // Libraries inferred where the rule leaves them out.
        assert_eq!(rs.classify("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib").library, "aiter");
        assert_eq!(
            rs.classify("void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>")
                .library,
            "vLLM"
        );
        assert_eq!(rs.classify("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>").library, "ATen");
    }
}

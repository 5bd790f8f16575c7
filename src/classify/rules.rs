//! Rule files: `rules/*.toml`, data not code. Each rule carries `match`/`no_match` examples that
//! are checked when the rules load, so a pattern cannot quietly drift from what it is for.

use super::Bucket;
use crate::error::RuleError;
use include_dir::{include_dir, Dir};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The built-in rule pack, compiled into the binary so it runs from any directory.
static BUILTIN: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/rules");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    schema: u32,
    #[serde(default, rename = "rule")]
    rules: Vec<RuleDef>,
    #[serde(default, rename = "library")]
    libraries: Vec<LibraryDef>,
}

/// Names the library of a kernel for rules that leave `library` out (families such as norms or
/// quantization span ATen, vLLM, aiter, CK …). First match in load order wins.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct LibraryDef {
    pub name: String,
    pub pattern: String,
    #[serde(rename = "match")]
    pub matches: Vec<String>,
}

/// One rule as written in a TOML file.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    /// Unique id (`gemm.tensile`); a user rule with a built-in rule's id replaces it.
    pub id: String,
    /// The bucket matched names go to.
    pub bucket: Bucket,
    /// The kind of kernel in the bucket (`gemm_fp32`, `softmax`, `norm`).
    pub family: String,
    /// What the detectors key on (`fp32_gemm`, `softmax`, `layout_transpose`): a user rule that
    /// replaces a built-in one keeps its tag unless it sets its own, so renaming a family
    /// disables no finding.
    #[serde(default)]
    pub tag: Option<super::KernelTag>,
    /// The library; when absent it is inferred from the name by the `[[library]]` table.
    #[serde(default)]
    pub library: Option<String>,
    /// Regex matched against the normalized name.
    pub pattern: String,
    /// Higher wins when several rules match; on a tie the earlier rule wins.
    pub priority: i32,
    /// Why the rule exists (where the pattern comes from).
    #[serde(default)]
    pub why: String,
    /// `match`: names the pattern must match (checked at load; at least one).
    #[serde(rename = "match")]
    pub matches: Vec<String>,
    /// Names the pattern must not match (checked at load).
    #[serde(default)]
    pub no_match: Vec<String>,
}

/// A loaded rule and where it came from.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The rule as written.
    pub def: RuleDef,
    /// The file it was read from.
    pub file: PathBuf,
    /// Load order: among equal priorities the earlier rule wins.
    pub order: usize,
    /// One of the rules built into the binary (their examples are checked by its tests).
    pub builtin: bool,
}

/// A loaded library pattern and where it came from.
#[derive(Clone, Debug)]
pub struct Library {
    /// The pattern as written.
    pub def: LibraryDef,
    /// The file it was read from.
    pub file: PathBuf,
    /// One of the patterns built into the binary.
    pub builtin: bool,
}

/// Loads the built-in rules, then each user directory in order; a user rule with the id of an
/// earlier rule replaces it. User library patterns are tried before the built-in ones.
pub fn load(extra_dirs: &[PathBuf]) -> Result<(Vec<Rule>, Vec<Library>), RuleError> {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let mut builtin: Vec<_> = BUILTIN.files().filter(|f| is_rule_file(f.path())).collect();
    builtin.sort_by_key(|f| f.path().to_path_buf());
    for f in builtin {
        let text = f.contents_utf8().unwrap_or_default().to_string();
        files.push((Path::new("rules").join(f.path()), text));
    }
    let builtin_files = files.len();
    for dir in extra_dirs {
        files.extend(read_dir_files(dir)?);
    }
    let mut rules: Vec<Rule> = Vec::new();
    let mut libraries: Vec<Library> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (n, (file, text)) in files.into_iter().enumerate() {
        let parsed: RuleFile = toml::from_str(&text).map_err(|e| RuleError::Parse {
            file: file.clone(),
            message: e.to_string(),
        })?;
        if parsed.schema != 1 {
            return Err(RuleError::Parse {
                file,
                message: format!("unknown schema {} (this version reads 1)", parsed.schema),
            });
        }
        let user = n >= builtin_files;
        for (k, def) in parsed.libraries.into_iter().enumerate() {
            let lib = Library {
                def,
                file: file.clone(),
                builtin: !user,
            };
            if user {
                libraries.insert(k, lib);
            } else {
                libraries.push(lib);
            }
        }
        let mut seen_here: HashMap<String, ()> = HashMap::new();
        for def in parsed.rules {
            if seen_here.insert(def.id.clone(), ()).is_some() {
                return Err(RuleError::Duplicate {
                    file: file.clone(),
                    id: def.id,
                    first: file.clone(),
                });
            }
            match index.get(&def.id) {
                Some(&i) if rules[i].file == file => unreachable!("checked above"),
                Some(&i) => {
                    let order = rules[i].order;
                    let mut def = def;
                    def.tag = def.tag.or(rules[i].def.tag);
                    rules[i] = Rule {
                        def,
                        file: file.clone(),
                        order,
                        builtin: !user,
                    };
                }
                None => {
                    index.insert(def.id.clone(), rules.len());
                    let order = rules.len();
                    rules.push(Rule {
                        def,
                        file: file.clone(),
                        order,
                        builtin: !user,
                    });
                }
            }
        }
    }
    Ok((rules, libraries))
}

/// Classification rule files: every `*.toml` but the ladder catalog (`ladder.toml`), the
/// device peak table (`devices.toml`) and the op rules (`ops.toml`).
fn is_rule_file(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "toml")
        && p.file_name().is_some_and(|n| {
            !matches!(
                n.to_str(),
                Some("ladder.toml" | "devices.toml" | "ops.toml" | "replay.toml" | "priors.toml")
            )
        })
}

/// The `*.toml` files of a directory, sorted by name.
fn read_dir_files(dir: &Path) -> Result<Vec<(PathBuf, String)>, RuleError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RuleError::Read {
        file: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_rule_file(p))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).map_err(|source| RuleError::Read {
                file: p.clone(),
                source,
            })?;
            Ok((p, text))
        })
        .collect()
}

//! Op rules (`rules/ops.toml`): buckets that the launching op decides, whatever the kernel's
//! name says (a convolution's GEMM kernels are conv, an attention op's kernels attention).

use super::Bucket;
use crate::error::RuleError;
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;

#[derive(Deserialize)]
struct OpFile {
    #[serde(default, rename = "op")]
    ops: Vec<OpDef>,
}

#[derive(Deserialize, Clone, Debug)]
pub struct OpDef {
    pub id: String,
    pub bucket: Bucket,
    pub pattern: String,
    #[serde(default)]
    pub why: String,
    #[serde(default, rename = "match")]
    pub matches: Vec<String>,
    #[serde(default)]
    pub no_match: Vec<String>,
}

/// The compiled op rules.
#[derive(Debug)]
pub struct OpRules {
    pub rules: Vec<OpDef>,
    regexes: Vec<Regex>,
}

const BUILTIN: &str = include_str!("../../rules/ops.toml");

impl OpRules {
    /// The built-in op rules, each checked against its examples.
    pub fn builtin() -> Result<OpRules, RuleError> {
        let file = std::path::PathBuf::from("rules/ops.toml");
        let parsed: OpFile = toml::from_str(BUILTIN).map_err(|e| RuleError::Parse {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let mut regexes = Vec::new();
        for r in &parsed.ops {
            // As the kernel rules' tables: bytes with ASCII classes, Unicode where needed.
            let re = RegexBuilder::new(&r.pattern)
                .unicode(false)
                .build()
                .or_else(|_| Regex::new(&r.pattern))
                .map_err(|e| RuleError::Pattern {
                    file: file.clone(),
                    id: r.id.clone(),
                    message: e.to_string(),
                })?;
            for ex in &r.matches {
                if !re.is_match(ex.as_bytes()) {
                    return Err(RuleError::Example {
                        file: file.clone(),
                        id: r.id.clone(),
                        message: format!("pattern does not match its example {ex:?}"),
                    });
                }
            }
            for ex in &r.no_match {
                if re.is_match(ex.as_bytes()) {
                    return Err(RuleError::Example {
                        file: file.clone(),
                        id: r.id.clone(),
                        message: format!("pattern matches its counter-example {ex:?}"),
                    });
                }
            }
            regexes.push(re);
        }
        Ok(OpRules {
            rules: parsed.ops,
            regexes,
        })
    }

    /// The bucket an op decides for the kernels it launches, if a rule matches it.
    pub fn bucket_of(&self, op: &str) -> Option<Bucket> {
        self.regexes
            .iter()
            .position(|re| re.is_match(op.as_bytes()))
            .map(|i| self.rules[i].bucket)
    }
}

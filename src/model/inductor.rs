//! What Inductor writes on a Triton kernel's launcher cpu_op: its source file, and, when the run
//! set `TORCHINDUCTOR_BENCHMARK_KERNEL=1` (or `config.benchmark_kernel`), the GB it moves per
//! launch (`kernel_num_gb`: inputs and outputs, in-place buffers twice, from compile-time size
//! hints) and its FLOPs (`kernel_flop`, template kernels only; 0 for pointwise and reductions).

/// Inductor's arguments of one launcher op; `None` where the trace does not say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InductorArgs {
    pub file: Option<String>,
    pub num_gb: Option<f64>,
    pub flop: Option<f64>,
}

impl InductorArgs {
    /// One interned string (tab-separated), so a model keeps it in a name slot.
    pub fn encode(&self) -> String {
        let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        format!(
            "{}\t{}\t{}",
            self.file.as_deref().unwrap_or("").replace('\t', " "),
            num(self.num_gb),
            num(self.flop)
        )
    }
    pub fn decode(s: &str) -> Option<InductorArgs> {
        let mut f = s.split('\t');
        let (file, gb, flop) = (f.next()?, f.next()?, f.next()?);
        let num = |v: &str| v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
        Some(InductorArgs {
            file: (!file.is_empty()).then(|| file.to_string()),
            num_gb: num(gb),
            flop: num(flop),
        })
    }
    /// Bytes per launch from `kernel_num_gb`.
    pub fn bytes(&self) -> Option<f64> {
        self.num_gb.map(|g| g * 1e9).filter(|b| *b > 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let a = InductorArgs {
            file: Some("/tmp/torchinductor_root/mw/cmw.py".into()),
            num_gb: Some(0.134217728),
            flop: Some(0.0),
        };
        let back = InductorArgs::decode(&a.encode()).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.bytes(), Some(134217728.0));
        let none = InductorArgs::default();
        assert_eq!(InductorArgs::decode(&none.encode()), Some(none));
        assert_eq!(InductorArgs::decode("x"), None);
    }
}

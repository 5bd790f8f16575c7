//! Writers of a run's annotated activities: a Perfetto trace ([`perfetto`]) and the Parquet/CSV
//! activity table ([`export`], with polars).

#[cfg(feature = "polars")]
pub(crate) mod export;
pub(crate) mod perfetto;

//! Domain signals beside the time partition: collective kernels ([`collective_calls`]) and
//! their matching across ranks ([`collectives`], sends with receives: [`point_to_point`]), GPU
//! memory ([`memory`]), hardware counters per kernel ([`counters`]) and the job's parallelisms
//! ([`parallelism`]).

pub(crate) mod collective_calls;
pub(crate) mod collectives;
pub(crate) mod counters;
pub(crate) mod memory;
pub(crate) mod parallelism;
pub(crate) mod pipeline;
pub(crate) mod point_to_point;

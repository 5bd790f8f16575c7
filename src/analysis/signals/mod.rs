//! Domain signals beside the time partition: collective kernels ([`collective_calls`]) and
//! their matching across ranks ([`collectives`]), GPU
//! memory ([`memory`]) and hardware counters per kernel ([`counters`]).

pub(crate) mod collective_calls;
pub(crate) mod collectives;
pub(crate) mod counters;
pub(crate) mod memory;

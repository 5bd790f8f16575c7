//! Domain signals beside the time partition: collective kernels ([`collective_calls`]) and
//! their matching across ranks ([`collectives`]), GPU
//! memory ([`memory`]) and hardware counters per kernel ([`counters`]).

pub mod collective_calls;
pub mod collectives;
pub mod counters;
pub mod memory;

//! The time axis: which host call launched each GPU activity ([`links`]), the steps or
//! iterations and the analysis window ([`steps`], [`iterations`] and their [`phases`]), the partition of the window
//! by what the GPU and host were doing ([`partition`], [`window`]), and the annotated ranges as
//! a tree ([`regions`]). Host event names that mean a phase, a step or no region are in
//! [`names`].

pub mod iterations;
pub mod links;
pub mod names;
pub mod partition;
pub mod phases;
pub mod regions;
pub mod steps;
pub mod window;

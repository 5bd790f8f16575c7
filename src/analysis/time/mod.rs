//! The time axis: which host call launched each GPU activity ([`links`]), the steps or
//! iterations and the analysis window ([`steps`], [`iterations`] and their [`phases`]), the partition of the window
//! by what the GPU and host were doing ([`partition`], [`window`]), and the annotated ranges as
//! a tree ([`regions`]). Host event names that mean a phase, a step or no region are in
//! [`names`]; sorting and searching rows that come mostly in time order, in [`order`].

pub(crate) mod iterations;
pub(crate) mod links;
pub(crate) mod names;
pub(crate) mod order;
pub(crate) mod partition;
pub(crate) mod phases;
pub(crate) mod regions;
pub(crate) mod steps;
pub(crate) mod window;

//! One module per kernel, as the ports keep them.

pub(crate) mod axpy;
pub(crate) mod dot;

//! Argument guards shared by the guard stage and the built-in tools:
//! path confinement and SSRF protection.

pub mod path;
pub mod ssrf;

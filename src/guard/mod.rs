//! Argument guards shared by the guard stage and the built-in tools:
//! path confinement, SSRF protection, and toolgate's protection of its own
//! files and controls.

pub mod path;
pub mod protect;
pub mod shell_like;
pub mod ssrf;

//! JSON Schema handling: compiling a tool's schema once at registration,
//! casting sloppy model arguments, and validating them with the `jsonschema`
//! crate, with errors a model can act on.
//!
//! PraisonAI validates schemas at decoration time (round trip) but skips
//! casting and validation for `@tool` functions; here every tool, whatever
//! its source, goes through [`CompiledSchema::check`].

mod cast;
mod compile;
mod messages;
pub(crate) mod pointer;
mod secret;

pub use cast::{CastNote, cast_args};
pub use compile::{CompiledSchema, SchemaError};
pub use messages::describe_errors;
pub use secret::{REDACTED, has_secret_marker, redact_secrets};

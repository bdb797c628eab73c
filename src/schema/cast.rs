//! Casting sloppy model arguments toward the schema. (Stub: see issue 3.)

use serde_json::Value;

use crate::tool::JsonObject;

/// One change casting made, for the audit trail and the UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CastNote {
    /// JSON pointer of the argument.
    pub pointer: String,
    /// What was done, e.g. `string "3" → integer 3`.
    pub change: String,
}

/// Casts `args` in place toward `schema`; returns what changed.
pub fn cast_args(_schema: &JsonObject, _args: &mut Value) -> Vec<CastNote> {
    Vec::new()
}

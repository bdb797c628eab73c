//! Compiling a tool's input schema once, at registration.

use std::sync::Arc;

use serde_json::Value;

use super::messages::describe_errors_shown;
use super::{CastNote, cast_args, has_secret_marker, redact_secrets};
use crate::error::CallError;
use crate::tool::JsonObject;

/// Why a tool's schema was rejected at registration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema does not describe an object; tool arguments always are.
    #[error("input schema of `{tool}` must have \"type\": \"object\", found {found}")]
    NotAnObject {
        /// The tool.
        tool: String,
        /// What was there instead.
        found: String,
    },
    /// The schema does not survive a JSON round trip unchanged, so it could
    /// not be sent to a model as written (PraisonAI's
    /// `validate_schema_roundtrip` makes the same check).
    #[error("input schema of `{tool}` changes when serialised and parsed again")]
    RoundTrip {
        /// The tool.
        tool: String,
    },
    /// The `jsonschema` crate refused the schema.
    #[error("input schema of `{tool}` is invalid: {reason}")]
    Invalid {
        /// The tool.
        tool: String,
        /// The crate's reason.
        reason: String,
    },
}

/// A tool's input schema with its validator, built once and shared by every
/// call (validation itself then costs about 0.1 µs; see
/// docs/architecture/decisions.md, "Measured facts behind the stack").
#[derive(Debug)]
pub struct CompiledSchema {
    schema: Arc<JsonObject>,
    validator: jsonschema::Validator,
    /// Whether any part of the schema marks a value secret; without one
    /// no call's arguments are walked for redaction.
    secrets: bool,
}

impl CompiledSchema {
    /// Compiles `schema` for `tool`. In `strict` mode, every object schema
    /// without `additionalProperties` gets `additionalProperties: false`, so
    /// unknown keys are dropped by casting instead of reaching the tool.
    ///
    /// # Errors
    /// Not an object schema, fails the round trip, or is not valid JSON Schema.
    pub fn compile(
        tool: &str,
        schema: &Arc<JsonObject>,
        strict: bool,
    ) -> Result<Self, SchemaError> {
        match schema.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            None if schema.contains_key("properties") => {}
            other => {
                return Err(SchemaError::NotAnObject {
                    tool: tool.to_owned(),
                    found: other.map_or_else(|| "no type".to_owned(), ToString::to_string),
                });
            }
        }
        let text = serde_json::to_string(&**schema).map_err(|_| SchemaError::RoundTrip {
            tool: tool.to_owned(),
        })?;
        let back: JsonObject = serde_json::from_str(&text).map_err(|_| SchemaError::RoundTrip {
            tool: tool.to_owned(),
        })?;
        if back != **schema {
            return Err(SchemaError::RoundTrip {
                tool: tool.to_owned(),
            });
        }
        let schema = if strict {
            let mut v = Value::Object((**schema).clone());
            close_objects(&mut v);
            match v {
                Value::Object(o) => Arc::new(o),
                _ => schema.clone(),
            }
        } else {
            schema.clone()
        };
        let validator =
            jsonschema::validator_for(&Value::Object((*schema).clone())).map_err(|e| {
                SchemaError::Invalid {
                    tool: tool.to_owned(),
                    reason: e.to_string(),
                }
            })?;
        let secrets = has_secret_marker(&schema);
        Ok(Self {
            schema,
            validator,
            secrets,
        })
    }

    /// The schema as compiled (strict mode applied).
    pub fn schema(&self) -> &Arc<JsonObject> {
        &self.schema
    }

    /// Whether the schema marks any value secret (decided once, here).
    pub fn has_secrets(&self) -> bool {
        self.secrets
    }

    /// `args` as people may see them: secret values replaced (see
    /// [`redact_secrets`]); borrowed, with no walk, for a tool without
    /// secrets.
    pub fn redact<'a>(&self, args: &'a Value) -> std::borrow::Cow<'a, Value> {
        if self.secrets {
            redact_secrets(&self.schema, args)
        } else {
            std::borrow::Cow::Borrowed(args)
        }
    }

    /// Casts `args` in place, then validates them.
    ///
    /// # Errors
    /// [`CallError::InvalidArgs`] listing every problem, in words a model can
    /// act on.
    pub fn check(&self, tool: &str, args: &mut Value) -> Result<Vec<CastNote>, CallError> {
        if args.is_null() {
            *args = Value::Object(JsonObject::new());
        }
        let notes = cast_args(&self.schema, args);
        if self.validator.is_valid(args) {
            return Ok(notes);
        }
        Err(CallError::InvalidArgs {
            tool: tool.to_owned(),
            problems: describe_errors_shown(
                &self.schema,
                &self.validator,
                args,
                &self.redact(args),
            ),
        })
    }
}

/// Adds `additionalProperties: false` to every object schema that does not
/// say otherwise.
fn close_objects(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let is_object = o.get("type").and_then(Value::as_str) == Some("object")
                || o.contains_key("properties");
            if is_object && !o.contains_key("additionalProperties") {
                o.insert("additionalProperties".into(), Value::Bool(false));
            }
            o.values_mut().for_each(close_objects);
        }
        Value::Array(a) => a.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Arc<JsonObject> {
        match v {
            Value::Object(o) => Arc::new(o),
            _ => unreachable!(),
        }
    }

    #[test]
    fn rejects_non_object_schemas_naming_the_tool() {
        let e = CompiledSchema::compile("t1", &obj(json!({"type": "string"})), false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "input schema of `t1` must have \"type\": \"object\", found \"string\""
        );
    }

    #[test]
    fn rejects_invalid_schemas_naming_the_tool() {
        let e = CompiledSchema::compile(
            "t2",
            &obj(json!({"type": "object", "properties": {"a": {"type": 5}}})),
            false,
        )
        .unwrap_err();
        assert!(
            matches!(&e, SchemaError::Invalid { tool, .. } if tool == "t2"),
            "{e}"
        );
    }

    #[test]
    fn strict_mode_closes_objects() {
        let s = obj(
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}),
        );
        let c = CompiledSchema::compile("t", &s, true).unwrap();
        assert_eq!(c.schema()["additionalProperties"], false);
        assert_eq!(c.schema()["properties"]["a"]["additionalProperties"], false);
        let c = CompiledSchema::compile("t", &s, false).unwrap();
        assert!(!c.schema().contains_key("additionalProperties"));
    }
}

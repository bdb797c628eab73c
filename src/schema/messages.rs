//! Turning validator errors into sentences a model can act on.
//!
//! Contract: [`describe_errors`] returns one [`ArgProblem`] per problem the
//! validator finds (one per unknown key for `additionalProperties`), each
//! with the JSON pointer of the offending value and a message that states
//! the limit and what was sent (`expected integer, got "three"`,
//! `must be one of "r", "w"; got "x"`). Messages are chosen by the error's
//! [`ValidationErrorKind`], never by parsing the crate's English, so a crate
//! upgrade cannot silently change them; kinds without a message of our own
//! fall back to the crate's text.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use super::cast::shorten;
use crate::error::ArgProblem;
use crate::tool::JsonObject;

/// Every validation problem of `args`, worded for a model.
///
/// `schema` must be the schema `validator` was built from: the validator
/// does not expose it, and an unknown-argument message needs the declared
/// properties to tell the model what it could have sent instead.
pub fn describe_errors(
    schema: &JsonObject,
    validator: &Validator,
    args: &Value,
) -> Vec<ArgProblem> {
    describe_errors_shown(
        schema,
        validator,
        args,
        &super::redact_secrets(schema, args),
    )
}

/// [`describe_errors`] given `shown`, the arguments as people may see them
/// (secrets redacted): a message never quotes a value `shown` hides, since
/// it lands in the audit log and on the console.
pub(crate) fn describe_errors_shown(
    schema: &JsonObject,
    validator: &Validator,
    args: &Value,
    shown: &Value,
) -> Vec<ArgProblem> {
    validator
        .iter_errors(args)
        .flat_map(|e| describe(schema, args, shown, &e))
        .collect()
}

/// The problems one validator error stands for.
fn describe(
    schema: &JsonObject,
    args: &Value,
    shown: &Value,
    e: &ValidationError<'_>,
) -> Vec<ArgProblem> {
    let pointer = e.instance_path().as_str().to_owned();
    let problem = |message: String| ArgProblem {
        pointer: pointer.clone(),
        message,
    };
    let unknown = |keys: Vec<&str>| {
        let known = known_arguments(schema, e.schema_path().as_str());
        keys.into_iter()
            .map(|key| {
                problem(format!(
                    "unknown argument `{key}`; known arguments: {known}"
                ))
            })
            .collect()
    };
    match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            unknown(unexpected.iter().map(String::as_str).collect())
        }
        ValidationErrorKind::FalseSchema => match closed_object(args, e) {
            Some(object) => unknown(object.keys().map(String::as_str).collect()),
            None => vec![problem("is not allowed here".to_owned())],
        },
        kind if hides(args, shown, &pointer) => vec![problem(
            message(kind, e.instance(), super::REDACTED.to_owned()).unwrap_or_else(|| {
                let keyword = e.schema_path().as_str().rsplit('/').next().unwrap_or("");
                format!("does not satisfy `{keyword}` (value redacted)")
            }),
        )],
        kind => vec![problem(
            message(kind, e.instance(), show(e.instance())).unwrap_or_else(|| e.to_string()),
        )],
    }
}

/// Whether the value at `pointer` holds something `shown` redacts.
fn hides(args: &Value, shown: &Value, pointer: &str) -> bool {
    !std::ptr::eq(args, shown) && args.pointer(pointer) != shown.pointer(pointer)
}

/// For `additionalProperties: false` on an object schema without
/// `properties`, the crate reports `FalseSchema` at the *object* with its
/// first member as the instance; this finds that object, whose keys are
/// then all unknown. `None` for a `false` schema on the value itself.
fn closed_object<'a>(args: &'a Value, e: &ValidationError<'_>) -> Option<&'a JsonObject> {
    if !e.schema_path().as_str().ends_with("/additionalProperties") {
        return None;
    }
    let at = args.pointer(e.instance_path().as_str())?;
    // An object never equals one of its own members, so this tells the
    // reported member apart from a value rejected by its own `false` schema.
    (at != &**e.instance()).then(|| at.as_object()).flatten()
}

/// Our message for `kind` about `got`, quoted as `shown`; `None` to use
/// the crate's.
fn message(kind: &ValidationErrorKind, got: &Value, shown: String) -> Option<String> {
    Some(match kind {
        ValidationErrorKind::Type { kind } => format!("expected {}, got {shown}", types(kind)),
        ValidationErrorKind::Required { property } => {
            format!("missing required argument `{}`", plain(property))
        }
        ValidationErrorKind::Enum { options } => {
            format!("must be one of {}; got {shown}", list(options))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("must be {}; got {shown}", show(expected_value))
        }
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}; got {shown}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}; got {shown}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be greater than {limit}; got {shown}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be less than {limit}; got {shown}")
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("must be a multiple of {multiple_of}; got {shown}")
        }
        other => return sizes(other, got).or_else(|| shapes(other, &shown)),
    })
}

/// Messages for length, item-count and key-count limits.
fn sizes(kind: &ValidationErrorKind, got: &Value) -> Option<String> {
    let chars = got.as_str().map_or(0, |s| s.chars().count());
    let items = got.as_array().map_or(0, Vec::len);
    let keys = got.as_object().map_or(0, JsonObject::len);
    Some(match kind {
        ValidationErrorKind::MinLength { limit } => {
            format!("must be at least {limit} characters long; got {chars}")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("must be at most {limit} characters long; got {chars}")
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("must have at least {limit} items; got {items}")
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("must have at most {limit} items; got {items}")
        }
        ValidationErrorKind::MinProperties { limit } => {
            format!("must have at least {limit} keys; got {keys}")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("must have at most {limit} keys; got {keys}")
        }
        _ => return None,
    })
}

/// Messages for pattern, format and structural keywords.
fn shapes(kind: &ValidationErrorKind, shown: &str) -> Option<String> {
    Some(match kind {
        ValidationErrorKind::Pattern { pattern } => {
            format!("must match the pattern `{pattern}`; got {shown}")
        }
        ValidationErrorKind::Format { format } => format!("must be a valid {format}; got {shown}"),
        ValidationErrorKind::UniqueItems => "must not contain the same item twice".to_owned(),
        _ => return None,
    })
}

/// `integer` or `integer or null`.
fn types(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => t.to_string(),
        TypeKind::Multiple(set) => set
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// The declared properties of the object schema owning the keyword at
/// `keyword_path` (a schema path such as `/properties/a/additionalProperties`,
/// already resolved through `$ref` by the crate), as `a, b` or `none`.
fn known_arguments(schema: &JsonObject, keyword_path: &str) -> String {
    let owner = keyword_path.rsplit_once('/').map_or("", |(owner, _)| owner);
    let names: Vec<&str> = resolve(schema, owner)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The sub-schema at JSON pointer `pointer` inside `schema`, if it is an object.
fn resolve<'s>(schema: &'s JsonObject, pointer: &str) -> Option<&'s JsonObject> {
    let mut segs = pointer.split('/').skip(1).map(super::pointer::unescape);
    let Some(first) = segs.next() else {
        return Some(schema);
    };
    let mut at = schema.get(&*first)?;
    for seg in segs {
        at = match at {
            Value::Object(o) => o.get(&*seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    at.as_object()
}

/// Enum options as `"r", "w"`.
fn list(options: &Value) -> String {
    match options {
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join(", "),
        other => show(other),
    }
}

/// A value as compact JSON, shortened.
fn show(v: &Value) -> String {
    shorten(&v.to_string())
}

/// A property name without JSON quotes.
fn plain(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;

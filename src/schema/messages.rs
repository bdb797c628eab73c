//! Turning validator errors into sentences a model can act on. (Stub.)

use serde_json::Value;

use crate::error::ArgProblem;

/// Every validation problem of `args`, worded for a model.
pub fn describe_errors(validator: &jsonschema::Validator, args: &Value) -> Vec<ArgProblem> {
    validator
        .iter_errors(args)
        .map(|e| ArgProblem {
            pointer: e.instance_path().to_string(),
            message: e.to_string(),
        })
        .collect()
}

//! Built-in tools with typed arguments: the Rust form of PraisonAI's `@tool`.
//!
//! A tool declares a `#[derive(Deserialize, JsonSchema)]` argument struct.
//! The struct's doc comment becomes the tool description and its field doc
//! comments the parameter descriptions; `Option<T>` fields are not required,
//! unit enums become string enums, tagged enums `oneOf`, `Vec` and maps
//! arrays and objects (all schemars' own mapping). Subschemas are inlined so
//! models never have to follow `$ref`s.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{JsonObject, Tool, ToolDef, ToolName, ToolNameError, ToolResult};
use crate::context::CallContext;
use crate::error::{ArgProblem, CallError};

/// A tool whose arguments are a Rust type.
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; their doc comments are what the model reads.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The registry name.
    const NAME: &'static str;

    /// Adjusts the generated definition (risk, trust, guards, annotations).
    fn configure(def: ToolDef) -> ToolDef {
        def
    }

    /// Argument rules beyond the schema, checked before policy; see
    /// [`Tool::check`].
    ///
    /// # Errors
    /// [`CallError::InvalidArgs`] naming each argument that cannot work.
    fn check(&self, args: &Value) -> Result<(), CallError> {
        let _ = args;
        Ok(())
    }

    /// Runs the tool with validated arguments.
    fn run(
        &self,
        args: Self::Args,
        ctx: &CallContext,
    ) -> impl Future<Output = Result<ToolResult, CallError>> + Send;
}

/// The JSON Schema of `T` as an object: draft 2020-12, subschemas inlined,
/// no `$schema`/`title` noise, description moved out (it is returned
/// separately so it can become the tool's description).
pub fn schema_for<T: JsonSchema>() -> (JsonObject, Option<String>) {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut obj = match schema.to_value() {
        Value::Object(o) => o,
        // schemars only produces `true`/`false` for unit-like types; a tool
        // with no arguments takes an empty object.
        _ => JsonObject::new(),
    };
    obj.remove("title");
    let description = match obj.remove("description") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    obj.entry("type")
        .or_insert_with(|| Value::String("object".into()));
    (obj, description)
}

/// Turns a typed tool into a definition and a runnable tool.
///
/// # Errors
/// `T::NAME` breaks the tool-name rule.
pub fn typed_tool<T: TypedTool>(tool: T) -> Result<(ToolDef, Arc<dyn Tool>), ToolNameError> {
    let name = ToolName::new(T::NAME)?;
    let (schema, description) = schema_for::<T::Args>();
    let def = T::configure(ToolDef::new(name, description.unwrap_or_default(), schema));
    Ok((def, Arc::new(Typed(tool))))
}

struct Typed<T>(T);

impl<T: TypedTool> Tool for Typed<T> {
    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, CallError>> {
        Box::pin(async move {
            // Validation already ran against the schema, so this only fails
            // where serde is stricter than the schema; say so precisely.
            let args: T::Args =
                serde_json::from_value(args).map_err(|e| CallError::InvalidArgs {
                    tool: T::NAME.to_owned(),
                    problems: vec![ArgProblem {
                        pointer: String::new(),
                        message: e.to_string(),
                    }],
                })?;
            self.0.run(args, ctx).await
        })
    }

    fn check(&self, args: &Value) -> Result<(), CallError> {
        self.0.check(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Says hello.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct HelloArgs {
        /// Who to greet.
        name: String,
        /// How many times.
        times: Option<u32>,
        /// Tone of voice.
        tone: Tone,
        /// Where to send it.
        target: Target,
        /// Tags.
        tags: Vec<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Tone {
        Warm,
        Dry,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Target {
        Stdout,
        File { path: String },
    }

    #[test]
    fn doc_comments_and_types_become_the_schema() {
        let (s, d) = schema_for::<HelloArgs>();
        assert_eq!(d.as_deref(), Some("Says hello."));
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["name"]["description"], "Who to greet.");
        let required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            required.contains(&"name") && !required.contains(&"times"),
            "{required:?}"
        );
        assert_eq!(s["properties"]["tone"]["enum"], json!(["warm", "dry"]));
        assert!(
            s["properties"]["target"]["oneOf"].is_array(),
            "{}",
            s["properties"]["target"]
        );
        assert_eq!(s["properties"]["tags"]["type"], "array");
        assert!(!Value::Object(s).to_string().contains("$ref"));
    }
}

//! The three bridge tools a deferring session is listed instead of its
//! deferred tools: `tool_search`, `tool_describe` and `tool_call`.
//!
//! `tool_search` and `tool_describe` only read the registry and are
//! answered by the engine itself (no pipeline, no audit row: they run
//! nothing and reveal nothing the caller may not list). `tool_call` is
//! unwrapped before the pipeline, so every stage, the approval queue and
//! the audit log see the real tool and its real arguments, and the caller
//! is marked as having called through `tool_call`.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::tool::{JsonObject, Risk, ToolDef, ToolName};

/// `tool_search`.
pub const SEARCH: &str = "tool_search";
/// `tool_describe`.
pub const DESCRIBE: &str = "tool_describe";
/// `tool_call`.
pub const CALL: &str = "tool_call";
/// Results `tool_search` gives when the caller does not say.
pub const DEFAULT_LIMIT: usize = 5;
/// The most results one `tool_search` gives.
pub const MAX_LIMIT: usize = 20;

/// Whether `name` is a bridge tool's (no registered tool may take it).
pub fn is_bridge(name: &str) -> bool {
    [SEARCH, DESCRIBE, CALL].contains(&name)
}

/// The three definitions, as listed.
pub fn definitions() -> Vec<ToolDef> {
    vec![
        def(
            SEARCH,
            "Find tools that are not listed here. Give a few words describing what you want to do; \
             returns the best-matching tool names, each with a one-line description, where it \
             comes from and its risk. Then call tool_describe for the one you want.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you want to do, in a few words"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                              "description": "How many tools to return"}
                },
                "required": ["query"]
            }),
        ),
        def(
            DESCRIBE,
            "Show a tool's full description and input schema, its risk and how far its output is \
             trusted. Use a name tool_search returned; then call it with tool_call.",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The tool's exact name"}},
                "required": ["name"]
            }),
        ),
        def(
            CALL,
            "Call a tool found with tool_search, by its exact name, with arguments that match the \
             schema tool_describe gave. The call is governed exactly like a direct one.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's exact name"},
                    "arguments": {"type": "object", "description": "The tool's arguments"}
                },
                "required": ["name"]
            }),
        ),
    ]
}

fn def(name: &str, description: &str, schema: Value) -> ToolDef {
    let Value::Object(schema) = schema else {
        unreachable!("the bridge schemas above are objects")
    };
    // The names above obey the tool-name rule.
    let name = ToolName::new(name).unwrap_or_else(|_| unreachable!("valid bridge name"));
    ToolDef::new(name, description, schema).with_risk(Risk::Low)
}

/// `tool_search`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The words to search for.
    pub query: String,
    /// How many results.
    #[serde(default)]
    pub limit: Option<usize>,
}

impl SearchArgs {
    /// The limit asked for, within 1 and [`MAX_LIMIT`].
    pub fn limit(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
    }
}

/// `tool_describe`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DescribeArgs {
    /// The tool.
    pub name: String,
}

/// `tool_call`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallArgs {
    /// The real tool.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Option<JsonObject>,
}

/// Reads a bridge tool's arguments, or says what is wrong with them in
/// the words a schema refusal would use.
///
/// # Errors
/// The arguments do not fit the bridge tool's schema.
pub fn args<T: for<'de> Deserialize<'de>>(tool: &str, args: Value) -> Result<T, String> {
    serde_json::from_value(args).map_err(|e| format!("{tool}: {e}"))
}

/// The first line of a description, cut at 160 characters: what a search
/// result shows.
pub fn one_line(description: &str) -> String {
    let line = description
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match line.char_indices().nth(160) {
        Some((at, _)) => format!("{}…", line[..at].trim_end()),
        None => line.to_owned(),
    }
}

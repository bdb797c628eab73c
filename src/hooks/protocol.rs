//! The agents' hook protocols: each agent's stdin payload parsed into one
//! [`HookCall`], and toolgate's [`Answer`] rendered the way that agent
//! reads it (stdout JSON and exit code). Pure functions, one module per
//! agent; the formats and the pages they come from are in `docs/hooks.md`.

use serde_json::Value;

use super::call::{Answer, Decision, HookCall, Phase};
use super::{HookAgent, claude_code, cursor, gemini_cli};

/// A payload the hook could not use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{agent} hook payload {problem}")]
pub struct HookInputError {
    /// The agent whose payload it was (its display name).
    pub agent: &'static str,
    /// What is wrong with it, completing "… hook payload …".
    pub problem: String,
    /// The event, when the payload named one: the safe answer is then
    /// given in that event's format.
    pub event: Option<String>,
}

impl HookInputError {
    pub(super) fn new(agent: HookAgent, event: Option<&str>, problem: impl Into<String>) -> Self {
        Self {
            agent: agent.display_name(),
            problem: problem.into(),
            event: event.map(str::to_owned),
        }
    }
}

/// A payload, understood.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The event as the agent named it (`PreToolUse`, `beforeShellExecution`).
    pub event: String,
    /// The call it reports.
    pub call: HookCall,
    /// The call is one of toolgate's own MCP tools, which toolgate governs
    /// already: the hook answers [`Decision::Abstain`] without asking.
    pub own_tool: bool,
}

/// What the hook process prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Printed on stdout (empty: print nothing).
    pub stdout: String,
    /// Printed on stderr, one line (empty: nothing).
    pub stderr: String,
    /// The exit code.
    pub exit: u8,
}

impl Rendered {
    pub(super) fn json(v: &Value) -> Self {
        Self {
            stdout: v.to_string(),
            stderr: String::new(),
            exit: 0,
        }
    }

    pub(super) fn empty() -> Self {
        Self {
            stdout: String::new(),
            stderr: String::new(),
            exit: 0,
        }
    }

    /// Exit code 2 with the reason on stderr: the one answer all three
    /// agents read as "block", used when a payload cannot be read far
    /// enough to answer in its own format.
    pub(super) fn block(reason: &str) -> Self {
        Self {
            stdout: String::new(),
            stderr: reason.to_owned(),
            exit: 2,
        }
    }

    /// Adds a line for the person on stderr (the agents show it in their
    /// logs or verbose output; it never changes the decision).
    pub fn with_note(mut self, note: &str) -> Self {
        self.stderr = note.to_owned();
        self
    }
}

/// Parses `agent`'s hook payload. Unknown fields are ignored.
///
/// # Errors
/// Not JSON, not an object, an event toolgate does not handle, or a
/// field it needs missing or of the wrong type.
pub fn parse(agent: HookAgent, stdin: &[u8]) -> Result<Parsed, HookInputError> {
    let value: Value = serde_json::from_slice(stdin)
        .map_err(|e| HookInputError::new(agent, None, format!("is not JSON ({e})")))?;
    if !value.is_object() {
        return Err(HookInputError::new(agent, None, "is not a JSON object"));
    }
    match agent {
        HookAgent::ClaudeCode => claude_code::parse(value),
        HookAgent::Cursor => cursor::parse(value),
        HookAgent::GeminiCli => gemini_cli::parse(value),
    }
}

/// `answer` to a before-event, or the (silent) reply to an after-event,
/// in `agent`'s format.
pub fn render(agent: HookAgent, event: &str, phase: Phase, answer: &Answer) -> Rendered {
    if phase == Phase::After {
        return match agent {
            HookAgent::ClaudeCode => Rendered::empty(),
            HookAgent::Cursor | HookAgent::GeminiCli => Rendered::json(&serde_json::json!({})),
        };
    }
    match agent {
        HookAgent::ClaudeCode => claude_code::render(event, answer),
        HookAgent::Cursor => cursor::render(event, answer),
        HookAgent::GeminiCli => gemini_cli::render(answer),
    }
}

/// The safe answer to a payload that could not be used: in the event's
/// own format when the payload named a before-event (the agent asks its
/// user), else exit code 2, which every agent reads as "block". Never an
/// allow.
pub fn render_unusable(agent: HookAgent, e: &HookInputError) -> Rendered {
    let line = format!("toolgate: {e}");
    let known = e
        .event
        .as_deref()
        .and_then(|event| phase_of(agent, event).map(|phase| (event, phase)));
    match known {
        Some((event, Phase::Before)) => {
            let answer = Answer::new(
                Decision::Ask,
                format!("{line}; toolgate could not judge this call"),
            );
            render(agent, event, Phase::Before, &answer).with_note(&line)
        }
        Some((event, Phase::After)) => render(
            agent,
            event,
            Phase::After,
            &Answer::new(Decision::Abstain, ""),
        )
        .with_note(&line),
        None => Rendered::block(&line),
    }
}

/// Whether `event` is a before- or an after-event of `agent`, if toolgate
/// handles it.
pub fn phase_of(agent: HookAgent, event: &str) -> Option<Phase> {
    match agent {
        HookAgent::ClaudeCode => claude_code::phase_of(event),
        HookAgent::Cursor => cursor::phase_of(event),
        HookAgent::GeminiCli => gemini_cli::phase_of(event),
    }
}

/// The payload's `hook_event_name` and its phase, or the error saying which
/// events toolgate handles (those it installs, [`super::install_spec`]).
pub(super) fn event_of(agent: HookAgent, v: &Value) -> Result<(String, Phase), HookInputError> {
    let event = v
        .get("hook_event_name")
        .and_then(Value::as_str)
        .ok_or_else(|| HookInputError::new(agent, None, "has no `hook_event_name`"))?;
    match phase_of(agent, event) {
        Some(phase) => Ok((event.to_owned(), phase)),
        None => Err(HookInputError::new(
            agent,
            None,
            format!(
                "is for {event}, which toolgate does not handle (it handles {})",
                handled(agent)
            ),
        )),
    }
}

/// "PreToolUse, PostToolUse and PostToolUseFailure": the events toolgate
/// installs for `agent`.
fn handled(agent: HookAgent) -> String {
    let names: Vec<&str> = super::install_spec(agent).iter().map(|e| e.event).collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "no events".to_owned(),
    }
}

/// The value as text: a string as it is, anything else as compact JSON.
pub(super) fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A string field of `v`, or the error naming it.
pub(super) fn str_field<'a>(
    agent: HookAgent,
    event: &str,
    v: &'a Value,
    field: &str,
) -> Result<&'a str, HookInputError> {
    match v.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(HookInputError::new(
            agent,
            Some(event),
            format!("for {event} has `{field}` that is not a string"),
        )),
        None => Err(HookInputError::new(
            agent,
            Some(event),
            format!("for {event} has no `{field}`"),
        )),
    }
}

/// An optional string field of `v` (absent or null: empty).
pub(super) fn opt_str(v: &Value, field: &str) -> String {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;

//! The tool definition and the small types it is made of.

use std::borrow::Borrow;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A JSON object, as MCP and JSON Schema use it.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// A tool name that obeys the rule `^[A-Za-z0-9_-]{1,64}$` (the same
/// rule MCP clients such as Claude enforce). Holding a `ToolName` proves the
/// name was checked; cloning it is a reference-count bump.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, ts_rs::TS)]
#[serde(transparent)]
pub struct ToolName(Arc<str>);

/// Why a string is not a valid [`ToolName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    /// Empty string.
    #[error("tool name is empty")]
    Empty,
    /// Longer than 64 bytes.
    #[error("tool name `{0}` is longer than 64 characters")]
    TooLong(String),
    /// Contains a character outside `[A-Za-z0-9_-]`.
    #[error("tool name `{name}` contains {ch:?}; only letters, digits, `_` and `-` are allowed")]
    BadChar {
        /// The offending name.
        name: String,
        /// The first bad character.
        ch: char,
    },
}

impl ToolName {
    /// Longest allowed name.
    pub const MAX_LEN: usize = 64;

    /// Checks `name` against the naming rule.
    ///
    /// # Errors
    /// Empty, longer than 64, or a character outside `[A-Za-z0-9_-]`.
    pub fn new(name: &str) -> Result<Self, ToolNameError> {
        if name.is_empty() {
            return Err(ToolNameError::Empty);
        }
        if let Some(ch) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            return Err(ToolNameError::BadChar {
                name: name.to_owned(),
                ch,
            });
        }
        if name.len() > Self::MAX_LEN {
            return Err(ToolNameError::TooLong(name.to_owned()));
        }
        Ok(Self(name.into()))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(&s).map_err(serde::de::Error::custom)
    }
}

impl Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// Where a tool came from. Shown to people and used by policy rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash, ts_rs::TS)]
#[ts(type = "string")]
pub enum Source {
    /// Compiled into toolgate.
    Builtin,
    /// Loaded from a plugin.
    Plugin(Arc<str>),
    /// A tool of a configured upstream MCP server.
    Mcp(Arc<str>),
    /// Registered by a connected agent (gate mode); removed when it leaves.
    Agent(Arc<str>),
}

impl Source {
    /// `builtin`, `plugin:NAME`, `mcp:SERVER` or `agent:ID`: the Display
    /// form, joined rather than formatted (trust-wrapping writes it into
    /// every external call's output).
    pub fn label(&self) -> Cow<'static, str> {
        match self.parts() {
            (kind, "") => Cow::Borrowed(kind),
            (kind, name) => Cow::Owned([kind, name].concat()),
        }
    }

    /// The label's kind (with its colon) and name (empty for built-ins).
    fn parts(&self) -> (&'static str, &str) {
        match self {
            Self::Builtin => ("builtin", ""),
            Self::Plugin(n) => ("plugin:", n),
            Self::Mcp(n) => ("mcp:", n),
            Self::Agent(n) => ("agent:", n),
        }
    }
}

impl Source {
    /// Where the tool comes from, in words: `the upstream server `web``.
    pub fn words(&self) -> String {
        match self {
            Self::Builtin => "toolgate's built-in tools".to_owned(),
            Self::Plugin(n) => format!("the plugin `{n}`"),
            Self::Mcp(n) => format!("the upstream server `{n}`"),
            Self::Agent(n) => format!("the agent `{n}`"),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, name) = self.parts();
        f.write_str(kind)?;
        f.write_str(name)
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// How far a tool's *output* is trusted. `External` and `Untrusted` output is
/// trust-wrapped before the model sees it, because it may carry injected
/// instructions (a web page, an email, a third-party server's text).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// toolgate's own tools that return local data.
    Builtin,
    /// Explicitly trusted by configuration.
    Trusted,
    /// The default for upstream servers and tools that fetch outside content.
    External,
    /// Known to return attacker-controlled content.
    Untrusted,
}

impl Trust {
    /// Whether output must be trust-wrapped.
    pub fn needs_wrapping(self) -> bool {
        matches!(self, Self::External | Self::Untrusted)
    }
}

/// How much harm a call can do; drives policy and approval.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    Default,
    schemars::JsonSchema,
    ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads local, non-secret state.
    #[default]
    Low,
    /// Changes local state in a recoverable way.
    Medium,
    /// Changes state that is hard to undo, or reaches the network.
    High,
    /// Can do anything the user can (shell, code execution).
    Critical,
}

/// MCP tool annotations: hints from the tool's author, never trusted for
/// security decisions (MCP spec: "clients MUST consider tool annotations to
/// be untrusted unless they come from trusted servers").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub destructive_hint: Option<bool>,
    /// Repeating the call with the same arguments has no extra effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world (e.g. the web).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub open_world_hint: Option<bool>,
}

/// What kind of value a guarded parameter holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum GuardKind {
    /// A file-system path that must stay inside the configured roots.
    Path,
    /// A URL that must pass the SSRF guard.
    Url,
    /// A shell command line: it must not steer toolgate itself
    /// (`toolgate approve …`) nor name toolgate's own files.
    Command,
}

/// A top-level argument the guard stage checks before policy runs, so an
/// escape attempt is refused before anyone is asked to approve it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
pub struct ParamGuard {
    /// The argument's name.
    pub arg: String,
    /// What to check.
    pub kind: GuardKind,
    /// What the tool uses when the argument is absent, checked as if the
    /// caller had given it. Without it an absent optional argument is only
    /// checked when the tool runs, after a person may have approved a call
    /// that cannot run (such as `shell_exec` with no roots configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub default: Option<String>,
}

/// Everything the pipeline and the UI need to know about a tool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDef {
    /// Unique name in the registry.
    pub name: ToolName,
    /// What the model reads to decide whether to call it.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Arc<JsonObject>,
    /// JSON Schema of structured output, if the tool declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<JsonObject>>,
    /// Where it came from.
    pub source: Source,
    /// How far its output is trusted.
    pub trust: Trust,
    /// Its base risk, before argument rules.
    pub risk: Risk,
    /// MCP annotations.
    pub annotations: Annotations,
    /// Arguments checked by the path/SSRF guards.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<ParamGuard>,
}

impl ToolDef {
    /// A definition with builtin source and trust, low risk, no guards.
    pub fn new(name: ToolName, description: impl Into<String>, input_schema: JsonObject) -> Self {
        Self {
            name,
            description: description.into(),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            source: Source::Builtin,
            trust: Trust::Builtin,
            risk: Risk::Low,
            annotations: Annotations::default(),
            guards: Vec::new(),
        }
    }

    /// Sets the source.
    pub fn with_source(mut self, source: Source) -> Self {
        self.source = source;
        self
    }

    /// Sets the trust level.
    pub fn with_trust(mut self, trust: Trust) -> Self {
        self.trust = trust;
        self
    }

    /// The output schema toolgate lists for this tool: the declared one,
    /// except when the tool's output is trust-wrapped. A listed schema
    /// promises `structuredContent` on every successful result (clients
    /// such as the Python MCP SDK refuse a result without it), and a
    /// wrapped result carries none: a client may show structured content to
    /// the model, and there it would stand outside the wrapper.
    pub fn listed_output_schema(&self) -> Option<&JsonObject> {
        self.output_schema
            .as_deref()
            .filter(|_| !self.trust.needs_wrapping())
    }

    /// Sets the base risk.
    pub fn with_risk(mut self, risk: Risk) -> Self {
        self.risk = risk;
        self
    }

    /// Declares a guarded argument.
    pub fn with_guard(mut self, arg: &str, kind: GuardKind) -> Self {
        self.guards.push(ParamGuard {
            arg: arg.to_owned(),
            kind,
            default: None,
        });
        self
    }

    /// Declares a guarded optional argument and the value the tool uses
    /// when it is absent (`""` for a path: the first root), so the guard
    /// checks that value before policy runs.
    pub fn with_guard_default(mut self, arg: &str, kind: GuardKind, default: &str) -> Self {
        self.guards.push(ParamGuard {
            arg: arg.to_owned(),
            kind,
            default: Some(default.to_owned()),
        });
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_labelled_as_it_is_displayed() {
        let sources = [
            (Source::Builtin, "builtin"),
            (Source::Plugin("p".into()), "plugin:p"),
            (Source::Mcp("web".into()), "mcp:web"),
            (Source::Agent("a-1".into()), "agent:a-1"),
        ];
        for (source, text) in sources {
            assert_eq!(source.label(), text);
            assert_eq!(source.to_string(), text);
        }
    }

    #[test]
    fn names_follow_the_rule() {
        assert!(ToolName::new("fs_read").is_ok());
        assert!(ToolName::new("a-B_9").is_ok());
        assert_eq!(ToolName::new(""), Err(ToolNameError::Empty));
        assert!(matches!(
            ToolName::new("a.b"),
            Err(ToolNameError::BadChar { ch: '.', .. })
        ));
        assert!(matches!(
            ToolName::new("é"),
            Err(ToolNameError::BadChar { .. })
        ));
        assert!(ToolName::new(&"a".repeat(64)).is_ok());
        assert!(matches!(
            ToolName::new(&"a".repeat(65)),
            Err(ToolNameError::TooLong(_))
        ));
    }

    #[test]
    fn source_displays_with_prefix() {
        assert_eq!(Source::Mcp("git".into()).to_string(), "mcp:git");
        assert_eq!(Source::Agent("a1".into()).to_string(), "agent:a1");
        assert_eq!(Source::Builtin.to_string(), "builtin");
    }
}

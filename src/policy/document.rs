//! Editing the policy part of the config file: what the console's Policy
//! view reads, checks and writes back: the allow/deny lists and argument
//! rules, applied without a restart and saved to the file with its comments.
//!
//! Contract:
//! - [`PolicyDoc`] is the editable part: `allowed_tools`, `denied_tools`,
//!   and in `[policy]` the preset, `ask_at`, `approval_timeout_s` and the
//!   argument rules (`[[policy.rules]]`). Everything else in the file
//!   (servers, limits, caller profiles, `[tools.NAME]`) is left as written.
//! - [`render`] writes a doc into the file's text with `toml_edit`, so
//!   comments, key order and formatting survive. A value that did not
//!   change is not touched, so an unchanged doc renders byte-identical
//!   text; a changed value keeps the comment written after it. Rule entries
//!   are matched by position: comments above `[[policy.rules]]` stay with
//!   the n-th entry.
//! - [`validate`] checks the rendered text with the code that loads the
//!   config ([`Config::parse`]), plus what the engine checks at start: the
//!   lists compile and the allowlist leaves at least one registered tool
//!   visible. Every problem names its field in the doc
//!   (`rules[2].regex`), so a form can point at it.
//! - [`save`] replaces the file atomically: a temporary file in the same
//!   directory with the old file's mode, synced, then renamed over it.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, Item, Table, TableLike, Value};
use ts_rs::TS;

use crate::config::raw::{RawConfig, RawRule};
use crate::config::{Config, ConfigError};
use crate::pipeline::allowlist::ToolFilter;
use crate::policy::Preset;
use crate::policy::Verdict;
use crate::tool::Risk;

/// The editable policy: allow/deny lists, preset, thresholds and rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct PolicyDoc {
    /// The live policy version this was read at (see `PolicyHandle`);
    /// ignored when validating.
    #[serde(default)]
    #[ts(type = "number")]
    pub version: u64,
    /// Tool-name globs that are visible; `null` = every tool.
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    /// Tool-name globs that are never visible; beats the allowlist.
    #[serde(default)]
    pub denied_tools: Vec<String>,
    /// The permission preset.
    #[serde(default)]
    #[ts(type = "\"read_only\" | \"strict\" | \"default\" | \"autonomous\"")]
    pub preset: Preset,
    /// Risk at or above which a person is asked (overrides the preset's).
    #[serde(default)]
    #[ts(type = "\"low\" | \"medium\" | \"high\" | \"critical\" | null")]
    pub ask_at: Option<Risk>,
    /// Seconds a person has to answer; `null` = the default (120).
    #[serde(default)]
    #[ts(type = "number | null")]
    pub approval_timeout_s: Option<u64>,
    /// `[[policy.rules]]`, in order.
    #[serde(default)]
    pub rules: Vec<RuleDoc>,
}

/// One `[[policy.rules]]` entry, with the file's keys (see docs/policy.md,
/// Config): a tool glob, optionally `arg` with one of `glob`, `path` or
/// `regex` (and `negate`), and one of `risk` or `verdict`. The same shape
/// as the file, so a person's knowledge of one carries to the other and
/// the config loader's checks (and key paths) apply unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RuleDoc {
    /// Tool-name glob.
    pub tool: String,
    /// JSON pointer (`/command`) or top-level name (`command`).
    #[serde(default)]
    pub arg: Option<String>,
    /// Whole-string glob on the argument.
    #[serde(default)]
    pub glob: Option<String>,
    /// Path glob on the normalised argument (`~` expanded).
    #[serde(default)]
    pub path: Option<String>,
    /// Regular expression on the argument (unanchored).
    #[serde(default)]
    pub regex: Option<String>,
    /// The rule applies when the argument does *not* match.
    #[serde(default)]
    pub negate: bool,
    /// The call's risk when this matches.
    #[serde(default)]
    #[ts(type = "\"low\" | \"medium\" | \"high\" | \"critical\" | null")]
    pub risk: Option<Risk>,
    /// Decide outright when this matches.
    #[serde(default)]
    #[ts(type = "\"allow\" | \"deny\" | \"ask\" | null")]
    pub verdict: Option<Verdict>,
    /// Approval timeout when this rule makes the call ask.
    #[serde(default)]
    #[ts(type = "number | null")]
    pub timeout_s: Option<u64>,
    /// Why, shown to people.
    #[serde(default)]
    pub reason: Option<String>,
}

impl From<&RawRule> for RuleDoc {
    fn from(r: &RawRule) -> Self {
        Self {
            tool: r.tool.clone(),
            arg: r.arg.clone(),
            glob: r.glob.clone(),
            path: r.path.clone(),
            regex: r.regex.clone(),
            negate: r.negate,
            risk: r.risk,
            verdict: r.verdict,
            timeout_s: r.timeout_s,
            reason: r.reason.clone(),
        }
    }
}

/// One problem, with the doc field it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct FieldError {
    /// The field (`allowed_tools[1]`, `rules[2].regex`); `None` when
    /// the problem is with the file as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl FieldError {
    fn at(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    fn file(message: impl Into<String>) -> Self {
        Self {
            field: None,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A doc that passed [`validate`]: the text to write and what it means.
#[derive(Debug, Clone)]
pub struct Validated {
    /// The whole new file.
    pub text: String,
    /// The new file, validated (command-line overrides applied).
    pub config: Config,
    /// The allow/deny lists that will be in force.
    pub filter: ToolFilter,
    /// Patterns that match no registered tool (errors in strict mode).
    pub warnings: Vec<String>,
}

/// What [`validate`] checks against besides the text.
pub struct Context<'a> {
    /// The config file (for messages and relative paths).
    pub path: &'a Path,
    /// `TOOLGATE_ALLOWED_TOOLS`, which wins over the file's allowlist.
    pub env_allowed_tools: Option<&'a str>,
    /// The command-line overrides the running config was loaded with.
    pub overrides: &'a (dyn Fn(&mut Config) + Send + Sync),
    /// Names of the registered tools (for "hides every tool" and
    /// unmatched-pattern checks).
    pub tool_names: &'a [&'a str],
}

/// The editable part of the config text.
///
/// # Errors
/// The text does not parse.
pub fn read(text: &str, path: &Path) -> Result<PolicyDoc, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string().trim_end().to_owned(),
    })?;
    Ok(PolicyDoc {
        version: 0,
        allowed_tools: raw.allowed_tools,
        denied_tools: raw.denied_tools,
        preset: raw.policy.preset.unwrap_or_default(),
        ask_at: raw.policy.ask_at,
        approval_timeout_s: raw.policy.approval_timeout_s,
        rules: raw.policy.rules.iter().map(RuleDoc::from).collect(),
    })
}

/// `text` with `doc` written into it; see the module doc for what is kept.
///
/// # Errors
/// `text` is not TOML (with toml_edit's message and line).
pub fn render(text: &str, doc: &PolicyDoc) -> Result<String, FieldError> {
    let mut file: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        FieldError::file(format!("the config file does not parse, fix it first: {e}"))
    })?;
    let root = file.as_table_mut();
    match &doc.allowed_tools {
        Some(list) => set_root(root, "allowed_tools", strings(list)),
        None => {
            root.remove("allowed_tools");
        }
    }
    if doc.denied_tools.is_empty() {
        root.remove("denied_tools");
    } else {
        set_root(root, "denied_tools", strings(&doc.denied_tools));
    }
    let wants_table = doc.preset != Preset::default()
        || doc.ask_at.is_some()
        || doc.approval_timeout_s.is_some()
        || !doc.rules.is_empty();
    if !root.contains_key("policy") && !wants_table {
        return Ok(file.to_string());
    }
    let policy = root
        .entry("policy")
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .ok_or_else(|| FieldError::file("`policy` in the config file is not a table"))?;
    if doc.preset != Preset::default() || policy.contains_key("preset") {
        set(policy, "preset", doc.preset.as_str().into());
    }
    set_opt(
        policy,
        "ask_at",
        doc.ask_at.map(|r| crate::policy::risk_str(r).into()),
    );
    set_opt(
        policy,
        "approval_timeout_s",
        doc.approval_timeout_s.map(|s| int(s).into()),
    );
    write_rules(policy, &doc.rules);
    if let Some(Item::Table(t)) = file.as_table_mut().get_mut("policy")
        && t.is_implicit()
        && t.iter().any(|(_, v)| v.is_value())
    {
        // `[[policy.rules]]` alone makes `[policy]` implicit (no header);
        // keys put in it need the header back.
        t.set_implicit(false);
    }
    Ok(file.to_string())
}

/// [`set`] for a top-level key. A new one goes below the file's header
/// comment: in a file with no top-level keys yet, the comment lines that
/// open it belong to its first table in toml_edit's model, and a key
/// inserted at the top would land above them.
fn set_root(root: &mut Table, key: &str, new: Value) {
    let first_key = !root.contains_key(key) && !root.iter().any(|(_, i)| i.is_value());
    set(root, key, new);
    if !first_key {
        return;
    }
    let first_table = root
        .iter()
        .filter_map(|(k, item)| {
            let pos = match item {
                Item::Table(t) => t.position(),
                Item::ArrayOfTables(a) => a.get(0).and_then(Table::position),
                _ => None,
            };
            Some((pos?, k.to_owned()))
        })
        .min();
    let Some((_, name)) = first_table else {
        return;
    };
    let decor = match root.get_mut(&name) {
        Some(Item::Table(t)) => t.decor_mut(),
        Some(Item::ArrayOfTables(a)) => match a.get_mut(0) {
            Some(t) => t.decor_mut(),
            None => return,
        },
        _ => return,
    };
    let header = decor
        .prefix()
        .and_then(|p| p.as_str())
        .filter(|p| p.contains('#'))
        .map(str::to_owned);
    if let Some(header) = header {
        decor.set_prefix("\n");
        if let Some(mut k) = root.key_mut(key) {
            k.leaf_decor_mut().set_prefix(header);
        }
    }
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn strings(list: &[String]) -> Value {
    Value::Array(list.iter().map(String::as_str).collect())
}

/// Sets `key` unless it already holds an equal value; a replaced value
/// keeps its comment.
fn set(t: &mut dyn TableLike, key: &str, new: Value) {
    match t.get_mut(key) {
        Some(Item::Value(old)) if same(old, &new) => {}
        Some(Item::Value(old)) => {
            let decor = old.decor().clone();
            *old = new;
            *old.decor_mut() = decor;
        }
        _ => {
            t.insert(key, Item::Value(new));
        }
    }
}

fn set_opt(t: &mut dyn TableLike, key: &str, new: Option<Value>) {
    match new {
        Some(v) => set(t, key, v),
        None => {
            t.remove(key);
        }
    }
}

/// Semantic equality of TOML values (toml_edit compares no values).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.value() == y.value(),
        (Value::Integer(x), Value::Integer(y)) => x.value() == y.value(),
        (Value::Boolean(x), Value::Boolean(y)) => x.value() == y.value(),
        (Value::Float(x), Value::Float(y)) => x.value() == y.value(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
        }
        _ => false,
    }
}

fn write_rules(policy: &mut dyn TableLike, rules: &[RuleDoc]) {
    if rules.is_empty() {
        policy.remove("rules");
        return;
    }
    match policy.get_mut("rules") {
        Some(Item::ArrayOfTables(aot)) => {
            for (i, rule) in rules.iter().enumerate() {
                match aot.get_mut(i) {
                    Some(t) => fill(t, rule),
                    None => {
                        let mut t = Table::new();
                        fill(&mut t, rule);
                        aot.push(t);
                    }
                }
            }
            while aot.len() > rules.len() {
                aot.remove(aot.len() - 1);
            }
        }
        Some(Item::Value(Value::Array(list))) => {
            // An inline `rules = [{…}, …]`: rewritten as one, entry by entry.
            let mut new = toml_edit::Array::new();
            for (i, rule) in rules.iter().enumerate() {
                let mut t = match list.get(i) {
                    Some(Value::InlineTable(t)) => t.clone(),
                    _ => toml_edit::InlineTable::new(),
                };
                fill(&mut t, rule);
                new.push(t);
            }
            *list = new;
        }
        _ => {
            let mut aot = toml_edit::ArrayOfTables::new();
            for rule in rules {
                let mut t = Table::new();
                fill(&mut t, rule);
                aot.push(t);
            }
            policy.insert("rules", Item::ArrayOfTables(aot));
        }
    }
}

/// Writes one rule into its table, key by key.
fn fill(t: &mut dyn TableLike, r: &RuleDoc) {
    set(t, "tool", r.tool.as_str().into());
    let str_keys = [
        ("arg", &r.arg),
        ("glob", &r.glob),
        ("path", &r.path),
        ("regex", &r.regex),
    ];
    for (key, v) in str_keys {
        set_opt(t, key, v.as_deref().map(Value::from));
    }
    if r.negate || t.contains_key("negate") {
        set(t, "negate", r.negate.into());
    }
    set_opt(t, "risk", r.risk.map(|v| crate::policy::risk_str(v).into()));
    set_opt(t, "verdict", r.verdict.map(|v| v.as_str().into()));
    set_opt(t, "timeout_s", r.timeout_s.map(|s| int(s).into()));
    set_opt(t, "reason", r.reason.as_deref().map(Value::from));
}

/// Renders `doc` into `text` and checks the result as the config loader
/// and the engine would.
///
/// # Errors
/// Every problem found, each with its field.
pub fn validate(
    text: &str,
    doc: &PolicyDoc,
    cx: &Context<'_>,
) -> Result<Validated, Vec<FieldError>> {
    let new_text = render(text, doc).map_err(|e| vec![e])?;
    let mut config = match Config::parse(&new_text, cx.path) {
        Ok(c) => c,
        Err(ConfigError::Invalid { problems, .. }) => {
            return Err(problems.iter().map(|p| field_error(p)).collect());
        }
        Err(e) => return Err(vec![FieldError::file(e.to_string())]),
    };
    (cx.overrides)(&mut config);
    let filter = ToolFilter::from_sources(
        cx.env_allowed_tools,
        config.allowed_tools.clone(),
        config.denied_tools.clone(),
    )
    .map_err(|e| vec![FieldError::at("allowed_tools", e.to_string())])?;
    let mut errors = Vec::new();
    let visible = cx
        .tool_names
        .iter()
        .filter(|n| filter.permits(n).is_ok())
        .count();
    if !cx.tool_names.is_empty() && visible == 0 {
        // Blame the denylist only when the allowlist alone leaves a tool.
        let allow_only = ToolFilter::from_sources(
            cx.env_allowed_tools,
            config.allowed_tools.clone(),
            Vec::new(),
        );
        let allow_leaves_some =
            allow_only.is_ok_and(|f| cx.tool_names.iter().any(|n| f.permits(n).is_ok()));
        let field = if allow_leaves_some {
            "denied_tools"
        } else {
            "allowed_tools"
        };
        errors.push(FieldError::at(
            field,
            format!(
                "these lists hide every one of the {} registered tools, so agents could call \
                 nothing; allow at least one (\"*\" allows all)",
                cx.tool_names.len()
            ),
        ));
    }
    let warnings = filter.unmatched(cx.tool_names);
    if config.strict && !warnings.is_empty() {
        errors.push(FieldError::at(
            "allowed_tools",
            format!(
                "strict mode: patterns match no registered tool: {}",
                warnings.join(", ")
            ),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Validated {
        text: new_text,
        config,
        filter,
        warnings,
    })
}

/// A config problem (`policy.rules[2].regex: bad re pattern …`) as a
/// doc field error (`rules[2].regex`): the doc has the file's keys, so
/// only the `policy.` table prefix goes.
fn field_error(problem: &str) -> FieldError {
    match problem.split_once(": ") {
        Some((key, message)) if !key.contains(' ') => {
            FieldError::at(key.strip_prefix("policy.").unwrap_or(key), message)
        }
        _ => FieldError::file(problem),
    }
}

/// A unified diff of the file, `before` → `after` (empty when equal).
pub fn diff(before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header("config.toml (running)", "config.toml (edited)")
        .to_string()
}

/// Replaces `path` with `text` atomically: a reader (the watcher, an
/// editor) sees the old file or the new one, never half of it. The new
/// file gets the old one's permission bits (`0600` for a new file: a
/// config may name secrets). A symlinked config is written where the link
/// points, so the link survives.
///
/// # Errors
/// The write, sync or rename failed; the old file is then untouched and
/// the temporary file removed.
pub fn save(path: &Path, text: &str) -> std::io::Result<()> {
    crate::atomic_file::replace(path, text.as_bytes()).map(drop)
}

#[cfg(test)]
#[path = "document_tests.rs"]
mod tests;

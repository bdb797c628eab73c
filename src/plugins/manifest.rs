//! `plugin.toml`: what one plugin declares, as written.
//!
//! Every table is closed (`deny_unknown_fields`): a misspelt key is an
//! error naming the key and its line, not a setting silently ignored. The
//! file carries `manifest_version` so a later format can be told apart
//! from this one; only version 1 is understood.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::tool::{JsonObject, Risk, Trust};

/// The manifest format this toolgate reads.
pub const MANIFEST_VERSION: u32 = 1;

/// The file every plugin folder holds.
pub const MANIFEST_FILE: &str = "plugin.toml";

/// A parsed `plugin.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Must be [`MANIFEST_VERSION`].
    pub manifest_version: u32,
    /// What the plugin is for, for people.
    #[serde(default)]
    pub description: String,
    /// Command tools (`[[tools]]`).
    #[serde(default)]
    pub tools: Vec<CommandToolSpec>,
    /// BEFORE/AFTER hook commands (`[[hooks]]`).
    #[serde(default)]
    pub hooks: Vec<HookSpec>,
    /// MCP servers (`[[servers]]`), with every option of the config's
    /// `[[servers]]`, validated by the same code.
    #[serde(default)]
    pub servers: Vec<crate::config::servers::RawServer>,
}

/// One `[[tools]]` entry: a program run once per call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandToolSpec {
    /// The tool's name in the registry.
    pub name: String,
    /// What the model reads.
    pub description: String,
    /// The program and its arguments; a first element starting with `./`
    /// is relative to the plugin's folder. No shell runs it.
    pub command: Vec<String>,
    /// JSON Schema of the arguments (an object schema); default: any object.
    #[serde(default)]
    pub input_schema: Option<JsonObject>,
    /// Base risk for policy; default `medium` (a plugin runs code).
    #[serde(default)]
    pub risk: Option<Risk>,
    /// How far its output is trusted, when the config trusts the plugin;
    /// an untrusted plugin's tools are `untrusted` whatever this says.
    #[serde(default)]
    pub trust: Option<Trust>,
    /// Per-call timeout (default 30 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookWhen {
    /// Before the call: may block it or rewrite its arguments.
    Before,
    /// After a successful call: may block or rewrite its result.
    After,
}

/// One `[[hooks]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// Shown in the audit and the waterfall as `plugin/name`.
    pub name: String,
    /// `before` or `after`.
    pub when: HookWhen,
    /// The program and its arguments, as for tools.
    pub command: Vec<String>,
    /// Tool-name globs it applies to; default every tool.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// How long it may take (default 5 s); past it a BEFORE hook blocks.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Why a manifest was not loaded: its file, the place in it, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {reason}", .file.display(), place(.line, .column))]
pub struct ManifestError {
    /// The `plugin.toml`.
    pub file: PathBuf,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// What is wrong, naming the key.
    pub reason: String,
}

fn place(line: &Option<usize>, column: &Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

impl ManifestError {
    /// An error about the whole file.
    pub fn whole(file: &Path, reason: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            line: None,
            column: None,
            reason: reason.into(),
        }
    }
}

impl Manifest {
    /// Parses `text`, the contents of `file`, and checks what serde cannot.
    ///
    /// # Errors
    /// Bad TOML, an unknown key, a wrong type, an unknown version, or an
    /// entry that cannot work (empty command, non-object schema, bad glob).
    pub fn parse(text: &str, file: &Path) -> Result<Self, ManifestError> {
        let manifest: Self = toml::from_str(text).map_err(|e| located(&e, text, file))?;
        if manifest.manifest_version != MANIFEST_VERSION {
            let line = line_of(text, "manifest_version");
            return Err(ManifestError {
                line,
                column: line.map(|_| 1),
                ..ManifestError::whole(
                    file,
                    format!(
                        "manifest_version {} is not understood; this toolgate reads version {MANIFEST_VERSION}",
                        manifest.manifest_version
                    ),
                )
            });
        }
        manifest.check(text, file)?;
        Ok(manifest)
    }

    /// The manifest's servers, validated as the config validates its own.
    ///
    /// # Errors
    /// Every problem, each naming its `servers[i].key`.
    pub fn server_specs(
        &self,
        text: &str,
        file: &Path,
    ) -> Result<Vec<crate::config::servers::ServerSpec>, ManifestError> {
        let mut problems = Vec::new();
        let specs = crate::config::servers::validate(&self.servers, &mut problems);
        if problems.is_empty() {
            return Ok(specs);
        }
        let line = line_of(text, "[[servers]]");
        Err(ManifestError {
            line,
            column: line.map(|_| 1),
            ..ManifestError::whole(file, problems.join("; "))
        })
    }

    fn check(&self, text: &str, file: &Path) -> Result<(), ManifestError> {
        let at = |name: &str, reason: String| {
            let line = line_of(text, &format!("\"{name}\""));
            ManifestError {
                line,
                column: line.map(|_| 1),
                ..ManifestError::whole(file, reason)
            }
        };
        for t in &self.tools {
            if t.command.is_empty() || t.command[0].is_empty() {
                return Err(at(&t.name, format!("tools `{}`: command is empty", t.name)));
            }
            if let Err(e) = crate::tool::ToolName::new(&t.name) {
                return Err(at(&t.name, format!("tools `{}`: {e}", t.name)));
            }
        }
        for h in &self.hooks {
            if h.command.is_empty() || h.command[0].is_empty() {
                return Err(at(&h.name, format!("hooks `{}`: command is empty", h.name)));
            }
            for g in h.tools.iter().flatten() {
                if let Err(e) = globset::Glob::new(g) {
                    return Err(at(
                        &h.name,
                        format!("hooks `{}`: tool glob `{g}`: {e}", h.name),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// toml's error with its span turned into a line and column.
fn located(e: &toml::de::Error, text: &str, file: &Path) -> ManifestError {
    let (line, column) = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            (Some(line), Some(column))
        }
        None => (None, None),
    };
    ManifestError {
        file: file.to_owned(),
        line,
        column,
        reason: e.message().trim().to_owned(),
    }
}

/// The first line holding `needle`, 1-based.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;

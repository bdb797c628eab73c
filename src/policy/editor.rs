//! The running engine's policy editor: what the console's Policy view reads,
//! checks and applies: the allowlist, denylist and argument rules apply
//! without a restart and are saved to the config file
//! (docs/architecture/decisions.md, "Policy edits are written into the
//! file, then applied").
//!
//! Contract:
//! - [`PolicyEditor::read`] is the file's editable part ([`PolicyDoc`]) with
//!   the live policy version it was read at.
//! - [`PolicyEditor::validate`] changes nothing; it answers the problems by
//!   field and the diff the edit would write.
//! - [`PolicyEditor::apply`] takes the version the edit was based on; if the
//!   policy moved since (another edit, a reload of the file), it refuses
//!   with [`EditError::Conflict`] and changes nothing. Otherwise it validates,
//!   writes the file (atomically, comments kept), and only then swaps the
//!   running policy and allow/deny lists: an edit that fails validation or
//!   cannot be written leaves both the file and the engine as they were.
//!   Agents get `tools/list_changed` when the visible tools changed.
//! - The policy version moves by exactly one per applied edit: the write
//!   goes through the config watcher's [`ConfigWriter`], so the watcher does
//!   not reload it. An outside edit of the file in between still reloads
//!   (and moves the version), which is what makes a later stale edit fail.
//! - Pipeline limits (`[pipeline]`, `[tools.NAME]` limits) and `[builtin]`
//!   still apply from the next start; answers say so ([`RESTART_NEEDED`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

use super::document::{self, Context, FieldError, PolicyDoc, Validated};
use crate::Engine;
use crate::config::Config;
use crate::config::watch::ConfigWriter;
use crate::policy::{Effect, PolicyConfig, Preset, risk_str};

/// What the console changes live but other parts of the file do not.
pub const RESTART_NEEDED: [&str; 3] = [
    "[pipeline] and [tools.NAME] limits (timeouts, retries, breakers, loop guard, output size)",
    "[builtin] (roots, SSRF exceptions, disabled tools)",
    "strict, strict_schemas and data_dir",
];

/// The command-line adjustments every loaded config gets (see
/// `config::watch::Overrides`), shared with the editor.
pub type SharedOverrides = Arc<dyn Fn(&mut Config) + Send + Sync>;

/// Why an edit was not applied (nothing changed in any of these cases).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The engine runs without a config file path to write to.
    #[error(
        "this engine was started without a config file, so edits cannot be saved; start it with --config FILE"
    )]
    NoConfigFile,
    /// The config file could not be read.
    #[error("cannot read the config file {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The policy changed since the edit was read: applying it would
    /// silently undo the newer change.
    #[error(
        "the policy changed since this edit was started (version {base} → {current}); nothing was saved: review the newer policy, then reload it or save yours over it"
    )]
    Conflict {
        /// The version the edit was based on.
        base: u64,
        /// The version in force.
        current: u64,
    },
    /// The edit does not validate.
    #[error("the edit is invalid: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
    /// The file could not be written.
    #[error("cannot write the config file {}: {source}; nothing was changed", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl EditError {
    /// The console's error code (docs/architecture/console-api.md, Errors).
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoConfigFile => "unavailable",
            Self::Conflict { .. } => "conflict",
            Self::Invalid(_) => "invalid",
            Self::Read { .. } | Self::Write { .. } => "internal",
        }
    }
}

/// The Policy view's data.
#[derive(Debug, Clone, Serialize, TS)]
pub struct PolicyView {
    /// The editable part (its `version` is [`Self::version`] too).
    pub doc: PolicyDoc,
    /// The live policy version: send it back as `base_version`.
    #[ts(type = "number")]
    pub version: u64,
    /// The policy in force, read-only, as text: the preset's thresholds,
    /// caller profiles, and every rule in the order tiers are looked at,
    /// built-in ones included (what the doc does not show).
    pub effective: String,
    /// The config file edits are saved to.
    pub path: Option<String>,
    /// `TOOLGATE_ALLOWED_TOOLS`, when set: it replaces `allowed_tools`
    /// until the engine is restarted without it.
    pub env_allowed_tools: Option<String>,
    /// Settings that are not applied live.
    pub restart_needed: Vec<String>,
}

/// The answer to a validation (which changes nothing).
#[derive(Debug, Clone, Serialize, TS)]
pub struct Validation {
    /// No errors.
    pub ok: bool,
    /// The file diff the edit would write (empty when invalid or equal).
    pub diff: String,
    /// Every problem, with its field.
    pub errors: Vec<FieldError>,
    /// Patterns that match no registered tool.
    pub warnings: Vec<String>,
}

/// The answer to an applied edit.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Applied {
    /// The policy version now in force.
    #[ts(type = "number")]
    pub version: u64,
    /// What was written to the file.
    pub diff: String,
    /// Patterns that match no registered tool.
    pub warnings: Vec<String>,
    /// Settings that are not applied live.
    pub restart_needed: Vec<String>,
}

struct Inner {
    engine: Engine,
    path: Option<PathBuf>,
    env_allowed_tools: Option<String>,
    overrides: SharedOverrides,
    writer: Option<ConfigWriter>,
    /// One apply at a time: the version check and the swap belong together.
    applying: tokio::sync::Mutex<()>,
}

/// The policy editor of one engine. Cloning shares it.
#[derive(Clone)]
pub struct PolicyEditor {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PolicyEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEditor")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl PolicyEditor {
    /// An editor of `engine`'s policy, saved to `path`. `env_allowed_tools`
    /// and `overrides` are what the engine's config was built with, so an
    /// edit is checked as the running config would be. With a `writer`
    /// (from the config watcher), the watcher does not reload the edit.
    pub fn new(
        engine: Engine,
        path: Option<PathBuf>,
        env_allowed_tools: Option<String>,
        overrides: SharedOverrides,
        writer: Option<ConfigWriter>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                engine,
                path,
                env_allowed_tools,
                overrides,
                writer,
                applying: tokio::sync::Mutex::new(()),
            }),
        }
    }

    fn path(&self) -> Result<&Path, EditError> {
        self.inner.path.as_deref().ok_or(EditError::NoConfigFile)
    }

    /// The file's text; a missing file is an empty one (defaults).
    fn text(&self) -> Result<String, EditError> {
        let path = self.path()?;
        match std::fs::read_to_string(path) {
            Ok(t) => Ok(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(source) => Err(EditError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// The editable policy as the file has it, at the live version.
    ///
    /// # Errors
    /// No config file, or it cannot be read or parsed
    /// ([`EditError::Invalid`] with the file's problem).
    pub fn read(&self) -> Result<PolicyView, EditError> {
        let version = self.inner.engine.policy().version();
        let text = self.text()?;
        let mut doc = document::read(&text, self.path()?).map_err(|e| {
            EditError::Invalid(vec![FieldError {
                field: None,
                message: e.to_string(),
            }])
        })?;
        doc.version = version;
        Ok(PolicyView {
            doc,
            version,
            effective: effective(&self.inner.engine.policy().load().config),
            path: self.inner.path.as_ref().map(|p| p.display().to_string()),
            env_allowed_tools: self.inner.env_allowed_tools.clone(),
            restart_needed: restart_needed(),
        })
    }

    fn check(&self, text: &str, doc: &PolicyDoc) -> Result<Validated, Vec<FieldError>> {
        let snapshot = self.inner.engine.registry().snapshot();
        let names: Vec<&str> = snapshot
            .sorted()
            .iter()
            .map(|t| t.def.name.as_str())
            .collect();
        let path = self
            .inner
            .path
            .as_deref()
            .unwrap_or(Path::new("config.toml"));
        document::validate(
            text,
            doc,
            &Context {
                path,
                env_allowed_tools: self.inner.env_allowed_tools.as_deref(),
                overrides: &*self.inner.overrides,
                tool_names: &names,
            },
        )
    }

    /// Checks `doc` against the file and the registered tools; changes
    /// nothing.
    ///
    /// # Errors
    /// No config file, or it cannot be read (a doc's own problems are in
    /// the answer, not an error).
    pub fn validate(&self, doc: &PolicyDoc) -> Result<Validation, EditError> {
        let text = self.text()?;
        Ok(match self.check(&text, doc) {
            Ok(v) => Validation {
                ok: true,
                diff: document::diff(&text, &v.text),
                errors: Vec::new(),
                warnings: v.warnings,
            },
            Err(errors) => Validation {
                ok: false,
                diff: String::new(),
                errors,
                warnings: Vec::new(),
            },
        })
    }

    /// Validates `doc`, saves it to the file and puts it in force, if the
    /// policy is still at `base_version`.
    ///
    /// # Errors
    /// See [`EditError`]; in every case neither the file nor the running
    /// policy changed.
    pub async fn apply(&self, doc: &PolicyDoc, base_version: u64) -> Result<Applied, EditError> {
        let _one = self.inner.applying.lock().await;
        let engine = &self.inner.engine;
        let current = engine.policy().version();
        if current != base_version {
            return Err(EditError::Conflict {
                base: base_version,
                current,
            });
        }
        let path = self.path()?.to_owned();
        let text = self.text()?;
        let v = self.check(&text, doc).map_err(EditError::Invalid)?;
        let diff = document::diff(&text, &v.text);
        // fsync can take a while on a busy disk: off the async workers.
        let (writer, text, config, p2) = (
            self.inner.writer.clone(),
            v.text.clone(),
            v.config.clone(),
            path.clone(),
        );
        let write = tokio::task::spawn_blocking(move || match writer {
            Some(w) => w.write(&text, config),
            None => document::save(&p2, &text),
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        write.map_err(|source| EditError::Write { path, source })?;
        let version = engine.policy().swap(v.config.policy);
        engine.set_filter(v.filter);
        tracing::info!(version, "policy edited from the console");
        Ok(Applied {
            version,
            diff,
            warnings: v.warnings,
            restart_needed: restart_needed(),
        })
    }
}

/// The policy in force, in words (see [`PolicyView::effective`]).
pub fn effective(p: &PolicyConfig) -> String {
    use std::fmt::Write;
    let spec = p.preset.spec();
    let mut out = format!(
        "preset {}: asks at {}{}{}; a person has {} s to answer\n",
        p.preset.as_str(),
        risk_str(p.effective_ask_at()),
        spec.deny_at
            .map(|d| format!(", denies at {}", risk_str(d)))
            .unwrap_or_default(),
        if spec.ask_external {
            ", asks for external tools"
        } else {
            ""
        },
        p.approval_timeout.as_secs(),
    );
    for c in &p.callers {
        let preset = c.preset.map_or("the global preset", Preset::as_str);
        let _ = writeln!(
            out,
            "caller profile {}: {preset}, {} rule(s)",
            c.id,
            c.rules.len()
        );
    }
    for (tier, rules) in [("config", &p.rules), ("built-in", &p.default_rules)] {
        for r in rules {
            let when = r
                .when
                .as_ref()
                .map(|w| format!(" with {}", w.describe()))
                .unwrap_or_default();
            let effect = match r.effect {
                Effect::Risk(risk) => format!("risk {}", risk_str(risk)),
                Effect::Verdict(v) => v.as_str().to_owned(),
            };
            let reason = r
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{tier} rule {}: `{}`{when} → {effect}{reason}",
                r.id, r.tool_glob
            );
        }
    }
    out
}

fn restart_needed() -> Vec<String> {
    RESTART_NEEDED.iter().map(|s| (*s).to_owned()).collect()
}

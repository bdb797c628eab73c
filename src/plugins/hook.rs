//! A plugin's BEFORE/AFTER hook command, as a pipeline [`Hook`].
//!
//! Contract:
//! - It runs through the same spawn path as command tools (the barrier, the
//!   output limit, its own timeout, the group killed at the end), in the
//!   plugin's folder, with one JSON object on stdin: `{"hook": "before",
//!   "tool", "arguments", "caller", "session"}`, or for AFTER hooks
//!   `{"hook": "after", "tool", "result", …}` (the result as a ToolResult).
//! - It answers on stdout with one JSON object: `{"block": "reason"}`,
//!   `{"arguments": {…}}` (BEFORE), `{"result": {…}}` (AFTER, a ToolResult),
//!   or `{}` / nothing to let the call through unchanged.
//! - A hook that exits non-zero, times out, or answers anything else has
//!   failed: [`HookVerdict::Failed`], which blocks before a call (fails
//!   closed) and is noted after one.
//! - It is skipped for tools its `tools` globs do not match.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use globset::GlobSet;
use serde::Deserialize;
use serde_json::{Value, json};

use super::manifest::HookWhen;
use crate::barrier::Barrier;
use crate::builtin::shell::{Program, run_program};
use crate::pipeline::hooks::{Hook, HookCall, HookVerdict};
use crate::tool::{ToolDef, ToolResult};

/// Timeout of a hook whose manifest gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// One hook command.
#[derive(Debug)]
pub struct CommandHook {
    /// `plugin/hook`: shown in notes, blocks and the audit.
    pub name: String,
    /// Before or after.
    pub when: HookWhen,
    /// Program and arguments, the program resolved.
    pub argv: Vec<String>,
    /// The plugin's folder.
    pub dir: PathBuf,
    /// Tools it applies to; `None`: all.
    pub tools: Option<GlobSet>,
    /// How long it may take.
    pub timeout: Duration,
    /// What confines it.
    pub barrier: Barrier,
    /// Told each time it fails.
    pub failed: FailureSink,
}

/// Where a hook's failures are reported, as one line for a person.
#[derive(Clone)]
pub struct FailureSink(std::sync::Arc<dyn Fn(String) + Send + Sync>);

impl FailureSink {
    /// A sink calling `f` with each failure's line.
    pub fn new(f: impl Fn(String) + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(f))
    }
}

impl std::fmt::Debug for FailureSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FailureSink")
    }
}

/// What a hook may answer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    block: Option<String>,
    arguments: Option<Value>,
    result: Option<ToolResult>,
}

impl CommandHook {
    /// Runs the program with `input`; its answer, or why it failed (also
    /// reported to the plugin's view).
    async fn ask(&self, input: Value) -> Result<Answer, String> {
        let answer = self.run(input).await;
        if let Err(reason) = &answer {
            let when = match self.when {
                HookWhen::Before => "blocked the call",
                HookWhen::After => "let the result through unchanged",
            };
            (self.failed.0)(format!("`{}` failed and {when}: {reason}", self.name));
        }
        answer
    }

    async fn run(&self, input: Value) -> Result<Answer, String> {
        let argv: Vec<&OsStr> = self.argv.iter().map(OsStr::new).collect();
        let program = Program {
            name: &self.name,
            argv: &argv,
            cwd: &self.dir,
            stdin: Some(input.to_string().into_bytes()),
            limit: self.timeout,
        };
        let ran = run_program(&self.barrier, &program)
            .await
            .map_err(|e| e.to_string())?;
        if !ran.status.success() {
            let stderr = String::from_utf8_lossy(&ran.err.bytes);
            let how = match ran.status.code() {
                Some(code) => format!("code {code}"),
                None => "a signal".to_owned(),
            };
            return Err(format!(
                "its program exited with {how}{}",
                match stderr.trim() {
                    "" => String::new(),
                    s => format!(": {s}"),
                }
            ));
        }
        let out = String::from_utf8_lossy(&ran.out.bytes);
        if out.trim().is_empty() {
            return Ok(Answer::default());
        }
        serde_json::from_str(&out).map_err(|e| {
            format!("its answer is not a hook answer ({e}); expected {{\"block\": …}}, {{\"arguments\": …}}, {{\"result\": …}} or {{}}")
        })
    }

    fn input(&self, call: HookCall<'_>, key: &str, value: Value) -> Value {
        let when = match self.when {
            HookWhen::Before => "before",
            HookWhen::After => "after",
        };
        json!({
            "hook": when,
            "tool": call.tool.name.as_str(),
            key: value,
            "caller": call.ctx.caller.to_string(),
            "session": call.ctx.session.to_string(),
        })
    }
}

impl Hook for CommandHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn applies(&self, tool: &ToolDef) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|g| g.is_match(tool.name.as_str()))
    }

    fn notes_passes(&self, after: bool) -> bool {
        after == (self.when == HookWhen::After)
    }

    fn before<'a>(&'a self, call: HookCall<'a>, args: &'a mut Value) -> BoxFuture<'a, HookVerdict> {
        Box::pin(async move {
            if self.when != HookWhen::Before {
                return HookVerdict::Continue;
            }
            let answer = match self.ask(self.input(call, "arguments", args.clone())).await {
                Ok(a) => a,
                Err(reason) => return HookVerdict::Failed { reason },
            };
            if answer.result.is_some() {
                return HookVerdict::Failed {
                    reason:
                        "a BEFORE hook answered a result; it may block or rewrite the arguments"
                            .into(),
                };
            }
            if let Some(reason) = answer.block {
                return HookVerdict::Block { reason };
            }
            match answer.arguments {
                Some(Value::Object(o)) => *args = Value::Object(o),
                Some(_) => {
                    return HookVerdict::Failed {
                        reason: "its rewritten arguments are not a JSON object".into(),
                    };
                }
                None => {}
            }
            HookVerdict::Continue
        })
    }

    fn after<'a>(
        &'a self,
        call: HookCall<'a>,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, HookVerdict> {
        Box::pin(async move {
            if self.when != HookWhen::After {
                return HookVerdict::Continue;
            }
            let input = self.input(call, "result", json!(&*result));
            let answer = match self.ask(input).await {
                Ok(a) => a,
                Err(reason) => return HookVerdict::Failed { reason },
            };
            if answer.arguments.is_some() {
                return HookVerdict::Failed {
                    reason: "an AFTER hook answered arguments; it may block or rewrite the result"
                        .into(),
                };
            }
            if let Some(reason) = answer.block {
                return HookVerdict::Block { reason };
            }
            if let Some(r) = answer.result {
                *result = r;
            }
            HookVerdict::Continue
        })
    }
}

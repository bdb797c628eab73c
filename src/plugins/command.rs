//! A plugin's command tool: its program runs once per call, with the
//! arguments as JSON on stdin, and answers on stdout.
//!
//! Contract:
//! - It runs through the same spawn path as `shell_exec`
//!   ([`crate::builtin::shell::run_program`]): confined by the barrier's
//!   warden, in the plugin's folder, with the tool's own timeout, stdout and
//!   stderr bounded to the shell's output limit, and its process group
//!   (everything it started) killed when the call ends or is cancelled.
//! - stdout that parses as a `ToolResult` (`{"content": [...], "isError":
//!   …}`) is the result; any other stdout is the result's text. A JSON
//!   object that is not a `ToolResult` is plain text too: a program that
//!   meant a result but misspelt it sees its own output come back.
//! - A non-zero exit is a failed result (`is_error`), with stderr, so the
//!   model can read why; a timeout is [`CallError::Timeout`].

use std::ffi::OsStr;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::barrier::Barrier;
use crate::builtin::shell::{Captured, OUTPUT_LIMIT, Program, Ran, run_program};
use crate::context::CallContext;
use crate::error::CallError;
use crate::tool::{Tool, ToolResult};

/// Timeout of a command tool whose manifest gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The runner of one command tool.
#[derive(Debug)]
pub struct CommandTool {
    /// `plugin/tool`, for messages.
    pub label: String,
    /// Program and arguments, the program already resolved.
    pub argv: Vec<String>,
    /// The plugin's folder: where it runs.
    pub dir: PathBuf,
    /// Per call.
    pub timeout: Duration,
    /// What confines it.
    pub barrier: Barrier,
}

impl Tool for CommandTool {
    fn call<'a>(
        &'a self,
        args: Value,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, CallError>> {
        Box::pin(async move {
            let argv: Vec<&OsStr> = self.argv.iter().map(OsStr::new).collect();
            let program = Program {
                name: &self.label,
                argv: &argv,
                cwd: &self.dir,
                stdin: Some(args.to_string().into_bytes()),
                limit: self.timeout,
            };
            let ran = run_program(&self.barrier, &program).await?;
            Ok(answer(&ran))
        })
    }
}

/// The result a finished program gave.
pub(crate) fn answer(ran: &Ran) -> ToolResult {
    let mut result = if ran.status.success() {
        parse_stdout(&ran.out.bytes)
    } else {
        ToolResult::error(failure(ran))
    };
    if ran.out.dropped > 0 {
        result.content.push(crate::tool::Content::text(format!(
            "[{} more bytes of output dropped; output is capped at {OUTPUT_LIMIT} bytes]",
            ran.out.dropped
        )));
    }
    result
        .meta
        .insert("exit_code".into(), json!(ran.status.code()));
    result
        .meta
        .insert("stdout_dropped".into(), json!(ran.out.dropped));
    result
}

/// stdout as the program meant it: a `ToolResult` (an object with
/// `content`), other JSON objects as JSON, anything else as text. Output
/// that opens like an object but is not valid JSON, or a `content` that is
/// not a result's, is a failed result saying why: the program meant JSON
/// and the model should not get half of it as if it were an answer.
pub(crate) fn parse_stdout(bytes: &[u8]) -> ToolResult {
    let text = String::from_utf8_lossy(bytes);
    if !text.trim_start().starts_with('{') {
        return ToolResult::text(text.into_owned());
    }
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            return ToolResult::error(format!(
                "the plugin's program printed invalid JSON ({e}); it must print a ToolResult object or plain text"
            ));
        }
    };
    if value.get("content").is_none() {
        return ToolResult::json(value);
    }
    match serde_json::from_value::<ToolResult>(value) {
        Ok(r) => r,
        Err(e) => ToolResult::error(format!(
            "the plugin's program printed an object with `content` that is not a ToolResult: {e}"
        )),
    }
}

fn failure(ran: &Ran) -> String {
    let how = match (ran.status.code(), ran.status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => "ended with an unknown status".to_owned(),
    };
    let mut text = format!("the plugin's program {how}");
    append(&mut text, "stderr", &ran.err);
    append(&mut text, "stdout", &ran.out);
    text
}

fn append(text: &mut String, name: &str, c: &Captured) {
    let body = String::from_utf8_lossy(&c.bytes);
    let body = body.trim();
    if !body.is_empty() {
        text.push_str(&format!("\n--- {name} ---\n{body}"));
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;

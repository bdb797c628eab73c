//! How an agent's own tools map onto toolgate's risk model.
//!
//! A shell command is judged like `shell_exec` (its command rules, and
//! self-protection: a command that runs `toolgate` or names its files is
//! refused unasked), a file edit like `fs_write` (the roots, protected
//! paths, the write rules such as `default:write-secret-file`), a file
//! read like `fs_read`, a fetch like `http_fetch` (the SSRF guard). The
//! call is given to the pipeline as that built-in's arguments, so every
//! rule that names the built-in judges the agent's tool the same way.
//! Other tools get a fixed risk. The table is in `docs/hooks.md`.

use serde_json::{Map, Value, json};

use super::HookAgent;
use crate::tool::Risk;

/// The built-in an agent's tool is judged like, or the risk of one that
/// is like none of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    /// Like `shell_exec`.
    Shell,
    /// Like `fs_write`.
    Write,
    /// Like `fs_read`.
    Read,
    /// Like `http_fetch`.
    Fetch,
    /// Like no built-in: this risk, arguments as the agent gave them.
    Other(Risk),
}

impl Judge {
    /// The built-in's name, for the ones judged like one.
    pub fn builtin(self) -> Option<&'static str> {
        match self {
            Judge::Shell => Some("shell_exec"),
            Judge::Write => Some("fs_write"),
            Judge::Read => Some("fs_read"),
            Judge::Fetch => Some("http_fetch"),
            Judge::Other(_) => None,
        }
    }
}

/// An agent's tool call as toolgate judges it.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// What it is judged like.
    pub judge: Judge,
    /// The arguments: the built-in's when it is judged like one.
    pub args: Value,
}

/// How `agent`'s `tool` with `input` is judged.
pub fn map(agent: HookAgent, tool: &str, input: &Value) -> Mapped {
    let judge = match agent {
        HookAgent::ClaudeCode => claude_code(tool),
        HookAgent::Cursor => cursor(tool),
        HookAgent::GeminiCli => gemini_cli(tool),
    };
    let args = match judge {
        Judge::Shell => shell_args(input),
        Judge::Write => write_args(input),
        Judge::Read => read_args(input),
        Judge::Fetch => fetch_args(input),
        Judge::Other(_) => match input {
            Value::Object(_) => input.clone(),
            other => json!({"input": other}),
        },
    };
    Mapped { judge, args }
}

fn claude_code(tool: &str) -> Judge {
    match tool {
        "Bash" => Judge::Shell,
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => Judge::Write,
        "Read" => Judge::Read,
        "WebFetch" => Judge::Fetch,
        "Glob" | "Grep" | "LS" | "TodoWrite" | "Task" | "BashOutput" | "ExitPlanMode" => {
            Judge::Other(Risk::Low)
        }
        "KillShell" | "KillBash" => Judge::Other(Risk::Low),
        "WebSearch" => Judge::Other(Risk::Medium),
        _ => Judge::Other(Risk::Medium),
    }
}

fn cursor(tool: &str) -> Judge {
    match tool {
        "Shell" => Judge::Shell,
        "Read" => Judge::Read,
        _ => Judge::Other(Risk::Medium),
    }
}

fn gemini_cli(tool: &str) -> Judge {
    match tool {
        "run_shell_command" => Judge::Shell,
        "write_file" | "replace" => Judge::Write,
        "read_file" | "read_many_files" => Judge::Read,
        "web_fetch" => Judge::Fetch,
        "glob" | "search_file_content" | "list_directory" | "save_memory" | "write_todos" => {
            Judge::Other(Risk::Low)
        }
        "google_web_search" => Judge::Other(Risk::Medium),
        _ => Judge::Other(Risk::Medium),
    }
}

fn text<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| input.get(k).and_then(Value::as_str))
}

/// `shell_exec`'s arguments: the command line (the agent runs it in its
/// own directory, so no `cwd`; the command is judged as written).
fn shell_args(input: &Value) -> Value {
    json!({"command": text(input, &["command"]).unwrap_or_default()})
}

/// `fs_write`'s arguments: the file, and the text the edit writes (the
/// whole file for a write, the new text for an edit).
fn write_args(input: &Value) -> Value {
    let path = text(
        input,
        &["file_path", "notebook_path", "path", "absolute_path"],
    )
    .unwrap_or_default();
    let content = text(input, &["content", "new_string", "new_source"])
        .map(str::to_owned)
        .or_else(|| multi_edit_text(input))
        .unwrap_or_default();
    json!({"path": path, "content": content})
}

/// A multi-edit's new texts, one after another.
fn multi_edit_text(input: &Value) -> Option<String> {
    let edits = input.get("edits")?.as_array()?;
    let texts: Vec<&str> = edits
        .iter()
        .filter_map(|e| e.get("new_string").and_then(Value::as_str))
        .collect();
    Some(texts.join("\n"))
}

fn read_args(input: &Value) -> Value {
    let path = text(input, &["file_path", "absolute_path", "path"]).unwrap_or_default();
    let mut args = Map::new();
    args.insert("path".into(), Value::String(path.to_owned()));
    Value::Object(args)
}

fn fetch_args(input: &Value) -> Value {
    let url = text(input, &["url"])
        .map(str::to_owned)
        .or_else(|| first_url(text(input, &["prompt"]).unwrap_or_default()))
        .unwrap_or_default();
    json!({"url": url})
}

/// The first http(s) URL in `prompt`: Gemini CLI's `web_fetch` takes the
/// URLs inside its prompt.
fn first_url(prompt: &str) -> Option<String> {
    prompt
        .split_whitespace()
        .find(|w| w.starts_with("http://") || w.starts_with("https://"))
        .map(|w| {
            w.trim_end_matches(['.', ',', ')', ']', '"', '\''])
                .to_owned()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_tools_become_the_builtins_arguments() {
        let bash = map(
            HookAgent::ClaudeCode,
            "Bash",
            &json!({"command": "rm -rf x", "description": "d", "timeout": 5}),
        );
        assert_eq!(
            bash,
            Mapped {
                judge: Judge::Shell,
                args: json!({"command": "rm -rf x"})
            }
        );
        let edit = map(
            HookAgent::ClaudeCode,
            "Edit",
            &json!({"file_path": "/p/a.rs", "old_string": "a", "new_string": "b"}),
        );
        assert_eq!(edit.args, json!({"path": "/p/a.rs", "content": "b"}));
        let multi = map(
            HookAgent::ClaudeCode,
            "MultiEdit",
            &json!({"file_path": "/p/a.rs", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]}),
        );
        assert_eq!(multi.args, json!({"path": "/p/a.rs", "content": "b\nd"}));
        let fetch = map(
            HookAgent::ClaudeCode,
            "WebFetch",
            &json!({"url": "http://10.0.0.1/", "prompt": "x"}),
        );
        assert_eq!(
            fetch,
            Mapped {
                judge: Judge::Fetch,
                args: json!({"url": "http://10.0.0.1/"})
            }
        );
        assert_eq!(
            map(HookAgent::ClaudeCode, "Grep", &json!({"pattern": "x"})).judge,
            Judge::Other(Risk::Low)
        );
        assert_eq!(
            map(HookAgent::ClaudeCode, "mcp__db__query", &json!({})).judge,
            Judge::Other(Risk::Medium)
        );
    }

    #[test]
    fn gemini_and_cursor_tools_map_the_same_way() {
        let shell = map(
            HookAgent::GeminiCli,
            "run_shell_command",
            &json!({"command": "ls", "description": "x"}),
        );
        assert_eq!(shell.args, json!({"command": "ls"}));
        let replace = map(
            HookAgent::GeminiCli,
            "replace",
            &json!({"file_path": "/p/f", "old_string": "a", "new_string": "b"}),
        );
        assert_eq!(
            (replace.judge, replace.args),
            (Judge::Write, json!({"path": "/p/f", "content": "b"}))
        );
        let fetch = map(
            HookAgent::GeminiCli,
            "web_fetch",
            &json!({"prompt": "Summarize https://example.com/a, please"}),
        );
        assert_eq!(fetch.args, json!({"url": "https://example.com/a"}));
        assert_eq!(
            map(HookAgent::Cursor, "Shell", &json!({"command": "ls"})).judge,
            Judge::Shell
        );
        assert_eq!(
            map(HookAgent::Cursor, "MCP:query", &json!("raw")).args,
            json!({"input": "raw"})
        );
    }
}

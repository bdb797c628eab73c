//! Stage 7: path, SSRF and self-protection guards.
//!
//! Tools declare which top-level arguments are paths, URLs or command lines
//! (`ToolDef::guards`). This stage checks them after validation (so they are
//! well-typed) and before policy, so an escape attempt is refused with a
//! precise reason and never put in front of a person for approval. The
//! built-in tools enforce the same rules again when they touch the file
//! system or the network (cap-std, the guarded resolver): this stage is the
//! early, explainable refusal, not the only line.
//!
//! It also keeps governed tools away from toolgate itself
//! ([`crate::guard::protect`]): a path argument that resolves into (or is
//! a hard link to a file in) the config, data or runtime dir, a command
//! that runs `toolgate approve` or names such a path in any spelling a
//! shell expands, and (for tools whose meaning toolgate cannot know) any
//! string argument naming such a path are refused here, never asked. The
//! command lines of shell-like upstream tools
//! ([`crate::guard::shell_like`]) are read as commands too.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::{Call, Enter, Stage};
use crate::barrier::Barrier;
use crate::error::CallError;
use crate::events::StageName;
use crate::guard::path::PathRoots;
use crate::guard::protect::{Protected, Refusal};
use crate::guard::shell_like::ShellLike;
use crate::guard::ssrf::{SsrfConfig, check_url};
use crate::registry::RegisteredTool;
use crate::tool::{GuardKind, Source};

/// Guard settings.
#[derive(Debug)]
pub struct GuardConfig {
    /// Roots for path arguments.
    pub roots: Arc<PathRoots>,
    /// SSRF rules for URL arguments.
    pub ssrf: SsrfConfig,
    /// toolgate's own files and controls, which no governed tool may read,
    /// change or use.
    pub protected: Protected,
    /// The barrier governed processes run under; when it is off and the
    /// config refuses to run unconfined, shell-like tools are refused here.
    pub barrier: Barrier,
    /// `[tools.NAME] shell = true | false`: whether a tool is shell-like,
    /// over what its definition says ([`ShellLike::of`]).
    pub shell_overrides: HashMap<String, bool>,
}

impl Default for GuardConfig {
    /// No roots (every path refused), the strict SSRF defaults, nothing
    /// protected (hosts add their own files through `setup`).
    fn default() -> Self {
        Self {
            roots: Arc::new(PathRoots::empty()),
            ssrf: SsrfConfig::default(),
            protected: Protected::default(),
            barrier: Barrier::unconfined(),
            shell_overrides: HashMap::new(),
        }
    }
}

fn refused(arg: &str, r: &Refusal) -> CallError {
    CallError::GuardDenied {
        arg: arg.to_owned(),
        reason: r.to_string(),
    }
}

impl GuardConfig {
    /// Checks one path or URL argument value; the path, when it passes,
    /// resolved.
    ///
    /// # Errors
    /// [`CallError::GuardDenied`] naming the argument and the reason.
    pub fn check(
        &self,
        arg: &str,
        kind: GuardKind,
        value: &str,
    ) -> Result<Option<PathBuf>, CallError> {
        match kind {
            GuardKind::Path => {
                let confined = self
                    .roots
                    .check(value)
                    .map_err(|e| e.into_call_error(arg))?;
                let path = confined.absolute();
                self.protected
                    .check_path(&path)
                    .map_err(|r| refused(arg, &r))?;
                Ok(Some(path))
            }
            GuardKind::Url => {
                check_url(value, &self.ssrf)
                    .map(|_| None)
                    .map_err(|e| CallError::GuardDenied {
                        arg: arg.to_owned(),
                        reason: e.to_string(),
                    })
            }
            GuardKind::Command => self
                .protected
                .check_command(value)
                .map(|()| None)
                .map_err(|r| refused(arg, &r)),
        }
    }

    /// Whether `tool` runs shell commands, and in which arguments: the
    /// `[tools.NAME] shell` override, else its definition.
    pub fn shell_like(&self, tool: &RegisteredTool) -> Option<ShellLike> {
        match self.shell_overrides.get(tool.def.name.as_str()) {
            Some(false) => None,
            Some(true) => Some(tool.shell_like.clone().unwrap_or(ShellLike {
                command_args: Vec::new(),
            })),
            None => tool.shell_like.clone(),
        }
    }

    /// Checks every string in `args` (any depth) for toolgate's own paths;
    /// for a shell-like tool, its command lines are read as a shell would,
    /// alone and followed by the tool's other strings (a `command` with
    /// its `args` array is one command line). The error names the
    /// top-level argument.
    fn check_strings(&self, args: &Value, shell: Option<&ShellLike>) -> Result<(), CallError> {
        let Value::Object(map) = args else {
            return Ok(());
        };
        let mut all = Vec::new();
        for (arg, value) in map {
            let command = shell.is_some_and(|s| s.holds_command(arg));
            for s in strings(value) {
                let checked = if command {
                    self.protected.check_command(s)
                } else {
                    self.protected.check_text(s)
                };
                checked.map_err(|r| refused(arg, &r))?;
                all.push((arg, command, s));
            }
        }
        let Some(_) = shell else {
            return Ok(());
        };
        let rest: Vec<&str> = all.iter().filter(|a| !a.1).map(|a| a.2).collect();
        for (arg, _, line) in all.iter().filter(|a| a.1) {
            let joined = std::iter::once(*line)
                .chain(rest.iter().copied())
                .collect::<Vec<_>>()
                .join(" ");
            self.protected
                .check_command(&joined)
                .map_err(|r| refused(arg, &r))?;
        }
        Ok(())
    }
}

/// The strings in `value`, at any depth, in order.
fn strings(value: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push(s.as_str()),
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(m) => stack.extend(m.values().rev()),
            _ => {}
        }
    }
    out
}

/// The guards stage.
pub struct Guards {
    config: Arc<GuardConfig>,
}

impl Guards {
    /// A stage with `config`.
    pub fn new(config: Arc<GuardConfig>) -> Self {
        Self { config }
    }

    /// The declared guards of `call`'s tool: paths and URLs first, then
    /// command lines, read in the working directory a path guard named
    /// `cwd` resolved to (`shell_exec`'s).
    fn declared(&self, call: &Call) -> Result<(), CallError> {
        let def = &call.tool.def;
        let mut cwd = None;
        let (commands, others): (Vec<_>, Vec<_>) = def
            .guards
            .iter()
            .partition(|g| g.kind == GuardKind::Command);
        for g in others {
            if let Some(value) = guarded_value(call, g)
                && let Some(path) = self.config.check(&g.arg, g.kind, value)?
                && g.arg == "cwd"
            {
                cwd = Some(path);
            }
        }
        for g in commands {
            if let Some(value) = guarded_value(call, g) {
                self.config
                    .protected
                    .check_command_in(value, cwd.as_deref())
                    .map_err(|r| refused(&g.arg, &r))?;
            }
        }
        Ok(())
    }
}

/// The value a guard checks: the argument, or when it is absent the
/// default the tool declared for it (the tool would use that value); a
/// non-string was already refused by validation.
fn guarded_value<'a>(call: &'a Call, g: &'a crate::tool::ParamGuard) -> Option<&'a str> {
    match call.args.get(&g.arg) {
        Some(Value::String(v)) => Some(v.as_str()),
        None | Some(Value::Null) => g.default.as_deref(),
        Some(_) => None,
    }
}

impl Stage for Guards {
    fn name(&self) -> StageName {
        StageName::Guards
    }

    fn enter(&self, call: &mut Call) -> Enter {
        // An agent's own tool runs inside the agent, never as a process of
        // toolgate's, so the barrier has nothing to confine.
        let runs_here = !matches!(call.tool.def.source, Source::Agent(_));
        if runs_here
            && self.config.barrier.refuses_shell()
            && self.config.shell_like(&call.tool).is_some()
        {
            return Enter::Refuse(CallError::GuardDenied {
                arg: String::new(),
                reason: format!(
                    "`{}` runs commands, and this machine cannot confine them ({}); \
                     `[barrier] when_unavailable = \"run\"` runs them unconfined",
                    call.tool.def.name,
                    self.config.barrier.status().gaps.join("; ")
                ),
            });
        }
        if let Err(e) = self.declared(call) {
            return Enter::Refuse(e);
        }
        // A built-in's arguments mean what its guards say; any other tool
        // could take a path, or a command line, in any string (its
        // read-only hint is only a claim).
        if call.tool.def.source != Source::Builtin && !self.config.protected.is_empty() {
            let shell = self.config.shell_like(&call.tool);
            if let Err(e) = self.config.check_strings(&call.args, shell.as_ref()) {
                return Enter::Refuse(e);
            }
        }
        Enter::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::pipeline::testing::{Script, call_of, def, run_stage};
    use serde_json::json;

    fn guarded() -> crate::tool::ToolDef {
        def("g", json!({"type": "object"}))
            .with_guard("path", GuardKind::Path)
            .with_guard("url", GuardKind::Url)
    }

    fn stage(root: &std::path::Path) -> Guards {
        let roots = PathRoots::new(&[root.to_owned()]).unwrap();
        Guards::new(Arc::new(GuardConfig {
            roots: Arc::new(roots),
            ssrf: SsrfConfig::default(),
            ..GuardConfig::default()
        }))
    }

    /// A stage whose root holds toolgate's data dir `data/` and config
    /// file `config.toml`, so only self-protection guards them.
    fn protecting(root: &std::path::Path) -> Guards {
        Guards::new(Arc::new(protecting_config(root)))
    }

    fn protecting_config(root: &std::path::Path) -> GuardConfig {
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("data/audit.db"), "").unwrap();
        std::fs::write(root.join("config.toml"), "").unwrap();
        let roots = PathRoots::new(&[root.to_owned()]).unwrap();
        let own = crate::guard::protect::OwnFiles::none()
            .config_file(root.join("config.toml"))
            .data_dir(root.join("data"));
        let protected = Protected::new(&own, roots.roots());
        GuardConfig {
            roots: Arc::new(roots),
            ssrf: SsrfConfig::default(),
            protected,
            ..GuardConfig::default()
        }
    }

    fn read_only(def: crate::tool::ToolDef) -> crate::tool::ToolDef {
        def.with_annotations(crate::tool::Annotations {
            read_only_hint: Some(true),
            ..Default::default()
        })
    }

    /// toolgate's own files are refused here, before policy, for reading
    /// as for writing.
    #[tokio::test]
    async fn toolgates_own_files_are_refused_before_policy() {
        let dir = tempfile::tempdir().unwrap();
        let s = protecting(dir.path());
        let script = Script::new(vec![Ok(crate::tool::ToolResult::text("ran"))]);
        let writer = def("w", json!({"type": "object"})).with_guard("path", GuardKind::Path);
        let reader = read_only(writer.clone());
        for (tool, path) in [
            (&writer, "data/new.txt"),
            (&writer, "config.toml"),
            (&writer, "./data/../config.toml"),
            (&reader, "data/audit.db"),
            (&reader, "data"),
        ] {
            let mut call = call_of(tool.clone(), json!({"path": path}));
            let e = run_stage(&s, &mut call, &script).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::GuardDenied, "{path}: {e}");
            assert!(e.to_string().contains("is protected: toolgate's"), "{e}");
        }
        let mut call = call_of(reader, json!({"path": "notes.txt"}));
        assert!(run_stage(&s, &mut call, &script).await.is_ok());
        assert_eq!(script.calls(), 1);
    }

    /// A shell command is read in the directory its `cwd` guard resolved
    /// to, so a relative path into toolgate's files is recognised.
    #[tokio::test]
    async fn a_command_is_read_in_the_working_directory_of_its_call() {
        let dir = tempfile::tempdir().unwrap();
        let s = protecting(dir.path());
        let script = Script::new(vec![Ok(crate::tool::ToolResult::text("ran"))]);
        let shell = def("sh", json!({"type": "object"}))
            .with_guard_default("cwd", GuardKind::Path, "")
            .with_guard("command", GuardKind::Command);
        let mut call = call_of(
            shell.clone(),
            json!({"command": "cat ../config.toml", "cwd": "sub"}),
        );
        let e = run_stage(&s, &mut call, &script).await.unwrap_err();
        assert!(
            e.to_string()
                .starts_with("argument `command` refused: it names `../config.toml`"),
            "{e}"
        );
        let mut call = call_of(shell, json!({"command": "cat ../notes.txt", "cwd": "sub"}));
        assert!(run_stage(&s, &mut call, &script).await.is_ok());
        assert_eq!(script.calls(), 1);
    }

    /// An upstream tool that runs shell commands gets its command line
    /// read as one, with its other strings after it (`command` + `args`).
    #[tokio::test]
    async fn an_upstream_shell_tools_command_is_read_as_a_command() {
        let dir = tempfile::tempdir().unwrap();
        let s = protecting(dir.path());
        let script = Script::new(vec![Ok(crate::tool::ToolResult::text("ran"))]);
        let schema = json!({"type": "object", "properties": {
            "command": {"type": "string"}, "args": {"type": "array"}}});
        let upstream =
            def("srv__execute_command", schema).with_source(crate::tool::Source::Mcp("srv".into()));
        for args in [
            json!({"command": "toolgate approve 1"}),
            json!({"command": "toolgate", "args": ["approve", "1"]}),
            json!({"command": "t''oolgate deny 2"}),
        ] {
            let mut call = call_of(upstream.clone(), args.clone());
            let e = run_stage(&s, &mut call, &script).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::GuardDenied, "{args}: {e}");
            assert!(e.to_string().contains("steers toolgate itself"), "{e}");
        }
        let mut call = call_of(upstream.clone(), json!({"command": "ls", "args": ["-la"]}));
        assert!(run_stage(&s, &mut call, &script).await.is_ok());
        // Told otherwise by `[tools.NAME] shell = false`, only paths count.
        let off = Guards::new(Arc::new(GuardConfig {
            shell_overrides: HashMap::from([("srv__execute_command".to_owned(), false)]),
            ..protecting_config(dir.path())
        }));
        let mut call = call_of(upstream, json!({"command": "toolgate approve 1"}));
        assert!(run_stage(&off, &mut call, &script).await.is_ok());
        assert_eq!(script.calls(), 2);
    }

    /// An upstream tool's arguments mean whatever its server says, and its
    /// read-only hint is only a claim: every string is checked.
    #[tokio::test]
    async fn any_string_of_a_tool_toolgate_cannot_read_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let s = protecting(dir.path());
        let script = Script::new(vec![Ok(crate::tool::ToolResult::text("ran"))]);
        let config = dir.path().join("config.toml").display().to_string();
        let upstream = read_only(
            def("srv__write", json!({"type": "object"}))
                .with_source(crate::tool::Source::Mcp("srv".into())),
        );
        let mut call = call_of(
            upstream.clone(),
            json!({"files": [{"target": config, "text": "x"}]}),
        );
        let e = run_stage(&s, &mut call, &script).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::GuardDenied, "{e}");
        assert!(
            e.to_string().starts_with("argument `files` refused:"),
            "{e}"
        );
        let mut call = call_of(upstream, json!({"files": [{"target": "notes.md"}]}));
        assert!(run_stage(&s, &mut call, &script).await.is_ok());
        assert_eq!(script.calls(), 1);
    }

    #[tokio::test]
    async fn escapes_and_local_urls_are_refused_before_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        let s = stage(dir.path());
        let script = Script::new(vec![]);
        for (args, arg) in [
            (json!({"path": "../etc/passwd"}), "path"),
            (json!({"path": "/etc/passwd"}), "path"),
            (json!({"url": "http://127.0.0.1:9/"}), "url"),
            (
                json!({"url": "http://169.254.169.254/latest/meta-data"}),
                "url",
            ),
            (json!({"url": "file:///etc/passwd"}), "url"),
        ] {
            let mut call = call_of(guarded(), args.clone());
            let e = run_stage(&s, &mut call, &script).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::GuardDenied, "{args}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("argument `{arg}` refused:")),
                "{e}"
            );
        }
        assert_eq!(script.calls(), 0);
    }

    /// An absent argument with a declared default is
    /// checked as that default, so `shell_exec` without roots is refused
    /// here, before policy could ask a person.
    #[tokio::test]
    async fn an_absent_argument_is_checked_as_its_declared_default() {
        let s = Guards::new(Arc::new(GuardConfig::default()));
        let script = Script::new(vec![]);
        let with_default =
            def("g", json!({"type": "object"})).with_guard_default("cwd", GuardKind::Path, "");
        for args in [json!({}), json!({"cwd": null})] {
            let mut call = call_of(with_default.clone(), args);
            let e = run_stage(&s, &mut call, &script).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::GuardDenied, "{e}");
            let text = e.to_string();
            assert!(text.starts_with("argument `cwd` refused:"), "{text}");
            assert!(
                text.contains("[builtin]") && text.contains("roots") && text.contains("--root"),
                "the error names the config key and the flag: {text}"
            );
        }
        assert_eq!(script.calls(), 0);
        // Without a declared default an absent argument is not checked.
        let mut call = call_of(guarded(), json!({}));
        let script = Script::new(vec![Ok(crate::tool::ToolResult::text("ran"))]);
        assert!(run_stage(&s, &mut call, &script).await.is_ok());
    }

    #[tokio::test]
    async fn confined_paths_public_urls_and_absent_args_pass() {
        let dir = tempfile::tempdir().unwrap();
        let s = stage(dir.path());
        let script = Script::new(vec![]);
        for args in [
            json!({"path": "notes/a.txt"}),
            json!({"url": "https://example.com/x"}),
            json!({}),
        ] {
            let mut call = call_of(guarded(), args.clone());
            assert!(run_stage(&s, &mut call, &script).await.is_ok(), "{args}");
        }
        assert_eq!(script.calls(), 3);
    }
}

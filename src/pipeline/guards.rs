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
//! ([`crate::guard::protect`]): a path argument that resolves into the
//! config file, the data dir or the runtime dir, a command that runs
//! `toolgate approve`, and (for tools whose meaning toolgate cannot know)
//! any string argument naming such a path are refused here, never asked.

use std::sync::Arc;

use serde_json::Value;

use super::{Call, Enter, Stage};
use crate::barrier::Barrier;
use crate::error::CallError;
use crate::events::StageName;
use crate::guard::path::PathRoots;
use crate::guard::protect::{Access, Protected, Refusal};
use crate::guard::ssrf::{SsrfConfig, check_url};
use crate::tool::{GuardKind, Source};

/// Guard settings.
#[derive(Debug)]
pub struct GuardConfig {
    /// Roots for path arguments.
    pub roots: Arc<PathRoots>,
    /// SSRF rules for URL arguments.
    pub ssrf: SsrfConfig,
    /// toolgate's own files, which no governed tool may change (or, for
    /// tokens, read).
    pub protected: Protected,
    /// The barrier governed processes run under; when it is off and the
    /// config refuses to run unconfined, shell-like tools are refused here.
    pub barrier: Barrier,
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
    /// Checks one argument value for a tool with `access`.
    ///
    /// # Errors
    /// [`CallError::GuardDenied`] naming the argument and the reason.
    pub fn check(
        &self,
        arg: &str,
        kind: GuardKind,
        value: &str,
        access: Access,
    ) -> Result<(), CallError> {
        match kind {
            GuardKind::Path => {
                let confined = self
                    .roots
                    .check(value)
                    .map_err(|e| e.into_call_error(arg))?;
                self.protected
                    .check_path(&confined.absolute(), access)
                    .map_err(|r| refused(arg, &r))
            }
            GuardKind::Url => {
                check_url(value, &self.ssrf)
                    .map(drop)
                    .map_err(|e| CallError::GuardDenied {
                        arg: arg.to_owned(),
                        reason: e.to_string(),
                    })
            }
            GuardKind::Command => self
                .protected
                .check_command(value)
                .map_err(|r| refused(arg, &r)),
        }
    }

    /// Checks every string in `args` (any depth) for toolgate's own paths;
    /// the error names the top-level argument it was found in.
    fn check_strings(&self, args: &Value) -> Result<(), CallError> {
        let Value::Object(map) = args else {
            return Ok(());
        };
        for (arg, value) in map {
            let mut stack = vec![value];
            while let Some(v) = stack.pop() {
                match v {
                    Value::String(s) => {
                        self.protected.check_text(s).map_err(|r| refused(arg, &r))?
                    }
                    Value::Array(items) => stack.extend(items),
                    Value::Object(m) => stack.extend(m.values()),
                    _ => {}
                }
            }
        }
        Ok(())
    }
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
}

impl Stage for Guards {
    fn name(&self) -> StageName {
        StageName::Guards
    }

    fn enter(&self, call: &mut Call) -> Enter {
        let def = &call.tool.def;
        if self.config.barrier.refuses_shell() && runs_commands(def) {
            return Enter::Refuse(CallError::GuardDenied {
                arg: String::new(),
                reason: format!(
                    "`{}` runs commands, and this machine cannot confine them ({}); \
                     `[barrier] when_unavailable = \"run\"` runs them unconfined",
                    def.name,
                    self.config.barrier.status().gaps.join("; ")
                ),
            });
        }
        let access = Access::of(def);
        for g in &def.guards {
            // An absent optional argument is checked as the default the tool
            // declared for it, if any (the tool would use that value); a
            // non-string was already refused by validation.
            let value = match call.args.get(&g.arg) {
                Some(Value::String(v)) => v.as_str(),
                None | Some(Value::Null) => match &g.default {
                    Some(d) => d.as_str(),
                    None => continue,
                },
                Some(_) => continue,
            };
            if let Err(e) = self.config.check(&g.arg, g.kind, value, access) {
                return Enter::Refuse(e);
            }
        }
        // A built-in's arguments mean what its guards say; any other tool
        // that may change things could take a path in any string.
        if access == Access::Write
            && def.source != Source::Builtin
            && !self.config.protected.is_empty()
            && let Err(e) = self.config.check_strings(&call.args)
        {
            return Enter::Refuse(e);
        }
        Enter::Pass
    }
}

/// Whether `def`'s tool runs command lines it is given, and so needs the
/// barrier to be governed safely.
fn runs_commands(def: &crate::tool::ToolDef) -> bool {
    def.guards.iter().any(|g| g.kind == GuardKind::Command)
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
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("data/audit.db"), "").unwrap();
        std::fs::write(root.join("config.toml"), "").unwrap();
        let roots = PathRoots::new(&[root.to_owned()]).unwrap();
        let own = crate::guard::protect::OwnFiles::none()
            .config_file(root.join("config.toml"))
            .data_dir(root.join("data"));
        let protected = Protected::new(&own, roots.roots());
        Guards::new(Arc::new(GuardConfig {
            roots: Arc::new(roots),
            ssrf: SsrfConfig::default(),
            protected,
            ..GuardConfig::default()
        }))
    }

    fn read_only(def: crate::tool::ToolDef) -> crate::tool::ToolDef {
        def.with_annotations(crate::tool::Annotations {
            read_only_hint: Some(true),
            ..Default::default()
        })
    }

    /// Issue 13, item 7: toolgate's own files are refused here, before
    /// policy; a built-in that only reads may read the data dir.
    #[tokio::test]
    async fn toolgates_own_files_are_refused_before_policy() {
        let dir = tempfile::tempdir().unwrap();
        let s = protecting(dir.path());
        let script = Script::new(vec![Ok(crate::tool::ToolResult::text("ran"))]);
        let writer = def("w", json!({"type": "object"})).with_guard("path", GuardKind::Path);
        for path in ["data/new.txt", "config.toml", "./data/../config.toml"] {
            let mut call = call_of(writer.clone(), json!({"path": path}));
            let e = run_stage(&s, &mut call, &script).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::GuardDenied, "{path}: {e}");
            assert!(e.to_string().contains("is protected: toolgate's"), "{e}");
        }
        let reader = read_only(writer);
        let mut call = call_of(reader, json!({"path": "data/audit.db"}));
        assert!(run_stage(&s, &mut call, &script).await.is_ok());
        assert_eq!(script.calls(), 1);
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

    /// Issue 13, item 6: an absent argument with a declared default is
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

//! Stage 7: path and SSRF guards.
//!
//! Tools declare which top-level arguments are paths or URLs
//! (`ToolDef::guards`). This stage checks them after validation (so they are
//! well-typed) and before policy, so an escape attempt is refused with a
//! precise reason and never put in front of a person for approval. The
//! built-in tools enforce the same rules again when they touch the file
//! system or the network (cap-std, the guarded resolver): this stage is the
//! early, explainable refusal, not the only line.

use std::sync::Arc;

use serde_json::Value;

use super::{Call, Enter, Stage};
use crate::error::CallError;
use crate::events::StageName;
use crate::guard::path::PathRoots;
use crate::guard::ssrf::{SsrfConfig, check_url};
use crate::tool::GuardKind;

/// Guard settings.
#[derive(Debug)]
pub struct GuardConfig {
    /// Roots for path arguments.
    pub roots: Arc<PathRoots>,
    /// SSRF rules for URL arguments.
    pub ssrf: SsrfConfig,
}

impl Default for GuardConfig {
    /// No roots (every path refused) and the strict SSRF defaults.
    fn default() -> Self {
        Self {
            roots: Arc::new(PathRoots::empty()),
            ssrf: SsrfConfig::default(),
        }
    }
}

impl GuardConfig {
    /// Checks one argument value.
    ///
    /// # Errors
    /// [`CallError::GuardDenied`] naming the argument and the reason.
    pub fn check(&self, arg: &str, kind: GuardKind, value: &str) -> Result<(), CallError> {
        match kind {
            GuardKind::Path => self
                .roots
                .check(value)
                .map(drop)
                .map_err(|e| e.into_call_error(arg)),
            GuardKind::Url => {
                check_url(value, &self.ssrf)
                    .map(drop)
                    .map_err(|e| CallError::GuardDenied {
                        arg: arg.to_owned(),
                        reason: e.to_string(),
                    })
            }
        }
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
        for g in &call.tool.def.guards {
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
            if let Err(e) = self.config.check(&g.arg, g.kind, value) {
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
        }))
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

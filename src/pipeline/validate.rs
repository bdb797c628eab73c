//! Stage 6: casting and validation.
//!
//! Contract: every call, whatever the tool's source (built-in, MCP, agent),
//! has its arguments cast toward the tool's compiled schema and validated
//! ([`CompiledSchema::check`](crate::schema::CompiledSchema::check)).
//! PraisonAI skips this for decorated tools; we do not, so guards, policy and
//! the tool itself only ever see well-formed arguments. On success each cast
//! is recorded as a note of this stage and the call goes on with the cast
//! arguments; on failure [`CallError::InvalidArgs`](crate::error::CallError)
//! is returned and nothing further runs. The tool's own rules beyond its
//! schema ([`Tool::check`](crate::tool::Tool::check)) run here too, so a
//! call that cannot run is refused before any person is asked about it.

use super::{Call, Enter, Stage};
use crate::events::StageName;

/// The validate stage. Stateless: the compiled schema travels with the
/// call's tool, so one instance serves every tool.
#[derive(Debug, Default)]
pub struct Validate {}

impl Validate {
    /// A new stage.
    pub fn new() -> Self {
        Self {}
    }
}

impl Stage for Validate {
    fn name(&self) -> StageName {
        StageName::Validate
    }

    fn enter(&self, call: &mut Call) -> Enter {
        let checked = call
            .tool
            .schema
            .check(call.tool.def.name.as_str(), &mut call.args);
        match checked {
            Ok(notes) => {
                for note in notes {
                    call.note(StageName::Validate, note.to_string());
                }
                match call.tool.runner.check(&call.args) {
                    Ok(()) => Enter::Pass,
                    Err(e) => Enter::Refuse(e),
                }
            }
            Err(e) => Enter::Refuse(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::CallError;
    use crate::events::EventBus;
    use crate::pipeline::testing::{
        Script, call_of, call_on, def, fail, registered_with, run_stage, run_stage_on, simple_call,
    };

    fn schema() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}, "loud": {"type": "boolean"}},
            "required": ["count"]
        })
    }

    #[tokio::test]
    async fn inner_stage_sees_cast_args_and_notes_are_recorded() {
        let mut call = call_of(def("t", schema()), json!({"Count": "3", "loud": "yes"}));
        let script = Script::new(vec![]);
        let result = run_stage(&Validate::new(), &mut call, &script).await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(script.seen(), vec![json!({"count": 3, "loud": true})]);
        let notes: Vec<&str> = call
            .notes()
            .iter()
            .filter(|(s, _)| *s == StageName::Validate)
            .map(|(_, n)| n.as_str())
            .collect();
        assert_eq!(
            notes,
            [
                "argument `count`: renamed argument `Count` → `count`",
                "argument `count`: string \"3\" → integer 3",
                "argument `loud`: string \"yes\" → boolean true",
            ]
        );
    }

    #[tokio::test]
    async fn invalid_args_never_reach_the_inner_stage() {
        let mut call = call_of(def("t", schema()), json!({"count": "three"}));
        let script = Script::new(vec![]);
        let result = run_stage(&Validate::new(), &mut call, &script).await;
        match result {
            Err(CallError::InvalidArgs { tool, problems }) => {
                assert_eq!(tool, "t");
                assert_eq!(problems.len(), 1);
                assert_eq!(
                    problems[0].to_string(),
                    "argument `count`: expected integer, got \"three\""
                );
            }
            other => panic!("expected InvalidArgs, got {other:?}"),
        }
        assert_eq!(script.calls(), 0);
    }

    /// A header `http_fetch` cannot send is refused with validation, before
    /// guards and policy: nobody is asked to approve a call that cannot run.
    #[tokio::test]
    async fn a_tools_own_argument_rules_refuse_before_later_stages() {
        let (def, runner) =
            crate::builtin::http::tool(crate::guard::ssrf::SsrfConfig::default()).unwrap();
        let tool = registered_with(def, runner);
        let script = Script::new(vec![Ok(crate::tool::ToolResult::text("ran"))]);
        let bad = json!({"url": "https://example.com/", "headers": {"Host": "x", "Ok": "y"}});
        let mut call = call_on(tool.clone(), bad, Default::default(), "s1");
        let result = run_stage(&Validate::new(), &mut call, &script).await;
        let Err(CallError::InvalidArgs { problems, .. }) = result else {
            panic!("expected InvalidArgs, got {result:?}");
        };
        assert_eq!(
            problems[0].to_string(),
            "argument `headers.Host`: header `host` cannot be set"
        );
        assert_eq!(script.calls(), 0);
        let good = json!({"url": "https://example.com/", "headers": {"Accept": "a/b"}});
        let mut call = call_on(tool, good, Default::default(), "s1");
        assert!(
            run_stage(&Validate::new(), &mut call, &script)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn missing_args_become_an_empty_object_and_are_reported() {
        let mut call = call_of(def("t", schema()), serde_json::Value::Null);
        let script = Script::new(vec![]);
        let result = run_stage(&Validate::new(), &mut call, &script).await;
        let Err(CallError::InvalidArgs { problems, .. }) = result else {
            panic!("expected InvalidArgs, got {result:?}");
        };
        assert_eq!(problems[0].to_string(), "missing required argument `count`");
        assert_eq!(script.calls(), 0);
    }

    #[tokio::test]
    async fn valid_args_pass_unchanged_without_notes() {
        let args = json!({"count": 2, "loud": false});
        let mut call = call_of(def("t", schema()), args.clone());
        let script = Script::new(vec![]);
        let result = run_stage(&Validate::new(), &mut call, &script).await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(script.seen(), vec![args]);
        assert!(call.notes().is_empty());
    }

    #[tokio::test]
    async fn open_schemas_pass_any_object_and_inner_errors_come_back_unchanged() {
        let mut call = simple_call(json!({"anything": ["goes"]}));
        let script = Script::new(vec![fail(CallError::PolicyDenied {
            reason: "inner".into(),
        })]);
        let result = run_stage_on(&Validate::new(), &mut call, &script, &EventBus::new()).await;
        assert!(
            matches!(&result, Err(CallError::PolicyDenied { reason }) if reason == "inner"),
            "{result:?}"
        );
        assert_eq!(script.seen(), vec![json!({"anything": ["goes"]})]);
    }
}

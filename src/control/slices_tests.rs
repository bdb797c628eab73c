//! Every source of a change reaches the live stream as the slice that
//! changed, and the slice read afterwards shows the change at a revision
//! at least the announced one.

use std::time::Duration;

use serde_json::json;

use super::SliceView;
use crate::control::testing::{Rig, session};
use crate::control::types::{DenyInput, ToolState};
use crate::control::{Decider, StreamItem, Subscription};
use crate::events::Event;
use crate::pipeline::allowlist::ToolFilter;
use crate::policy::PolicyConfig;
use crate::slices::Slice;
use crate::tool::{ToolDef, ToolName, ToolResult};

/// Reads the stream until `slice` is announced; returns its revision.
async fn announced(sub: &mut Subscription, slice: Slice) -> u64 {
    let wait = async {
        loop {
            match sub.next().await {
                Some(StreamItem::Event(e)) => {
                    if let Event::StateChanged { slice: s, revision } = e.event
                        && s == slice
                    {
                        return revision;
                    }
                }
                other => panic!("{other:?}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .unwrap_or_else(|_| panic!("{slice:?} was never announced"))
}

fn tool_state(view: &SliceView, name: &str) -> Option<ToolState> {
    match view {
        SliceView::Tools { tools, .. } => tools.iter().find(|t| t.name == name).map(|t| t.state),
        _ => panic!("not tools: {view:?}"),
    }
}

#[tokio::test]
async fn new_allow_deny_lists_announce_tools_and_policy() {
    // What a config reload and a console edit both do to the lists.
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    let filter = ToolFilter::new(None, vec!["echo".to_owned()]).expect("filter");
    assert!(rig.engine.set_filter(filter));
    let tools_rev = announced(&mut sub, Slice::Tools).await;
    let policy_rev = announced(&mut sub, Slice::Policy).await;
    let tools = rig.control.slice(Slice::Tools).await.expect("tools");
    assert!(tools.revision() >= tools_rev);
    assert_eq!(tool_state(&tools, "echo"), Some(ToolState::Denied));
    match rig.control.slice(Slice::Policy).await.expect("policy") {
        SliceView::Policy { revision, policy } => {
            assert!(revision >= policy_rev);
            assert_eq!(policy.denied_tools, ["echo"]);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_swapped_policy_is_announced() {
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    let version = rig.engine.policy().swap(PolicyConfig::default());
    announced(&mut sub, Slice::Policy).await;
    match rig.control.slice(Slice::Policy).await.expect("policy") {
        SliceView::Policy { policy, .. } => assert_eq!(policy.version, version),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn any_registry_change_is_announced_whoever_made_it() {
    // Upstreams re-listing after `list_changed`, agents and plugins all
    // change tools through the registry.
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    let def = ToolDef::new(
        ToolName::new("plugin_tool").expect("name"),
        "A tool a plugin adds.",
        json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let run: std::sync::Arc<dyn crate::tool::Tool> =
        std::sync::Arc::new(|_: serde_json::Value, _: &crate::context::CallContext| {
            futures::FutureExt::boxed(async { Ok(ToolResult::text("ok")) })
        });
    rig.engine.registry().register(def, run).expect("register");
    let rev = announced(&mut sub, Slice::Tools).await;
    let tools = rig.control.slice(Slice::Tools).await.expect("tools");
    assert!(tools.revision() >= rev);
    assert_eq!(tool_state(&tools, "plugin_tool"), Some(ToolState::Active));
    rig.engine
        .registry()
        .unregister("plugin_tool")
        .expect("unregister");
    announced(&mut sub, Slice::Tools).await;
    let tools = rig.control.slice(Slice::Tools).await.expect("tools");
    assert_eq!(tool_state(&tools, "plugin_tool"), None);
}

#[tokio::test]
async fn a_first_call_and_a_reset_announce_the_breakers() {
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    rig.call("flaky", json!({"text": "a"})).await;
    announced(&mut sub, Slice::Breakers).await;
    match rig.control.slice(Slice::Breakers).await.expect("breakers") {
        SliceView::Breakers { breakers, .. } => {
            let flaky = breakers.iter().find(|b| b.tool == "flaky").expect("tile");
            assert_eq!(flaky.failures, 1);
        }
        other => panic!("{other:?}"),
    }
    // Still closed (1 of 3 failures): a reset changes no state, but the
    // failures it forgets must leave every view too.
    assert!(rig.control.reset_breaker("flaky").reset);
    announced(&mut sub, Slice::Breakers).await;
    match rig.control.slice(Slice::Breakers).await.expect("breakers") {
        SliceView::Breakers { breakers, .. } => {
            let flaky = breakers.iter().find(|b| b.tool == "flaky").expect("tile");
            assert_eq!(flaky.failures, 0);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_decision_from_the_cli_is_on_the_stream() {
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    let engine = rig.engine.clone();
    let call = tokio::spawn(async move {
        engine
            .call(&session(), "shell_exec", json!({"command": "urgent cli"}))
            .await
    });
    let id = loop {
        match sub.next().await {
            Some(StreamItem::Event(e)) => {
                if let Event::ApprovalRequested { id, .. } = e.event {
                    break id;
                }
            }
            other => panic!("{other:?}"),
        }
    };
    let cli = Decider::Cli {
        pid: Some(42),
        exe: None,
    };
    rig.control
        .deny(id, &cli, DenyInput::default())
        .await
        .expect("deny");
    loop {
        match sub.next().await {
            Some(StreamItem::Event(e)) => {
                if let Event::ApprovalDecided { id: d, by, .. } = &e.event
                    && *d == id
                {
                    assert!(
                        by.as_deref().is_some_and(|b| b.starts_with("cli")),
                        "{by:?}"
                    );
                    break;
                }
            }
            other => panic!("{other:?}"),
        }
    }
    call.await.expect("call").result.expect_err("denied");
}

#[tokio::test]
async fn slice_announcements_stay_out_of_the_record() {
    let rig = Rig::new().await;
    let mut notable = rig.engine.events().subscribe_notable();
    rig.engine.policy().swap(PolicyConfig::default());
    assert!(matches!(
        notable.try_recv(),
        Ok(Event::PolicyReloaded { .. })
    ));
    assert!(notable.try_recv().is_err(), "state_changed is not recorded");
}

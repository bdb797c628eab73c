//! Pinning a tool as core through the control service: the answer, the
//! slice it announces, and the names it refuses.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::control::testing::Rig;
use crate::control::{ControlError, StreamItem, Subscription};
use crate::events::Event;
use crate::search::CoreReason;
use crate::slices::Slice;
use crate::tool::{Source, ToolDef, ToolName, ToolResult};

fn register_mcp(rig: &Rig, name: &str) {
    let def = ToolDef::new(
        ToolName::new(name).expect("name"),
        "A server's tool.",
        json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
    .with_source(Source::Mcp(Arc::from("git")));
    let run: Arc<dyn crate::tool::Tool> =
        Arc::new(|_: serde_json::Value, _: &crate::context::CallContext| {
            futures::FutureExt::boxed(async { Ok(ToolResult::text("ok")) })
        });
    rig.engine.registry().register(def, run).expect("register");
}

async fn tools_announced(sub: &mut Subscription) {
    let wait = async {
        loop {
            if let Some(StreamItem::Event(e)) = sub.next().await
                && let Event::StateChanged {
                    slice: Slice::Tools,
                    ..
                } = e.event
            {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .expect("the tools slice announced");
}

#[tokio::test]
async fn a_pin_makes_the_tool_core_for_every_client_and_is_announced() {
    let rig = Rig::new().await;
    register_mcp(&rig, "git__git_status");
    let before = rig.control.tools().await.expect("tools");
    let row = before
        .iter()
        .find(|t| t.name == "git__git_status")
        .expect("row");
    assert_eq!(row.core, None, "an upstream tool may be deferred");
    let echo = before.iter().find(|t| t.name == "echo").expect("echo");
    assert_eq!(
        echo.core.as_ref().map(|c| &c.reason),
        Some(&CoreReason::Builtin)
    );

    let mut sub = rig.control.subscribe(None);
    let pinned = rig
        .control
        .pin_core("git__git_status", true)
        .await
        .expect("pinned");
    assert!(pinned.pinned && pinned.changed);
    let core = pinned.summary.expect("registered").core.expect("core now");
    assert_eq!(core.reason, CoreReason::Pinned);
    assert!(core.pinned);
    tools_announced(&mut sub).await;
    assert!(
        rig.engine
            .plan(Some("any-client"))
            .core
            .iter()
            .any(|t| t.name.as_str() == "git__git_status")
    );

    let again = rig
        .control
        .pin_core("git__git_status", true)
        .await
        .expect("again");
    assert!(!again.changed, "pinned already");
    let off = rig
        .control
        .pin_core("git__git_status", false)
        .await
        .expect("off");
    assert!(off.changed && !off.pinned);
    assert_eq!(off.summary.expect("registered").core, None);
}

#[tokio::test]
async fn a_tool_not_registered_may_be_pinned_and_bad_names_are_refused() {
    let rig = Rig::new().await;
    let ahead = rig
        .control
        .pin_core("down__server_tool", true)
        .await
        .expect("a pin ahead of its server");
    assert!(ahead.changed);
    assert!(ahead.summary.is_none());
    register_mcp(&rig, "down__server_tool");
    let tools = rig.control.tools().await.expect("tools");
    let row = tools
        .iter()
        .find(|t| t.name == "down__server_tool")
        .expect("row");
    assert_eq!(
        row.core.as_ref().map(|c| &c.reason),
        Some(&CoreReason::Pinned)
    );

    for (name, says) in [
        ("", "tool name is empty"),
        ("  ", "contains ' '"),
        (&"x".repeat(65)[..], "longer than 64 characters"),
    ] {
        match rig.control.pin_core(name, true).await {
            Err(e @ ControlError::Invalid { field: "name", .. }) => {
                assert!(e.to_string().contains(says), "{name:?}: {e}");
            }
            other => panic!("{name:?}: {other:?}"),
        }
    }
}

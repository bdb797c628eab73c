use serde_json::json;

use crate::control::StreamItem;
use crate::control::testing::{Rig, session};
use crate::control::types::ToolState;
use crate::events::Event;
use crate::wire::BreakerState;

/// Reads the stream until `n` calls have finished; returns the last seq.
async fn until_finished(sub: &mut crate::control::Subscription, n: usize) -> u64 {
    let mut done = 0;
    loop {
        match sub.next().await {
            Some(StreamItem::Event(e)) => {
                done += usize::from(matches!(e.event, Event::CallFinished { .. }));
                if done == n {
                    return e.seq;
                }
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Reads the stream until `n` approvals were requested.
async fn until_requested(sub: &mut crate::control::Subscription, n: usize) {
    let mut seen = 0;
    while seen < n {
        match sub.next().await {
            Some(StreamItem::Event(e)) => match e.event {
                Event::ApprovalRequested { .. } => seen += 1,
                Event::CallFinished { ref tool, .. } if &**tool == "shell_exec" => {
                    panic!("shell_exec ran without asking")
                }
                _ => {}
            },
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn the_snapshots_counters_match_its_parts_at_its_seq() {
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    rig.call("echo", json!({"text": "a"})).await;
    for i in 0..3 {
        rig.call("flaky", json!({"text": i.to_string()})).await;
    }
    let last = until_finished(&mut sub, 4).await;
    // Two callers wait: the second asks under a rule with a shorter
    // timeout, so it expires first although it came second.
    let mut calls = Vec::new();
    for command in ["slow thing", "urgent thing"] {
        let engine = rig.engine.clone();
        calls.push(tokio::spawn(async move {
            engine
                .call(&session(), "shell_exec", json!({"command": command}))
                .await
        }));
        until_requested(&mut sub, 1).await;
    }
    let snap = rig.control.snapshot().await.expect("snapshot");
    assert!(snap.seq > last, "{} > {last}", snap.seq);
    let c = snap.counters;
    assert_eq!(c.calls_total, 4);
    assert_eq!(c.calls_failed, 3);
    assert_eq!(c.pending, 2);
    assert_eq!(c.pending, snap.pending.len() as u64);
    assert_eq!(c.open_breakers, 1);
    let open: Vec<_> = snap
        .breakers
        .iter()
        .filter(|b| b.state == BreakerState::Open)
        .collect();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].tool, "flaky");
    assert_eq!((open[0].failures, open[0].threshold), (3, 3));
    assert_eq!(c.quarantined, snap.quarantined.len() as u64);
    assert_eq!(c.servers_down, 0);
    // Soonest expiry first.
    let commands: Vec<&str> = snap
        .pending
        .iter()
        .map(|r| r.args["command"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(commands, ["urgent thing", "slow thing"]);
    assert!(snap.pending[0].expires_ms < snap.pending[1].expires_ms);
    // Calls newest first, as the audit log has them.
    let tools: Vec<&str> = snap.recent_calls.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["flaky", "flaky", "flaky", "echo"]);
    // Tools: the hidden one is listed as denied, with the rule.
    let hidden = snap
        .tools
        .iter()
        .find(|t| t.name == "hidden_tool")
        .expect("listed");
    assert_eq!(hidden.state, ToolState::Denied);
    assert_eq!(
        hidden.denied_by.as_deref(),
        Some("matches deny pattern `hidden_*`")
    );
    let shell = snap
        .tools
        .iter()
        .find(|t| t.name == "shell_exec")
        .expect("listed");
    assert_eq!(shell.state, ToolState::Active);
    assert_eq!(shell.summary, "The shell_exec tool.");
    assert_eq!(snap.policy.preset, "autonomous");
    assert_eq!(snap.policy.denied_tools, ["hidden_*"]);
    assert_eq!(snap.policy.allowed_tools, None);
    assert_eq!(snap.policy.rules_count, 2);
    assert_eq!(snap.engine.pid, std::process::id());
    let connect = rig.control.connect();
    assert_eq!(connect.agent_socket, snap.engine.agent_socket);
    assert_eq!(
        connect.mcp_servers["mcpServers"]["toolgate"]["args"],
        json!(["mcp-bridge"])
    );
    // The command as it resolves for this engine, and which case applied.
    let command = connect.mcp_servers["mcpServers"]["toolgate"]["command"]
        .as_str()
        .unwrap();
    assert!(
        connect
            .bridge_command
            .contains(&format!("{command} mcp-bridge"))
            || connect.bridge_command.contains("mcp-bridge"),
        "{}",
        connect.bridge_command
    );
    assert!(
        connect.command_note.contains("PATH") || connect.command_note.contains("own program"),
        "{}",
        connect.command_note
    );
    assert!(snap.recent_approvals.is_empty());
    for c in calls {
        c.abort();
    }
}

#[tokio::test]
async fn a_decided_request_moves_from_pending_to_recent() {
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    let engine = rig.engine.clone();
    let call = tokio::spawn(async move {
        engine
            .call(&session(), "shell_exec", json!({"command": "frobnicate"}))
            .await
    });
    until_requested(&mut sub, 1).await;
    let id = rig.control.snapshot().await.expect("snapshot").pending[0].id;
    rig.control
        .deny(
            id,
            &crate::control::Decider::Tray,
            crate::control::types::DenyInput::default(),
        )
        .await
        .expect("deny");
    call.await.expect("call").result.expect_err("denied");
    let snap = rig.control.snapshot().await.expect("snapshot");
    assert!(snap.pending.is_empty());
    assert_eq!(snap.recent_approvals.len(), 1);
    assert_eq!(snap.recent_approvals[0].decided_by.as_deref(), Some("tray"));
}

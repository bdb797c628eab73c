//! The console's side of the team queue without a database: an engine
//! alone says how to join a team, bad decisions are refused before
//! anything is sent, the link's refusals keep their words and get the
//! right code, and every change of the link is announced on the stream.
//! With a real Postgres: tests/team_console.rs.

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::control::testing::Rig;
use crate::events::Event;
use crate::team::EngineIdentity;
use crate::wire::AlwaysInput;

fn always() -> Option<AlwaysInput> {
    Some(AlwaysInput {
        scope: "shell_exec".into(),
        ttl_s: None,
    })
}

#[tokio::test]
async fn an_engine_alone_says_how_to_join_a_team() {
    let rig = Rig::new().await;
    assert!(rig.control.team_view().is_none());
    let e = rig.control.team_now().unwrap_err();
    assert_eq!(e.code(), "unavailable");
    assert!(e.to_string().contains("[storage] url"), "{e}");
    let e = rig
        .control
        .team_approve("e", 1, ApproveInput::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "unavailable");
    let snap = rig.control.snapshot().await.unwrap();
    assert!(snap.team.is_none());
}

#[tokio::test]
async fn a_remembered_rule_or_a_long_reason_is_refused_before_anything_is_sent() {
    let rig = Rig::new().await;
    let e = rig
        .control
        .team_approve("e", 1, ApproveInput { always: always() })
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.field()), ("invalid", Some("always")), "{e}");
    let e = rig
        .control
        .team_deny(
            "e",
            1,
            DenyInput {
                reason: Some("x".repeat(MAX_REASON + 1)),
                always: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.field()), ("invalid", Some("reason")), "{e}");
}

#[test]
fn the_links_refusals_keep_their_words_and_get_their_code() {
    let cases = [
        (
            TeamError::NotADecider("Only alice may decide requests from ci on box.".into()),
            "forbidden",
        ),
        (TeamError::OwnRequest { id: 3 }, "invalid"),
        (
            TeamError::EngineOffline {
                engine: "bob on laptop".into(),
            },
            "unavailable",
        ),
        (TeamError::Offline("refused".into()), "unavailable"),
        (
            TeamError::NoAnswer {
                engine: "bob on laptop".into(),
            },
            "unavailable",
        ),
    ];
    for (team, code) in cases {
        let words = team.to_string();
        let e = ControlError::from(team);
        assert_eq!(e.code(), code, "{e}");
        if code != "invalid" {
            assert_eq!(e.to_string(), words);
        }
    }
}

#[tokio::test]
async fn every_change_of_the_link_is_announced_as_the_team_slice() {
    let rig = Rig::new().await;
    let mut events = rig.engine.events().subscribe();
    // Nothing listens on port 1: the link degrades at once, a change.
    let options = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(1)
        .username("nobody");
    let me = EngineIdentity {
        id: "0".repeat(32),
        host: "box".into(),
        user: "alice".into(),
    };
    let team = Team::start(crate::team::TeamParts {
        me,
        url: "postgres://127.0.0.1:1/none".into(),
        options,
        approvals: rig.approvals.clone(),
        audit: rig.engine.audit().expect("the rig's audit log").clone(),
        upstreams: None,
        deciders: None,
        rules: crate::team::Sharing::Engine,
        pins: crate::team::Sharing::Engine,
    });
    let stop = CancellationToken::new();
    announce(&team, rig.engine.events().clone(), stop.clone());
    let revision = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(Event::StateChanged {
                slice: Slice::Team,
                revision,
            }) = events.recv().await
            {
                return revision;
            }
        }
    })
    .await
    .expect("the degraded link is announced");
    assert!(revision >= 1);
    let view = TeamView::of(&team);
    assert_eq!(view.labels[&"0".repeat(32)], "alice on box");
    assert!(
        view.summary
            .starts_with("The team database is unreachable ("),
        "{}",
        view.summary
    );
    assert!(
        view.summary
            .ends_with("this engine decides only its own requests until it is back."),
        "{}",
        view.summary
    );
    assert!(
        matches!(view.status.state, TeamState::Degraded { .. }),
        "{:?}",
        view.status.state
    );
    stop.cancel();
    team.shutdown().await;
}

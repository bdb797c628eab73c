use std::sync::Arc;

use futures::FutureExt;
use serde_json::json;

use super::*;
use crate::config::Config;
use crate::context::{CallContext, Caller, Session};
use crate::tool::{JsonObject, Tool, ToolDef, ToolName, ToolResult};

fn policy(version: u64) -> Event {
    Event::PolicyReloaded { version }
}

/// The next item, which must be an event; its envelope.
async fn event(sub: &mut Subscription) -> Arc<Envelope> {
    match sub.next().await {
        Some(StreamItem::Event(e)) => e,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// The next item, which must be a reload, then the end.
async fn reload(sub: &mut Subscription) -> u64 {
    let seq = match sub.next().await {
        Some(StreamItem::Reload(r)) => r.seq,
        other => panic!("expected a reload, got {other:?}"),
    };
    assert!(sub.next().await.is_none(), "a reload ends the stream");
    seq
}

fn version(e: &Envelope) -> u64 {
    match e.event {
        Event::PolicyReloaded { version } => version,
        ref other => panic!("unexpected {other:?}"),
    }
}

/// Emits `versions` one at a time, waiting (through `sub`, which so never
/// falls behind even a small ring) until each is numbered.
async fn emit_all(bus: &EventBus, sub: &mut Subscription, versions: std::ops::Range<u64>) {
    for v in versions {
        bus.emit(policy(v));
        assert_eq!(version(&*event(sub).await), v);
    }
}

#[tokio::test]
async fn events_are_numbered_gap_free_from_one_in_order() {
    let bus = EventBus::new();
    let seq = Sequencer::start(&bus);
    let mut sub = seq.subscribe(None);
    for v in 0..300 {
        bus.emit(policy(v));
    }
    for k in 0..300u64 {
        let e = event(&mut sub).await;
        assert_eq!((e.seq, version(&e)), (k + 1, k));
        assert!(e.ts_ms > 0);
    }
    assert_eq!(seq.mark().seq, 300);
}

#[tokio::test]
async fn a_subscriber_resumes_after_the_last_number_it_saw_then_follows_live() {
    let bus = EventBus::new();
    let seq = Sequencer::start(&bus);
    let mut first = seq.subscribe(None);
    emit_all(&bus, &mut first, 0..50).await;
    let mut resumed = seq.subscribe(Some(20));
    for n in 21..=50 {
        assert_eq!(event(&mut resumed).await.seq, n);
    }
    bus.emit(policy(50));
    assert_eq!(event(&mut resumed).await.seq, 51);
    // Resuming at the newest number gives only what comes next.
    let mut at_head = seq.subscribe(Some(51));
    bus.emit(policy(51));
    assert_eq!(event(&mut at_head).await.seq, 52);
}

#[tokio::test]
async fn resuming_from_before_the_ring_or_after_the_newest_says_reload() {
    let bus = EventBus::new();
    let seq = Sequencer::with_capacity(&bus, 10);
    let mut live = seq.subscribe(None);
    emit_all(&bus, &mut live, 0..30).await;
    // The ring holds 21..=30.
    assert_eq!(reload(&mut seq.subscribe(Some(5))).await, 30);
    assert_eq!(reload(&mut seq.subscribe(Some(19))).await, 30);
    let mut edge = seq.subscribe(Some(20));
    assert_eq!(event(&mut edge).await.seq, 21);
    // A number from the future: the engine restarted and counts anew.
    assert_eq!(reload(&mut seq.subscribe(Some(31))).await, 30);
}

#[tokio::test]
async fn a_subscriber_that_falls_a_ring_behind_is_told_to_reload() {
    let bus = EventBus::new();
    let seq = Sequencer::with_capacity(&bus, 10);
    let mut slow = seq.subscribe(None);
    let mut fast = seq.subscribe(None);
    emit_all(&bus, &mut fast, 0..5).await;
    // The slow one reads a little, then falls behind by more than the ring.
    assert_eq!(event(&mut slow).await.seq, 1);
    emit_all(&bus, &mut fast, 5..40).await;
    // Batched reads may hand out what was copied before the overrun; what
    // follows is a reload, never a jump over the lost numbers.
    let mut last = 1;
    loop {
        match slow.next().await {
            Some(StreamItem::Event(e)) => {
                assert_eq!(e.seq, last + 1, "no gap before the reload");
                last = e.seq;
            }
            Some(StreamItem::Reload(r)) => {
                assert_eq!(r.seq, 40);
                break;
            }
            None => panic!("ended without a reload"),
        }
    }
    assert!(
        last < 31,
        "events 2..=30 left the ring; {last} was handed out"
    );
    assert!(slow.next().await.is_none());
}

/// Before, a task drained a broadcast ring of `EventBus::CAPACITY` events
/// and lost what overflowed it under load (64 concurrent agents, a busy
/// machine); numbered as they are published, none is lost, whatever the
/// burst and however many threads emit.
#[test]
fn a_burst_from_many_threads_larger_than_any_ring_is_numbered_without_loss() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _in_rt = rt.enter();
    let bus = EventBus::new();
    let seq = Sequencer::start(&bus);
    let per_thread = u64::try_from(EventBus::CAPACITY).unwrap() * 2;
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let bus = &bus;
            scope.spawn(move || {
                for v in 0..per_thread {
                    bus.emit(policy(t * 1_000_000 + v));
                }
            });
        }
    });
    let total = per_thread * 4;
    assert_eq!(seq.mark().seq, total, "every event has a number");
    // The ring holds the newest RING of them, gap-free and in order, with
    // each thread's events in the order it emitted them.
    let mut sub = seq.subscribe(Some(total - RING as u64));
    let mut last_of = [None::<u64>; 4];
    rt.block_on(async {
        for n in total - RING as u64 + 1..=total {
            let e = event(&mut sub).await;
            assert_eq!(e.seq, n);
            let v = version(&e);
            let t = usize::try_from(v / 1_000_000).unwrap();
            assert!(
                last_of[t].is_none_or(|prev| prev < v),
                "thread {t} out of order"
            );
            last_of[t] = Some(v);
        }
    });
}

#[tokio::test]
async fn calls_in_flight_are_kept_until_they_finish() {
    let bus = EventBus::new();
    let seq = Sequencer::start(&bus);
    let received = |call_id| Event::CallReceived {
        call_id,
        tool: "shell_exec".into(),
        caller: "cursor (pid 4)".into(),
        session: "s".into(),
        preview: "ls -la".into(),
    };
    bus.emit(received(1));
    bus.emit(received(2));
    let mark = seq.mark();
    let ids: Vec<u64> = mark.in_flight.iter().map(|c| c.call_id).collect();
    assert_eq!(ids, [1, 2]);
    assert_eq!(&*mark.in_flight[0].caller, "cursor (pid 4)");
    assert_eq!(&*mark.in_flight[0].preview, "ls -la");
    bus.emit(Event::CallFinished {
        call_id: 1,
        tool: "shell_exec".into(),
        outcome: Outcome::Ok {
            is_error: false,
            size: 2,
        },
        elapsed: std::time::Duration::from_millis(3),
    });
    let mark = seq.mark();
    assert_eq!(mark.in_flight.len(), 1);
    assert_eq!((mark.in_flight[0].call_id, mark.calls_total), (2, 1));
}

fn echo() -> (ToolDef, Arc<dyn Tool>) {
    let schema: JsonObject = serde_json::from_value(json!({"type": "object"})).unwrap_or_default();
    let def = ToolDef::new(
        ToolName::new("echo").unwrap_or_else(|e| panic!("{e}")),
        "echo",
        schema,
    );
    let tool: Arc<dyn Tool> = Arc::new(|_: serde_json::Value, _: &CallContext| {
        async { Ok(ToolResult::text("hi")) }.boxed()
    });
    (def, tool)
}

#[tokio::test]
async fn the_console_stream_carries_calls_arriving_and_finishing_but_no_stage_events() {
    let engine = crate::Engine::builder(Config::default()).build();
    let (def, tool) = echo();
    engine
        .registry()
        .register(def, tool)
        .unwrap_or_else(|e| panic!("{e}"));
    let seq = Sequencer::start(engine.events());
    let mut sub = seq.subscribe(None);
    // Only the console listens: no per-stage trace is built at all.
    assert!(!engine.events().is_watched());
    assert!(engine.events().follows_calls());
    let session = Session::new("s", Caller::via("test"));
    let reply = engine.call(&session, "echo", json!({})).await;
    assert!(reply.result.is_ok());
    let received = event(&mut sub).await;
    assert!(
        matches!(received.event, Event::CallReceived { .. }),
        "{received:?}"
    );
    // The first call gives the tool a breaker: views are told to read them.
    let breakers = event(&mut sub).await;
    assert!(
        matches!(
            breakers.event,
            Event::StateChanged {
                slice: crate::slices::Slice::Breakers,
                ..
            }
        ),
        "{breakers:?}"
    );
    let finished = event(&mut sub).await;
    assert!(
        matches!(finished.event, Event::CallFinished { .. }),
        "{finished:?}"
    );
    assert_eq!(seq.mark().calls_total, 1);
    // A full subscriber still gets the stages; the console still does not.
    let mut all = engine.subscribe();
    engine.call(&session, "echo", json!({"n": 1})).await;
    let mut stages = 0;
    while let Ok(e) = all.try_recv() {
        stages += usize::from(matches!(e, Event::CallStage { .. }));
    }
    assert!(stages > 5, "the full stream has the stages");
    for _ in 0..2 {
        let e = event(&mut sub).await;
        assert!(!matches!(e.event, Event::CallStage { .. }), "{e:?}");
    }
    assert_eq!(seq.mark().calls_total, 2);
}

#[tokio::test]
async fn the_stream_ends_once_the_engine_is_gone_and_its_events_were_read() {
    let bus = EventBus::new();
    let seq = Sequencer::start(&bus);
    let mut sub = seq.subscribe(None);
    bus.emit(policy(7));
    drop(bus);
    assert_eq!(version(&*event(&mut sub).await), 7);
    assert!(sub.next().await.is_none());
}

#[tokio::test]
async fn large_events_are_bounded_by_bytes_not_only_by_count() {
    let bus = EventBus::new();
    let seq = Sequencer::start(&bus);
    let message = "m".repeat(100_000);
    for id in 0..200u64 {
        bus.emit(Event::CallFinished {
            call_id: id,
            tool: Arc::from("t"),
            outcome: crate::wire::Outcome::Err {
                kind: crate::error::ErrorKind::ToolFailed,
                message: message.clone(),
                counts_as_failure: false,
            },
            elapsed: std::time::Duration::ZERO,
        });
    }
    let st = seq.shared.lock();
    let kept: usize = st.ring.iter().map(|e| e.event.weight()).sum();
    assert_eq!(kept, st.bytes);
    assert!(kept <= RING_BYTES, "{kept} bytes kept");
    assert!(st.ring.len() < 200 && st.ring.len() >= RING_BYTES / 100_100);
    assert_eq!(st.ring.back().map(|e| e.seq), Some(200), "the newest stays");
}

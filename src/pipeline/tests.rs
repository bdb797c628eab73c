//! The pipeline's frame: onion order, refusals, dropped attempts.

use super::*;

#[test]
fn stage_order_is_designs() {
    let parts = testing::parts();
    let names = build(parts).stage_names();
    use StageName::*;
    assert_eq!(
        names,
        [
            Allowlist, Hooks, Trust, Truncate, LoopGuard, Validate, Guards, Policy, Breaker, Retry,
            Timeout
        ]
    );
}

/// What a probe stage does when a call reaches it.
#[derive(Clone, Copy)]
enum Mode {
    Pass,
    Refuse,
    Wrap,
}

/// A stage that logs what it sees, labelled so a log shows which one.
struct Probe {
    label: String,
    name: StageName,
    mode: Mode,
    log: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Probe {
    fn push(&self, what: String) {
        self.log.lock().expect("log").push(what);
    }
}

impl Stage for Probe {
    fn name(&self) -> StageName {
        self.name
    }

    fn enter(&self, _call: &mut Call) -> Enter {
        self.push(format!("enter {}", self.label));
        match self.mode {
            Mode::Pass => Enter::Pass,
            Mode::Refuse => Enter::Refuse(CallError::internal(format!("by {}", self.label))),
            Mode::Wrap => Enter::Wrap,
        }
    }

    fn leave(&self, _call: &mut Call, result: &mut CallResult) {
        let seen = match result {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.to_string(),
        };
        self.push(format!("leave {} ({seen})", self.label));
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            self.push(format!("wrap {} in", self.label));
            let result = next.run(call).await;
            self.push(format!("wrap {} out", self.label));
            result
        })
    }
}

type Log = Arc<std::sync::Mutex<Vec<String>>>;

/// One probe writing to `log`.
fn probe(label: &str, name: StageName, mode: Mode, log: &Log) -> Arc<dyn Stage> {
    Arc::new(Probe {
        label: label.to_owned(),
        name,
        mode,
        log: log.clone(),
    })
}

/// A pipeline of probes, `(label, name, mode)` outermost first, and
/// the log they write to.
fn probes(specs: &[(&str, StageName, Mode)]) -> (Pipeline, Log) {
    let log = Log::default();
    let stages = specs
        .iter()
        .map(|&(label, name, mode)| probe(label, name, mode, &log))
        .collect();
    (Pipeline::from_stages(stages, EventBus::new()), log)
}

fn logged(log: &Log) -> Vec<String> {
    log.lock().expect("log").clone()
}

fn traced(call: &Call) -> Vec<StageName> {
    call.trace().iter().map(|(s, _)| *s).collect()
}

#[tokio::test]
async fn passing_stages_keep_the_onion_order_around_a_wrapping_one() {
    use StageName::*;
    let (pipeline, log) = probes(&[
        ("a", Allowlist, Mode::Pass),
        ("b", Hooks, Mode::Pass),
        ("w", Policy, Mode::Wrap),
        ("c", Breaker, Mode::Pass),
    ]);
    let mut call = testing::simple_call(serde_json::json!({}));
    let result = pipeline.run(&mut call).await;
    assert_eq!(result.expect("ran"), ToolResult::text("ran"));
    assert_eq!(
        logged(&log),
        [
            "enter a",
            "enter b",
            "enter w",
            "wrap w in",
            "enter c",
            "leave c (ok)",
            "wrap w out",
            "leave b (ok)",
            "leave a (ok)",
        ]
    );
    // Innermost first, each stage once, as the nested onion records it.
    assert_eq!(traced(&call), [Execute, Breaker, Policy, Hooks, Allowlist]);
}

#[tokio::test]
async fn a_refusal_stops_the_call_and_outer_stages_see_it_on_the_way_out() {
    use StageName::*;
    let (pipeline, log) = probes(&[
        ("a", Allowlist, Mode::Pass),
        ("r", LoopGuard, Mode::Refuse),
        ("c", Validate, Mode::Pass),
    ]);
    let mut call = testing::simple_call(serde_json::json!({}));
    let err = pipeline.run(&mut call).await.expect_err("refused");
    assert!(err.to_string().contains("by r"), "{err}");
    assert_eq!(
        logged(&log),
        ["enter a", "enter r", &format!("leave a ({err})")]
    );
    assert_eq!(traced(&call), [LoopGuard, Allowlist]);
}

#[tokio::test]
async fn a_long_row_of_passing_stages_all_run_once_in_order() {
    let labels: Vec<String> = (0..30).map(|i| format!("s{i}")).collect();
    let specs: Vec<(&str, StageName, Mode)> = labels
        .iter()
        .map(|l| (l.as_str(), StageName::Guards, Mode::Pass))
        .collect();
    let (pipeline, log) = probes(&specs);
    let mut call = testing::simple_call(serde_json::json!({}));
    assert!(pipeline.run(&mut call).await.is_ok());
    let entered: Vec<String> = labels.iter().map(|l| format!("enter {l}")).collect();
    let left: Vec<String> = labels
        .iter()
        .rev()
        .map(|l| format!("leave {l} (ok)"))
        .collect();
    assert_eq!(logged(&log), [entered, left].concat());
    assert_eq!(call.trace().len(), labels.len() + 1);
    assert_eq!(call.trace()[0].0, StageName::Execute);
}

/// Drops its first attempt at the rest of the call while that is
/// still waiting, then runs it again: what a timed-out attempt does.
struct Twice;

impl Stage for Twice {
    fn name(&self) -> StageName {
        StageName::Retry
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            {
                let first = next.run(call);
                futures::pin_mut!(first);
                assert!(futures::poll!(first.as_mut()).is_pending());
            }
            next.run(call).await
        })
    }
}

/// Waits forever the first time, then answers.
#[derive(Default)]
struct SlowOnce(std::sync::atomic::AtomicBool);

impl Stage for SlowOnce {
    fn name(&self) -> StageName {
        StageName::Timeout
    }

    fn handle<'a>(&'a self, _call: &'a mut Call, _next: Next<'a>) -> BoxFuture<'a, CallResult> {
        let seen = self.0.swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            if !seen {
                futures::future::pending::<()>().await;
            }
            Ok(ToolResult::text("second"))
        })
    }
}

#[tokio::test]
async fn an_attempt_dropped_midway_leaves_the_outer_timings_right() {
    use StageName::*;
    let log = Log::default();
    let stages: Vec<Arc<dyn Stage>> = vec![
        probe("a", Allowlist, Mode::Pass, &log),
        Arc::new(Twice),
        probe("b", Guards, Mode::Pass, &log),
        Arc::new(SlowOnce::default()),
    ];
    let pipeline = Pipeline::from_stages(stages, EventBus::new());
    let mut call = testing::simple_call(serde_json::json!({}));
    let out = pipeline.run(&mut call).await;
    assert_eq!(out.expect("second attempt"), ToolResult::text("second"));
    // The dropped attempt recorded nothing; the second one, then the
    // outer stages, each once.
    assert_eq!(traced(&call), [Timeout, Guards, Retry, Allowlist]);
    let inner: Duration = call.trace()[2].1;
    let outermost: Duration = call.trace()[3].1;
    assert!(outermost >= inner, "{outermost:?} < {inner:?}");
    assert!(call.starts.is_empty());
}

/// A stage with only `enter` and `leave`, run through `handle`'s
/// default as stage tests do.
struct Plain(Log);

impl Stage for Plain {
    fn name(&self) -> StageName {
        StageName::Trust
    }

    fn enter(&self, _call: &mut Call) -> Enter {
        self.0.lock().expect("log").push("enter".to_owned());
        Enter::Pass
    }

    fn leave(&self, _call: &mut Call, result: &mut CallResult) {
        *result = Ok(ToolResult::text("changed on the way out"));
        self.0.lock().expect("log").push("leave".to_owned());
    }
}

#[tokio::test]
async fn a_stage_run_on_its_own_enters_passes_on_and_leaves() {
    let log = Log::default();
    let script = testing::Script::new(vec![]);
    let mut call = testing::simple_call(serde_json::json!({}));
    let out = testing::run_stage(&Plain(log.clone()), &mut call, &script).await;
    assert_eq!(out.expect("ok"), ToolResult::text("changed on the way out"));
    assert_eq!(script.calls(), 1);
    assert_eq!(logged(&log), ["enter", "leave"]);
}

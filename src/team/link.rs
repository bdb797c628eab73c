//! The running link between this engine and the team's database.
//!
//! The engine always governs from its own SQLite queue; the link mirrors
//! that queue to Postgres and brings the other engines' requests in
//! (docs/architecture/decisions.md, "Team: the raising engine decides"):
//! - every local request and its closing is published, keyed by (engine,
//!   local id), so a replay changes nothing;
//! - other engines' requests arrive by LISTEN/NOTIFY and are kept here for
//!   the console;
//! - a person's decision on another engine's request is *sent to that
//!   engine*, which takes it through its own queue: so a request is
//!   decided exactly once, whoever clicks first, and a timeout, a
//!   cancellation or a local click races it the way it always did;
//! - when the database goes away, the engine goes on alone (it never
//!   depended on it) and says it is degraded; when it comes back, a resync
//!   publishes what happened meanwhile. Requests raised and closed while
//!   offline are published closed, so they are never offered to the team.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::TeamError;
use super::identity::EngineIdentity;
use super::request::{Outcome, TeamRequest};
use super::store::{self, CHANNEL, EngineSeen, Note, SentDecision};
use crate::approval::{Answer, ApprovalError, ApprovalStatus, Approvals, Decision};
use crate::audit::AuditLog;
use crate::events::Event;

/// How often this engine says it is alive.
const HEARTBEAT: Duration = Duration::from_secs(2);
/// An engine whose heartbeat is older than this is offline.
const ONLINE_MS: i64 = 10_000;
/// How long to wait before connecting again after the database went away.
const RETRY: Duration = Duration::from_secs(1);
/// How long a sent decision waits for the raising engine to take it.
const DECISION_WAIT: Duration = Duration::from_secs(5);
/// Closed requests of other engines kept for the console to show how they
/// ended.
const KEEP_CLOSED: usize = 200;
/// Local requests published per query while catching up.
const RESYNC_BATCH: i64 = 500;
/// How often new local audit rows are shipped. Nobody waits on a shipped
/// row as on a request, so they go in batches rather than one
/// notification each.
const SHIP_EVERY: Duration = Duration::from_millis(500);
/// Call rows shipped per insert.
const SHIP_BATCH: i64 = 1000;

/// What a team link is made of.
pub struct TeamParts {
    /// This engine.
    pub me: EngineIdentity,
    /// The database URL as people see it (no password).
    pub url: String,
    /// How to connect (with the password).
    pub options: PgConnectOptions,
    /// The local queue it mirrors.
    pub approvals: Approvals,
    /// The local audit log it ships.
    pub audit: AuditLog,
    /// Who may decide this engine's requests (`[team] deciders`).
    pub deciders: Option<Vec<String>>,
    /// The upstream servers, whose approved tool versions it shares.
    pub upstreams: Option<crate::upstream::Upstreams>,
    /// Whether remembered rules are shared (`[team] rules`).
    pub rules: super::Sharing,
    /// Whether approved upstream tool versions are shared (`[team] pins`).
    pub pins: super::Sharing,
}

/// Whether the link is up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TeamState {
    /// Not connected yet.
    Connecting,
    /// Connected: requests are shared.
    Online,
    /// The database is unreachable: this engine decides its own requests
    /// alone, and will publish them when the database is back.
    Degraded {
        /// Since when (Unix ms).
        #[ts(type = "number")]
        since_ms: i64,
        /// Why, in words.
        error: String,
    },
}

/// The link as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct TeamStatus {
    /// This engine.
    pub me: EngineIdentity,
    /// The database (no password).
    pub url: String,
    /// Up or not.
    pub state: TeamState,
    /// The engines of the team as last seen.
    pub engines: Vec<EngineSeen>,
}

/// The team link; cloning shares it.
#[derive(Clone)]
pub struct Team {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("me", &self.inner.me)
            .finish_non_exhaustive()
    }
}

struct Inner {
    me: EngineIdentity,
    /// Who may decide this engine's requests (`[team] deciders`).
    deciders: Option<Vec<String>>,
    /// `[team] rules = "team"`.
    share_rules: bool,
    /// The upstreams, with `[team] pins = "team"`.
    pins: Option<crate::upstream::Upstreams>,
    url: String,
    started_ms: i64,
    approvals: Approvals,
    audit: AuditLog,
    /// The highest local call row id the team has (known after a resync).
    shipped: std::sync::atomic::AtomicI64,
    pool: PgPool,
    state: Mutex<TeamState>,
    /// Other engines' requests: pending ones, and the last closed ones.
    remote: Mutex<BTreeMap<(String, i64), TeamRequest>>,
    engines: Mutex<Vec<EngineSeen>>,
    /// Decisions sent from here, waiting for their outcome.
    waiting: Mutex<HashMap<i64, oneshot::Sender<()>>>,
    /// Bumped on every change the console shows.
    changes: watch::Sender<u64>,
    stop: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Plain data; a panic elsewhere cannot leave it half-changed.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Team {
    /// Starts the link in the background; it connects (and reconnects) by
    /// itself.
    pub fn start(parts: TeamParts) -> Self {
        let TeamParts {
            me,
            url,
            options,
            approvals,
            audit,
            deciders,
            rules,
            upstreams,
            pins,
        } = parts;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            // A dead database must show as degraded within seconds, not
            // after sqlx's default half minute.
            .acquire_timeout(Duration::from_secs(3))
            .connect_lazy_with(options);
        let inner = Arc::new(Inner {
            me,
            deciders,
            share_rules: rules == super::Sharing::Team,
            pins: upstreams.filter(|_| pins == super::Sharing::Team),
            url,
            started_ms: crate::audit::now_ms(),
            approvals,
            audit,
            shipped: std::sync::atomic::AtomicI64::new(0),
            pool,
            state: Mutex::new(TeamState::Connecting),
            remote: Mutex::new(BTreeMap::new()),
            engines: Mutex::new(Vec::new()),
            waiting: Mutex::new(HashMap::new()),
            changes: watch::Sender::new(0),
            stop: CancellationToken::new(),
            task: Mutex::new(None),
        });
        let task = tokio::spawn(run(Arc::clone(&inner)));
        *lock(&inner.task) = Some(task);
        Self { inner }
    }

    /// This engine.
    pub fn me(&self) -> &EngineIdentity {
        &self.inner.me
    }

    /// The link's state and the team's engines.
    pub fn status(&self) -> TeamStatus {
        TeamStatus {
            me: self.inner.me.clone(),
            url: self.inner.url.clone(),
            state: lock(&self.inner.state).clone(),
            engines: lock(&self.inner.engines).clone(),
        }
    }

    /// Other engines' requests: pending ones first (oldest first), then
    /// the last closed ones.
    pub fn requests(&self) -> Vec<TeamRequest> {
        let mut v: Vec<TeamRequest> = lock(&self.inner.remote).values().cloned().collect();
        v.sort_by_key(|r| (r.status != ApprovalStatus::Pending, r.created_ms));
        v
    }

    /// The team's audit log, newest first: every engine's calls, as
    /// shipped (within about half a second of each call).
    ///
    /// # Errors
    /// The database is unreachable or failed.
    pub async fn calls(
        &self,
        q: &super::TeamCallsQuery,
    ) -> Result<Vec<super::TeamCall>, TeamError> {
        Ok(store::calls(&self.inner.pool, q).await?)
    }

    /// A counter bumped on every change [`Self::status`] or
    /// [`Self::requests`] would show.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Sends a person's decision on request `id` of `engine` to that
    /// engine and waits for what it did: it may have been decided first
    /// by someone else, which the outcome says.
    ///
    /// # Errors
    /// The link is down, the engine is offline or did not answer in time,
    /// the request is this engine's own (decide it in the local queue), or
    /// the database failed.
    pub async fn decide(&self, engine: &str, id: i64, d: Decision) -> Result<Outcome, TeamError> {
        let inner = &self.inner;
        if engine == inner.me.id {
            return Err(TeamError::OwnRequest { id });
        }
        if let TeamState::Degraded { error, .. } = &*lock(&inner.state) {
            return Err(TeamError::Offline(error.clone()));
        }
        let owner = lock(&inner.engines)
            .iter()
            .find(|e| e.engine.id == engine)
            .cloned();
        if let Some(e) = owner.as_ref().filter(|e| !e.online) {
            return Err(TeamError::EngineOffline {
                engine: e.engine.label(),
            });
        }
        let why_not = lock(&inner.remote)
            .get(&(engine.to_owned(), id))
            .and_then(|r| r.cannot_decide.clone());
        if let Some(why) = why_not {
            return Err(TeamError::NotADecider(why));
        }
        let sent = SentDecision {
            id: 0,
            local_id: id,
            answer: match d.answer {
                Answer::Approve => "approve".into(),
                Answer::Deny => "deny".into(),
            },
            reason: d.reason.clone(),
            always_scope: d.always.as_ref().map(|a| a.scope.clone()),
            always_ttl_ms: d
                .always
                .as_ref()
                .and_then(|a| a.ttl)
                .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX)),
            by_user: inner.me.label(),
            by_engine: inner.me.id.clone(),
        };
        let decision =
            store::send_decision(&inner.pool, engine, &sent, crate::audit::now_ms()).await?;
        let (tx, mut rx) = oneshot::channel();
        lock(&inner.waiting).insert(decision, tx);
        let answered = self.await_outcome(decision, &mut rx).await;
        lock(&inner.waiting).remove(&decision);
        let label = owner.map_or_else(|| engine.to_owned(), |e| e.engine.label());
        answered?.ok_or(TeamError::NoAnswer { engine: label })
    }

    /// The outcome of sent decision `id`; `None` if its engine never took
    /// it (the decision is then void: it can no longer take effect).
    async fn await_outcome(
        &self,
        id: i64,
        rx: &mut oneshot::Receiver<()>,
    ) -> Result<Option<Outcome>, TeamError> {
        let pool = &self.inner.pool;
        // The answer may have landed before the waiter was registered.
        if let Some(o) = store::outcome(pool, id).await? {
            return Ok(Some(o));
        }
        if tokio::time::timeout(DECISION_WAIT, &mut *rx).await.is_err()
            && store::void_decision(pool, id).await?
        {
            return Ok(None);
        }
        // Taken: its outcome follows the decision's own commit.
        if store::outcome(pool, id).await?.is_none() {
            let _ = tokio::time::timeout(DECISION_WAIT, rx).await;
        }
        Ok(store::outcome(pool, id).await?)
    }

    /// Stops the link after one last pass that publishes how local
    /// requests ended (shutdown cancels them all), bounded so a dead
    /// database cannot hold shutdown up.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        let task = lock(&self.inner.task).take();
        if let Some(t) = task {
            let _ = t.await;
        }
        if !matches!(*lock(&self.inner.state), TeamState::Online) {
            return;
        }
        let last = async {
            publish_local(&self.inner).await?;
            ship_calls(&self.inner).await
        };
        if let Ok(Err(e)) = tokio::time::timeout(Duration::from_secs(3), last).await {
            tracing::warn!("team: could not publish the last closings: {e}");
        }
        self.inner.pool.close().await;
    }
}

/// Connects, serves until the connection is lost, and connects again,
/// until stopped.
async fn run(inner: Arc<Inner>) {
    loop {
        match serve(&inner).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!("team database: {e}; governing alone until it is back");
                inner.degrade(e.to_string());
            }
        }
        tokio::select! {
            () = inner.stop.cancelled() => return,
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}

/// What the listener task passes on.
enum Heard {
    Note(String),
    Lost(String),
}

async fn serve(inner: &Arc<Inner>) -> Result<(), TeamError> {
    store::MIGRATOR.run(&inner.pool).await?;
    store::register(&inner.pool, &inner.me, inner.started_ms).await?;
    let mut listener = PgListener::connect_with(&inner.pool).await?;
    listener.listen(CHANNEL).await?;
    // Its own task: a notification half read is never dropped by a select.
    let (tx, mut heard) = mpsc::channel(256);
    let listening = tokio::spawn(listen(listener, tx));
    let _stop_listening = AbortOnDrop(listening);
    // Subscribed before the resync, so nothing falls between the two.
    let mut events = inner.approvals.subscribe();
    let mut approved_pins = inner
        .pins
        .as_ref()
        .map(crate::upstream::Upstreams::approved_pins);
    resync(inner).await?;
    inner.set_state(TeamState::Online);
    let mut beat = tokio::time::interval(HEARTBEAT);
    let mut ship = tokio::time::interval(SHIP_EVERY);
    loop {
        tokio::select! {
            () = inner.stop.cancelled() => return Ok(()),
            h = heard.recv() => match h {
                Some(Heard::Note(payload)) => on_note(inner, &payload).await?,
                Some(Heard::Lost(why)) => return Err(TeamError::Lost(why)),
                None => return Err(TeamError::Lost("the listener stopped".into())),
            },
            e = events.recv() => match e {
                Ok(event) => on_event(inner, &event).await?,
                Err(broadcast::error::RecvError::Lagged(_)) => resync(inner).await?,
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            _ = beat.tick() => {
                store::heartbeat(&inner.pool, &inner.me.id).await?;
                refresh_engines(inner).await?;
            }
            _ = ship.tick() => ship_calls(inner).await?,
            rec = next_pin(&mut approved_pins) => match rec {
                Ok(rec) => share_pin(inner, &rec).await?,
                Err(broadcast::error::RecvError::Lagged(_)) => sync_pins(inner).await?,
                Err(broadcast::error::RecvError::Closed) => approved_pins = None,
            },
        }
    }
}

/// The next approved pin, or never when pins are not shared.
async fn next_pin(
    feed: &mut Option<broadcast::Receiver<crate::upstream::PinRecord>>,
) -> Result<crate::upstream::PinRecord, broadcast::error::RecvError> {
    match feed {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Shares the approved version of one pin.
async fn share_pin(inner: &Inner, rec: &crate::upstream::PinRecord) -> Result<(), TeamError> {
    if let Some(v) = &rec.approved {
        store::publish_pin(&inner.pool, &inner.me.id, &rec.name, &v.hash).await?;
    }
    Ok(())
}

/// Approves the version of `name` this engine holds back if a sharing
/// engine approved that very version.
async fn adopt_pin(inner: &Inner, name: &str) -> Result<(), TeamError> {
    let Some(up) = &inner.pins else {
        return Ok(());
    };
    let Ok(rec) = up.pins().get(name).await else {
        return Ok(()); // a tool this engine does not have
    };
    let Some(pending) = &rec.pending else {
        return Ok(());
    };
    if store::pin_approved(&inner.pool, name, &pending.hash).await? {
        match up.approve(name).await {
            Ok(_) => tracing::info!("{name}: approved by the team; registered again"),
            Err(e) => tracing::warn!("{name}: the team approved it, but: {e}"),
        }
    }
    Ok(())
}

/// Shares every version approved here and adopts every one held back here
/// that the team approved.
async fn sync_pins(inner: &Inner) -> Result<(), TeamError> {
    let Some(up) = &inner.pins else {
        return Ok(());
    };
    let all = up
        .pins()
        .list()
        .await
        .map_err(|e| TeamError::Pins(e.to_string()))?;
    for rec in &all {
        share_pin(inner, rec).await?;
    }
    for rec in all.iter().filter(|r| r.pending.is_some()) {
        adopt_pin(inner, &rec.name).await?;
    }
    Ok(())
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn listen(mut listener: PgListener, tx: mpsc::Sender<Heard>) {
    loop {
        let heard = match listener.try_recv().await {
            Ok(Some(n)) => Heard::Note(n.payload().to_owned()),
            Ok(None) => Heard::Lost("the connection to the database was lost".into()),
            Err(e) => Heard::Lost(e.to_string()),
        };
        let lost = matches!(heard, Heard::Lost(_));
        if tx.send(heard).await.is_err() || lost {
            return;
        }
    }
}

/// Publishes every local request the team has not seen as it is now.
async fn publish_local(inner: &Inner) -> Result<(), TeamError> {
    let me = &inner.me.id;
    let mut after = store::watermark(&inner.pool, me).await?;
    loop {
        let batch = inner.approvals.requests_after(after, RESYNC_BATCH).await?;
        let Some(last) = batch.last().map(|r| r.id) else {
            break;
        };
        for r in &batch {
            let offered = r.status == ApprovalStatus::Pending;
            store::publish(&inner.pool, me, r, offered, inner.deciders.as_deref()).await?;
        }
        after = last;
    }
    for id in store::pending_ids(&inner.pool, me).await? {
        match inner.approvals.get(id).await {
            Ok(r) if r.status != ApprovalStatus::Pending => {
                store::publish(&inner.pool, me, &r, true, inner.deciders.as_deref()).await?;
            }
            Ok(_) | Err(ApprovalError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Ships the local audit rows the team does not have yet.
async fn ship_calls(inner: &Inner) -> Result<(), TeamError> {
    use std::sync::atomic::Ordering;
    loop {
        let after = inner.shipped.load(Ordering::SeqCst);
        let rows = inner
            .audit
            .committed_calls_after(after, SHIP_BATCH)
            .await
            .map_err(|e| TeamError::Audit(e.to_string()))?;
        let Some(last) = rows.last().map(|r| r.id) else {
            return Ok(());
        };
        store::ship_calls(&inner.pool, &inner.me.id, &rows).await?;
        inner.shipped.store(last, Ordering::SeqCst);
    }
}

/// Brings both sides up to date: this engine's requests and audit rows
/// out, the other engines' requests in, and decisions sent here while the
/// link was down.
async fn resync(inner: &Arc<Inner>) -> Result<(), TeamError> {
    publish_local(inner).await?;
    let shipped = store::calls_watermark(&inner.pool, &inner.me.id).await?;
    inner
        .shipped
        .store(shipped, std::sync::atomic::Ordering::SeqCst);
    ship_calls(inner).await?;
    let others = store::others_pending(&inner.pool, &inner.me.id).await?;
    {
        let mut remote = lock(&inner.remote);
        remote.retain(|_, r| r.status != ApprovalStatus::Pending);
        for r in others {
            let r = r.for_user(&inner.me.user);
            remote.insert((r.engine.id.clone(), r.id), r);
        }
    }
    for id in store::waiting_for(&inner.pool, &inner.me.id).await? {
        take(inner, id).await?;
    }
    if inner.share_rules {
        share_rules(inner).await?;
        import_rules(inner).await?;
    }
    sync_pins(inner).await?;
    refresh_engines(inner).await?;
    inner.bump();
    Ok(())
}

/// Shares this engine's portable rules as they now are, revocations made
/// while the link was down included.
async fn share_rules(inner: &Inner) -> Result<(), TeamError> {
    let me = &inner.me.id;
    for r in inner.approvals.rules().iter().filter(|r| r.is_portable()) {
        store::publish_rule(&inner.pool, me, r).await?;
    }
    for id in store::shared_rule_ids(&inner.pool, me).await? {
        if let Some(r) = inner.approvals.rule(id).await?
            && r.revoked_ms.is_some()
        {
            store::publish_rule(&inner.pool, me, &r).await?;
        }
    }
    Ok(())
}

/// Applies the rules the other engines share, replacing the last set.
async fn import_rules(inner: &Inner) -> Result<(), TeamError> {
    let rules = store::others_rules(&inner.pool, &inner.me.id).await?;
    inner.approvals.set_team_rules(rules);
    Ok(())
}

async fn refresh_engines(inner: &Inner) -> Result<(), TeamError> {
    let seen = store::engines(&inner.pool, ONLINE_MS).await?;
    let changed = {
        let mut engines = lock(&inner.engines);
        let online = |v: &[EngineSeen]| -> Vec<(String, bool)> {
            v.iter().map(|e| (e.engine.id.clone(), e.online)).collect()
        };
        let changed = online(&engines) != online(&seen);
        *engines = seen;
        changed
    };
    if changed {
        inner.bump();
    }
    Ok(())
}

/// A local approval event: publish the request (or the rule) as it now is.
async fn on_event(inner: &Inner, event: &Event) -> Result<(), TeamError> {
    let id = match event {
        Event::ApprovalRequested { id, .. } | Event::ApprovalDecided { id, .. } => *id,
        Event::ToolQuarantined { tool, .. } => return adopt_pin(inner, tool).await,
        Event::ApprovalRuleChanged { rule_id, .. } if inner.share_rules => {
            if let Some(r) = inner.approvals.rule(*rule_id).await?
                && r.is_portable()
            {
                store::publish_rule(&inner.pool, &inner.me.id, &r).await?;
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    match inner.approvals.get(id).await {
        Ok(r) => {
            let deciders = inner.deciders.as_deref();
            store::publish(&inner.pool, &inner.me.id, &r, true, deciders).await?;
            Ok(())
        }
        Err(ApprovalError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn on_note(inner: &Arc<Inner>, payload: &str) -> Result<(), TeamError> {
    let Ok(note) = serde_json::from_str::<Note>(payload) else {
        tracing::debug!("team: ignoring a notification this version does not know: {payload}");
        return Ok(());
    };
    let me = &inner.me.id;
    match note {
        Note::Request { e, id } if e != *me => {
            if let Some(r) = store::request(&inner.pool, &e, id).await? {
                remember(inner, r);
                inner.bump();
            }
        }
        Note::Decision { e, id } if e == *me => take(inner, id).await?,
        Note::Pin { e, name } if e != *me => adopt_pin(inner, &name).await?,
        Note::Rule { e, .. } if e != *me && inner.share_rules => {
            import_rules(inner).await?;
            inner.bump();
        }
        Note::Outcome { to, id, .. } if to == *me => {
            if let Some(tx) = lock(&inner.waiting).remove(&id) {
                let _ = tx.send(());
            }
        }
        _ => {}
    }
    Ok(())
}

/// Keeps another engine's request, dropping the oldest closed ones past
/// [`KEEP_CLOSED`].
fn remember(inner: &Inner, r: TeamRequest) {
    let r = r.for_user(&inner.me.user);
    let mut remote = lock(&inner.remote);
    remote.insert((r.engine.id.clone(), r.id), r);
    let mut closed: Vec<((String, i64), i64)> = remote
        .iter()
        .filter(|(_, r)| r.status != ApprovalStatus::Pending)
        .map(|(k, r)| (k.clone(), r.decided_ms.unwrap_or(r.created_ms)))
        .collect();
    if closed.len() > KEEP_CLOSED {
        closed.sort_by_key(|(_, at)| *at);
        for (k, _) in closed.iter().take(closed.len() - KEEP_CLOSED) {
            remote.remove(k);
        }
    }
}

/// Takes decision `id`, sent to this engine, through the local queue, and
/// answers its sender.
async fn take(inner: &Inner, id: i64) -> Result<(), TeamError> {
    let Some(sent) = store::take_decision(&inner.pool, &inner.me.id, id).await? else {
        return Ok(()); // voided by its sender, or taken already
    };
    let outcome = match refused(inner, &sent).await? {
        Some(refusal) => refusal,
        None => apply(inner, &sent).await,
    };
    store::answer(&inner.pool, &inner.me.id, &sent, &outcome).await?;
    Ok(())
}

/// The refusal of a decision from someone `[team] deciders` does not
/// list. Checked here, by the engine that decides, against the sender's
/// engine row rather than the words it sent.
async fn refused(inner: &Inner, sent: &SentDecision) -> Result<Option<Outcome>, TeamError> {
    if inner.deciders.is_none() {
        return Ok(None);
    }
    let user = store::engine_user(&inner.pool, &sent.by_engine)
        .await?
        .unwrap_or_default();
    let why = super::request::refusal(inner.deciders.as_deref(), &user, &inner.me);
    Ok(why.map(|words| Outcome {
        took_effect: false,
        status: ApprovalStatus::Pending,
        decided_by: None,
        words,
    }))
}

async fn apply(inner: &Inner, sent: &SentDecision) -> Outcome {
    // Anything but "approve" denies: a garbled answer fails closed.
    let mut d = match sent.answer.as_str() {
        "approve" => Decision::approve(),
        _ => Decision::deny(None),
    };
    d.reason.clone_from(&sent.reason);
    if let Some(scope) = &sent.always_scope {
        let ttl = sent
            .always_ttl_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .map(Duration::from_millis);
        d = d.always(scope.clone(), ttl);
    }
    let d = d.by(format!("team {}", sent.by_user));
    match inner.approvals.decide(sent.local_id, d).await {
        Ok(decided) => Outcome {
            took_effect: true,
            status: decided.request.status,
            decided_by: decided.request.decided_by.clone(),
            words: decided.request.ended.map(|e| e.cause).unwrap_or_default(),
        },
        Err(ApprovalError::AlreadyDecided { id, status }) => {
            let by = inner
                .approvals
                .get(id)
                .await
                .ok()
                .and_then(|r| r.decided_by);
            let place = by
                .as_deref()
                .map_or_else(|| "elsewhere".to_owned(), crate::approval::recorded_words);
            Outcome {
                took_effect: false,
                status,
                words: format!("It was already {} {place}.", status.label().to_lowercase()),
                decided_by: by,
            }
        }
        Err(e) => Outcome {
            took_effect: false,
            status: ApprovalStatus::Pending,
            decided_by: None,
            words: e.to_string(),
        },
    }
}

impl Inner {
    fn set_state(&self, s: TeamState) {
        *lock(&self.state) = s;
        self.bump();
    }

    fn degrade(&self, error: String) {
        let mut state = lock(&self.state);
        if !matches!(*state, TeamState::Degraded { .. }) {
            *state = TeamState::Degraded {
                since_ms: crate::audit::now_ms(),
                error,
            };
            drop(state);
            self.bump();
        }
    }

    fn bump(&self) {
        self.changes.send_modify(|n| *n += 1);
    }
}

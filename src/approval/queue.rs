//! The approval queue: pending requests, decisions on them, their timeout,
//! cancellation and expiry. The API the UI, the CLI and the policy stage
//! share; the remembered rules a decision can create live in
//! [`super::remembered`].
//!
//! A waiting call holds the receiving end of a oneshot channel; the live
//! request (in memory) holds the sending end. Whoever *removes* the request
//! from the in-memory map first (a person's decision, the timeout, the
//! call being cancelled, shutdown, the expiry sweep) decides; that removal
//! happens under a lock with no `.await`, so a decision racing a timeout
//! or a cancellation has exactly one outcome, and a request whose call was
//! cancelled can no longer be approved from that instant on. SQLite is the
//! record, written by the winner: a decision is committed before the
//! waiting call is woken (an approval is on disk before the tool runs); a
//! timeout, cancellation or expiry is written in the background so the
//! agent's reply never waits on the disk. Until that write lands, the
//! closing is remembered in memory, so a person asking meanwhile is told
//! the real status rather than `pending`; [`Approvals::settle`] waits for
//! those writes (shutdown does, before the final flush). A record that is
//! lost in a crash leaves the row `pending`, and the next start closes it
//! as `expired`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::{Acquire, SqlitePool};
use tokio::sync::{broadcast, oneshot};
use tokio_util::task::TaskTracker;

use super::remembered::{RuleSet, ms};
use super::scope::{CallerInfo, CallerKey, Scope, ScopeSpec};
use super::store::{self, ApprovalRequest, Closing, RememberedRule, RuleEffect};
use super::{ApprovalError, ApprovalStatus, Clock, Liveness, ProcessLiveness, SystemClock};
use crate::audit::AuditLog;
use crate::cancel::{Cancel, CancelReason};
use crate::canonical::call_hash;
use crate::context::Caller;
use crate::events::{Event, EventBus, RuleChange};
use crate::policy::Assessment;

/// How often pending rows past their expiry are closed. Live calls time
/// out on their own; the sweep catches requests nobody waits on (recovered
/// after a restart, or left by a cancelled call).
const SWEEP_EVERY: Duration = Duration::from_secs(15);

/// How long a call that lost the race against a decision waits for that
/// decision to arrive (it is sent right after the row update).
const LOST_RACE_GRACE: Duration = Duration::from_secs(5);

/// Settings for [`Approvals::open`].
#[derive(Clone)]
pub struct ApprovalOptions {
    /// Wall clock for stored times and rule expiry.
    pub clock: Arc<dyn Clock>,
    /// Decides, at startup, whether a pending request's caller is still
    /// there.
    pub liveness: Arc<dyn Liveness>,
}

impl Default for ApprovalOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            liveness: Arc::new(ProcessLiveness),
        }
    }
}

/// How a request ended, as the waiting call sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// A person approved it.
    Approved {
        /// Who.
        by: Option<String>,
        /// The "always allow" rule made with it.
        rule_id: Option<i64>,
    },
    /// A person denied it.
    Denied {
        /// Their reason, passed to the agent.
        reason: Option<String>,
    },
    /// Nobody answered in time.
    TimedOut {
        /// How long it waited.
        after: Duration,
    },
    /// Closed without a decision.
    Expired {
        /// Why.
        why: String,
    },
    /// Closed because the call's owner ended it; only shutdown wakes a
    /// waiting call with this (a call cancelled by its client is no longer
    /// there to be woken).
    Cancelled {
        /// Who ended it.
        reason: CancelReason,
    },
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Run the call.
    Approve,
    /// Refuse the call.
    Deny,
}

/// "Always" part of a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Always {
    /// SCOPE syntax (see `docs/policy.md`), e.g. `tool` or
    /// `/path:path=~/proj/**`.
    pub scope: String,
    /// The remembered rule expires after this long; `None` = until revoked.
    pub ttl: Option<Duration>,
}

/// A decision on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Approve or deny.
    pub answer: Answer,
    /// A deny reason (passed to the agent) or a note.
    pub reason: Option<String>,
    /// Also remember it for calls in this scope.
    pub always: Option<Always>,
    /// Who decided (`cli`, `ui`, a user name); recorded.
    pub by: Option<String>,
}

impl Decision {
    /// Approve once.
    pub fn approve() -> Self {
        Self {
            answer: Answer::Approve,
            reason: None,
            always: None,
            by: None,
        }
    }

    /// Deny once, with an optional reason for the agent.
    pub fn deny(reason: Option<String>) -> Self {
        Self {
            answer: Answer::Deny,
            reason,
            always: None,
            by: None,
        }
    }

    /// Also remember it for `scope` (SCOPE syntax).
    pub fn always(mut self, scope: impl Into<String>, ttl: Option<Duration>) -> Self {
        self.always = Some(Always {
            scope: scope.into(),
            ttl,
        });
        self
    }

    /// Records who decided.
    pub fn by(mut self, by: impl Into<String>) -> Self {
        self.by = Some(by.into());
        self
    }
}

/// What [`Approvals::decide`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Decided {
    /// The request, now closed.
    pub request: ApprovalRequest,
    /// The remembered rule, if `always` was given.
    pub rule: Option<RememberedRule>,
}

/// One call asking a person (built by the policy stage).
#[derive(Debug)]
pub struct Ask<'a> {
    /// Engine call id.
    pub call_id: u64,
    /// The tool.
    pub tool: &'a str,
    /// The arguments exactly as they will run.
    pub args: &'a Value,
    /// The arguments as people may see them (secrets redacted).
    pub shown_args: Value,
    /// `shown_args` in one line ([`crate::preview::preview`], made where
    /// the tool's definition is known).
    pub preview: String,
    /// The policy version that asked.
    pub policy_version: u64,
    /// Why it asks.
    pub assessment: &'a Assessment,
    /// Who asks.
    pub caller: &'a Caller,
    /// Session id.
    pub session: &'a str,
    /// The call's cancellation token, if it has one: when the call is
    /// cancelled while it waits, the request is closed as `cancelled` with
    /// the token's reason.
    pub cancel: Option<&'a Cancel>,
}

struct Live {
    request: ApprovalRequest,
    args: Value,
    waiter: Option<oneshot::Sender<Resolution>>,
}

/// The state [`Approvals`] shares between its clones. The remembered-rule
/// half of the API (in `remembered`) reads `pool`, `events`, `clock` and
/// `rules`.
pub(super) struct Inner {
    pub(super) pool: SqlitePool,
    audit: AuditLog,
    pub(super) events: EventBus,
    pub(super) clock: Arc<dyn Clock>,
    live: Mutex<HashMap<i64, Live>>,
    /// Requests claimed from `live` whose closing is not in SQLite yet,
    /// with the status it will have. Locked after `live` when both are.
    closing: Mutex<HashMap<i64, ApprovalStatus>>,
    /// The background writes of closings, for [`Approvals::settle`].
    records: TaskTracker,
    /// Set by [`Approvals::close`]: calls that ask from then on are
    /// cancelled with this reason. Set under the `live` lock.
    closed: OnceLock<CancelReason>,
    pub(super) rules: RuleSet,
}

impl Inner {
    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Live>> {
        // The map holds plain data; a panic elsewhere cannot corrupt it.
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn closing(&self) -> std::sync::MutexGuard<'_, HashMap<i64, ApprovalStatus>> {
        self.closing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes request `id` out of the live map, remembering that it is
    /// being closed as `status`: from here on nobody else can close it.
    fn claim(&self, id: i64, status: ApprovalStatus) -> Option<Live> {
        let mut live = self.live();
        let l = live.remove(&id)?;
        self.closing().insert(id, status);
        Some(l)
    }

    /// The status request `id` is being closed with, until it is stored.
    fn closing_status(&self, id: i64) -> Option<ApprovalStatus> {
        self.closing().get(&id).copied()
    }
}

/// The approval queue and remembered decisions. Cloning shares them.
#[derive(Clone)]
pub struct Approvals {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("pending", &self.inner.live().len())
            .finish_non_exhaustive()
    }
}

impl Approvals {
    /// Opens the queue on the audit log's database (its migrations include
    /// the approval tables), closes requests left pending by a previous run
    /// whose caller is gone, and starts the expiry sweep. Events go to
    /// `events`, which must be the engine's bus.
    ///
    /// # Errors
    /// The database could not be read.
    pub async fn open(
        audit: &AuditLog,
        events: EventBus,
        opts: ApprovalOptions,
    ) -> Result<Self, ApprovalError> {
        let inner = Arc::new(Inner {
            pool: audit.pool().clone(),
            audit: audit.clone(),
            events,
            clock: opts.clock,
            live: Mutex::new(HashMap::new()),
            closing: Mutex::new(HashMap::new()),
            records: TaskTracker::new(),
            closed: OnceLock::new(),
            rules: RuleSet::empty(),
        });
        let me = Self { inner };
        me.reload_rules().await?;
        me.recover(&*opts.liveness).await?;
        tokio::spawn(sweep_loop(Arc::downgrade(&me.inner)));
        Ok(me)
    }

    /// The data dir's argument-hash key (the audit log's).
    pub fn call_key(&self) -> &crate::call_key::CallKey {
        self.inner.audit.call_key()
    }

    /// The hash binding a decision to exactly this call (see
    /// [`crate::canonical::call_hash`]), under [`Self::call_key`].
    pub fn call_hash(&self, tool: &str, args: &Value) -> String {
        call_hash(self.call_key(), tool, args)
    }

    /// Every engine event from now on (approval requests and decisions among
    /// them): the UI's "subscribe to changes".
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// Pending requests, oldest first (`toolgate approvals`).
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        let mut v: Vec<ApprovalRequest> = self
            .inner
            .live()
            .values()
            .map(|l| {
                let mut r = l.request.clone();
                r.waiting = l.waiter.is_some();
                r
            })
            .collect();
        v.sort_by_key(|r| r.id);
        v
    }

    /// One request in any state.
    ///
    /// # Errors
    /// [`ApprovalError::NotFound`], or the store failed.
    pub async fn get(&self, id: i64) -> Result<ApprovalRequest, ApprovalError> {
        if let Some(l) = self.inner.live().get(&id) {
            let mut r = l.request.clone();
            r.waiting = l.waiter.is_some();
            return Ok(r);
        }
        // Read before the row: the mark goes only once the row is written.
        let closing = self.inner.closing_status(id);
        let mut r = store::get_request(&self.inner.pool, id)
            .await?
            .ok_or(ApprovalError::NotFound { id })?;
        if let (ApprovalStatus::Pending, Some(status)) = (r.status, closing) {
            r.status = status;
        }
        Ok(r)
    }

    /// The newest `limit` requests in any state, newest first (history).
    ///
    /// # Errors
    /// The store failed.
    pub async fn recent(&self, limit: i64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        store::recent_requests(&self.inner.pool, limit).await
    }

    /// Up to `limit` requests with ids above `after`, oldest first: what a
    /// team link publishes when it catches up.
    ///
    /// # Errors
    /// The store failed.
    pub async fn requests_after(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        let mut v = store::requests_after(&self.inner.pool, after, limit).await?;
        for r in &mut v {
            if let Some(l) = self.inner.live().get(&r.id) {
                r.waiting = l.waiter.is_some();
            } else if let (ApprovalStatus::Pending, Some(status)) =
                (r.status, self.inner.closing_status(r.id))
            {
                r.status = status;
            }
        }
        Ok(v)
    }

    /// Approves request `id` (`toolgate approve ID [--always SCOPE]`).
    ///
    /// # Errors
    /// See [`Self::decide`].
    pub async fn approve(&self, id: i64, always: Option<&str>) -> Result<Decided, ApprovalError> {
        let mut d = Decision::approve();
        if let Some(s) = always {
            d = d.always(s, None);
        }
        self.decide(id, d).await
    }

    /// Denies request `id` (`toolgate deny ID [--reason TEXT]`).
    ///
    /// # Errors
    /// See [`Self::decide`].
    pub async fn deny(&self, id: i64, reason: Option<String>) -> Result<Decided, ApprovalError> {
        self.decide(id, Decision::deny(reason)).await
    }

    /// Decides request `id`. With `always`, also remembers the decision for
    /// the scope, which must cover this request.
    ///
    /// # Errors
    /// [`ApprovalError::NotFound`], [`ApprovalError::AlreadyDecided`] (also
    /// when the timeout won a race), a bad or missing scope, or the store.
    pub async fn decide(&self, id: i64, d: Decision) -> Result<Decided, ApprovalError> {
        let (request, args) = self.live_request(id).await?;
        let scope = match &d.always {
            Some(a) => Some(ScopeSpec::parse(&a.scope)?.bind(
                self.call_key(),
                &request.tool,
                &args,
                &request.caller,
            )?),
            None => None,
        };
        let now = self.inner.clock.now_ms();
        let (status, resolution_reason) = match d.answer {
            Answer::Approve => (ApprovalStatus::Approved, d.reason.clone()),
            Answer::Deny => (ApprovalStatus::Denied, d.reason.clone()),
        };
        let closing = Closing {
            status,
            at_ms: now,
            by: d.by.clone(),
            reason: resolution_reason,
        };
        let rule = scope.map(|s| RememberedRule {
            id: 0,
            effect: match d.answer {
                Answer::Approve => RuleEffect::Allow,
                Answer::Deny => RuleEffect::Deny,
            },
            scope_text: s.to_string(),
            scope: s.def().clone(),
            reason: d.reason.clone(),
            created_ms: now,
            created_by: d.by.clone(),
            from_request: Some(id),
            expires_ms: d.always.as_ref().and_then(|a| a.ttl).map(|t| now + ms(t)),
            revoked_ms: None,
            origin: None,
        });
        // Claim: from here on neither the timeout nor the sweep can close it.
        let Some(live) = self.inner.claim(id, status) else {
            return Err(self.closed_error(id).await);
        };
        let committed = self.commit_decision(id, &closing, rule).await;
        self.inner.closing().remove(&id);
        let rule = match committed {
            Ok(rule) => rule,
            Err(e) => {
                // Fail closed: an unrecorded approval must not run.
                if let Some(tx) = live.waiter {
                    let _ = tx.send(Resolution::Expired {
                        why: format!("the decision could not be recorded: {e}"),
                    });
                }
                return Err(e);
            }
        };
        if rule.is_some() {
            self.reload_rules().await?;
        }
        let resolution = match d.answer {
            Answer::Approve => Resolution::Approved {
                by: d.by.clone(),
                rule_id: rule.as_ref().map(|r| r.id),
            },
            Answer::Deny => Resolution::Denied {
                reason: d.reason.clone(),
            },
        };
        let mut request = request;
        apply_closing(&mut request, &closing, rule.as_ref().map(|r| r.id));
        if let Some(tx) = live.waiter {
            // Err: the call was cancelled meanwhile; nothing to wake.
            let _ = tx.send(resolution);
        }
        self.announce_decided(&request);
        if let Some(r) = &rule {
            self.announce_rule(r, RuleChange::Added);
        }
        Ok(Decided { request, rule })
    }

    /// Why request `id`, no longer live, cannot be decided: the status it
    /// is being closed with, else the stored one.
    async fn closed_error(&self, id: i64) -> ApprovalError {
        if let Some(status) = self.inner.closing_status(id) {
            return ApprovalError::AlreadyDecided { id, status };
        }
        self.stored_error(id).await
    }

    async fn stored_error(&self, id: i64) -> ApprovalError {
        match store::get_request(&self.inner.pool, id).await {
            Ok(Some(r)) => ApprovalError::AlreadyDecided {
                id,
                status: r.status,
            },
            Ok(None) => ApprovalError::NotFound { id },
            Err(e) => e,
        }
    }

    /// Closes the row and stores the rule in one transaction; the
    /// compare-and-set on the row tells a lost race apart.
    async fn commit_decision(
        &self,
        id: i64,
        closing: &Closing,
        rule: Option<RememberedRule>,
    ) -> Result<Option<RememberedRule>, ApprovalError> {
        let mut conn = self.inner.pool.acquire().await?;
        let mut tx = conn.begin().await?;
        if !store::close_request(&mut tx, id, closing).await? {
            drop(tx);
            // The in-memory mark is this decision's own: ask the row.
            return Err(self.stored_error(id).await);
        }
        let rule = match rule {
            Some(r) => {
                let r = store::insert_rule(&mut tx, r).await?;
                store::set_request_rule(&mut tx, id, r.id).await?;
                Some(r)
            }
            None => None,
        };
        tx.commit().await?;
        Ok(rule)
    }

    pub(super) async fn live_request(
        &self,
        id: i64,
    ) -> Result<(ApprovalRequest, Value), ApprovalError> {
        let found = self
            .inner
            .live()
            .get(&id)
            .map(|l| (l.request.clone(), l.args.clone()));
        match found {
            Some(x) => Ok(x),
            None => Err(self.closed_error(id).await),
        }
    }

    /// Binds SCOPE text to pending request `id` without deciding
    /// anything: the scope an "always" decision would remember, or why it
    /// cannot (a malformed scope, or one that misses this very request,
    /// as [`ApprovalError::Scope`]). For the console's scope preview.
    ///
    /// # Errors
    /// [`ApprovalError::NotFound`], [`ApprovalError::AlreadyDecided`], a
    /// scope error, or the store.
    pub async fn bind_scope(&self, id: i64, text: &str) -> Result<Scope, ApprovalError> {
        let (request, args) = self.live_request(id).await?;
        Ok(ScopeSpec::parse(text)?.bind(self.call_key(), &request.tool, &args, &request.caller)?)
    }

    // ---- the asking side -------------------------------------------------

    /// Puts a call in front of a person and waits for the answer, at most
    /// `ask.assessment.timeout`. Cancel-safe: dropping the future closes
    /// the request as `cancelled`, with `ask.cancel`'s reason.
    ///
    /// # Errors
    /// The request could not be stored (the call must then be refused).
    pub async fn ask(&self, ask: Ask<'_>) -> Result<Resolution, ApprovalError> {
        let caller = CallerInfo::from(ask.caller);
        let hash = self.call_hash(ask.tool, ask.args);
        let now = self.inner.clock.now_ms();
        if let Some(reason) = self.inner.closed.get() {
            return Ok(Resolution::Cancelled { reason: *reason });
        }
        let cancel = ask.cancel.cloned();
        if let Some((id, rx, left)) = self.reattach(ask.tool, &hash, &caller.key(), now) {
            return Ok(self.wait(id, rx, left, cancel).await);
        }
        let timeout = ask.assessment.timeout;
        let mut request = ApprovalRequest {
            id: 0,
            call_id: i64::try_from(ask.call_id).unwrap_or(i64::MAX),
            tool: ask.tool.to_owned(),
            args: ask.shown_args,
            preview: ask.preview,
            args_hash: hash,
            policy_version: i64::try_from(ask.policy_version).unwrap_or(i64::MAX),
            risk: ask.assessment.risk,
            rule: ask.assessment.rule.clone(),
            reason: ask.assessment.reason.clone(),
            caller,
            session: ask.session.to_owned(),
            created_ms: now,
            expires_ms: now + ms(timeout),
            status: ApprovalStatus::Pending,
            decided_ms: None,
            decided_by: None,
            decision_reason: None,
            rule_id: None,
            ended: None,
            waiting: true,
        };
        request.id = store::insert_request(&self.inner.pool, &request).await?;
        let (tx, rx) = oneshot::channel();
        let id = request.id;
        {
            let mut live = self.inner.live();
            // Closed while the row was written: it never goes live.
            if let Some(reason) = self.inner.closed.get().copied() {
                drop(live);
                self.inner.closing().insert(id, ApprovalStatus::Cancelled);
                self.record_in_background(request, cancellation(now, Some(reason)));
                return Ok(Resolution::Cancelled { reason });
            }
            live.insert(
                id,
                Live {
                    request: request.clone(),
                    args: ask.args.clone(),
                    waiter: Some(tx),
                },
            );
        }
        self.announce_requested(&request, ask.call_id);
        Ok(self.wait(id, rx, timeout, cancel).await)
    }

    /// A request recovered after a restart, for the same call from the same
    /// caller, that nobody waits on yet: the re-sent call waits on it
    /// instead of asking twice.
    fn reattach(
        &self,
        tool: &str,
        hash: &str,
        caller: &CallerKey,
        now: i64,
    ) -> Option<(i64, oneshot::Receiver<Resolution>, Duration)> {
        let mut live = self.inner.live();
        let (id, l) = live.iter_mut().find(|(_, l)| {
            l.waiter.is_none()
                && l.request.tool == tool
                && l.request.args_hash == hash
                && l.request.caller.key() == *caller
                && l.request.expires_ms > now
        })?;
        let (tx, rx) = oneshot::channel();
        l.waiter = Some(tx);
        let left = Duration::from_millis(u64::try_from(l.request.expires_ms - now).unwrap_or(0));
        Some((*id, rx, left))
    }

    async fn wait(
        &self,
        id: i64,
        mut rx: oneshot::Receiver<Resolution>,
        timeout: Duration,
        cancel: Option<Cancel>,
    ) -> Resolution {
        let mut guard = LeaveGuard {
            approvals: Some(self.clone()),
            id,
            cancel,
        };
        let res = match tokio::time::timeout(timeout, &mut rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Resolution::Expired {
                why: "the request was closed without a decision".into(),
            },
            Err(_) => self.time_out(id, rx, timeout).await,
        };
        guard.approvals = None;
        res
    }

    async fn time_out(
        &self,
        id: i64,
        rx: oneshot::Receiver<Resolution>,
        after: Duration,
    ) -> Resolution {
        let closing = Closing {
            status: ApprovalStatus::TimedOut,
            at_ms: self.inner.clock.now_ms(),
            by: Some("timeout".into()),
            reason: Some(format!("nobody answered within {}s", after.as_secs())),
        };
        if self.close_in_background(id, closing) {
            return Resolution::TimedOut { after };
        }
        // A decision claimed it first and is being recorded; it wakes us
        // right after its commit.
        match tokio::time::timeout(LOST_RACE_GRACE, rx).await {
            Ok(Ok(r)) => r,
            _ => Resolution::TimedOut { after },
        }
    }

    /// Claims a live request and records `closing` without a person
    /// (timeout, cancelled call, expiry) in a background task. `false` if
    /// someone else claimed it first.
    fn close_in_background(&self, id: i64, closing: Closing) -> bool {
        let Some(live) = self.inner.claim(id, closing.status) else {
            return false;
        };
        self.record_in_background(live.request, closing);
        true
    }

    /// Records a claimed request's closing in a task [`Self::settle`]
    /// waits for, then forgets the in-memory mark.
    fn record_in_background(&self, request: ApprovalRequest, closing: Closing) {
        let me = self.clone();
        let id = request.id;
        let record = async move {
            if let Err(e) = me.record_closing(request, &closing, false).await {
                tracing::error!("approval #{id}: could not record {}: {e}", closing.status);
            }
            me.inner.closing().remove(&id);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(self.inner.records.track_future(record));
            }
            Err(_) => tracing::error!("approval #{id}: no runtime to record its closing"),
        }
    }

    /// Closes the queue: every pending request is closed as `cancelled`
    /// at once, the calls waiting on them are woken with
    /// [`Resolution::Cancelled`] (their agents are told why), and calls
    /// that ask from now on get the same answer without a request. Shutdown
    /// calls this the moment it begins: nobody is left to approve, so
    /// nobody should be kept waiting. Requests that no call waits on
    /// (recovered after a restart) are closed too. Returns how many were
    /// closed; the rows are written in the background (see
    /// [`Self::settle`]).
    pub fn close(&self, reason: CancelReason) -> usize {
        let claimed: Vec<Live> = {
            let mut live = self.inner.live();
            let _ = self.inner.closed.set(reason);
            let mut closing = self.inner.closing();
            live.drain()
                .map(|(id, l)| {
                    closing.insert(id, ApprovalStatus::Cancelled);
                    l
                })
                .collect()
        };
        let n = claimed.len();
        let now = self.inner.clock.now_ms();
        for mut l in claimed {
            if let Some(tx) = l.waiter.take() {
                let _ = tx.send(Resolution::Cancelled { reason });
            }
            self.record_in_background(l.request, cancellation(now, Some(reason)));
        }
        n
    }

    /// Waits until every closing written in the background so far (time-
    /// outs, cancellations) is in SQLite and announced; shutdown calls it
    /// before the audit log's final flush.
    pub async fn settle(&self) {
        let records = &self.inner.records;
        records.close();
        records.wait().await;
        records.reopen();
        if let Err(e) = self.write_rule_use().await {
            tracing::warn!("could not record how often remembered rules matched: {e}");
        }
    }

    /// Writes a claimed (or recovered) request's closing and announces it.
    async fn record_closing(
        &self,
        mut request: ApprovalRequest,
        closing: &Closing,
        audit_row: bool,
    ) -> Result<(), ApprovalError> {
        let mut conn = self.inner.pool.acquire().await?;
        if !store::close_request(&mut conn, request.id, closing).await? {
            return Ok(());
        }
        apply_closing(&mut request, closing, None);
        let event = decided_event(&request);
        if audit_row {
            self.inner.audit.record_event(&event);
        }
        self.inner.events.emit(event);
        Ok(())
    }

    // ---- restart and expiry ----------------------------------------------

    async fn recover(&self, liveness: &dyn Liveness) -> Result<(), ApprovalError> {
        let now = self.inner.clock.now_ms();
        for r in store::pending_requests(&self.inner.pool).await? {
            let why = if r.expires_ms <= now {
                Some("it expired while toolgate was not running")
            } else if !liveness.is_alive(&r.caller) {
                Some("toolgate restarted and the caller is gone")
            } else {
                None
            };
            match why {
                // Nobody is subscribed yet at startup, so the event row is
                // written here rather than by whoever records the bus.
                Some(why) => {
                    self.record_closing(r, &expiry(now, why, "startup"), true)
                        .await?
                }
                None => {
                    self.inner.live().insert(
                        r.id,
                        Live {
                            args: r.args.clone(),
                            request: r,
                            waiter: None,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// Closes, as `expired`, every pending request past its expiry that no
    /// call waits on (live calls time out by themselves). Runs every
    /// 15 s; public so hosts and tests can run it now. Returns how many.
    ///
    /// # Errors
    /// The store failed.
    pub async fn sweep(&self) -> Result<usize, ApprovalError> {
        let now = self.inner.clock.now_ms();
        let stale: Vec<Live> = {
            let mut live = self.inner.live();
            let ids: Vec<i64> = live
                .iter()
                .filter(|(_, l)| l.waiter.is_none() && l.request.expires_ms <= now)
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| live.remove(id)).collect()
        };
        let n = stale.len();
        for l in stale {
            let closing = expiry(now, "nobody decided before it expired", "sweep");
            self.record_closing(l.request, &closing, true).await?;
        }
        Ok(n)
    }

    // ---- events ----------------------------------------------------------

    fn announce_requested(&self, r: &ApprovalRequest, call_id: u64) {
        self.inner.events.emit(Event::ApprovalRequested {
            id: r.id,
            call_id,
            tool: r.tool.clone(),
            preview: r.preview.clone(),
            risk: r.risk,
            rule: r.rule.clone(),
            reason: r.reason.clone(),
            caller: r.caller.clone(),
            expires_ms: r.expires_ms,
        });
    }

    fn announce_decided(&self, r: &ApprovalRequest) {
        self.inner.events.emit(decided_event(r));
    }
}

fn decided_event(r: &ApprovalRequest) -> Event {
    Event::ApprovalDecided {
        id: r.id,
        tool: r.tool.clone(),
        status: r.status,
        by: r.decided_by.clone(),
        reason: r.decision_reason.clone(),
        rule_id: r.rule_id,
        ended: r.ended.clone(),
    }
}

/// The closing of a request whose call was cancelled; `reason` is `None`
/// when the waiting call was dropped without a token saying why.
fn cancellation(now: i64, reason: Option<CancelReason>) -> Closing {
    let (by, why) = match reason {
        Some(CancelReason::Shutdown) => ("shutdown", "toolgate shut down before a decision".into()),
        Some(r) => (
            "caller",
            format!(
                "the call was cancelled because {} before a decision",
                r.describe()
            ),
        ),
        None => ("caller", "the waiting call ended before a decision".into()),
    };
    Closing {
        status: ApprovalStatus::Cancelled,
        at_ms: now,
        by: Some(by.into()),
        reason: Some(why),
    }
}

fn expiry(now: i64, why: &str, by: &str) -> Closing {
    Closing {
        status: ApprovalStatus::Expired,
        at_ms: now,
        by: Some(by.into()),
        reason: Some(why.into()),
    }
}

fn apply_closing(r: &mut ApprovalRequest, c: &Closing, rule_id: Option<i64>) {
    r.status = c.status;
    r.decided_ms = Some(c.at_ms);
    r.decided_by.clone_from(&c.by);
    r.decision_reason.clone_from(&c.reason);
    r.rule_id = rule_id;
    r.ended = super::ended(c.status, c.by.as_deref(), c.reason.as_deref());
    r.waiting = false;
}

/// Closes the request as `cancelled` if the waiting call is dropped: the
/// engine drops a call's pipeline when its token fires (the agent
/// cancelled or disconnected, toolgate is shutting down), and the token
/// says which. The request leaves the live map here, synchronously, so no
/// approval can reach it after the call is gone.
struct LeaveGuard {
    approvals: Option<Approvals>,
    id: i64,
    cancel: Option<Cancel>,
}

impl Drop for LeaveGuard {
    fn drop(&mut self) {
        if let Some(a) = self.approvals.take() {
            let reason = self.cancel.as_ref().and_then(Cancel::reason);
            a.close_in_background(self.id, cancellation(a.inner.clock.now_ms(), reason));
        }
    }
}

async fn sweep_loop(inner: Weak<Inner>) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let me = Approvals { inner };
        if let Err(e) = me.sweep().await {
            tracing::warn!("approval expiry sweep: {e}");
        }
        if let Err(e) = me.write_rule_use().await {
            tracing::warn!("could not record how often remembered rules matched: {e}");
        }
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;

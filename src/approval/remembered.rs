//! Remembered rules: the "always" decisions a person made (from a request,
//! or directly in the console), kept in SQLite and consulted before a call
//! asks anyone.
//!
//! The active rules are held compiled in memory behind an [`ArcSwap`], so
//! the call path reads them without a lock or a database query; every
//! change writes the row first and then reloads the whole list, so memory
//! never holds a rule the database does not. An active deny beats an
//! active allow, whatever their order: a person who said "never" for a
//! scope is not overridden by a broader "always".

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::Value;
use sqlx::SqlitePool;

use super::ApprovalError;
use super::queue::Approvals;
use super::scope::{CallerInfo, CallerKey, Scope, ScopeSpec};
use super::store::{self, RememberedRule, RuleEffect, StoredUse};
use crate::call_key::CallKey;
use crate::context::Caller;
use crate::events::{Event, RuleChange};

/// A rule made directly (UI "add rule"), not from a request.
#[derive(Debug, Clone)]
pub struct NewRule {
    /// Allow or deny.
    pub effect: RuleEffect,
    /// The scope; "this" clauses (`tool`, `args`, `caller`) are not
    /// available here, so use `tool=GLOB` and argument clauses.
    pub scope: String,
    /// Why.
    pub reason: Option<String>,
    /// Expires after this long.
    pub ttl: Option<Duration>,
    /// Who made it.
    pub by: Option<String>,
}

/// Changes to a remembered rule; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct RuleEdit {
    /// New effect.
    pub effect: Option<RuleEffect>,
    /// New reason (`Some(None)` clears it).
    pub reason: Option<Option<String>>,
    /// New expiry, counted from now (`Some(None)` = until revoked).
    pub ttl: Option<Option<Duration>>,
}

/// A remembered rule with how it has been used
/// ([`Approvals::rules_with_use`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RuleInUse {
    /// The rule.
    pub rule: RememberedRule,
    /// Calls it matched, across restarts.
    pub hits: u64,
    /// When it last matched one, unix ms.
    pub last_used_ms: Option<i64>,
}

/// How often a remembered rule matched a call, and when it last did.
/// Counted lock-free in memory as calls are assessed and written behind
/// in batches ([`Approvals::write_rule_use`]: every expiry sweep and at
/// shutdown), so a person tidying up rules after a restart still sees
/// which ones are used, without a database write on the call path. A
/// crash loses at most the matches since the last sweep.
#[derive(Debug, Default)]
struct RuleUse {
    hits: AtomicU64,
    last_ms: AtomicI64,
    /// `hits` as last written.
    written: AtomicU64,
}

impl RuleUse {
    fn stored(used: StoredUse) -> Self {
        Self {
            hits: AtomicU64::new(used.hits),
            last_ms: AtomicI64::new(used.last_used_ms.unwrap_or(0)),
            written: AtomicU64::new(used.hits),
        }
    }

    fn hit(&self, now: i64) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn now(&self) -> StoredUse {
        let last = self.last_ms.load(Ordering::Relaxed);
        StoredUse {
            hits: self.hits.load(Ordering::Relaxed),
            last_used_ms: (last != 0).then_some(last),
        }
    }
}

/// A stored rule with its scope compiled once, at load time.
struct ActiveRule {
    rule: RememberedRule,
    scope: Scope,
    uses: Arc<RuleUse>,
}

/// The unrevoked rules, compiled, as the call path reads them.
pub(super) struct RuleSet {
    /// This engine's own, as stored.
    own: ArcSwap<Vec<ActiveRule>>,
    /// The ones other engines of the team share (set by the team link;
    /// never stored here).
    team: ArcSwap<Vec<ActiveRule>>,
}

impl RuleSet {
    /// No rules; [`Self::reload`] fills it.
    pub(super) fn empty() -> Self {
        Self {
            own: ArcSwap::from_pointee(Vec::new()),
            team: ArcSwap::from_pointee(Vec::new()),
        }
    }

    /// Replaces the team's shared rules.
    fn set_team(&self, rules: Vec<RememberedRule>, key: &CallKey) {
        let active = rules
            .into_iter()
            .filter_map(|rule| match Scope::compile(rule.scope.clone(), key) {
                Ok(scope) => Some(ActiveRule {
                    uses: Arc::new(RuleUse::default()),
                    rule,
                    scope,
                }),
                Err(e) => {
                    tracing::warn!("team rule {} is unusable here: {e}", rule.label());
                    None
                }
            })
            .collect();
        self.team.store(Arc::new(active));
    }

    fn team_list(&self) -> Vec<RememberedRule> {
        self.team.load().iter().map(|a| a.rule.clone()).collect()
    }

    /// Replaces the set with the unrevoked rules in the database. Hit
    /// counts carry over by rule id (memory is ahead of the database until
    /// the next write), so an edit does not reset them. A rule
    /// whose scope no longer compiles is logged and skipped rather than
    /// failing every call.
    pub(super) async fn reload(
        &self,
        pool: &SqlitePool,
        key: &CallKey,
    ) -> Result<(), ApprovalError> {
        let rules = store::unrevoked_rules(pool).await?;
        let old = self.own.load();
        let uses_of = |id: i64, stored: StoredUse| {
            old.iter()
                .find(|a| a.rule.id == id)
                .map_or_else(|| Arc::new(RuleUse::stored(stored)), |a| a.uses.clone())
        };
        let active = rules
            .into_iter()
            .filter_map(
                |(rule, stored)| match Scope::compile(rule.scope.clone(), key) {
                    Ok(scope) => Some(ActiveRule {
                        uses: uses_of(rule.id, stored),
                        rule,
                        scope,
                    }),
                    Err(e) => {
                        tracing::error!("remembered rule #{} is unusable: {e}", rule.id);
                        None
                    }
                },
            )
            .collect();
        self.own.store(Arc::new(active));
        Ok(())
    }

    fn list(&self) -> Vec<RememberedRule> {
        self.own.load().iter().map(|a| a.rule.clone()).collect()
    }

    fn with_use(&self) -> Vec<RuleInUse> {
        self.own
            .load()
            .iter()
            .map(|a| {
                let used = a.uses.now();
                RuleInUse {
                    rule: a.rule.clone(),
                    hits: used.hits,
                    last_used_ms: used.last_used_ms,
                }
            })
            .collect()
    }

    /// Writes the use of every rule that matched calls since its last
    /// write. A match counted while the write runs is caught by the next.
    async fn write_use(&self, pool: &SqlitePool) -> Result<(), ApprovalError> {
        let rules = self.own.load();
        let changed: Vec<(&RuleUse, i64, StoredUse)> = rules
            .iter()
            .map(|a| (&*a.uses, a.rule.id, a.uses.now()))
            .filter(|(u, _, now)| now.hits != u.written.load(Ordering::Relaxed))
            .collect();
        if changed.is_empty() {
            return Ok(());
        }
        let rows: Vec<(i64, StoredUse)> = changed.iter().map(|(_, id, now)| (*id, *now)).collect();
        store::write_uses(pool, &rows).await?;
        for (u, _, now) in changed {
            u.written.store(now.hits, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The active rule deciding this call, deny first; counts the hit.
    /// The rule deciding the call; `counted` records the use (a call being
    /// decided), a preview does not (a person testing the policy).
    fn decide(
        &self,
        tool: &str,
        args: &Value,
        key: &CallerKey,
        now: i64,
        counted: bool,
    ) -> Option<RememberedRule> {
        let (own, team) = (self.own.load(), self.team.load());
        let hit = |effect: RuleEffect| {
            own.iter().chain(team.iter()).find(|a| {
                a.rule.effect == effect && a.rule.is_active(now) && a.scope.matches(tool, args, key)
            })
        };
        let found = hit(RuleEffect::Deny).or_else(|| hit(RuleEffect::Allow))?;
        if counted {
            found.uses.hit(now);
        }
        Some(found.rule.clone())
    }

    fn is_empty(&self) -> bool {
        self.own.load().is_empty() && self.team.load().is_empty()
    }
}

impl Approvals {
    /// [`Self::rules`] with each rule's matches, across restarts.
    pub fn rules_with_use(&self) -> Vec<RuleInUse> {
        self.inner.rules.with_use()
    }

    /// Writes the rules' match counts that changed since the last write
    /// (the expiry sweep and [`Self::settle`] call it).
    ///
    /// # Errors
    /// The store.
    pub async fn write_rule_use(&self) -> Result<(), ApprovalError> {
        self.inner.rules.write_use(&self.inner.pool).await
    }

    /// Sets the rules other engines of the team share (the team link's
    /// job): they apply here like this engine's own, deny before allow,
    /// and are never stored or changed here.
    pub fn set_team_rules(&self, rules: Vec<RememberedRule>) {
        self.inner.rules.set_team(rules, self.call_key());
    }

    /// The rules other engines of the team share, as applied here.
    pub fn team_rules(&self) -> Vec<RememberedRule> {
        self.inner.rules.team_list()
    }

    /// Remembered rules that are not revoked, expired ones included
    /// (`toolgate rules list`; check [`RememberedRule::is_active`]).
    pub fn rules(&self) -> Vec<RememberedRule> {
        self.inner.rules.list()
    }

    /// Rule `id` as stored, revoked or not (a call's detail names the rule
    /// that decided it even after it was revoked).
    ///
    /// # Errors
    /// The store.
    pub async fn rule(&self, id: i64) -> Result<Option<RememberedRule>, ApprovalError> {
        store::get_rule(&self.inner.pool, id).await
    }

    /// Revokes rule `id` (`toolgate rules --rm ID`).
    ///
    /// # Errors
    /// [`ApprovalError::RuleNotFound`] (also for an already revoked rule) or
    /// the store.
    pub async fn revoke_rule(&self, id: i64) -> Result<RememberedRule, ApprovalError> {
        let now = self.inner.clock.now_ms();
        self.change_rule(id, RuleChange::Revoked, |r| r.revoked_ms = Some(now))
            .await
    }

    /// Edits rule `id`'s effect, reason or expiry. The scope is fixed: to
    /// change what a rule covers, revoke it and make a new one, so the
    /// history says what was allowed when.
    ///
    /// # Errors
    /// [`ApprovalError::RuleNotFound`] or the store.
    pub async fn edit_rule(
        &self,
        id: i64,
        edit: RuleEdit,
    ) -> Result<RememberedRule, ApprovalError> {
        let now = self.inner.clock.now_ms();
        self.change_rule(id, RuleChange::Edited, |r| {
            if let Some(e) = edit.effect {
                r.effect = e;
            }
            if let Some(reason) = edit.reason {
                r.reason = reason;
            }
            if let Some(ttl) = edit.ttl {
                r.expires_ms = ttl.map(|t| now + ms(t));
            }
        })
        .await
    }

    /// Adds a rule that was not made from a request.
    ///
    /// # Errors
    /// A scope using `tool`/`args`/`caller` (they need a request), a bad
    /// pattern, or the store.
    pub async fn add_rule(&self, new: NewRule) -> Result<RememberedRule, ApprovalError> {
        let spec = ScopeSpec::parse(&new.scope)?;
        let def = spec.standalone()?;
        let scope = Scope::compile(def, self.call_key())?;
        let now = self.inner.clock.now_ms();
        let rule = RememberedRule {
            id: 0,
            effect: new.effect,
            scope_text: scope.to_string(),
            scope: scope.def().clone(),
            reason: new.reason,
            created_ms: now,
            created_by: new.by,
            from_request: None,
            expires_ms: new.ttl.map(|t| now + ms(t)),
            revoked_ms: None,
            origin: None,
        };
        let mut conn = self.inner.pool.acquire().await?;
        let rule = store::insert_rule(&mut conn, rule).await?;
        self.reload_rules().await?;
        self.announce_rule(&rule, RuleChange::Added);
        Ok(rule)
    }

    /// Applies `f` to unrevoked rule `id`, stores it, reloads the set and
    /// announces `change`.
    async fn change_rule(
        &self,
        id: i64,
        change: RuleChange,
        f: impl FnOnce(&mut RememberedRule),
    ) -> Result<RememberedRule, ApprovalError> {
        let mut rule = store::get_rule(&self.inner.pool, id)
            .await?
            .filter(|r| r.revoked_ms.is_none())
            .ok_or(ApprovalError::RuleNotFound { id })?;
        f(&mut rule);
        if !store::update_rule(&self.inner.pool, &rule).await? {
            return Err(ApprovalError::RuleNotFound { id });
        }
        self.reload_rules().await?;
        self.announce_rule(&rule, change);
        Ok(rule)
    }

    /// Reads the rules back from the database after any change to them.
    pub(super) async fn reload_rules(&self) -> Result<(), ApprovalError> {
        self.inner
            .rules
            .reload(&self.inner.pool, self.call_key())
            .await
    }

    /// The remembered rule deciding this call, if any: an active deny beats
    /// an active allow. Lock-free; cheap when there are no rules.
    pub fn remembered(&self, tool: &str, args: &Value, caller: &Caller) -> Option<RememberedRule> {
        self.remembered_as(tool, args, caller, true)
    }

    /// [`Self::remembered`] without counting a use: the rule's hits are
    /// calls it decided, and a test of the policy decides none.
    pub fn remembered_preview(
        &self,
        tool: &str,
        args: &Value,
        caller: &Caller,
    ) -> Option<RememberedRule> {
        self.remembered_as(tool, args, caller, false)
    }

    fn remembered_as(
        &self,
        tool: &str,
        args: &Value,
        caller: &Caller,
        counted: bool,
    ) -> Option<RememberedRule> {
        if self.inner.rules.is_empty() {
            return None;
        }
        let now = self.inner.clock.now_ms();
        let key = CallerInfo::from(caller).key();
        self.inner.rules.decide(tool, args, &key, now, counted)
    }

    pub(super) fn announce_rule(&self, r: &RememberedRule, change: RuleChange) {
        self.inner.events.emit(Event::ApprovalRuleChanged {
            rule_id: r.id,
            change,
            effect: r.effect,
            scope: r.scope_text.clone(),
        });
    }
}

/// A duration as stored: whole ms, saturating (a TTL of "forever" in
/// practice is not worth an overflow error).
pub(super) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[path = "remembered_tests.rs"]
mod tests;

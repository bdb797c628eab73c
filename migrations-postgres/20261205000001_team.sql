-- The team's shared queue on Postgres (docs/team.md). Each engine keeps its
-- own SQLite database as the record it governs from; these tables are what
-- the team shares: which engines there are, the approval requests they
-- raise, and the decisions people send to the engine that raised them.
-- Times are Unix milliseconds from the raising engine's clock, except
-- `seen`, which is the database's own clock (heartbeats are compared with
-- `now()`, so engines' clocks need not agree).

CREATE TABLE engines (
    id         TEXT PRIMARY KEY,           -- random, kept in the engine's data dir
    host       TEXT NOT NULL,
    os_user    TEXT NOT NULL,
    version    TEXT NOT NULL,
    started_ms BIGINT NOT NULL,
    seen       TIMESTAMPTZ NOT NULL        -- last heartbeat, database clock
);

-- One row per approval request of any engine, keyed by the engine and its
-- local id: replaying the same request twice changes nothing.
CREATE TABLE team_requests (
    engine_id       TEXT   NOT NULL REFERENCES engines (id),
    local_id        BIGINT NOT NULL,
    call_id         BIGINT NOT NULL,
    tool            TEXT   NOT NULL,
    args            TEXT   NOT NULL,       -- JSON, secret arguments redacted
    preview         TEXT   NOT NULL,
    risk            TEXT   NOT NULL,
    rule            TEXT   NOT NULL,
    reason          TEXT   NOT NULL,
    caller          TEXT   NOT NULL,       -- JSON CallerInfo
    session         TEXT   NOT NULL,
    created_ms      BIGINT NOT NULL,
    expires_ms      BIGINT NOT NULL,
    status          TEXT   NOT NULL,       -- as approval_requests.status
    decided_ms      BIGINT,
    decided_by      TEXT,
    decision_reason TEXT,
    -- false: it was raised and closed while the engine was offline, so it
    -- was never the team's to decide.
    offered         BOOLEAN NOT NULL,
    -- JSON list of the users who may decide it (`[team] deciders` of the
    -- raising engine); NULL: anyone of the team.
    deciders        TEXT,
    PRIMARY KEY (engine_id, local_id)
);
CREATE INDEX team_requests_pending ON team_requests (created_ms) WHERE status = 'pending';

-- A person's decision on another engine's request, delivered to that
-- engine, which alone decides its requests (so a decision is taken exactly
-- once). `state` moves once from `sent` to `taken` (the owner took it) or
-- `void` (the sender gave up waiting): whichever update lands first wins.
CREATE TABLE team_decisions (
    id            BIGSERIAL PRIMARY KEY,
    engine_id     TEXT   NOT NULL,         -- the engine that raised the request
    local_id      BIGINT NOT NULL,
    answer        TEXT   NOT NULL,         -- approve | deny
    reason        TEXT,
    always_scope  TEXT,                    -- an "always" decision's scope
    always_ttl_ms BIGINT,
    by_user       TEXT   NOT NULL,         -- who decided
    by_engine     TEXT   NOT NULL,         -- from which engine
    sent_ms       BIGINT NOT NULL,
    state         TEXT   NOT NULL DEFAULT 'sent',
    outcome       TEXT                     -- what the owner said, in words
);
CREATE INDEX team_decisions_sent ON team_decisions (engine_id) WHERE state = 'sent';

-- Approval requests: one row per call that policy put in front of a person.
-- The decision binds to exactly one call (tool + args_hash + policy_version
-- + caller); see src/approval/mod.rs. Rows are never deleted by the engine:
-- they are the record of who decided what.
CREATE TABLE approval_requests (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id         INTEGER NOT NULL,          -- engine call id of the asking call
    tool            TEXT    NOT NULL,
    args            TEXT    NOT NULL,          -- canonical JSON, secret arguments redacted (for people)
    args_hash       TEXT    NOT NULL,          -- sha256 of tool + canonical args, unredacted (the binding)
    policy_version  INTEGER NOT NULL,          -- PolicyHandle version that asked
    risk            TEXT    NOT NULL,          -- low | medium | high | critical
    rule            TEXT    NOT NULL,          -- which rule asked
    reason          TEXT    NOT NULL,          -- why, in words
    caller          TEXT    NOT NULL,          -- JSON: via, pid, uid, exe, client_name, agent_id
    session         TEXT    NOT NULL,
    created_ms      INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    status          TEXT    NOT NULL,          -- pending | approved | denied | timed_out | expired
    decided_ms      INTEGER,
    decided_by      TEXT,
    decision_reason TEXT,                      -- a person's deny reason, or why it expired
    rule_id         INTEGER                    -- remembered rule created by this decision
);
CREATE INDEX approval_requests_status ON approval_requests (status, id);

-- Remembered decisions ("always allow" / "always deny") with an explicit
-- scope. Revoking keeps the row (revoked_ms) so the history stays readable.
CREATE TABLE approval_rules (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    effect       TEXT    NOT NULL,             -- allow | deny
    scope        TEXT    NOT NULL,             -- JSON ScopeDef
    scope_text   TEXT    NOT NULL,             -- the same in SCOPE syntax, for people
    reason       TEXT,
    created_ms   INTEGER NOT NULL,
    created_by   TEXT,
    from_request INTEGER,                      -- approval_requests.id it was made from
    expires_ms   INTEGER,                      -- NULL = until revoked
    revoked_ms   INTEGER
);
CREATE INDEX approval_rules_active ON approval_rules (revoked_ms);

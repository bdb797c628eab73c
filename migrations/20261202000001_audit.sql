-- One row per call an agent made, answered or refused. Written before the
-- reply is sent (see src/audit/mod.rs), so a reply an agent saw is never
-- missing here, even after kill -9.
CREATE TABLE calls (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    ts_ms         INTEGER NOT NULL,          -- unix time of arrival, ms
    call_id       INTEGER NOT NULL,          -- engine call id (unique per daemon run)
    session       TEXT    NOT NULL,
    caller        TEXT    NOT NULL,          -- JSON: via, pid, uid, exe, client
    tool          TEXT    NOT NULL,
    args          TEXT    NOT NULL,          -- canonical JSON, secret arguments redacted
    args_hash     TEXT    NOT NULL,          -- sha256 of tool + canonical args (unredacted)
    decision      TEXT    NOT NULL,          -- allowed | refused
    outcome       TEXT    NOT NULL,          -- ok | tool_error | error
    error_kind    TEXT,                      -- ErrorKind, when outcome = error
    error_message TEXT,
    stages        TEXT    NOT NULL,          -- JSON: [[stage, micros], ...] innermost first
    notes         TEXT    NOT NULL,          -- JSON: [[stage, note], ...]
    output_size   INTEGER NOT NULL,
    output_digest TEXT,                      -- sha256 of the output as sent
    elapsed_us    INTEGER NOT NULL
);
CREATE INDEX calls_ts ON calls (ts_ms);
CREATE INDEX calls_tool ON calls (tool, ts_ms);

-- Engine events that matter after the fact: approvals, breaker transitions,
-- registry changes, loop-guard levels.
CREATE TABLE events (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    ts_ms  INTEGER NOT NULL,
    kind   TEXT    NOT NULL,
    body   TEXT    NOT NULL                  -- the event as JSON
);
CREATE INDEX events_ts ON events (ts_ms);

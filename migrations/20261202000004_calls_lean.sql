-- Every page a call's insert touches is one more 4 KiB frame appended to
-- the WAL before the call's reply can go out. AUTOINCREMENT touched
-- sqlite_sequence and calls_ts its own index page on every call; both go,
-- which halves the pages per call (4 -> 2). Row ids stay increasing: a
-- rowid is max(id) + 1, and pruning never deletes the newest row (see
-- AuditLog::prune), so an id is never handed out twice. Pruning by time
-- walks the ids from the oldest, which only visits rows it deletes.
CREATE TABLE calls_lean (
    id            INTEGER PRIMARY KEY,
    ts_ms         INTEGER NOT NULL,
    call_id       INTEGER NOT NULL,
    session       TEXT    NOT NULL,
    caller        TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    args          TEXT    NOT NULL,
    args_hash     TEXT    NOT NULL,
    decision      TEXT    NOT NULL,
    outcome       TEXT    NOT NULL,
    error_kind    TEXT,
    error_message TEXT,
    stages        TEXT    NOT NULL,
    notes         TEXT    NOT NULL,
    output_size   INTEGER NOT NULL,
    output_digest TEXT,
    elapsed_us    INTEGER NOT NULL
);
INSERT INTO calls_lean SELECT * FROM calls;
DROP TABLE calls;
ALTER TABLE calls_lean RENAME TO calls;
CREATE INDEX calls_tool ON calls (tool, ts_ms);

-- The team's audit log: every engine's call rows, shipped from its own
-- SQLite audit log and keyed by (engine, local row id), so shipping a row
-- twice stores it once. Columns as the engine's `calls` table.
CREATE TABLE team_calls (
    engine_id     TEXT   NOT NULL REFERENCES engines (id),
    local_id      BIGINT NOT NULL,
    ts_ms         BIGINT NOT NULL,
    call_id       BIGINT NOT NULL,
    session       TEXT   NOT NULL,
    caller        TEXT   NOT NULL,
    tool          TEXT   NOT NULL,
    args          TEXT   NOT NULL,
    args_hash     TEXT   NOT NULL,
    decision      TEXT   NOT NULL,
    outcome       TEXT   NOT NULL,
    error_kind    TEXT,
    error_message TEXT,
    stages        TEXT   NOT NULL,
    notes         TEXT   NOT NULL,
    output_size   BIGINT NOT NULL,
    output_digest TEXT,
    elapsed_us    BIGINT NOT NULL,
    PRIMARY KEY (engine_id, local_id)
);
CREATE INDEX team_calls_ts ON team_calls (ts_ms);
CREATE INDEX team_calls_tool ON team_calls (tool, ts_ms);

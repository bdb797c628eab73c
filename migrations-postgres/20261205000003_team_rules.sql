-- Remembered rules an engine shares with the team (`[team] rules =
-- "team"`): its own rules whose scope means the same on every machine (no
-- exact-arguments hash, no single caller). Keyed by (engine, local rule
-- id); only the engine that made a rule changes or revokes it.
CREATE TABLE team_rules (
    engine_id  TEXT   NOT NULL REFERENCES engines (id),
    local_id   BIGINT NOT NULL,
    effect     TEXT   NOT NULL,            -- allow | deny
    scope      TEXT   NOT NULL,            -- JSON ScopeDef
    scope_text TEXT   NOT NULL,
    reason     TEXT,
    created_ms BIGINT NOT NULL,
    created_by TEXT,
    expires_ms BIGINT,
    revoked_ms BIGINT,
    PRIMARY KEY (engine_id, local_id)
);

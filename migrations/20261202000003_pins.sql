-- Pins of upstream MCP tools (src/upstream/pins.rs): the first-seen hash of
-- each tool's description + canonical input schema. A later change is kept
-- as the pending version and quarantines the tool until a person approves
-- it; both versions stay here so the UI can show the diff.
CREATE TABLE pins (
    server              TEXT    NOT NULL,
    tool                TEXT    NOT NULL,          -- the server's own tool name
    name                TEXT    NOT NULL,          -- registry name, <server>__<tool>
    status              TEXT    NOT NULL,          -- pinned | quarantined
    hash                TEXT,                      -- sha256 of the approved version (NULL: never approved)
    description         TEXT,
    input_schema        TEXT,                      -- canonical JSON
    flags               TEXT    NOT NULL DEFAULT '[]', -- injection markers of the approved version
    first_seen_ms       INTEGER NOT NULL,
    approved_ms         INTEGER,
    pending_hash        TEXT,                      -- the version waiting for a person
    pending_description TEXT,
    pending_schema      TEXT,
    pending_flags       TEXT,
    pending_since_ms    INTEGER,
    PRIMARY KEY (server, tool)
);
CREATE UNIQUE INDEX pins_name ON pins (name);

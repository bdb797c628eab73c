-- Upstream tool versions a person approved on an engine that shares its
-- pins (`[team] pins = "team"`): the registry name and the hash of the
-- description and input schema. Another sharing engine holding that very
-- version back approves it too.
CREATE TABLE team_pins (
    name        TEXT   NOT NULL,          -- registry name, <server>__<tool>
    hash        TEXT   NOT NULL,          -- sha256 of description + canonical schema
    engine_id   TEXT   NOT NULL REFERENCES engines (id),
    approved_ms BIGINT NOT NULL,
    PRIMARY KEY (name, hash)
);

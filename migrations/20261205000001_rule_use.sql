-- How often each remembered rule matched a call and when it last did, so a
-- person tidying up rules after a restart still sees which ones are used.
-- Counted in memory on the call path and written behind in batches (see
-- src/approval/remembered.rs), never one write per call.
ALTER TABLE approval_rules ADD COLUMN hits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approval_rules ADD COLUMN last_used_ms INTEGER;

-- The console pages a tool's calls newest first by row id (keyset paging,
-- src/control/audit_query.rs). An index on (tool, ts_ms) made SQLite sort
-- every call of the tool for each page: 3.6 s for a tool with 240,000 of
-- 400,000 rows, measured. An index on (tool) alone is ordered by
-- (tool, rowid), so a page is a walk down the index: 3 ms. Nothing read
-- the old index (pruning walks row ids). It is replaced, not joined, so a
-- call's insert still touches the same number of pages.
DROP INDEX calls_tool;
CREATE INDEX calls_tool ON calls (tool);

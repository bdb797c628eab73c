//! Audit queries for the console: filters, keyset paging and export.
//!
//! - Filters, each optional and combined with AND: `tool` (an exact name,
//!   or a glob when it holds `*`, `?` or `[`: SQLite's `GLOB`, which
//!   treats those as globset does for tool names), `caller` (text the
//!   caller contains, case-insensitive), `outcome` (`ok`, `tool_error`,
//!   `error`, or an error class such as `denied`), `since_ms` / `until_ms`
//!   (arrival time, `until` exclusive).
//! - Paging is by row id, newest first: a page is the `limit` newest rows
//!   below `before`, and `next_before` is the last row's id. Unlike an
//!   offset, a row arriving meanwhile never shifts a page, so paging
//!   visits every row exactly once. `limit` is 1–500 (default 100); a
//!   larger one is refused rather than cut, so a client never mistakes a
//!   capped page for the whole answer.
//! - Every value reaches SQL as a bound parameter (`QueryBuilder::push_bind`);
//!   only fixed fragments are concatenated.
//! - Export (JSON lines or CSV) walks the same filters page by page (1,000
//!   rows a page, each page its own short read) and yields one encoded
//!   chunk per page, so an export of any size holds one page in memory and
//!   never keeps a read transaction open across the whole log (which would
//!   hold back SQLite's checkpoints).
//!
//! Cost (400,000 rows, migration `20261203000001`): no filter, an exact
//! tool, a tool glob or an outcome are a walk from the newest row that
//! stops at the page (under 10 ms); a caller substring or a time range
//! that matches only old rows scans until it has a page (0.5–1.5 s on a
//! loaded 2-core machine at 400,000 rows). Time has no index on purpose:
//! one more index page per call's insert was measured and dropped in
//! migration `20261202000004`.
//!
//! Rows come from SQLite after the owning handle's journal is flushed; a
//! read-only handle (another process writes the log) sees committed rows.

use futures::Stream;
use serde::Serialize;
use serde_json::Value;
use sqlx::{QueryBuilder, Sqlite};

use super::calls::summary_of;
use super::types::{AuditPage, AuditQuery, CallSummary, ExportFormat};
use super::{Control, ControlError};
use crate::audit::CallRow;
use crate::error::ErrorKind;

/// Largest page.
pub const MAX_LIMIT: u32 = 500;

/// Page size when none is given.
pub const DEFAULT_LIMIT: u32 = 100;

/// Rows per export read.
const EXPORT_PAGE: u32 = 1_000;

/// An export chunk is sent once it holds this many bytes.
const EXPORT_CHUNK: usize = 1 << 20;

/// The columns of a read of many rows: `calls`' own, in its order, with
/// the arguments loaded only up to 16 KiB; longer ones are read on their
/// own, one row at a time (see [`CallRow::args_left_out`]). An agent can
/// store up to the largest frame in every row, and a page of 500 such
/// rows read at once was half a gigabyte. `octet_length` reads a text's
/// size without loading it.
const LIST_COLUMNS: &str = "id, ts_ms, call_id, session, caller, tool, \
     CASE WHEN octet_length(args) <= 16384 THEN args ELSE '' END AS args, \
     CASE WHEN octet_length(args) > 16384 THEN octet_length(args) END AS args_left_out, \
     args_hash, decision, outcome, error_kind, error_message, stages, notes, \
     output_size, output_digest, elapsed_us";

/// A validated query.
#[derive(Debug, Clone)]
struct Filter {
    tool: Option<(String, bool)>,
    caller: Option<String>,
    outcome: Option<OutcomeFilter>,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
}

#[derive(Debug, Clone)]
enum OutcomeFilter {
    /// The `outcome` column: ok, tool_error, error.
    Column(&'static str),
    /// An error class.
    Kind(String),
}

impl Filter {
    fn parse(q: &AuditQuery) -> Result<Self, ControlError> {
        let tool = match q.tool.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(t) if t.len() > 200 => {
                return Err(ControlError::invalid("tool", "at most 200 characters"));
            }
            Some(t) => Some((t.to_owned(), t.contains(['*', '?', '[']))),
        };
        let caller = match q.caller.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(c) if c.len() > 200 => {
                return Err(ControlError::invalid("caller", "at most 200 characters"));
            }
            Some(c) => Some(c.to_lowercase()),
        };
        let outcome = q.outcome.as_deref().map(outcome_filter).transpose()?;
        if let (Some(s), Some(u)) = (q.since_ms, q.until_ms)
            && u <= s
        {
            return Err(ControlError::invalid(
                "until_ms",
                "must be later than since_ms",
            ));
        }
        Ok(Self {
            tool,
            caller,
            outcome,
            since_ms: q.since_ms,
            until_ms: q.until_ms,
        })
    }

    /// `SELECT … FROM calls WHERE …` with every value bound, newest first
    /// (long arguments left out: [`LIST_COLUMNS`]).
    fn select(&self, before: Option<i64>, limit: u32) -> QueryBuilder<Sqlite> {
        let mut b = QueryBuilder::new(format!("SELECT {LIST_COLUMNS} FROM calls WHERE 1 = 1"));
        if let Some((tool, glob)) = &self.tool {
            // An exact name walks the `calls_tool` index in row-id order;
            // a glob would range-scan it and sort every match, so `+`
            // keeps SQLite on the row-id walk, which stops at the page.
            b.push(if *glob {
                " AND +tool GLOB "
            } else {
                " AND tool = "
            });
            b.push_bind(tool.clone());
        }
        if let Some(c) = &self.caller {
            b.push(" AND instr(lower(caller), ");
            b.push_bind(c.clone());
            b.push(") > 0");
        }
        match &self.outcome {
            Some(OutcomeFilter::Column(o)) => {
                b.push(" AND outcome = ");
                b.push_bind(*o);
            }
            Some(OutcomeFilter::Kind(k)) => {
                b.push(" AND error_kind = ");
                b.push_bind(k.clone());
            }
            None => {}
        }
        if let Some(s) = self.since_ms {
            b.push(" AND ts_ms >= ");
            b.push_bind(s);
        }
        if let Some(u) = self.until_ms {
            b.push(" AND ts_ms < ");
            b.push_bind(u);
        }
        if let Some(before) = before {
            b.push(" AND id < ");
            b.push_bind(before);
        }
        b.push(" ORDER BY id DESC LIMIT ");
        b.push_bind(i64::from(limit));
        b
    }
}

fn outcome_filter(o: &str) -> Result<OutcomeFilter, ControlError> {
    match o.trim() {
        "ok" => Ok(OutcomeFilter::Column("ok")),
        "tool_error" => Ok(OutcomeFilter::Column("tool_error")),
        "error" => Ok(OutcomeFilter::Column("error")),
        other => ErrorKind::parse(other)
            .map(|k| OutcomeFilter::Kind(k.as_str().to_owned()))
            .ok_or_else(|| {
                ControlError::invalid(
                    "outcome",
                    format!(
                        "`{other}` is not an outcome; use ok, tool_error, error, or an error \
                         class such as denied, timeout, policy_denied, breaker_open"
                    ),
                )
            }),
    }
}

fn page_limit(limit: Option<u32>) -> Result<u32, ControlError> {
    match limit.unwrap_or(DEFAULT_LIMIT) {
        n @ 1..=MAX_LIMIT => Ok(n),
        n => Err(ControlError::invalid(
            "limit",
            format!("{n} is out of range: ask for 1 to {MAX_LIMIT} rows and page with `before`"),
        )),
    }
}

fn before_of(before: Option<i64>) -> Result<Option<i64>, ControlError> {
    match before {
        Some(b) if b < 1 => Err(ControlError::invalid(
            "before",
            "a row id (at least 1), from the previous page's next_before",
        )),
        b => Ok(b),
    }
}

impl Control {
    pub(crate) fn audit(&self) -> Result<&crate::audit::AuditLog, ControlError> {
        self.engine().audit().ok_or_else(|| {
            ControlError::Unavailable(
                "this engine keeps no audit log; start it with a data directory".into(),
            )
        })
    }

    /// One page of the audit log, newest first.
    ///
    /// # Errors
    /// [`ControlError::Invalid`] naming the bad filter (a `limit` above
    /// 500 among them), no audit log, or the store.
    pub async fn audit_page(&self, q: &AuditQuery) -> Result<AuditPage, ControlError> {
        let filter = Filter::parse(q)?;
        let limit = page_limit(q.limit)?;
        let before = before_of(q.before)?;
        let audit = self.audit()?;
        audit.flush().await;
        let (rows, next_before) = fetch(audit.pool(), &filter, before, limit).await?;
        Ok(AuditPage {
            rows: summarize(audit.pool(), rows).await?,
            next_before,
        })
    }

    /// The rows of [`Self::audit_page`] as stored (for callers that need
    /// the caller's JSON), long arguments left out
    /// ([`CallRow::args_left_out`]).
    pub(crate) async fn audit_rows(&self, q: &AuditQuery) -> Result<Vec<CallRow>, ControlError> {
        let filter = Filter::parse(q)?;
        let audit = self.audit()?;
        audit.flush().await;
        let limit = page_limit(q.limit)?;
        Ok(fetch(audit.pool(), &filter, before_of(q.before)?, limit)
            .await?
            .0)
    }

    /// Every row matching `q`'s filters (its `limit` is ignored; `before`
    /// starts below that id), newest first, encoded as `format`, one chunk
    /// per 1,000 rows. The filters are checked before the stream starts.
    ///
    /// # Errors
    /// A bad filter or no audit log; the stream's items fail if the store
    /// does.
    pub async fn audit_export(
        &self,
        q: &AuditQuery,
        format: ExportFormat,
    ) -> Result<impl Stream<Item = Result<Vec<u8>, ControlError>> + Send + 'static, ControlError>
    {
        let filter = Filter::parse(q)?;
        let before = before_of(q.before)?;
        let audit = self.audit()?.clone();
        audit.flush().await;
        let pool = audit.pool().clone();
        let start = Export {
            pool,
            filter,
            before,
            format,
            pending: std::collections::VecDeque::new(),
            first: true,
            read_all: false,
        };
        Ok(futures::stream::try_unfold(start, Export::next))
    }
}

/// Where an export is.
struct Export {
    pool: sqlx::SqlitePool,
    filter: Filter,
    before: Option<i64>,
    format: ExportFormat,
    /// Rows read and not yet encoded.
    pending: std::collections::VecDeque<CallRow>,
    first: bool,
    /// No rows below `before` are left to read.
    read_all: bool,
}

impl Export {
    /// The next chunk: rows encoded until it holds [`EXPORT_CHUNK`] bytes,
    /// each row's left-out arguments read just before it is encoded.
    async fn next(mut self) -> Result<Option<(Vec<u8>, Self)>, ControlError> {
        let mut chunk = Vec::new();
        if self.first {
            header(&mut chunk, self.format)?;
            self.first = false;
        }
        while chunk.len() < EXPORT_CHUNK {
            if self.pending.is_empty() && !self.read_all {
                let (rows, next) =
                    fetch(&self.pool, &self.filter, self.before, EXPORT_PAGE).await?;
                self.read_all = next.is_none();
                self.before = next;
                self.pending = rows.into();
            }
            let Some(mut row) = self.pending.pop_front() else {
                break;
            };
            load_args(&self.pool, &mut row).await?;
            encode(&mut chunk, &row, self.format)?;
        }
        Ok((!chunk.is_empty()).then_some((chunk, self)))
    }
}

/// The list entries of `rows` from a read of many rows: the arguments
/// left out are read one row at a time, for the preview, and let go.
pub(crate) async fn summarize(
    pool: &sqlx::SqlitePool,
    rows: impl IntoIterator<Item = CallRow>,
) -> Result<Vec<CallSummary>, ControlError> {
    let mut out = Vec::new();
    for mut row in rows {
        load_args(pool, &mut row).await?;
        out.push(summary_of(&row));
    }
    Ok(out)
}

/// Reads the arguments a read of many rows left out of `row`.
async fn load_args(pool: &sqlx::SqlitePool, row: &mut CallRow) -> Result<(), ControlError> {
    if row.args_left_out.take().is_some() {
        let (args,): (String,) = sqlx::query_as("SELECT args FROM calls WHERE id = ?")
            .bind(row.id)
            .fetch_one(pool)
            .await?;
        row.args = args;
    }
    Ok(())
}

/// `limit` rows below `before` and the id to continue below, if more.
async fn fetch(
    pool: &sqlx::SqlitePool,
    filter: &Filter,
    before: Option<i64>,
    limit: u32,
) -> Result<(Vec<CallRow>, Option<i64>), ControlError> {
    // One more than asked tells whether another page follows.
    let mut q = filter.select(before, limit + 1);
    let mut rows: Vec<CallRow> = q.build_query_as().fetch_all(pool).await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = if more {
        rows.last().map(|r| r.id)
    } else {
        None
    };
    Ok((rows, next))
}

/// A row as exported: the JSON columns as JSON, not as strings of JSON.
#[derive(Serialize)]
struct JsonRow<'a> {
    id: i64,
    ts_ms: i64,
    call_id: i64,
    session: &'a str,
    caller: Value,
    tool: &'a str,
    /// The stored text as it is: parsing it would build every value.
    args: JsonText<'a>,
    args_hash: &'a str,
    decision: &'a str,
    outcome: &'a str,
    error_kind: Option<&'a str>,
    error_message: Option<&'a str>,
    stages: Value,
    notes: Value,
    output_size: i64,
    output_digest: Option<&'a str>,
    elapsed_us: i64,
}

impl<'a> JsonRow<'a> {
    fn of(r: &'a CallRow) -> Self {
        let json = |s: &str| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.into()));
        Self {
            id: r.id,
            ts_ms: r.ts_ms,
            call_id: r.call_id,
            session: &r.session,
            caller: json(&r.caller),
            tool: &r.tool,
            args: JsonText::of(&r.args),
            args_hash: &r.args_hash,
            decision: &r.decision,
            outcome: &r.outcome,
            error_kind: r.error_kind.as_deref(),
            error_message: r.error_message.as_deref(),
            stages: json(&r.stages),
            notes: json(&r.notes),
            output_size: r.output_size,
            output_digest: r.output_digest.as_deref(),
            elapsed_us: r.elapsed_us,
        }
    }
}

/// Stored JSON text, written into an export as JSON without being parsed
/// into values (only checked); text that is not JSON is written as a
/// string.
enum JsonText<'a> {
    Json(&'a serde_json::value::RawValue),
    Text(&'a str),
}

impl<'a> JsonText<'a> {
    fn of(text: &'a str) -> Self {
        serde_json::from_str(text).map_or(Self::Text(text), Self::Json)
    }
}

impl Serialize for JsonText<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Json(raw) => raw.serialize(s),
            Self::Text(text) => text.serialize(s),
        }
    }
}

/// CSV columns, in order.
const CSV_HEADER: [&str; 17] = [
    "id",
    "ts_ms",
    "call_id",
    "session",
    "caller",
    "tool",
    "args",
    "args_hash",
    "decision",
    "outcome",
    "error_kind",
    "error_message",
    "stages",
    "notes",
    "output_size",
    "output_digest",
    "elapsed_us",
];

/// The CSV header row; JSON lines have none.
fn header(out: &mut Vec<u8>, format: ExportFormat) -> Result<(), ControlError> {
    if format == ExportFormat::Csv {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(CSV_HEADER).map_err(ControlError::internal)?;
        w.flush().map_err(ControlError::internal)?;
    }
    Ok(())
}

/// Appends one row to `out`.
fn encode(out: &mut Vec<u8>, row: &CallRow, format: ExportFormat) -> Result<(), ControlError> {
    match format {
        ExportFormat::Jsonl => {
            serde_json::to_writer(&mut *out, &JsonRow::of(row)).map_err(ControlError::internal)?;
            out.push(b'\n');
        }
        ExportFormat::Csv => {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(csv_record(row))
                .map_err(ControlError::internal)?;
            w.flush().map_err(ControlError::internal)?;
        }
    }
    Ok(())
}

fn csv_record(r: &CallRow) -> [String; 17] {
    let opt = |o: &Option<String>| o.as_deref().map(cell).unwrap_or_default();
    [
        r.id.to_string(),
        r.ts_ms.to_string(),
        r.call_id.to_string(),
        cell(&r.session),
        cell(&r.caller),
        cell(&r.tool),
        cell(&r.args),
        r.args_hash.clone(),
        r.decision.clone(),
        r.outcome.clone(),
        opt(&r.error_kind),
        opt(&r.error_message),
        r.stages.clone(),
        cell(&r.notes),
        r.output_size.to_string(),
        r.output_digest.clone().unwrap_or_default(),
        r.elapsed_us.to_string(),
    ]
}

/// A text cell, defused for spreadsheets: a cell an agent controls that
/// starts with `=`, `+`, `-`, `@`, tab or CR would be run as a formula
/// when a person opens the export (OWASP "CSV injection"), so it gets a
/// leading `'`, which spreadsheets show as text. JSON lines are not
/// changed.
fn cell(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
#[path = "audit_query_tests.rs"]
mod tests;

//! `fs_read`, `fs_write`, `fs_list`: file access confined to the configured
//! roots.
//!
//! Contract: every path argument is first checked with
//! [`PathRoots::check`] (the early refusal a model can read and act on),
//! then every open goes through the root's capability handle
//! ([`Confined::dir`]), so even a symlink swapped in after the check cannot
//! lead outside. Escapes become [`CallError::GuardDenied`] on argument
//! `path`, which the breaker never counts; missing files and the like are
//! [`CallError::ToolFailed`] with a message saying what to do instead, of
//! [`Fault::Caller`] (the breaker does not count them either: a missing
//! file says nothing about the tool) unless the I/O error itself is the
//! tool's ([`Fault::of_io`]: a full disk, a broken device).
//!
//! The file system is blocking, so each call runs on tokio's blocking pool,
//! except the common small read: `fs_read` opens the file and, when it is a
//! regular file and at most [`INLINE_READ_BYTES`] are to be read, reads it
//! on the calling worker thread (see `docs/architecture/decisions.md`,
//! "Small file reads stay on the worker thread").

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::{Dir, OpenOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::context::CallContext;
use crate::error::{CallError, Fault};
use crate::guard::path::{Confined, PathRoots};
use crate::tool::{
    Annotations, GuardKind, Risk, Tool, ToolDef, ToolNameError, ToolResult, TypedTool, typed_tool,
};

/// Bytes `fs_read` returns when the caller gives no `max_bytes`: enough for
/// most source files, small enough not to flood the context.
pub const DEFAULT_READ_BYTES: u64 = 128 * 1024;
/// Upper bound on `max_bytes`; larger files are read in pages via `offset`.
pub const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;
/// Deepest `fs_list` recursion, so one call cannot walk a whole disk.
pub const MAX_LIST_DEPTH: u32 = 8;
/// Most entries one `fs_list` call returns.
pub const MAX_LIST_ENTRIES: usize = 2000;
/// Most bytes `fs_read` reads on the async worker thread itself; a larger
/// read goes to tokio's blocking pool. 256 KiB is twice the default page
/// ([`DEFAULT_READ_BYTES`]), so every default read of a source file stays
/// inline, and it is a few tens of microseconds of copying from a warm page
/// cache: about what the hand-off to the pool costs, and well below what
/// would hold up the other tasks on the worker noticeably.
pub const INLINE_READ_BYTES: u64 = 256 * 1024;
/// How much of a file is scanned for NUL bytes to call it binary.
const BINARY_SNIFF: usize = 8 * 1024;

/// A definition with its runner, ready for `Registry::register`.
pub type BuiltTool = (ToolDef, Arc<dyn Tool>);

/// The file tools over `roots`.
///
/// # Errors
/// A tool name breaks the naming rule (a bug in this module).
pub fn tools(roots: Arc<PathRoots>) -> Result<Vec<BuiltTool>, ToolNameError> {
    Ok(vec![
        typed_tool(FsRead::new(Arc::clone(&roots)))?,
        typed_tool(FsWrite::new(Arc::clone(&roots)))?,
        typed_tool(FsList::new(roots))?,
    ])
}

/// Read a UTF-8 text file inside the allowed roots. Large files are returned
/// in pages: the result says which byte range it holds and the offset to
/// continue from. Binary files are described (size), not returned.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsReadArgs {
    /// File to read: relative to the first allowed root, or absolute inside
    /// an allowed root.
    pub path: String,
    /// Most bytes to return (default 131072, at most 4194304).
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
    /// Byte offset to start reading at (default 0); use the offset given in
    /// a previous result to read the next page.
    pub offset: Option<u64>,
}

/// Write text to a file inside the allowed roots.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsWriteArgs {
    /// File to write: relative to the first allowed root, or absolute inside
    /// an allowed root.
    pub path: String,
    /// The text to write.
    pub content: String,
    /// `overwrite` (default) replaces the file or creates it, `append` adds
    /// to its end or creates it, `create_new` fails if it already exists.
    #[serde(default)]
    pub mode: WriteMode,
    /// Create missing parent directories first (default false).
    #[serde(default)]
    pub create_dirs: bool,
}

/// How `fs_write` treats an existing file; the variants are described on
/// [`FsWriteArgs::mode`]. They carry no doc comments on purpose: schemars
/// would turn documented variants into a `oneOf` of `const`s, and a plain
/// string `enum` is what models handle best.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    #[default]
    Overwrite,
    Append,
    CreateNew,
}

/// List a directory inside the allowed roots: each entry's path, kind
/// (file, dir, symlink, other) and size for files, sorted by path.
/// Symlinks are listed, never followed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsListArgs {
    /// Directory to list (default: the first allowed root).
    pub path: Option<String>,
    /// Levels to list: 1 (default) is this directory only, at most 8.
    #[schemars(range(min = 1, max = 8))]
    pub depth: Option<u32>,
}

/// `fs_read`.
#[derive(Debug)]
pub struct FsRead {
    roots: Arc<PathRoots>,
}

impl FsRead {
    /// A reader confined to `roots`.
    pub fn new(roots: Arc<PathRoots>) -> Self {
        Self { roots }
    }
}

impl TypedTool for FsRead {
    type Args = FsReadArgs;
    const NAME: &'static str = "fs_read";

    fn configure(def: ToolDef) -> ToolDef {
        def.with_risk(Risk::Low)
            .with_guard("path", GuardKind::Path)
            .with_annotations(Annotations {
                title: Some("Read file".into()),
                read_only_hint: Some(true),
                ..Annotations::default()
            })
    }

    async fn run(&self, args: FsReadArgs, _ctx: &CallContext) -> Result<ToolResult, CallError> {
        let c = confine(&self.roots, &args.path)?;
        let max = args
            .max_bytes
            .unwrap_or(DEFAULT_READ_BYTES)
            .clamp(1, MAX_READ_BYTES);
        let offset = args.offset.unwrap_or(0);
        let (file, size) = open_regular(&c, &args.path)?;
        if size.saturating_sub(offset).min(max) <= INLINE_READ_BYTES {
            return read_open(file, size, &args.path, offset, max);
        }
        blocking(move || read_open(file, size, &args.path, offset, max)).await
    }
}

/// `fs_write`.
#[derive(Debug)]
pub struct FsWrite {
    roots: Arc<PathRoots>,
}

impl FsWrite {
    /// A writer confined to `roots`.
    pub fn new(roots: Arc<PathRoots>) -> Self {
        Self { roots }
    }
}

impl TypedTool for FsWrite {
    type Args = FsWriteArgs;
    const NAME: &'static str = "fs_write";

    fn configure(def: ToolDef) -> ToolDef {
        def.with_risk(Risk::Medium)
            .with_guard("path", GuardKind::Path)
            .with_annotations(Annotations {
                title: Some("Write file".into()),
                read_only_hint: Some(false),
                destructive_hint: Some(true),
                ..Annotations::default()
            })
    }

    async fn run(&self, args: FsWriteArgs, _ctx: &CallContext) -> Result<ToolResult, CallError> {
        let c = confine(&self.roots, &args.path)?;
        blocking(move || write_file(&c, &args)).await
    }
}

/// `fs_list`.
#[derive(Debug)]
pub struct FsList {
    roots: Arc<PathRoots>,
}

impl FsList {
    /// A lister confined to `roots`.
    pub fn new(roots: Arc<PathRoots>) -> Self {
        Self { roots }
    }
}

impl TypedTool for FsList {
    type Args = FsListArgs;
    const NAME: &'static str = "fs_list";

    fn configure(def: ToolDef) -> ToolDef {
        def.with_risk(Risk::Low)
            .with_guard_default("path", GuardKind::Path, "")
            .with_annotations(Annotations {
                title: Some("List directory".into()),
                read_only_hint: Some(true),
                ..Annotations::default()
            })
    }

    async fn run(&self, args: FsListArgs, _ctx: &CallContext) -> Result<ToolResult, CallError> {
        let shown = args.path.unwrap_or_default();
        let c = confine(&self.roots, &shown)?;
        let depth = args.depth.unwrap_or(1).clamp(1, MAX_LIST_DEPTH);
        blocking(move || list_dir(&c, &shown, depth)).await
    }
}

fn confine(roots: &PathRoots, path: &str) -> Result<Confined, CallError> {
    roots.check(path).map_err(|e| e.into_call_error("path"))
}

async fn blocking<F>(f: F) -> Result<ToolResult, CallError>
where
    F: FnOnce() -> Result<ToolResult, CallError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CallError::internal(format!("file task failed: {e}")))?
}

/// cap-std reports an escape attempt as `PermissionDenied` with no OS error
/// code (its own error), while a real `EACCES` carries one; that is the only
/// way to tell "the sandbox refused" from "the file is not readable".
fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
}

/// Maps an I/O error on `shown` to the error the model reads.
fn io_error(shown: &str, verb: &str, e: &io::Error) -> CallError {
    if is_escape(e) {
        return CallError::GuardDenied {
            arg: "path".into(),
            reason: format!("path `{shown}` leads outside the allowed roots"),
        };
    }
    let message = match e.kind() {
        io::ErrorKind::NotFound => format!("`{shown}` does not exist"),
        io::ErrorKind::IsADirectory => format!("`{shown}` is a directory"),
        io::ErrorKind::NotADirectory => format!("`{shown}` is not a directory"),
        _ => format!("cannot {verb} `{shown}`: {e}"),
    };
    CallError::tool_error(Fault::of_io(e.kind()), message)
}

/// Opens `shown` for reading when it is a regular file, with its size
/// from the open file's own `fstat`: the checks hold for the file that is
/// read, even if the name was swapped in between.
fn open_regular(c: &Confined, shown: &str) -> Result<(cap_std::fs::File, u64), CallError> {
    let err = |e: io::Error| io_error(shown, "read", &e);
    // Checked before opening: opening a FIFO would block until a writer
    // came, and opening a device can have effects of its own.
    let meta = c.dir().metadata(c.relative()).map_err(err)?;
    not_regular(&meta, shown)?;
    let file = c.dir().open(c.relative()).map_err(err)?;
    let meta = file.metadata().map_err(err)?;
    not_regular(&meta, shown)?;
    Ok((file, meta.len()))
}

fn not_regular(meta: &cap_std::fs::Metadata, shown: &str) -> Result<(), CallError> {
    if meta.is_dir() {
        return Err(CallError::caller_error(format!(
            "`{shown}` is a directory; use fs_list to see its entries"
        )));
    }
    if !meta.is_file() {
        return Err(CallError::caller_error(format!(
            "`{shown}` is not a regular file"
        )));
    }
    Ok(())
}

/// Reads up to `max` bytes from `offset` of `file`, `size` bytes long.
fn read_open(
    mut file: cap_std::fs::File,
    size: u64,
    shown: &str,
    offset: u64,
    max: u64,
) -> Result<ToolResult, CallError> {
    let err = |e: io::Error| io_error(shown, "read", &e);
    if offset > size {
        return Err(CallError::caller_error(format!(
            "offset {offset} is past the end of `{shown}` ({size} bytes)"
        )));
    }
    if offset > 0 {
        file.seek(SeekFrom::Start(offset)).map_err(err)?;
    }
    let want = size.saturating_sub(offset).min(max);
    let mut buf = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    file.take(max).read_to_end(&mut buf).map_err(err)?;
    let more = offset + (buf.len() as u64) < size;
    Ok(match decode(&buf, offset > 0, more) {
        Some((skip, text)) => page(shown, text, offset + skip as u64, size),
        None => binary(shown, size),
    })
}

/// The text in `buf`, or `None` for binary data. A page may start or end in
/// the middle of a UTF-8 character; those partial bytes are dropped rather
/// than calling the file binary. Returns the bytes skipped at the start.
fn decode(buf: &[u8], mid_file: bool, more: bool) -> Option<(usize, &str)> {
    if buf[..buf.len().min(BINARY_SNIFF)].contains(&0) {
        return None;
    }
    let skip = if mid_file {
        buf.iter()
            .take(3)
            .take_while(|b| (*b & 0xC0) == 0x80)
            .count()
    } else {
        0
    };
    let rest = &buf[skip..];
    match std::str::from_utf8(rest) {
        Ok(s) => Some((skip, s)),
        Err(e) if more && e.error_len().is_none() => {
            let s = std::str::from_utf8(&rest[..e.valid_up_to()]).ok()?;
            Some((skip, s))
        }
        Err(_) => None,
    }
}

fn page(shown: &str, text: &str, start: u64, size: u64) -> ToolResult {
    let end = start + text.len() as u64;
    let mut out = text.to_owned();
    if start > 0 || end < size {
        out.push_str(&format!(
            "\n[fs_read: bytes {start}..{end} of {size} in `{shown}`"
        ));
        if end < size {
            out.push_str(&format!("; call again with offset={end} to read on"));
        }
        out.push(']');
    }
    let mut r = ToolResult::text(out);
    r.meta.insert("size".into(), json!(size));
    r.meta.insert("start".into(), json!(start));
    r.meta.insert("end".into(), json!(end));
    r
}

fn binary(shown: &str, size: u64) -> ToolResult {
    let mut r = ToolResult::text(format!(
        "`{shown}` is a binary file ({size} bytes); fs_read returns UTF-8 text only"
    ));
    r.meta.insert("size".into(), json!(size));
    r.meta.insert("binary".into(), json!(true));
    r
}

fn write_file(c: &Confined, args: &FsWriteArgs) -> Result<ToolResult, CallError> {
    let shown = args.path.as_str();
    let err = |e: io::Error| write_error(shown, args.mode, &e);
    let parent = c.relative().parent().filter(|p| !p.as_os_str().is_empty());
    if let (true, Some(parent)) = (args.create_dirs, parent) {
        c.dir().create_dir_all(parent).map_err(err)?;
    }
    let existed = c.dir().metadata(c.relative()).is_ok();
    let mut opts = OpenOptions::new();
    match args.mode {
        WriteMode::Overwrite => opts.write(true).create(true).truncate(true),
        WriteMode::Append => opts.append(true).create(true),
        WriteMode::CreateNew => opts.write(true).create_new(true),
    };
    let mut file = c.dir().open_with(c.relative(), &opts).map_err(err)?;
    file.write_all(args.content.as_bytes()).map_err(err)?;
    file.flush().map_err(err)?;
    let what = match (args.mode, existed) {
        (_, false) => "created the file",
        (WriteMode::Append, true) => "appended",
        (_, true) => "replaced the previous content",
    };
    Ok(ToolResult::text(format!(
        "wrote {} bytes to `{shown}` ({what})",
        args.content.len()
    )))
}

fn write_error(shown: &str, mode: WriteMode, e: &io::Error) -> CallError {
    match e.kind() {
        io::ErrorKind::AlreadyExists if mode == WriteMode::CreateNew => CallError::caller_error(
            format!("`{shown}` already exists; use mode `overwrite` or `append` to change it"),
        ),
        io::ErrorKind::NotFound => CallError::caller_error(format!(
            "the directory of `{shown}` does not exist; pass create_dirs: true to create it"
        )),
        _ => io_error(shown, "write", e),
    }
}

/// One `fs_list` entry.
#[derive(Debug, Serialize)]
struct Entry {
    path: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

fn list_dir(c: &Confined, shown: &str, depth: u32) -> Result<ToolResult, CallError> {
    let err = |e: io::Error| io_error(shown, "list", &e);
    let dir = c.dir().open_dir(c.relative()).map_err(err)?;
    let mut entries = Vec::new();
    let truncated = walk(&dir, Path::new(""), depth, &mut entries).map_err(err)?;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let shown = if shown.is_empty() { "." } else { shown };
    Ok(ToolResult::json(json!({
        "path": shown,
        "entries": entries,
        "truncated": truncated,
    })))
}

/// Appends `dir`'s entries (and, while `depth > 1`, its subdirectories'),
/// stopping at [`MAX_LIST_ENTRIES`]. Returns whether it stopped early.
/// Subdirectories are opened through `dir`, never by absolute path, and
/// symlinks are not descended into.
fn walk(dir: &Dir, prefix: &Path, depth: u32, out: &mut Vec<Entry>) -> io::Result<bool> {
    for entry in dir.entries()? {
        if out.len() >= MAX_LIST_ENTRIES {
            return Ok(true);
        }
        let entry = entry?;
        let path: PathBuf = prefix.join(entry.file_name());
        let ft = entry.file_type()?;
        let (kind, size) = if ft.is_symlink() {
            ("symlink", None)
        } else if ft.is_dir() {
            ("dir", None)
        } else if ft.is_file() {
            ("file", entry.metadata().ok().map(|m| m.len()))
        } else {
            ("other", None)
        };
        out.push(Entry {
            path: path.to_string_lossy().into_owned(),
            kind,
            size,
        });
        // An unreadable subdirectory is listed but not descended into; one
        // locked folder should not fail the whole listing.
        if ft.is_dir()
            && depth > 1
            && let Ok(sub) = entry.open_dir()
            && walk(&sub, &path, depth - 1, out)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;

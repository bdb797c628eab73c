//! How many tokens a tool's schema takes in a model's context.
//!
//! An estimate, not a tokenizer: counting with a real BPE would mean
//! shipping its vocabulary (megabytes) for a decision that only needs to
//! know whether schemas take about a tenth of a window. The estimate is
//! the byte length of the tool as `tools/list` sends it, divided by a
//! bytes-per-token ratio (docs/architecture/search.md, "The token
//! estimate").

use std::io;

use crate::mcp::convert::McpTool;
use crate::tool::ToolDef;

/// Bytes of schema JSON per token.
pub const BYTES_PER_TOKEN: f64 = 3.6;

/// The estimated tokens of `tool` as listed.
pub fn estimate(tool: &ToolDef) -> u32 {
    let mut count = Count(0);
    // Serialising into a counter cannot fail: it never refuses a byte.
    let _ = serde_json::to_writer(&mut count, &McpTool::from(tool));
    of_bytes(count.0)
}

/// The estimated tokens of `bytes` of schema JSON.
pub fn of_bytes(bytes: usize) -> u32 {
    let tokens = (bytes as f64 / BYTES_PER_TOKEN).ceil();
    // Saturates: no tool's JSON is four billion tokens.
    tokens as u32
}

/// A writer that only counts.
struct Count(usize);

impl io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

//! Newline-delimited JSON-RPC framing (MCP's stdio framing, which the agent
//! socket uses too) with a hard frame limit.
//!
//! A line longer than the limit is not buffered: its bytes are skipped up to
//! the next newline and the caller gets [`Frame::TooLarge`], so one hostile
//! or broken client costs bounded memory and the connection can carry on.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Largest frame accepted: 16 MiB, far above any sane tool call and small
/// enough that a few hundred connections cannot exhaust memory.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// One read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line (without its newline), possibly invalid UTF-8.
    Line(Vec<u8>),
    /// A line longer than the limit was skipped.
    TooLarge {
        /// Bytes skipped, including any already buffered.
        skipped: usize,
    },
    /// The peer closed the stream.
    Eof,
}

/// Reads frames of at most `max` bytes.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader over `inner` with frame limit `max`.
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            max,
            buf: Vec::new(),
        }
    }

    /// The next frame. Empty lines are skipped; a trailing `\r` is removed.
    ///
    /// # Errors
    /// I/O errors of the underlying stream.
    pub async fn next(&mut self) -> std::io::Result<Frame> {
        loop {
            match self.read_line().await? {
                Frame::Line(l) if l.iter().all(u8::is_ascii_whitespace) => continue,
                other => return Ok(other),
            }
        }
    }

    async fn read_line(&mut self) -> std::io::Result<Frame> {
        self.buf.clear();
        let mut skipped: Option<usize> = None;
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                // EOF: a final unterminated line still counts.
                return Ok(match skipped {
                    Some(n) => Frame::TooLarge { skipped: n },
                    None if self.buf.is_empty() => Frame::Eof,
                    None => Frame::Line(std::mem::take(&mut self.buf)),
                });
            }
            let (used, done) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, Some(i)),
                None => (chunk.len(), None),
            };
            let data = &chunk[..done.unwrap_or(used)];
            match &mut skipped {
                Some(n) => *n += used,
                None if self.buf.len() + data.len() > self.max => {
                    skipped = Some(self.buf.len() + used)
                }
                None => self.buf.extend_from_slice(data),
            }
            self.inner.consume(used);
            if done.is_some() {
                if let Some(n) = skipped {
                    return Ok(Frame::TooLarge { skipped: n });
                }
                if self.buf.last() == Some(&b'\r') {
                    self.buf.pop();
                }
                return Ok(Frame::Line(std::mem::take(&mut self.buf)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        // A tiny buffer makes lines span many fill_buf calls.
        let mut r = FrameReader::new(BufReader::with_capacity(3, input), max);
        let mut out = Vec::new();
        loop {
            let f = r.next().await.unwrap();
            let eof = f == Frame::Eof;
            out.push(f);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        let f = frames(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\"", 100).await;
        assert_eq!(
            f,
            [
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(b"{\"b\":2}".to_vec()),
                Frame::Line(b"{\"c\"".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn oversized_line_is_skipped_and_the_next_one_read() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        let f = frames(&input, 10).await;
        assert_eq!(
            f,
            [
                Frame::TooLarge { skipped: 51 },
                Frame::Line(b"ok".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_passes() {
        let f = frames(b"0123456789\n", 10).await;
        assert_eq!(f[0], Frame::Line(b"0123456789".to_vec()));
    }

    #[tokio::test]
    async fn invalid_utf8_is_passed_up_not_rejected_here() {
        let f = frames(b"\xff\xfe\n", 10).await;
        assert_eq!(f[0], Frame::Line(vec![0xff, 0xfe]));
    }
}

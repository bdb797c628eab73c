//! Newline-delimited JSON-RPC framing (MCP's stdio framing, which the agent
//! socket uses too) with a hard frame limit, a shared budget and a shape
//! check, so what one client sends costs bounded memory.
//!
//! - A line longer than the limit is refused as soon as it passes the
//!   limit, while it still streams in: the reader answers
//!   [`Frame::Refused`] at once, then skips the rest of the line without
//!   buffering it and carries on with the next line, so the connection
//!   stays usable (newline framing resynchronises at the next newline).
//! - So is a line nested too deeply or holding too many values
//!   ([`super::shape`]), at the byte that goes past the limit.
//! - Bytes beyond the first [`FREE_READ`] of a frame are buffered only
//!   once the shared [`FrameBudget`] has room for them, and a complete
//!   frame carries its charge ([`Held`]) until its request is answered.
//! - The buffer never keeps a large frame's capacity: a complete line is
//!   handed over whole, and a refused one's buffer is freed.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::budget::{FREE_READ, FrameBudget, Held, VALUE_COST};
use super::shape::{Shape, TooComplex};

/// Largest frame accepted: 16 MiB, far above any sane tool call and small
/// enough that a few hundred connections cannot exhaust memory.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// What a frame of `len` bytes and `values` JSON values is charged: its
/// text, and its parsed form (its strings again, and [`VALUE_COST`] per
/// value).
pub fn frame_cost(len: usize, values: usize) -> usize {
    len.saturating_mul(2)
        .saturating_add(values.saturating_mul(VALUE_COST))
}

/// One read from the stream.
#[derive(Debug)]
pub enum Frame {
    /// A complete line (without its newline), possibly invalid UTF-8, and
    /// its charge on the budget: keep it until the request is answered.
    Line(Vec<u8>, Held),
    /// A line went past a limit; its remaining bytes are being skipped.
    /// The id is the request's, when its first bytes showed it
    /// ([`super::leading_id`]), else null.
    Refused(Refused, serde_json::Value),
    /// The peer closed the stream.
    Eof,
}

/// Why a line was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Longer than the frame limit.
    #[error("frame exceeds the {limit} byte limit ({} MiB); the rest of the line is discarded unread", .limit >> 20)]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Too deep or too many values.
    #[error("{0}; the rest of the line is discarded unread")]
    TooComplex(TooComplex),
}

/// Reads frames of at most `max` bytes.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    max: usize,
    budget: FrameBudget,
    buf: Vec<u8>,
    shape: Shape,
    /// The budget held for the frame being read.
    held: Held,
    /// A refused line's rest is being skipped.
    skipping: bool,
    /// `buf` holds a whole line, waiting for its charge.
    whole: bool,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader over `inner` with frame limit `max`, charging `budget`.
    pub fn new(inner: R, max: usize, budget: FrameBudget) -> Self {
        Self {
            inner,
            max,
            budget,
            buf: Vec::new(),
            shape: Shape::default(),
            held: Held::default(),
            skipping: false,
            whole: false,
        }
    }

    /// The next frame. Empty lines are skipped; a trailing `\r` is removed.
    ///
    /// # Errors
    /// I/O errors of the underlying stream.
    pub async fn next(&mut self) -> std::io::Result<Frame> {
        loop {
            match self.read_line().await? {
                Frame::Line(l, _) if l.iter().all(u8::is_ascii_whitespace) => continue,
                other => return Ok(other),
            }
        }
    }

    async fn read_line(&mut self) -> std::io::Result<Frame> {
        if self.whole {
            return Ok(self.complete().await);
        }
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                // EOF: a final unterminated line still counts.
                self.skipping = false;
                return if self.buf.is_empty() {
                    Ok(Frame::Eof)
                } else {
                    Ok(self.complete().await)
                };
            }
            let (used, done) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, Some(i)),
                None => (chunk.len(), None),
            };
            if self.skipping {
                self.inner.consume(used);
                self.skipping = done.is_none();
                continue;
            }
            let data = &chunk[..done.unwrap_or(used)];
            let len = self.buf.len() + data.len();
            if len > self.max {
                let id = id_in(&self.buf, data);
                return Ok(self.refuse(Refused::TooLarge { limit: self.max }, id, used, done));
            }
            if let Err(e) = self.shape.feed(data) {
                let id = id_in(&self.buf, data);
                return Ok(self.refuse(Refused::TooComplex(e), id, used, done));
            }
            if len > FREE_READ && self.held.bytes() == 0 {
                // Room for the largest frame before buffering more; the
                // bytes looked at stay in the reader and are read again.
                self.shape.reset();
                self.shape.feed(&self.buf).ok();
                self.held = self.budget.take(frame_cost(self.max, 0)).await;
                continue;
            }
            self.buf.extend_from_slice(data);
            self.inner.consume(used);
            if done.is_some() {
                return Ok(self.complete().await);
            }
        }
    }

    /// The line read, charged its length and its parsed values. Safe to
    /// cancel (the connection's loop polls it in a `select!`): until the
    /// charge is held, the line stays in the reader, marked complete.
    async fn complete(&mut self) -> Frame {
        self.whole = true;
        let cost = frame_cost(self.buf.len(), self.shape.values());
        if self.held.bytes() < cost.min(self.budget.cap()) {
            // Nothing is held while waiting (see `budget`).
            self.held = Held::default();
            self.held = self.budget.take(cost).await;
        }
        let mut held = std::mem::take(&mut self.held);
        held.trim(cost);
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        self.shape.reset();
        self.whole = false;
        Frame::Line(line, held)
    }

    /// Refuses the line being read: frees its buffer and budget, and skips
    /// its rest unless this chunk already ended it.
    fn refuse(
        &mut self,
        why: Refused,
        id: serde_json::Value,
        used: usize,
        done: Option<usize>,
    ) -> Frame {
        self.buf = Vec::new();
        self.held = Held::default();
        self.shape.reset();
        self.inner.consume(used);
        self.skipping = done.is_none();
        Frame::Refused(why, id)
    }
}

/// The request id among the first bytes of a line being read: those
/// buffered, then `data`, at most [`super::leading_id::PREFIX`].
fn id_in(buf: &[u8], data: &[u8]) -> serde_json::Value {
    use super::leading_id::{PREFIX, leading_id};
    let mut prefix = Vec::with_capacity(PREFIX);
    prefix.extend_from_slice(&buf[..buf.len().min(PREFIX)]);
    let room = PREFIX - prefix.len();
    prefix.extend_from_slice(&data[..data.len().min(room)]);
    leading_id(&prefix).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    /// A frame as the tests compare it.
    #[derive(Debug, PartialEq, Eq)]
    enum F {
        Line(Vec<u8>),
        Refused(Refused),
        Eof,
    }

    fn line(s: &[u8]) -> F {
        F::Line(s.to_vec())
    }

    async fn frames(input: &[u8], max: usize) -> Vec<F> {
        // A tiny buffer makes lines span many fill_buf calls.
        let budget = FrameBudget::new(1 << 30);
        let mut r = FrameReader::new(BufReader::with_capacity(3, input), max, budget);
        let mut out = Vec::new();
        loop {
            let f = match r.next().await.unwrap() {
                Frame::Line(l, _) => F::Line(l),
                Frame::Refused(why, _) => F::Refused(why),
                Frame::Eof => F::Eof,
            };
            let eof = f == F::Eof;
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
                line(b"{\"a\":1}"),
                line(b"{\"b\":2}"),
                line(b"{\"c\""),
                F::Eof
            ]
        );
    }

    #[tokio::test]
    async fn oversized_line_is_refused_and_the_next_one_read() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        let f = frames(&input, 10).await;
        assert_eq!(
            f,
            [
                F::Refused(Refused::TooLarge { limit: 10 }),
                line(b"ok"),
                F::Eof
            ]
        );
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_passes() {
        let f = frames(b"0123456789\n", 10).await;
        assert_eq!(f[0], line(b"0123456789"));
    }

    #[tokio::test]
    async fn invalid_utf8_is_passed_up_not_rejected_here() {
        let f = frames(b"\xff\xfe\n", 10).await;
        assert_eq!(f[0], line(&[0xff, 0xfe]));
    }

    #[tokio::test]
    async fn deep_nesting_is_refused_and_the_stream_carries_on() {
        let mut input = vec![b'['; 10_000];
        input.extend_from_slice(b"\n[1]\n");
        let f = frames(&input, 1 << 20).await;
        assert_eq!(
            f,
            [
                F::Refused(Refused::TooComplex(TooComplex::Deep)),
                line(b"[1]"),
                F::Eof
            ]
        );
    }

    #[tokio::test]
    async fn a_large_frame_holds_budget_until_dropped_and_small_ones_their_cost() {
        let budget = FrameBudget::new(1 << 30);
        let mut input = vec![b' '; FREE_READ * 2];
        input.extend_from_slice(b"1\n[1,2]\n");
        let mut r = FrameReader::new(BufReader::new(&input[..]), 1 << 20, budget.clone());
        let Frame::Line(big, held) = r.next().await.unwrap() else {
            panic!("a line")
        };
        assert_eq!(held.bytes(), frame_cost(big.len(), 1));
        let Frame::Line(small, held2) = r.next().await.unwrap() else {
            panic!("a line")
        };
        assert_eq!(held2.bytes(), frame_cost(small.len(), 3));
        assert_eq!(
            budget.available(),
            budget.cap() - held.bytes() - held2.bytes()
        );
        drop((held, held2));
        assert_eq!(budget.available(), budget.cap());
    }

    #[tokio::test]
    async fn a_large_frame_waits_for_room_without_buffering_past_the_free_part() {
        let budget = FrameBudget::new(1 << 20);
        let blocker = budget.take(1).await;
        let mut input = vec![b' '; FREE_READ * 4];
        input.extend_from_slice(b"1\n");
        let mut r = FrameReader::new(BufReader::new(&input[..]), 1 << 20, budget.clone());
        {
            let next = r.next();
            tokio::pin!(next);
            assert!(
                futures::poll!(&mut next).is_pending(),
                "the budget is short of a frame"
            );
        }
        assert!(r.buf.len() <= FREE_READ, "{} bytes buffered", r.buf.len());
        drop(blocker);
        let Frame::Line(l, _) = r.next().await.unwrap() else {
            panic!("a line")
        };
        assert_eq!(l.len(), FREE_READ * 4 + 1);
    }

    #[tokio::test]
    async fn a_refused_request_keeps_the_id_its_first_bytes_show() {
        let deep = format!("{{\"id\":\"deep-1\",\"params\":{}\n", "[".repeat(100));
        let budget = FrameBudget::new(1 << 30);
        let mut r = FrameReader::new(
            BufReader::with_capacity(7, deep.as_bytes()),
            1 << 20,
            budget,
        );
        match r.next().await.unwrap() {
            Frame::Refused(Refused::TooComplex(TooComplex::Deep), id) => {
                assert_eq!(id, serde_json::json!("deep-1"));
            }
            other => panic!("{other:?}"),
        }
    }
}

//! A bounded ring of a child's stderr lines, for `toolgate servers` and the
//! UI. Bounded in lines and in bytes per line (also while a line is read)
//! so a chatty or hostile server cannot grow toolgate's memory; the oldest
//! lines go first. Lines are
//! scrubbed of the server's secret values before they are kept (see
//! [`crate::scrub`]), so nothing that reads the ring can show them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::scrub::Scrubber;

/// Longest line kept, in bytes; the rest is cut with a marker.
const MAX_LINE: usize = 4096;

/// Bytes of a line read before it is scrubbed and cut: the line kept and
/// room for a secret that starts inside it to be recognised whole.
const READ_LINE: usize = 64 * 1024;

/// The ring. Cloning shares it.
#[derive(Debug, Clone)]
pub(crate) struct StderrLog {
    lines: Arc<Mutex<Ring>>,
    cap: usize,
    scrub: Scrubber,
}

/// The kept lines and the number of the oldest: lines are numbered from 1
/// as they arrive, so a reader can ask for what came after the last line
/// it saw (the console's stderr tail) even as old lines drop out.
#[derive(Debug)]
struct Ring {
    lines: VecDeque<String>,
    first: u64,
}

/// Lines after a given line number ([`StderrLog::since`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StderrTail {
    /// (line number, text), oldest first.
    pub lines: Vec<(u64, String)>,
    /// The number to ask after next time: the last line's, or `after` if
    /// nothing new came.
    pub next: u64,
    /// Lines after `after` that are no longer kept.
    pub skipped: u64,
}

impl StderrLog {
    /// A ring keeping the last `cap` lines, each scrubbed by `scrub`.
    pub(crate) fn new(cap: usize, scrub: Scrubber) -> Self {
        Self {
            lines: Arc::new(Mutex::new(Ring {
                lines: VecDeque::with_capacity(cap.min(64)),
                first: 1,
            })),
            cap: cap.max(1),
            scrub,
        }
    }

    /// What hides the server's secrets: also for its status and errors.
    pub(crate) fn scrubber(&self) -> &Scrubber {
        &self.scrub
    }

    /// The kept lines numbered above `after`, oldest first.
    pub(crate) fn since(&self, after: u64) -> StderrTail {
        let ring = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        let from = after.saturating_add(1).max(ring.first);
        let skip = usize::try_from(from - ring.first).unwrap_or(usize::MAX);
        let lines: Vec<(u64, String)> = ring
            .lines
            .iter()
            .skip(skip)
            .zip(from..)
            .map(|(l, n)| (n, l.clone()))
            .collect();
        StderrTail {
            next: lines.last().map_or(after, |(n, _)| *n),
            skipped: ring.first.saturating_sub(after.saturating_add(1)),
            lines,
        }
    }

    /// Adds a line, scrubbed, dropping the oldest when full. Scrubbed
    /// before it is cut, so a cut cannot leave half a secret.
    pub(crate) fn push(&self, line: String) {
        let mut line = self.scrub.scrub_owned(line);
        if line.len() > MAX_LINE {
            line.truncate(line.floor_char_boundary(MAX_LINE));
            line.push_str(" [cut]");
        }
        let mut ring = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if ring.lines.len() == self.cap {
            ring.lines.pop_front();
            ring.first += 1;
        }
        ring.lines.push_back(line);
    }

    /// The kept lines, oldest first.
    pub(crate) fn lines(&self) -> Vec<String> {
        let ring = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        ring.lines.iter().cloned().collect()
    }

    /// The last line, for "exited: ..." messages.
    pub(crate) fn last(&self) -> Option<String> {
        let ring = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        ring.lines.back().cloned()
    }

    /// Reads `src` line by line into the ring until EOF. Invalid UTF-8 is
    /// replaced, not fatal. At most [`READ_LINE`] bytes of a line are
    /// held; the rest is read and dropped, so a server that writes a
    /// line without end costs no memory.
    pub(crate) async fn pump(self, src: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(src);
        let mut buf = Vec::new();
        while let Ok(chunk) = reader.fill_buf().await {
            if chunk.is_empty() {
                if !buf.is_empty() {
                    self.push_bytes(&buf);
                }
                break;
            }
            let end = chunk.iter().position(|b| *b == b'\n');
            let used = end.map_or(chunk.len(), |i| i + 1);
            let room = READ_LINE.saturating_sub(buf.len());
            buf.extend_from_slice(&chunk[..end.unwrap_or(used).min(room)]);
            reader.consume(used);
            if end.is_some() {
                self.push_bytes(&buf);
                buf = Vec::new();
            }
        }
    }

    fn push_bytes(&self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        self.push(text.trim_end_matches(['\n', '\r']).to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_cuts_long_ones() {
        let log = StderrLog::new(2, Scrubber::default());
        for l in ["a", "b", "c"] {
            log.push(l.to_owned());
        }
        assert_eq!(log.lines(), ["b", "c"]);
        log.push("é".repeat(MAX_LINE));
        let last = log.last().unwrap_or_default();
        assert!(
            last.len() <= MAX_LINE + 6 && last.ends_with("[cut]"),
            "{}",
            last.len()
        );
    }

    #[test]
    fn lines_are_numbered_and_read_after_a_number() {
        let log = StderrLog::new(3, Scrubber::default());
        for l in ["a", "b", "c", "d", "e"] {
            log.push(l.to_owned());
        }
        // Lines 1 and 2 dropped out of the ring.
        let all = log.since(0);
        assert_eq!(
            all.lines,
            [(3, "c".into()), (4, "d".into()), (5, "e".into())]
        );
        assert_eq!((all.next, all.skipped), (5, 2));
        let tail = log.since(4);
        assert_eq!(tail.lines, [(5, "e".into())]);
        assert_eq!((tail.next, tail.skipped), (5, 0));
        let none = log.since(5);
        assert!(none.lines.is_empty());
        assert_eq!((none.next, none.skipped), (5, 0));
    }

    #[tokio::test]
    async fn a_line_without_end_is_cut_while_it_is_read() {
        let log = StderrLog::new(10, Scrubber::default());
        let mut input = vec![b'x'; READ_LINE * 8];
        input.extend_from_slice(b"\nnext\n");
        log.clone().pump(&input[..]).await;
        let lines = log.lines();
        assert!(lines[0].len() <= MAX_LINE + 6 && lines[0].ends_with("[cut]"));
        assert_eq!(lines[1], "next");
    }

    #[tokio::test]
    async fn pumps_lines_from_a_reader() {
        let log = StderrLog::new(10, Scrubber::default());
        log.clone().pump(&b"one\ntwo\r\n\xffthree"[..]).await;
        assert_eq!(log.lines(), ["one", "two", "\u{FFFD}three"]);
    }

    #[tokio::test]
    async fn secret_values_never_enter_the_ring_even_in_a_cut_line() {
        let secret = "sk-0123456789abcdef";
        let log = StderrLog::new(10, Scrubber::new([secret]));
        let long = format!("{}{secret} tail", "x".repeat(MAX_LINE - 5));
        let input = format!("key={secret}\n{long}\n");
        log.clone().pump(input.as_bytes()).await;
        let lines = log.lines();
        assert_eq!(lines[0], "key=[redacted]");
        assert!(lines.iter().all(|l| !l.contains("sk-0123")), "{lines:?}");
    }
}

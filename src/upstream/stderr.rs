//! A bounded ring of a child's stderr lines, for `toolgate servers` and the
//! UI. Bounded in lines and in bytes per line so a chatty or hostile server
//! cannot grow toolgate's memory; the oldest lines go first.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longest line kept, in bytes; the rest is cut with a marker.
const MAX_LINE: usize = 4096;

/// The ring. Cloning shares it.
#[derive(Debug, Clone)]
pub(crate) struct StderrLog {
    lines: Arc<Mutex<VecDeque<String>>>,
    cap: usize,
}

impl StderrLog {
    /// A ring keeping the last `cap` lines.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            lines: Arc::new(Mutex::new(VecDeque::with_capacity(cap.min(64)))),
            cap: cap.max(1),
        }
    }

    /// Adds a line, dropping the oldest when full.
    pub(crate) fn push(&self, mut line: String) {
        if line.len() > MAX_LINE {
            let mut cut = MAX_LINE;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push_str(" [cut]");
        }
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == self.cap {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, oldest first.
    pub(crate) fn lines(&self) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect()
    }

    /// The last line, for "exited: ..." messages.
    pub(crate) fn last(&self) -> Option<String> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.back().cloned()
    }

    /// Reads `src` line by line into the ring until EOF. Invalid UTF-8 is
    /// replaced, not fatal.
    pub(crate) async fn pump(self, src: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(src);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&buf);
                    self.push(text.trim_end_matches(['\n', '\r']).to_owned());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_cuts_long_ones() {
        let log = StderrLog::new(2);
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

    #[tokio::test]
    async fn pumps_lines_from_a_reader() {
        let log = StderrLog::new(10);
        log.clone().pump(&b"one\ntwo\r\n\xffthree"[..]).await;
        assert_eq!(log.lines(), ["one", "two", "\u{FFFD}three"]);
    }
}

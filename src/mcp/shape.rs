//! [`Shape`]: how deep and how many values a JSON text holds, found in one
//! pass over its bytes as they arrive, before anything is parsed.
//!
//! Parsed JSON can take far more memory than its text: `[0,0,0,…]` is two
//! bytes per value and a `serde_json::Value` is 32, so a 16 MiB frame of
//! it became ~800 MB of resident memory. Deep nesting costs stack in every
//! walk over the arguments. So a frame deeper than [`MAX_DEPTH`] or with
//! more than [`MAX_VALUES`] values is refused, while it streams in, before
//! it is parsed; the value count of an accepted frame sizes its charge on
//! the frame budget ([`super::budget`]).
//!
//! The scan only counts structure outside strings; it does not validate
//! the JSON (the parser does that next).

/// Deepest nesting of arrays and objects accepted. Tool arguments are a
/// handful of levels deep; serde_json itself stops at 128.
pub const MAX_DEPTH: usize = 64;

/// Most JSON values in one frame (keys count as values): a quarter of a
/// million, far above any tool call's arguments, and ~16 MiB parsed.
pub const MAX_VALUES: usize = 256 * 1024;

/// A limit of [`Shape`] that a text went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TooComplex {
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("JSON nested deeper than {MAX_DEPTH} levels; toolgate reads at most {MAX_DEPTH}")]
    Deep,
    /// More values than [`MAX_VALUES`].
    #[error(
        "JSON with more than {MAX_VALUES} values; toolgate reads at most {MAX_VALUES} in one message"
    )]
    Many,
}

/// The running scan of one JSON text.
#[derive(Debug, Default, Clone)]
pub struct Shape {
    depth: usize,
    /// Containers, commas and colons seen: one less than the values.
    marks: usize,
    in_string: bool,
    escaped: bool,
}

impl Shape {
    /// Scans the whole of `text`.
    ///
    /// # Errors
    /// The first limit `text` goes past.
    pub fn of(text: &[u8]) -> Result<Self, TooComplex> {
        let mut s = Self::default();
        s.feed(text)?;
        Ok(s)
    }

    /// Scans the next bytes of the text.
    ///
    /// # Errors
    /// The first limit the text has gone past.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), TooComplex> {
        for &b in bytes {
            if self.in_string {
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    self.marks += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(TooComplex::Deep);
                    }
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                b',' | b':' => self.marks += 1,
                _ => continue,
            }
            if self.marks >= MAX_VALUES {
                return Err(TooComplex::Many);
            }
        }
        Ok(())
    }

    /// Values seen so far (an upper estimate: keys count too).
    pub fn values(&self) -> usize {
        self.marks + 1
    }

    /// Starts over for the next text.
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_values_and_ignores_structure_inside_strings() {
        assert_eq!(Shape::of(b"[0,0,0]").unwrap().values(), 4);
        assert_eq!(Shape::of(br#"{"a":1,"b":[2]}"#).unwrap().values(), 6);
        assert_eq!(Shape::of(br#"{"a":"[[[,,,:\"]]]"}"#).unwrap().values(), 3);
    }

    #[test]
    fn nesting_past_the_limit_is_refused_at_the_first_byte_too_deep() {
        let mut s = Shape::default();
        s.feed(&[b'['; MAX_DEPTH]).unwrap();
        assert_eq!(s.feed(b"["), Err(TooComplex::Deep));
        // Closed levels do not count: depth is what is open.
        let flat = "[]".repeat(MAX_DEPTH * 2);
        assert!(Shape::of(flat.as_bytes()).is_ok());
    }

    #[test]
    fn too_many_values_are_refused_whatever_the_chunking() {
        let text = format!("[{}]", vec!["0"; MAX_VALUES + 1].join(","));
        assert_eq!(Shape::of(text.as_bytes()).unwrap_err(), TooComplex::Many);
        let mut s = Shape::default();
        let r = text.as_bytes().chunks(7).try_for_each(|c| s.feed(c));
        assert_eq!(r, Err(TooComplex::Many));
        let ok = format!("[{}]", vec!["0"; MAX_VALUES - 2].join(","));
        assert_eq!(Shape::of(ok.as_bytes()).unwrap().values(), MAX_VALUES - 1);
    }

    #[test]
    fn the_message_names_the_limit() {
        assert!(TooComplex::Deep.to_string().contains("64 levels"));
        assert!(TooComplex::Many.to_string().contains("262144 values"));
    }
}

//! A bounded reading of JSON text an agent wrote: at most a given number
//! of values, the rest skipped without being built.
//!
//! The audit log keeps a call's arguments as text, up to the largest frame
//! (16 MiB). Parsed whole into a `serde_json::Value`, 16 MiB of `[0,0,…]`
//! is eight million values of 32 bytes each: a quarter of a gigabyte for
//! one row, on the engine of the person reading the log. A sketch builds
//! at most twice `max_values` elements and members (strings whole, since a string costs its
//! own bytes once), so reading a row costs at most its text twice plus
//! `max_values` values, whatever its shape. Reads that need every byte
//! (the export) pass the stored text through unparsed instead.
//!
//! Written here rather than taken from a crate: serde_json reads a whole
//! document or nothing, and the streaming JSON crates build no `Value`.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// What a sketch read.
#[derive(Debug, Clone, PartialEq)]
pub struct Sketch {
    /// The values read, in the text's shape.
    pub value: Value,
    /// Values were left out: the text holds more than the sketch's bound.
    pub cut: bool,
}

/// Reads `text` as JSON, building at most `max_values` members or
/// elements of the outermost value and `max_values` more below it; arrays
/// and objects past the bound end early.
///
/// # Errors
/// The text is not JSON.
pub fn sketch(text: &str, max_values: usize) -> Result<Sketch, serde_json::Error> {
    let (root, left) = (Cell::new(max_values), Cell::new(max_values));
    let cut = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Seed {
        left: &left,
        cut: &cut,
        root: Some(&root),
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(Sketch {
        value,
        cut: cut.get(),
    })
}

/// The bound shared by every level of one sketch.
#[derive(Clone, Copy)]
struct Seed<'a> {
    left: &'a Cell<usize>,
    cut: &'a Cell<bool>,
    /// The outermost value's own bound: its members are kept up to it
    /// whatever the values before them cost, so a large first argument
    /// never hides the ones after it (a preview leads with a path that
    /// sorts after the data written to it).
    root: Option<&'a Cell<usize>>,
}

/// Takes one value from `left`; `false` when it is spent. (A container
/// takes before it knows whether another value follows, and gives it back
/// when none did.)
fn take(left: &Cell<usize>) -> bool {
    let n = left.get();
    left.set(n.saturating_sub(1));
    n > 0
}

impl<'a> Seed<'a> {
    /// The bound this container's members and elements take from.
    fn budget(self) -> &'a Cell<usize> {
        self.root.unwrap_or(self.left)
    }

    /// The seed of a member or element.
    fn inner(self) -> Seed<'a> {
        Seed { root: None, ..self }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let left = self.budget();
        let mut out = Vec::new();
        while take(left) {
            match seq.next_element_seed(self.inner())? {
                Some(v) => out.push(v),
                None => {
                    left.set(left.get() + 1);
                    return Ok(Value::Array(out));
                }
            }
        }
        if seq.next_element::<IgnoredAny>()?.is_some() {
            self.cut.set(true);
            while seq.next_element::<IgnoredAny>()?.is_some() {}
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let left = self.budget();
        let mut out = Map::new();
        while take(left) {
            match map.next_key::<String>()? {
                Some(k) => {
                    let v = map.next_value_seed(self.inner())?;
                    out.insert(k, v);
                }
                None => {
                    left.set(left.get() + 1);
                    return Ok(Value::Object(out));
                }
            }
        }
        if map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            self.cut.set(true);
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_document_within_the_bound_reads_whole() {
        let text = r#"{"path":"a/b.txt","n":[1,2,{"x":null}],"ok":true,"f":1.5,"s":"é\n"}"#;
        let s = sketch(text, 100).unwrap();
        assert_eq!(s.value, serde_json::from_str::<Value>(text).unwrap());
        assert!(!s.cut);
    }

    #[test]
    fn past_the_bound_arrays_and_objects_end_early_and_say_so() {
        let s = sketch("[1,2,3,4,5]", 3).unwrap();
        assert_eq!(s.value, json!([1, 2, 3]));
        assert!(s.cut);
        let s = sketch("[1,2,3]", 3).unwrap();
        assert_eq!(s.value, json!([1, 2, 3]));
        assert!(!s.cut, "nothing was left out");
        let s = sketch(r#"{"a":[1,2,3],"b":{"c":2,"d":3},"e":4}"#, 4).unwrap();
        assert_eq!(s.value, json!({"a": [1, 2, 3], "b": {"c": 2}, "e": 4}));
        assert!(s.cut);
    }

    #[test]
    fn many_small_values_build_only_the_bound() {
        // Two million elements: whole, they would be 64 MB of values.
        let text = format!("{{\"xs\":[{}0]}}", "0,".repeat(2_000_000));
        let s = sketch(&text, 256).unwrap();
        assert_eq!(s.value["xs"].as_array().unwrap().len(), 256);
        assert!(s.cut);
    }

    #[test]
    fn a_large_first_member_never_hides_the_ones_after_it() {
        let text = format!(r#"{{"data":[{}0],"path":"a.txt"}}"#, "0,".repeat(1000));
        let s = sketch(&text, 16).unwrap();
        assert_eq!(s.value["path"], "a.txt");
        assert_eq!(s.value["data"].as_array().unwrap().len(), 16);
        assert!(s.cut);
    }

    #[test]
    fn strings_stay_whole() {
        let long = "x".repeat(100_000);
        let s = sketch(&json!({"content": long}).to_string(), 8).unwrap();
        assert_eq!(s.value["content"].as_str().unwrap().len(), 100_000);
        assert!(!s.cut);
    }

    #[test]
    fn text_that_is_not_json_is_an_error() {
        assert!(sketch("{\"a\":", 10).is_err());
        assert!(sketch("[1] [2]", 10).is_err());
        assert!(sketch("", 10).is_err());
    }
}

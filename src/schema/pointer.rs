//! RFC 6901 JSON-pointer segments, in one place: casting names the argument
//! it changed with a pointer, validation messages walk a schema by one, and
//! approval rules turn a bare argument name into one. All three must agree
//! on the two escapes (`~` as `~0`, `/` as `~1`).

use std::borrow::Cow;

/// Appends `/` and `segment`, escaped.
pub(crate) fn push_segment(out: &mut String, segment: &str) {
    out.push('/');
    for ch in segment.chars() {
        match ch {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// One segment of a pointer as it was before escaping (`~1` first, so
/// `~01` stays the literal `~1`).
pub(crate) fn unescape(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pointer(segment: &str) -> String {
        let mut out = String::new();
        push_segment(&mut out, segment);
        out
    }

    #[test]
    fn escapes_tilde_before_slash_and_reads_them_back() {
        assert_eq!(pointer("a~/b"), "/a~0~1b");
        assert_eq!(pointer(""), "/");
        assert_eq!(unescape("a~0~1b"), "a~/b");
        assert_eq!(unescape("~01"), "~1");
        assert!(matches!(unescape("plain"), Cow::Borrowed("plain")));
    }

    proptest! {
        #[test]
        fn a_segment_survives_escaping(s in "[a-z~/0-9]{0,12}") {
            let p = pointer(&s);
            prop_assert_eq!(unescape(&p[1..]), s.as_str());
            // An escaped segment never holds a `/`, so it cannot split.
            prop_assert!(!p[1..].contains('/'));
        }
    }
}

//! Stage 12: truncation of oversized output.
//!
//! Contract: when the text of a successful result (text parts, resource
//! text, and JSON parts rendered as text, taken in order as one stream) is
//! longer than `call.settings.truncate.max_bytes`, the middle of that stream
//! is cut: the first ⅔ of the budget and the last ⅓ are kept byte for byte,
//! and a notice saying how much was cut is put at the cut. The kept text
//! never exceeds `max_bytes` (the notice comes on top) and every cut lands on
//! a UTF-8 character boundary.
//!
//! Why head *and* tail: tool output tends to put what matters at both ends
//! (a command's banner and its final error, a file's header and its last
//! lines); keeping only the head hides the tail's error.
//!
//! Images and audio are left alone (cutting base64 only corrupts them); a
//! JSON part that is cut becomes a text part, since its prefix is no longer
//! JSON. Errors pass through untouched. The cut is recorded as a note and in
//! `result.meta["truncated"]`.

use serde_json::json;

use super::{Call, CallResult, Enter, Stage};
use crate::events::StageName;
use crate::tool::{Content, ToolResult};

/// What a truncation removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// Bytes of text removed.
    pub cut: usize,
    /// Bytes of text before truncation.
    pub total: usize,
}

/// The notice put at the cut; states how much was removed so the model
/// knows the output is incomplete and can ask for a narrower slice.
pub fn notice(cut: Cut) -> String {
    format!(
        "\n[… toolgate truncated {} of {} bytes …]\n",
        thousands(cut.cut),
        thousands(cut.total)
    )
}

/// `12345` as `12,345`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The text a part contributes to the budget, if any.
fn text_of(part: &Content) -> Option<String> {
    match part {
        Content::Text { text } => Some(text.clone()),
        Content::Resource { text: Some(t), .. } => Some(t.clone()),
        Content::Json { value } => Some(value.to_string()),
        _ => None,
    }
}

/// Bytes a part contributes to the budget, without copying text parts.
fn text_len(part: &Content) -> usize {
    match part {
        Content::Text { text }
        | Content::Resource {
            text: Some(text), ..
        } => text.len(),
        Content::Json { value } => value.to_string().len(),
        _ => 0,
    }
}

/// Puts (possibly cut) text back into a part. A cut JSON part becomes text.
fn set_text(part: &mut Content, text: String, was_cut: bool) {
    match part {
        Content::Text { text: t } => *t = text,
        Content::Resource { text: t, .. } => *t = Some(text),
        Content::Json { .. } if was_cut => *part = Content::Text { text },
        _ => {}
    }
}

/// Truncates `result` in place to `max_bytes` of text; `None` when it fits.
pub fn truncate(result: &mut ToolResult, max_bytes: usize) -> Option<Cut> {
    // Most results fit: measure before copying anything.
    if result.content.iter().map(text_len).sum::<usize>() <= max_bytes {
        return None;
    }
    let texts: Vec<(usize, String)> = result
        .content
        .iter()
        .enumerate()
        .filter_map(|(i, p)| text_of(p).map(|t| (i, t)))
        .collect();
    let total: usize = texts.iter().map(|(_, t)| t.len()).sum();
    let head = max_bytes - max_bytes / 3;
    let tail = max_bytes / 3;
    let plan = plan_cut(&texts, head, total - tail);
    let cut = Cut {
        cut: plan.cut_bytes,
        total,
    };
    let mark = notice(cut);
    apply_plan(result, texts, &plan, &mark);
    Some(cut)
}

/// Where the cut starts and ends, as (part, byte offset in that part).
struct Plan {
    start: (usize, usize),
    end: Option<(usize, usize)>,
    cut_bytes: usize,
}

/// Maps global offsets `[from, to)` of the joined text onto the parts,
/// moving `from` down and `to` up to character boundaries.
fn plan_cut(texts: &[(usize, String)], from: usize, to: usize) -> Plan {
    let mut start = (0, 0);
    let mut end = None;
    let mut offset = 0;
    let mut start_global = from;
    let mut end_global = to;
    for (k, (_, t)) in texts.iter().enumerate() {
        let range = offset..offset + t.len();
        if range.contains(&from) {
            let local = t.floor_char_boundary(from - offset);
            start = (k, local);
            start_global = offset + local;
        }
        if range.contains(&to) {
            let local = t.ceil_char_boundary(to - offset);
            end = Some((k, local));
            end_global = offset + local;
        }
        offset = range.end;
    }
    Plan {
        start,
        end,
        cut_bytes: end_global - start_global,
    }
}

/// Rewrites the parts: keeps what lies before the start and after the end,
/// drops textual parts wholly inside the cut, puts `mark` at the start.
fn apply_plan(result: &mut ToolResult, texts: Vec<(usize, String)>, plan: &Plan, mark: &str) {
    let (start_k, start_at) = plan.start;
    let (end_k, end_at) = plan.end.unwrap_or((texts.len(), 0));
    let mut emptied = Vec::new();
    for (k, (index, text)) in texts.into_iter().enumerate() {
        let (new, cut) = if k < start_k || k > end_k {
            continue;
        } else if k == start_k {
            let mut s = text[..start_at].to_owned();
            s.push_str(mark);
            if k == end_k {
                s.push_str(&text[end_at..]);
            }
            (s, true)
        } else if k == end_k {
            (text[end_at..].to_owned(), end_at > 0)
        } else {
            emptied.push(index);
            continue;
        };
        if let Some(part) = result.content.get_mut(index) {
            set_text(part, new, cut);
        }
    }
    for index in emptied.into_iter().rev() {
        result.content.remove(index);
    }
}

/// The truncate stage.
#[derive(Debug, Default)]
pub struct Truncate {}

impl Truncate {
    /// A new stage.
    pub fn new() -> Self {
        Self {}
    }
}

impl Stage for Truncate {
    fn name(&self) -> StageName {
        StageName::Truncate
    }

    fn enter(&self, _call: &mut Call) -> Enter {
        Enter::Pass
    }

    fn leave(&self, call: &mut Call, result: &mut CallResult) {
        let Ok(result) = result else { return };
        if let Some(cut) = truncate(result, call.settings.truncate.max_bytes) {
            let text = format!(
                "cut {} of {} bytes",
                thousands(cut.cut),
                thousands(cut.total)
            );
            call.note(StageName::Truncate, text);
            result.meta.insert(
                "truncated".to_owned(),
                json!({"cut_bytes": cut.cut, "total_bytes": cut.total}),
            );
        }
    }
}

#[cfg(test)]
#[path = "truncate_tests.rs"]
mod tests;

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
//!
//! Structured content (MCP `structuredContent`) cannot be cut: a prefix of
//! JSON is no JSON, and a thinned object may break the tool's output
//! schema. It is kept whole or left out ([`fit_structured`]): kept only
//! when the text was not cut and the two together fit the budget (counted
//! once when the content already repeats it, as servers should). So it
//! never carries output past the limit. When it is left out of a
//! successful result of a tool whose listed output schema promises it, the
//! result is marked `isError` with a notice saying why: clients that check
//! the promise (the Python MCP SDK raises on a success without structured
//! content) accept an error, and the model still reads the (cut) text.

use serde_json::json;

use super::{Call, CallResult, Enter, Stage};
use crate::events::StageName;
use crate::tool::{Content, ToolResult, json_len};

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

/// Leaves out `result`'s structured content unless it fits `max_bytes`
/// together with the text, and the text was not cut (`text_cut`); returns
/// the size of what was left out.
pub fn fit_structured(result: &mut ToolResult, max_bytes: usize, text_cut: bool) -> Option<usize> {
    result.structured_content.as_ref()?;
    let text: usize = result.content.iter().map(text_len).sum();
    if !text_cut && text + result.structured_extra_len() <= max_bytes {
        return None;
    }
    result.structured_content.take().map(|s| json_len(&s))
}

/// The notice for a result marked as an error because its promised
/// structured content was left out.
pub fn structured_notice(bytes: usize, max_bytes: usize, text_cut: bool) -> String {
    let text = if text_cut {
        "the text above is its output, cut to fit"
    } else {
        "the text above is its whole output"
    };
    format!(
        "the tool's structured result ({} bytes) was left out: with the text it does not \
         fit the {}-byte output limit. This result is marked as an error only because the \
         tool promises a structured result; {text}.",
        thousands(bytes),
        thousands(max_bytes)
    )
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
        let max_bytes = call.settings.truncate.max_bytes;
        let cut = truncate(result, max_bytes);
        if let Some(bytes) = fit_structured(result, max_bytes, cut.is_some()) {
            leave_out_structured(call, result, bytes, cut.is_some());
        }
        if let Some(cut) = cut {
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

/// Records structured content left out, and keeps the listed output
/// schema's promise by marking a successful result as an error.
fn leave_out_structured(call: &mut Call, result: &mut ToolResult, bytes: usize, text_cut: bool) {
    let max_bytes = call.settings.truncate.max_bytes;
    call.note(
        StageName::Truncate,
        format!("left out {} bytes of structured content", thousands(bytes)),
    );
    result
        .meta
        .insert("structured_dropped".to_owned(), json!({"bytes": bytes}));
    if !result.is_error && call.tool.def.listed_output_schema().is_some() {
        result.is_error = true;
        call.notice(structured_notice(bytes, max_bytes, text_cut));
    }
}

#[cfg(test)]
#[path = "truncate_tests.rs"]
mod tests;

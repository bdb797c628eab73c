//! [`RecentOutputs`]: what recent calls returned, raw and as the agent got
//! it, for the console's "Raw | As the model saw it | Diff".
//!
//! The audit log keeps only an output's size and digest (outputs may hold
//! anything a tool read), so outputs live here, in memory, for a while:
//! the last [`OutputLimits::max_calls`] calls or [`OutputLimits::max_bytes`]
//! of text, whichever is reached first, the oldest going first. The
//! defaults, 2,000 calls or 64 MiB, cover the minutes a person looks back
//! in the live feed (a busy agent makes a few calls a second) while
//! bounding memory on a laptop: most outputs are a few KiB, so the count
//! binds; a run of large file reads hits the byte bound instead. One
//! output above [`OutputLimits::max_call_bytes`] (8 MiB) is not kept at
//! all, so a single huge result cannot flush everything else; its detail
//! says so.
//!
//! Filled only while a control service exists: the engine copies a call's
//! raw output only when a recorder is set ([`crate::Engine::record_outputs`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::OutputRecorder;
use crate::error::CallError;
use crate::pipeline::trust::META_KEY as TRUST_KEY;
use crate::tool::{Content, ToolResult};

use super::types::OutputView;

/// Bounds of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Calls kept. Default 2,000.
    pub max_calls: usize,
    /// Bytes of output kept (raw and seen together). Default 64 MiB.
    pub max_bytes: usize,
    /// Larger single outputs are not kept. Default 8 MiB.
    pub max_call_bytes: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            max_calls: 2_000,
            max_bytes: 64 << 20,
            max_call_bytes: 8 << 20,
        }
    }
}

/// What is kept of one call.
#[derive(Debug)]
enum Kept {
    Output {
        raw: Option<Vec<Content>>,
        /// `None`: the agent got exactly `raw`.
        seen: Option<Vec<Content>>,
        truncated: bool,
        wrapped: bool,
        is_error: bool,
        bytes: usize,
    },
    /// Too large to keep.
    TooLarge { bytes: usize },
}

impl Kept {
    fn bytes(&self) -> usize {
        match self {
            Self::Output { bytes, .. } => *bytes,
            Self::TooLarge { .. } => 0,
        }
    }
}

#[derive(Debug, Default)]
struct Store {
    /// Call ids in the order they finished, oldest first.
    order: VecDeque<u64>,
    by_id: HashMap<u64, Arc<Kept>>,
    bytes: usize,
}

/// The bounded store. Cloning shares it.
#[derive(Debug, Clone)]
pub struct RecentOutputs {
    limits: OutputLimits,
    store: Arc<Mutex<Store>>,
}

/// Why a call's output is not available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// Evicted, or finished before the console started keeping outputs.
    NotKept,
    /// Larger than one call may keep.
    TooLarge {
        /// Its size.
        bytes: usize,
    },
}

impl RecentOutputs {
    /// An empty store with these bounds.
    pub fn new(limits: OutputLimits) -> Self {
        Self {
            limits,
            store: Arc::default(),
        }
    }

    /// Its bounds.
    pub fn limits(&self) -> OutputLimits {
        self.limits
    }

    /// Calls and bytes kept now.
    pub fn usage(&self) -> (usize, usize) {
        let st = self.lock();
        (st.order.len(), st.bytes)
    }

    /// The output of call `call_id`, if kept.
    ///
    /// # Errors
    /// Why it is not.
    pub fn get(&self, call_id: u64) -> Result<OutputView, Missing> {
        let kept = self.lock().by_id.get(&call_id).cloned();
        match kept.as_deref() {
            None => Err(Missing::NotKept),
            Some(Kept::TooLarge { bytes }) => Err(Missing::TooLarge { bytes: *bytes }),
            Some(Kept::Output {
                raw,
                seen,
                truncated,
                wrapped,
                is_error,
                ..
            }) => Ok(OutputView {
                seen: seen.as_ref().or(raw.as_ref()).cloned().unwrap_or_default(),
                raw: raw.clone(),
                truncated: *truncated,
                wrapped: *wrapped,
                is_error: *is_error,
            }),
        }
    }

    /// Keeps one call's output, evicting the oldest beyond the bounds.
    pub fn keep(&self, call_id: u64, raw: Option<ToolResult>, seen: &ToolResult) {
        let kept = Arc::new(self.kept(raw, seen));
        let mut st = self.lock();
        if let Some(old) = st.by_id.insert(call_id, kept.clone()) {
            // The same id again (never within one engine): replace.
            st.bytes -= old.bytes();
            st.order.retain(|id| *id != call_id);
        }
        st.bytes += kept.bytes();
        st.order.push_back(call_id);
        while st.order.len() > self.limits.max_calls || st.bytes > self.limits.max_bytes {
            let Some(id) = st.order.pop_front() else {
                break;
            };
            if let Some(old) = st.by_id.remove(&id) {
                st.bytes -= old.bytes();
            }
        }
    }

    /// What to keep; the copying happens here, outside the lock.
    fn kept(&self, raw: Option<ToolResult>, seen: &ToolResult) -> Kept {
        let raw_bytes = raw.as_ref().map_or(0, ToolResult::size);
        let same = raw.as_ref().is_some_and(|r| r.content == seen.content);
        let bytes = raw_bytes + if same { 0 } else { seen.size() };
        if bytes > self.limits.max_call_bytes {
            return Kept::TooLarge { bytes };
        }
        Kept::Output {
            seen: (!same).then(|| seen.content.clone()),
            raw: raw.map(|r| r.content),
            truncated: seen.meta.contains_key("truncated"),
            wrapped: seen.meta.contains_key(TRUST_KEY),
            is_error: seen.is_error,
            bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        // Plain data; a panic elsewhere cannot leave it inconsistent.
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl OutputRecorder for RecentOutputs {
    fn record(&self, call_id: u64, raw: Option<ToolResult>, seen: &Result<ToolResult, CallError>) {
        // A failed call has no output; its error message is in the audit
        // row, so nothing is kept for it.
        if let Ok(seen) = seen {
            self.keep(call_id, raw, seen);
        }
    }
}

impl Missing {
    /// In words, for the call detail.
    pub fn explain(&self, limits: &OutputLimits) -> String {
        match self {
            Self::NotKept => format!(
                "no longer kept: the console keeps the outputs of the last {} calls \
                 or {} MiB, whichever is less, since it started",
                limits.max_calls,
                limits.max_bytes >> 20
            ),
            Self::TooLarge { bytes } => format!(
                "not kept: {bytes} bytes is more than the {} MiB kept for one call",
                limits.max_call_bytes >> 20
            ),
        }
    }
}

#[cfg(test)]
#[path = "outputs_tests.rs"]
mod tests;

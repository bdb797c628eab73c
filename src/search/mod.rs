//! Tool search and progressive disclosure.
//!
//! An agent connected to many upstream servers would otherwise carry every
//! tool's schema in every prompt. Here the registry's tools are ranked by
//! BM25 ([`index`]), and a session whose deferrable tools would take too
//! much of its client's context window sees the core tools plus three
//! bridge tools instead (`tool_search`, `tool_describe`, `tool_call`),
//! which find, describe and call the rest through the same pipeline
//! (docs/architecture/search.md).

pub mod bridge;
pub mod calls;
pub mod clients;
pub mod core_tools;
pub mod disclosure;
mod disclosure_state;
pub mod index;
mod postings;
pub mod terms;
pub mod tokens;
mod weights;

#[cfg(test)]
mod index_tests;

pub use core_tools::{CorePinError, CorePins, CoreReason, CoreView};
pub use disclosure::{ClientView, DeferMode, DisclosureConfig, Plan};
pub use disclosure_state::Disclosure;
pub use index::{Hit, ToolIndex};

//! Policy: what toolgate decides about a call before anyone is asked
//! (rules in `docs/policy.md`; the stage that applies it is
//! `pipeline::policy`, the people it asks are in `approval`).
//!
//! Contract:
//! - [`PolicyConfig`] turns a call into allow / ask / deny with the rule
//!   that decided and a reason a person can read ([`PolicyConfig::assess`]).
//!   Presets, the dangerous-name table ([`RISK_TABLE`]), the inert
//!   shell commands and argument rules are described in `docs/policy.md`.
//! - [`PolicyHandle`] holds the live policy; every swap moves its version,
//!   which approval requests record.
//! - The config file's `[policy]` is validated into a [`PolicyConfig`] by
//!   `load` (called from `Config::from_raw`); [`document`] reads and writes
//!   the editable part of that file with its comments kept, and [`editor`]
//!   applies an edit to the running engine and the file together.
//! - Argument [`Pattern`]s are shared with the remembered-rule scopes in
//!   `approval`: this module depends on nothing in `approval`, and
//!   `approval` builds on it.

mod defaults;
pub mod document;
pub mod editor;
mod handle;
mod inert;
pub(crate) mod load;
mod matcher;
mod rules;

pub use defaults::{READ_TOOLS, RISK_TABLE, SHELL_TOOLS, WRITE_TOOLS, default_rules, risk_table};
pub use handle::{PolicyHandle, VersionedPolicy};
pub use inert::{INERT_COMMANDS, INERT_LINES};
pub use matcher::{ArgCondition, Pattern, PatternError, PatternKind, normalize, pointer_of};
pub use rules::{
    Assessment, CallerMatch, CallerPolicy, Effect, PolicyConfig, Preset, PresetSpec, Rule, Verdict,
    risk_str, tool_glob,
};

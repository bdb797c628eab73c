//! Engine integration tests: one binary, one module per area, real parts
//! (real files, real sockets, real child processes), no mocks.

mod approval;
mod barrier;
mod barrier_attacks;
mod bridge;
mod build_rule;
mod common;
mod config_reload;
mod console;
mod console_live;
mod control;
mod discovery;
mod fair_breakers;
mod file_modes;
mod http;
mod identity;
mod lifecycle;
mod memory;
mod path_escape;
mod pipeline;
mod policy_edit;
mod runnable_before_asking;
mod search;
mod search_relevance;
mod search_tokens;
mod secrets;
mod self_protection;
mod shutdown;
mod socket;
mod ssrf;
mod structured;
mod upstream_redirect;
mod upstream_remote;
mod upstream_stdio;
mod upstream_support;

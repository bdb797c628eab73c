//! Built-in tools: file access confined to roots, HTTP fetch behind the SSRF
//! guard, and shell execution (critical risk, always governed).

pub mod fs;
pub mod http;
pub mod shell;

//! `shell_exec`. (Stub.)

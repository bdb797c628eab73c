//! Engine integration tests: one binary, one module per area, real parts
//! (real files, real sockets, real child processes), no mocks.

mod path_escape;
mod ssrf;
mod upstream_remote;
mod upstream_stdio;
mod upstream_support;

//! `http_fetch`. (Stub.)

//! SSRF guard for URLs. (Stub.)

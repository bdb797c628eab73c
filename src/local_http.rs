//! What every loopback HTTP transport checks before it reads a request:
//! the agents' MCP endpoint and the console share these, so a leaf module
//! holds them and neither transport imports the other.
//!
//! - Tokens are 256 random bits, hex, and compared in constant time, so a
//!   token cannot be guessed byte by byte from response times.
//! - `Host` (and a browser's `Origin`) must name the loopback address and
//!   the port listened on: the defence against DNS rebinding.

/// A fresh 256-bit token, hex: bearer tokens, login tokens, session ids.
pub fn new_token() -> String {
    format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    )
}

/// Whether `host` (a `Host` header, or an `Origin` without its scheme)
/// names this machine's loopback at `port`: a rebinding attack's page
/// arrives under its own name, so anything else is refused.
pub(crate) fn is_local(host: &str, port: u16) -> bool {
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|h| host == format!("{h}:{port}"))
}

/// Compares without an early exit, so the token cannot be guessed byte by
/// byte from response times.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_with_our_port_pass() {
        assert!(is_local("127.0.0.1:8080", 8080));
        assert!(is_local("localhost:8080", 8080));
        assert!(!is_local("127.0.0.1:8081", 8080));
        assert!(!is_local("evil.example:8080", 8080));
        assert!(!is_local("127.0.0.1.evil.example:8080", 8080));
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}

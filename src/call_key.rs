//! The key of argument hashes: 32 random bytes made once per data dir.
//!
//! `args_hash` (audit rows), the binding of an approval to its call and
//! "exactly these arguments" scopes of remembered rules are all
//! HMAC-SHA256 under this key (see [`crate::canonical::call_hash`]). An
//! unkeyed hash of the arguments would let anyone holding an audit export
//! confirm a guess of a redacted secret (a short password, a PIN) by
//! hashing candidates; with the key, a hash says nothing outside this
//! install. The key is loaded once, by the audit log of the data dir, and
//! handed to whatever hashes (the approval queue, remembered rules); it is
//! never a global, so tests pass a fixed one.
//!
//! The file, `args-hash.key` in the data dir, holds the key as 64 hex
//! digits. It is created `0600` with `O_CREAT|O_EXCL|O_NOFOLLOW`
//! semantics (hard-linked into place whole, so a second process starting
//! at the same moment reads the first one's key). Loading never follows a
//! link: a link there is an error naming the file. Wider bits are narrowed
//! to `0600` with a warning rather than refused, like every other private
//! file (see `docs/architecture/decisions.md`, "Argument hashes are
//! keyed per data dir"). The same key across restarts keeps approvals and
//! remembered rules working; deleting the file makes a new key, which
//! orphans pending approvals and `args` scopes.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hmac::{Hmac, KeyInit};
use sha2::Sha256;

/// The key file's name in the data dir.
pub const FILE_NAME: &str = "args-hash.key";

/// Bytes of key.
const KEY_LEN: usize = 32;

/// The key, ready to hash with: the HMAC's keyed state is computed once
/// and copied per hash. Cloning shares it. `Debug` never shows it.
#[derive(Clone)]
pub struct CallKey(Arc<Hmac<Sha256>>);

/// Why the key could not be loaded or made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallKeyError {
    /// The file could not be read or written.
    #[error("argument-hash key {}: {source}", .path.display())]
    Io {
        /// The key file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file does not hold a key.
    #[error(
        "argument-hash key {} is not 64 hex digits; remove it to make a new key (pending approvals and `args` rules then stop matching)",
        .path.display()
    )]
    Malformed {
        /// The key file.
        path: PathBuf,
    },
}

impl CallKey {
    /// A key of these bytes (tests use fixed ones).
    pub fn new(bytes: [u8; KEY_LEN]) -> Self {
        // HMAC takes keys of any length; this cannot fail.
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&bytes)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        Self(Arc::new(mac))
    }

    /// A fresh random key.
    pub fn random() -> Self {
        Self::new(rand::random())
    }

    /// The key of `data_dir`, made on first use.
    ///
    /// # Errors
    /// The file is a link, not ours, malformed, or cannot be read or made.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, CallKeyError> {
        let path = data_dir.join(FILE_NAME);
        let io = |source| CallKeyError::Io {
            path: path.clone(),
            source,
        };
        // Two rounds: a lost creation race reads the winner's key.
        for _ in 0..2 {
            if let Some(text) =
                crate::private_file::read(&path, 2 * KEY_LEN as u64 + 1).map_err(io)?
            {
                return Self::parse(&text)
                    .ok_or_else(|| CallKeyError::Malformed { path: path.clone() });
            }
            let bytes: [u8; KEY_LEN] = rand::random();
            let mut text = hex::encode(bytes).into_bytes();
            text.push(b'\n');
            if crate::private_file::write_new(&path, &text).map_err(io)? {
                return Ok(Self::new(bytes));
            }
        }
        Err(io(std::io::Error::other(
            "the key file appeared and vanished while it was being made",
        )))
    }

    fn parse(text: &[u8]) -> Option<Self> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        let mut bytes = [0u8; KEY_LEN];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Self::new(bytes))
    }

    /// A copy of the keyed state, to hash one message with.
    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        (*self.0).clone()
    }
}

impl fmt::Debug for CallKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmac::Mac;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn tag(k: &CallKey) -> Vec<u8> {
        let mut m = k.mac();
        m.update(b"x");
        m.finalize().into_bytes().to_vec()
    }

    #[test]
    fn the_key_is_made_once_private_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let first = CallKey::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(FILE_NAME);
        assert_eq!(mode(&path), 0o600);
        let again = CallKey::load_or_create(dir.path()).unwrap();
        assert_eq!(tag(&first), tag(&again));
        let other = tempfile::tempdir().unwrap();
        assert_ne!(
            tag(&first),
            tag(&CallKey::load_or_create(other.path()).unwrap())
        );
        assert_eq!(format!("{first:?}"), "CallKey(<redacted>)");
    }

    #[test]
    fn a_key_file_with_wider_bits_is_narrowed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = CallKey::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let again = CallKey::load_or_create(dir.path()).unwrap();
        assert_eq!(tag(&first), tag(&again));
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn a_linked_or_malformed_key_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "0".repeat(64)).unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::os::unix::fs::symlink(&elsewhere, data.join(FILE_NAME)).unwrap();
        let e = CallKey::load_or_create(&data).unwrap_err().to_string();
        assert!(e.contains(FILE_NAME) && e.contains("symbolic link"), "{e}");

        let bad = tempfile::tempdir().unwrap();
        std::fs::write(bad.path().join(FILE_NAME), "not a key\n").unwrap();
        let e = CallKey::load_or_create(bad.path()).unwrap_err();
        assert!(matches!(e, CallKeyError::Malformed { .. }), "{e}");
    }

    #[test]
    fn processes_making_the_key_at_once_agree_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| tag(&CallKey::load_or_create(dir.path()).unwrap())))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.windows(2).all(|w| w[0] == w[1]));
    }
}

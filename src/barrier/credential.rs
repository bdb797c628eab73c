//! The control credential: what a control-socket peer presents before the
//! socket serves it (`toolgate/auth`, the first request of every control
//! connection).
//!
//! A file mode cannot tell a person's CLI from a governed process: both run
//! as the same user, and both could open a `0600` socket or file. What
//! tells them apart is the barrier: the credential lives in the data dir,
//! which no confined process can read (see [`super`]). It is random per
//! engine start, written `0600` without following symlinks, removed when
//! the engine stops, and compared through digests so the comparison's
//! time says nothing about the secret.

use std::path::{Path, PathBuf};

use rand::RngCore;
use sha2::{Digest, Sha256};

/// The credential's file in the data dir.
pub const FILE: &str = "control.token";

/// A control credential.
#[derive(Clone)]
pub struct Credential(String);

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential(..)")
    }
}

/// Where a data dir's credential is.
pub fn file_in(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

impl Credential {
    /// A fresh random credential (256 bits).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(hex::encode(bytes))
    }

    /// The credential of the engine owning `data_dir`.
    ///
    /// # Errors
    /// The file cannot be read (no engine, or this process may not read
    /// it: a governed process cannot).
    pub fn read(data_dir: &Path) -> std::io::Result<Self> {
        Self::read_file(&file_in(data_dir))
    }

    /// The credential in `file`.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn read_file(file: &Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(file)?;
        Ok(Self(text.trim().to_owned()))
    }

    /// Writes it to `data_dir`'s file, `0600`, replacing any file there
    /// whole (a link planted at the path is replaced, never followed).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, data_dir: &Path) -> std::io::Result<PathBuf> {
        let path = file_in(data_dir);
        crate::private_file::write(&path, self.0.as_bytes())?;
        Ok(path)
    }

    /// The text presented on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this credential.
    pub fn matches(&self, presented: &str) -> bool {
        Sha256::digest(self.0.as_bytes()) == Sha256::digest(presented.trim().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_written_credential_reads_back_private_and_matches_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let c = Credential::generate();
        let path = c.write(dir.path()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let back = Credential::read(dir.path()).unwrap();
        assert!(c.matches(back.expose()));
        assert!(!c.matches(Credential::generate().expose()));
        assert!(!c.matches(""));
        assert_eq!(format!("{c:?}"), "Credential(..)");
    }

    #[test]
    fn a_symlink_planted_at_the_path_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, file_in(dir.path())).unwrap();
        Credential::generate().write(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(
            !std::fs::symlink_metadata(file_in(dir.path()))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

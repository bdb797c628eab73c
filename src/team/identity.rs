//! Which engine this is, as every team row names it: a random id kept in
//! the data dir (so a restart is the same engine, and two engines on one
//! host are not), and the host and user it runs as.

use std::path::Path;

use serde::Serialize;

/// This engine, as the team knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct EngineIdentity {
    /// Random, 32 hex digits, made once per data dir.
    pub id: String,
    /// The host name.
    pub host: String,
    /// The user the engine runs as.
    pub user: String,
}

const FILE: &str = "engine-id";

impl EngineIdentity {
    /// The identity of the engine whose data dir is `data_dir`, made the
    /// first time.
    ///
    /// # Errors
    /// The id file could not be read or written.
    pub fn of(data_dir: &Path) -> std::io::Result<Self> {
        let path = data_dir.join(FILE);
        let id = match crate::private_file::read(&path, 256)? {
            Some(bytes) if is_id(&bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
            _ => {
                let id = hex::encode(rand::random::<[u8; 16]>());
                crate::private_file::write(&path, id.as_bytes())?;
                id
            }
        };
        Ok(Self {
            id,
            host: whoami::hostname().unwrap_or_else(|_| "unknown-host".into()),
            user: whoami::username().unwrap_or_else(|_| "unknown-user".into()),
        })
    }

    /// `user on host`, as a decision's author is shown.
    pub fn label(&self) -> String {
        format!("{} on {}", self.user, self.host)
    }
}

fn is_id(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let t = text.trim();
    t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_made_once_per_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let a = EngineIdentity::of(dir.path()).unwrap();
        let b = EngineIdentity::of(dir.path()).unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(a.id.len(), 32);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(EngineIdentity::of(other.path()).unwrap().id, a.id);
    }
}

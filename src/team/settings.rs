//! `[storage]`: where the team's shared queue lives. Unset, toolgate is
//! one engine on its embedded SQLite and nothing here runs.
//!
//! The password never sits in the config: the URL may not carry one, and
//! `password` must be a `keyring:NAME` reference (or absent, for trust,
//! certificate or `PGPASSWORD` authentication).

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;

use crate::secrets::{SecretError, SecretStore, resolve_value, secret_ref};

/// Whether an engine's remembered rules (`[team] rules`) or upstream tool
/// pins (`[team] pins`) are its own or the team's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// They stay on the engine.
    #[default]
    Engine,
    /// The engine shares them with the other sharing engines and applies
    /// theirs (for rules, only those whose scope means the same
    /// everywhere: no exact-arguments hash, no single caller).
    Team,
}

/// A validated `[storage]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageSettings {
    /// The Postgres URL, without a password.
    url: String,
    /// A `keyring:NAME` reference.
    password: Option<String>,
}

/// Why `[storage]` is not usable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StorageError {
    /// Not a `postgres://` URL.
    #[error("storage.url: `{0}` is not a postgres:// URL (SQLite, the default, needs no url)")]
    NotPostgres(String),
    /// The URL has a password in it.
    #[error(
        "storage.url: the URL carries a password; keep it in the keychain instead: \
         password = \"keyring:NAME\" (set it with `toolgate secret set NAME`)"
    )]
    PasswordInUrl,
    /// `password` is a value rather than a reference.
    #[error(
        "storage.password: must be a keychain reference, \"keyring:NAME\", not the password itself"
    )]
    PlainPassword,
    /// The URL does not parse, or an option (`sslmode`, ...) is wrong.
    #[error("storage.url: {0}")]
    Invalid(String),
    /// The keychain did not give the password.
    #[error("storage.password: {0}")]
    Secret(String),
}

impl StorageSettings {
    /// Checks `[storage] url` and `password`.
    ///
    /// # Errors
    /// See [`StorageError`].
    pub fn new(url: &str, password: Option<&str>) -> Result<Self, StorageError> {
        let parsed = url::Url::parse(url).map_err(|e| StorageError::Invalid(e.to_string()))?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            return Err(StorageError::NotPostgres(url.to_owned()));
        }
        if parsed.password().is_some() {
            return Err(StorageError::PasswordInUrl);
        }
        if let Some(p) = password
            && secret_ref(p).is_none()
        {
            return Err(StorageError::PlainPassword);
        }
        PgConnectOptions::from_str(url).map_err(|e| StorageError::Invalid(e.to_string()))?;
        Ok(Self {
            url: url.to_owned(),
            password: password.map(str::to_owned),
        })
    }

    /// The URL, as people may see it (it has no password).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How to connect, with the password read from `store`.
    ///
    /// # Errors
    /// The password's secret could not be read.
    pub fn connect_options(
        &self,
        store: &dyn SecretStore,
    ) -> Result<PgConnectOptions, StorageError> {
        let mut opts = PgConnectOptions::from_str(&self.url)
            .map_err(|e| StorageError::Invalid(e.to_string()))?
            .application_name("toolgate");
        if let Some(reference) = &self.password {
            let password = resolve_value(reference, store)
                .map_err(|e: SecretError| StorageError::Secret(e.to_string()))?;
            opts = opts.password(&password);
        }
        Ok(opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_postgres_url_is_accepted() {
        let s = StorageSettings::new(
            "postgres://toolgate@db.example/team?sslmode=verify-full",
            None,
        )
        .unwrap();
        assert_eq!(
            s.url(),
            "postgres://toolgate@db.example/team?sslmode=verify-full"
        );
    }

    #[test]
    fn a_password_in_the_url_is_refused() {
        let e = StorageSettings::new("postgres://toolgate:hunter2@db/team", None).unwrap_err();
        assert_eq!(e, StorageError::PasswordInUrl);
        assert!(!e.to_string().contains("hunter2"));
    }

    #[test]
    fn the_password_must_be_a_keychain_reference() {
        assert_eq!(
            StorageSettings::new("postgres://t@db/team", Some("hunter2")).unwrap_err(),
            StorageError::PlainPassword
        );
        assert!(StorageSettings::new("postgres://t@db/team", Some("keyring:team-db")).is_ok());
    }

    #[test]
    fn other_schemes_and_bad_options_are_named() {
        assert!(matches!(
            StorageSettings::new("mysql://db/team", None),
            Err(StorageError::NotPostgres(_))
        ));
        let e = StorageSettings::new("postgres://t@db/team?sslmode=sometimes", None).unwrap_err();
        assert!(matches!(e, StorageError::Invalid(_)), "{e}");
    }
}

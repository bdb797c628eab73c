//! Secrets referenced from the config as `keyring:NAME`, kept in the OS
//! keychain (docs/architecture/overview.md, "Configuration and secrets").
//!
//! Contract:
//! - The config holds only references. [`resolve_spec`] swaps them for the
//!   real values at connect time and returns a copy; the configured spec is
//!   never mutated, so the copy that is logged, shown in the UI or stored is
//!   always the reference form.
//! - A secret value travels as [`Secret`], whose `Debug` and `Display` print
//!   `<redacted>`, so a stray `{:?}` in a log line cannot leak it. Errors
//!   name the missing secret, never a value.
//! - The store sits behind [`SecretStore`] so the engine and its tests do not
//!   need a desktop session: [`MemoryStore`] for tests, [`KeyringStore`] for
//!   real use (Secret Service over D-Bus on Linux, Keychain on macOS,
//!   Credential Manager on Windows, via `keyring` 4.2).
//!
//! [`KeyringStore`] calls block (D-Bus round trips); from async code call
//! them inside `tokio::task::spawn_blocking`.
//!
//! # Testing against a real keychain
//! The one real-keychain test (`keyring_round_trip`, `#[ignore]`d) runs
//! through `scripts/keyring-test`, which starts a private D-Bus session
//! (`dbus-run-session`) with an unlocked `gnome-keyring-daemon` in a throwaway
//! `HOME`. We chose that over keyring's in-memory `sample` store because the
//! sample store would only test our wrapper against a second mock: the point
//! of the test is that the production path (zbus Secret Service store,
//! service name, entry naming, the "no entry" mapping) works against a real
//! Secret Service. Unit tests use [`MemoryStore`]. CI needs the apt packages
//! `gnome-keyring dbus dbus-x11`.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::sync::Mutex;

use crate::config::servers::{AuthSpec, ServerSpec, TransportSpec};

/// The prefix that marks a config value as a keychain reference.
pub const PREFIX: &str = "keyring:";

/// The keychain "service" all toolgate secrets are stored under, so they are
/// grouped and cannot collide with other applications' entries.
pub const SERVICE: &str = "toolgate";

/// The secret name in a `keyring:NAME` value, if `value` is a reference.
pub fn secret_ref(value: &str) -> Option<&str> {
    value.strip_prefix(PREFIX)
}

/// A secret value. Redacted in `Debug` and `Display`; read it with
/// [`Secret::expose`] only where it leaves the process (a header, an env var).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself. Named so every use stands out in review.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A valid secret name: `[A-Za-z0-9_.-]{1,128}`. Narrow on purpose, so a
/// name is safe in a shell command, a TOML value and a keychain UI.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretName(String);

impl SecretName {
    /// Longest name.
    pub const MAX_LEN: usize = 128;

    /// Checks `name`.
    ///
    /// # Errors
    /// [`SecretError::InvalidName`] when empty, too long or with a character
    /// outside `[A-Za-z0-9_.-]`.
    pub fn new(name: &str) -> Result<Self, SecretError> {
        let ok = !name.is_empty()
            && name.len() <= Self::MAX_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if ok {
            Ok(Self(name.to_owned()))
        } else {
            Err(SecretError::InvalidName {
                name: name.to_owned(),
            })
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a secret could not be read, written or resolved. Never carries a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// No secret with this name.
    #[error("secret `{name}` is not in the keychain; set it with `toolgate secret set {name}`")]
    NotFound {
        /// The name.
        name: String,
    },
    /// The name breaks [`SecretName`]'s rule.
    #[error(
        "`keyring:{name}`: secret names are 1-{} characters of A-Z, a-z, 0-9, `_`, `.`, `-`",
        SecretName::MAX_LEN
    )]
    InvalidName {
        /// The name.
        name: String,
    },
    /// An empty value would silently send empty credentials.
    #[error("secret `{name}`: value is empty")]
    Empty {
        /// The name.
        name: String,
    },
    /// The keychain itself failed (locked, no Secret Service, ...).
    #[error("keychain error for secret `{name}`: {message}")]
    Store {
        /// The name (or `*` for store-wide failures).
        name: String,
        /// The store's message (keyring's `Display`, which never holds the value).
        message: String,
    },
    /// Reading the value from stdin failed.
    #[error("cannot read the secret value from stdin: {0}")]
    Input(#[source] std::io::Error),
}

/// A place secrets live. Object safe so the engine holds a
/// `&dyn SecretStore` chosen at startup.
pub trait SecretStore: Send + Sync {
    /// The secret called `name`.
    ///
    /// # Errors
    /// [`SecretError::NotFound`] if absent, [`SecretError::Store`] if the
    /// store failed.
    fn get(&self, name: &SecretName) -> Result<Secret, SecretError>;

    /// Creates or replaces `name`.
    ///
    /// # Errors
    /// [`SecretError::Store`] if the store failed.
    fn set(&self, name: &SecretName, value: &Secret) -> Result<(), SecretError>;

    /// Removes `name`.
    ///
    /// # Errors
    /// [`SecretError::NotFound`] if absent, [`SecretError::Store`] if the
    /// store failed.
    fn delete(&self, name: &SecretName) -> Result<(), SecretError>;
}

/// An in-process store, for tests and for hosts without a keychain.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: Mutex<HashMap<String, Secret>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Secret>> {
        // A panic while holding the lock cannot leave the map half-written
        // (every operation is one insert/remove), so poisoning is harmless.
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, name: &SecretName) -> Result<Secret, SecretError> {
        self.lock()
            .get(name.as_str())
            .cloned()
            .ok_or_else(|| not_found(name))
    }

    fn set(&self, name: &SecretName, value: &Secret) -> Result<(), SecretError> {
        self.lock().insert(name.as_str().to_owned(), value.clone());
        Ok(())
    }

    fn delete(&self, name: &SecretName) -> Result<(), SecretError> {
        self.lock()
            .remove(name.as_str())
            .map(drop)
            .ok_or_else(|| not_found(name))
    }
}

fn not_found(name: &SecretName) -> SecretError {
    SecretError::NotFound {
        name: name.as_str().to_owned(),
    }
}

/// The OS keychain: entries with service [`SERVICE`] and the secret name as
/// the user.
#[derive(Debug)]
pub struct KeyringStore {
    _private: (),
}

impl KeyringStore {
    /// Connects to the platform keychain.
    ///
    /// # Errors
    /// [`SecretError::Store`] when no keychain is reachable (on Linux: no
    /// D-Bus session or no Secret Service running).
    pub fn new() -> Result<Self, SecretError> {
        keyring::Entry::store_status()
            .as_ref()
            .map_err(|e| SecretError::Store {
                name: "*".into(),
                message: e.to_string(),
            })?;
        Ok(Self { _private: () })
    }

    fn entry(name: &SecretName) -> Result<keyring::Entry, SecretError> {
        keyring::Entry::new(SERVICE, name.as_str()).map_err(|e| store_error(name, &e))
    }
}

/// Maps keyring's error without its `Debug` (`BadEncoding` would print the
/// bytes of the secret).
fn store_error(name: &SecretName, e: &keyring::Error) -> SecretError {
    match e {
        keyring::Error::NoEntry => not_found(name),
        other => SecretError::Store {
            name: name.as_str().to_owned(),
            message: other.to_string(),
        },
    }
}

impl SecretStore for KeyringStore {
    fn get(&self, name: &SecretName) -> Result<Secret, SecretError> {
        Self::entry(name)?
            .get_password()
            .map(Secret)
            .map_err(|e| store_error(name, &e))
    }

    fn set(&self, name: &SecretName, value: &Secret) -> Result<(), SecretError> {
        Self::entry(name)?
            .set_password(value.expose())
            .map_err(|e| store_error(name, &e))
    }

    fn delete(&self, name: &SecretName) -> Result<(), SecretError> {
        Self::entry(name)?
            .delete_credential()
            .map_err(|e| store_error(name, &e))
    }
}

/// Looks up one config value: a `keyring:NAME` reference becomes the secret,
/// anything else is returned as written.
///
/// # Errors
/// An invalid or missing name, or a store failure.
pub fn resolve_value(value: &str, store: &dyn SecretStore) -> Result<String, SecretError> {
    resolve_noted(value, store, &mut Vec::new())
}

/// [`resolve_value`], adding each value read from the store to `found`.
/// A value too short to be scrubbed from logs is resolved all the same,
/// with a warning naming the secret (see [`crate::scrub`]).
fn resolve_noted(
    value: &str,
    store: &dyn SecretStore,
    found: &mut Vec<Secret>,
) -> Result<String, SecretError> {
    let Some(name) = secret_ref(value) else {
        return Ok(value.to_owned());
    };
    let secret = store.get(&SecretName::new(name)?)?;
    if !crate::scrub::long_enough(secret.expose()) {
        tracing::warn!(
            "secret `{name}` is shorter than {} characters, too short to be hidden in logs",
            crate::scrub::MIN_LEN
        );
    }
    let value = secret.0.clone();
    found.push(secret);
    Ok(value)
}

fn resolve_map(
    map: &std::collections::BTreeMap<String, String>,
    store: &dyn SecretStore,
    found: &mut Vec<Secret>,
) -> Result<std::collections::BTreeMap<String, String>, SecretError> {
    map.iter()
        .map(|(k, v)| Ok((k.clone(), resolve_noted(v, store, found)?)))
        .collect()
}

/// A copy of `spec` with every `keyring:` reference in env, headers and
/// auth replaced by its value, and those values listed in
/// `resolved_secrets` (for scrubbing). Call it right before connecting and
/// drop the copy with the connection: never log, serialise or store it.
///
/// # Errors
/// The first reference that cannot be resolved (the error names it).
pub fn resolve_spec(spec: &ServerSpec, store: &dyn SecretStore) -> Result<ServerSpec, SecretError> {
    let mut found = Vec::new();
    let transport = match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => TransportSpec::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: resolve_map(env, store, &mut found)?,
            cwd: cwd.clone(),
        },
        TransportSpec::Sse { url, headers } => TransportSpec::Sse {
            url: url.clone(),
            headers: resolve_map(headers, store, &mut found)?,
        },
        TransportSpec::StreamableHttp { url, headers } => TransportSpec::StreamableHttp {
            url: url.clone(),
            headers: resolve_map(headers, store, &mut found)?,
        },
        TransportSpec::Websocket { url, headers } => TransportSpec::Websocket {
            url: url.clone(),
            headers: resolve_map(headers, store, &mut found)?,
        },
    };
    let auth = match &spec.auth {
        None => None,
        Some(AuthSpec::Bearer { token }) => Some(AuthSpec::Bearer {
            token: resolve_noted(token, store, &mut found)?,
        }),
        Some(AuthSpec::Basic { username, password }) => Some(AuthSpec::Basic {
            username: username.clone(),
            password: resolve_noted(password, store, &mut found)?,
        }),
    };
    Ok(ServerSpec {
        transport,
        auth,
        resolved_secrets: found,
        ..spec.clone()
    })
}

/// What must never show in the text of `spec`'s server (its stderr, its
/// errors): the values resolved from the keychain, the `auth` credentials
/// (and a Basic credential's base64 form), and literal `env`/`headers`
/// values whose name says they are credentials ([`credential_name`]). A
/// literal value under another name is taken to be configuration, which
/// the config file shows anyway.
pub fn scrubber_for(spec: &ServerSpec) -> crate::scrub::Scrubber {
    let mut values: Vec<String> = spec
        .resolved_secrets
        .iter()
        .map(|s| s.expose().to_owned())
        .collect();
    let named = match &spec.transport {
        TransportSpec::Stdio { env, .. } => env,
        TransportSpec::Sse { headers, .. }
        | TransportSpec::StreamableHttp { headers, .. }
        | TransportSpec::Websocket { headers, .. } => headers,
    };
    values.extend(
        named
            .iter()
            .filter(|(k, v)| credential_name(k) && secret_ref(v).is_none())
            .map(|(_, v)| v.clone()),
    );
    match &spec.auth {
        Some(AuthSpec::Bearer { token }) if secret_ref(token).is_none() => {
            values.push(token.clone());
        }
        Some(AuthSpec::Basic { username, password }) if secret_ref(password).is_none() => {
            use base64::Engine as _;
            values.push(password.clone());
            let raw = format!("{username}:{password}");
            values.push(base64::engine::general_purpose::STANDARD.encode(raw));
        }
        _ => {}
    }
    crate::scrub::Scrubber::new(values)
}

/// Whether an env var or header name says its value is a credential:
/// it contains `token`, `secret`, `passw`, `key`, `auth`, `credential`,
/// `cookie` or `private` (any case): `GITHUB_TOKEN`, `X-Api-Key`,
/// `Authorization`, `DB_PASSWORD`.
pub fn credential_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "token",
        "secret",
        "passw",
        "key",
        "auth",
        "credential",
        "cookie",
        "private",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Every secret name `spec` refers to, so the UI and `toolgate servers` can
/// say which ones are missing before a connection fails.
pub fn referenced_names(spec: &ServerSpec) -> Vec<String> {
    let mut values: Vec<&String> = match &spec.transport {
        TransportSpec::Stdio { env, .. } => env.values().collect(),
        TransportSpec::Sse { headers, .. }
        | TransportSpec::StreamableHttp { headers, .. }
        | TransportSpec::Websocket { headers, .. } => headers.values().collect(),
    };
    match &spec.auth {
        Some(AuthSpec::Bearer { token }) => values.push(token),
        Some(AuthSpec::Basic { password, .. }) => values.push(password),
        None => {}
    }
    let mut names: Vec<String> = values
        .into_iter()
        .filter_map(|v| secret_ref(v).map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A keychain that cannot be reached (locked, no Secret Service): every
/// lookup fails with the store's reason, so each server that needs a
/// secret reports it by name instead of all of them failing as one.
#[derive(Debug, Clone)]
pub struct UnavailableStore {
    message: String,
}

impl UnavailableStore {
    /// A store that answers every request with `reason`.
    pub fn new(reason: &SecretError) -> Self {
        Self {
            message: match reason {
                SecretError::Store { message, .. } => message.clone(),
                other => other.to_string(),
            },
        }
    }

    fn error(&self, name: &SecretName) -> SecretError {
        SecretError::Store {
            name: name.as_str().to_owned(),
            message: self.message.clone(),
        }
    }
}

impl SecretStore for UnavailableStore {
    fn get(&self, name: &SecretName) -> Result<Secret, SecretError> {
        Err(self.error(name))
    }

    fn set(&self, name: &SecretName, _value: &Secret) -> Result<(), SecretError> {
        Err(self.error(name))
    }

    fn delete(&self, name: &SecretName) -> Result<(), SecretError> {
        Err(self.error(name))
    }
}

/// The OS keychain, or, when it cannot be reached, an [`UnavailableStore`]
/// carrying the reason. Blocks (D-Bus): call it on a blocking thread.
pub fn open_keychain() -> Box<dyn SecretStore> {
    match KeyringStore::new() {
        Ok(store) => Box::new(store),
        Err(e) => Box::new(UnavailableStore::new(&e)),
    }
}

/// One server whose secrets could not be resolved, and what became of it.
/// Its `Display` is the one line a person reads: the server and the secret
/// by name, never a value.
#[derive(Debug)]
pub struct SecretProblem {
    /// The server.
    pub server: String,
    /// True when the server keeps running on the spec it was started with.
    pub kept: bool,
    /// Why the secret could not be read.
    pub error: SecretError,
}

impl fmt::Display for SecretProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kept {
            write!(
                f,
                "server `{}` keeps running on its last good config: {}",
                self.server, self.error
            )
        } else {
            write!(f, "server `{}` not started: {}", self.server, self.error)
        }
    }
}

/// What [`resolve_servers`] decided.
#[derive(Debug, Default)]
pub struct ResolvedServers {
    /// The specs to apply: resolved, or a running server's last good one.
    pub specs: Vec<ServerSpec>,
    /// One entry per server whose secrets could not be resolved.
    pub problems: Vec<SecretProblem>,
}

/// Resolves the `keyring:` references of every configured server for a
/// (re)load. A server whose secrets cannot be read keeps the resolved spec
/// it runs with (`running`, by name) when it runs, so a keychain that is
/// locked for a moment, or a secret renamed in the file before it was
/// stored, never stops a working server; a server that
/// does not run yet is left out. Either way the problem is returned.
/// Disabled servers pass through unresolved: they are stopped whatever
/// their secrets.
pub fn resolve_servers(
    configured: Vec<ServerSpec>,
    store: &dyn SecretStore,
    running: &HashMap<String, ServerSpec>,
) -> ResolvedServers {
    let mut out = ResolvedServers::default();
    for spec in configured {
        if !spec.enabled || referenced_names(&spec).is_empty() {
            out.specs.push(spec);
            continue;
        }
        match resolve_spec(&spec, store) {
            Ok(resolved) => out.specs.push(resolved),
            Err(error) => {
                let last_good = running.get(&spec.name).cloned();
                out.problems.push(SecretProblem {
                    server: spec.name.clone(),
                    kept: last_good.is_some(),
                    error,
                });
                out.specs.extend(last_good);
            }
        }
    }
    out
}

// ---- `toolgate secret set|get|rm NAME` -----------------------------------

/// `toolgate secret set NAME`: reads the value from `input` (stdin), never
/// from the command line, where it would land in shell history and `ps`.
/// One trailing newline (`\n` or `\r\n`) is dropped so `echo "$T" |` works.
///
/// # Errors
/// Invalid name, unreadable input, an empty value, or a store failure.
pub fn cli_set(
    store: &dyn SecretStore,
    name: &str,
    mut input: impl Read,
) -> Result<(), SecretError> {
    let name = SecretName::new(name)?;
    let mut value = String::new();
    input
        .read_to_string(&mut value)
        .map_err(SecretError::Input)?;
    let value = value
        .strip_suffix('\n')
        .map(|v| v.strip_suffix('\r').unwrap_or(v))
        .unwrap_or(&value);
    if value.is_empty() {
        return Err(SecretError::Empty {
            name: name.as_str().to_owned(),
        });
    }
    store.set(&name, &Secret::new(value))
}

/// `toolgate secret get NAME`: the secret, for the CLI to print only when
/// asked to reveal it.
///
/// # Errors
/// Invalid name, missing secret, or a store failure.
pub fn cli_get(store: &dyn SecretStore, name: &str) -> Result<Secret, SecretError> {
    store.get(&SecretName::new(name)?)
}

/// `toolgate secret rm NAME`.
///
/// # Errors
/// Invalid name, missing secret, or a store failure.
pub fn cli_rm(store: &dyn SecretStore, name: &str) -> Result<(), SecretError> {
    store.delete(&SecretName::new(name)?)
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;

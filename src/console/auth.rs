//! The console role's secrets, separate from the agents' MCP token
//! (docs/architecture/console-api.md, Auth):
//!
//! - **One-time login tokens** (256-bit, single use, valid
//!   [`LOGIN_TTL`]): `toolgate serve` prints one in the console URL and
//!   `toolgate console` asks the control socket for a fresh one. A browser
//!   trades it at `GET /login?t=` for a session cookie.
//! - **Sessions**: a random 256-bit id in an `HttpOnly; SameSite=Strict`
//!   cookie. At most [`MAX_SESSIONS`] are kept; the oldest is forgotten
//!   first. The daemon keeps their digests in the data dir
//!   ([`super::sessions`]), so an open tab stays signed in across an
//!   engine restart.
//! - **A bearer token** for non-browser clients (the desktop shell,
//!   scripts), written `0600` to `console.token` in the data dir.
//!
//! Tokens and session ids are kept only as SHA-256 digests and looked up
//! by digest, so a lookup's timing depends on a hash of the guess, never
//! on how many leading bytes of a real secret it shares; the bearer token
//! is compared in constant time. None of them is ever logged.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::sessions::{self, SessionsError};
use crate::control::socket::LoginLinks;
use crate::local_http::new_token;
use crate::wire::Surface;

/// How long a login link works.
pub const LOGIN_TTL: Duration = Duration::from_secs(600);

/// Browser sessions kept at once (each login makes one).
pub const MAX_SESSIONS: usize = 64;

/// The session cookie's name.
pub const COOKIE: &str = "tg_console";

type Digest32 = [u8; 32];

fn digest(secret: &str) -> Digest32 {
    Sha256::digest(secret.as_bytes()).into()
}

#[derive(Debug, Default)]
struct State {
    logins: HashMap<Digest32, (Instant, Surface)>,
    sessions: VecDeque<(Digest32, Surface)>,
}

/// Mints and checks the console's secrets. Cloning shares them.
#[derive(Clone)]
pub struct ConsoleAuth {
    origin: Arc<str>,
    bearer: Arc<str>,
    state: Arc<Mutex<State>>,
    /// Where the sessions are kept across restarts; `None`: memory only.
    file: Option<Arc<Path>>,
}

impl std::fmt::Debug for ConsoleAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleAuth")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl LoginLinks for ConsoleAuth {
    fn login_url_for(&self, surface: Surface) -> String {
        ConsoleAuth::login_url_for(self, surface)
    }
}

impl ConsoleAuth {
    /// Secrets for the console served at `origin` (`http://127.0.0.1:PORT`),
    /// with a fresh bearer token.
    pub fn new(origin: impl Into<String>) -> Self {
        Self {
            origin: origin.into().into(),
            bearer: new_token().into(),
            state: Arc::default(),
            file: None,
        }
    }

    /// [`Self::new`] with the sessions kept in `file`
    /// ([`super::sessions`]): the sessions a previous engine of this data
    /// dir kept are live again, and every new one is written there.
    ///
    /// # Errors
    /// The file cannot be read or is not a sessions file; see
    /// [`Self::persistent_or_fresh`] for the daemon's way of starting anyway.
    pub fn persistent(origin: impl Into<String>, file: PathBuf) -> Result<Self, SessionsError> {
        let mut kept: VecDeque<_> = sessions::load(&file)?.into();
        while kept.len() > MAX_SESSIONS {
            kept.pop_front();
        }
        let auth = Self {
            file: Some(file.into()),
            ..Self::new(origin)
        };
        auth.state().sessions = kept;
        Ok(auth)
    }

    /// [`Self::persistent`], or with no sessions when the file cannot be
    /// read: a bad sessions file costs open tabs a fresh sign-in, never the
    /// engine's start. The warning names the file and what is wrong; the
    /// next sign-in replaces it.
    pub fn persistent_or_fresh(origin: impl Into<String>, file: PathBuf) -> Self {
        let origin = origin.into();
        match Self::persistent(origin.clone(), file.clone()) {
            Ok(auth) => auth,
            Err(e) => {
                tracing::warn!("{e}; starting with no console sessions");
                Self {
                    file: Some(file.into()),
                    ..Self::new(origin)
                }
            }
        }
    }

    /// The origin the console is served at.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The bearer token for non-browser clients.
    pub fn bearer(&self) -> &str {
        &self.bearer
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh one-time login token, valid [`LOGIN_TTL`] from `now`.
    pub fn mint_at(&self, now: Instant) -> String {
        self.mint_for_at(Surface::Browser, now)
    }

    /// A fresh one-time login token for a session shown on `surface`.
    pub fn mint_for_at(&self, surface: Surface, now: Instant) -> String {
        let token = new_token();
        let mut st = self.state();
        st.logins.retain(|_, (expires, _)| *expires > now);
        st.logins.insert(digest(&token), (now + LOGIN_TTL, surface));
        token
    }

    /// A fresh one-time login URL (`<origin>/login?t=<token>`).
    pub fn login_url(&self) -> String {
        self.login_url_for(Surface::Browser)
    }

    /// [`Self::login_url`] for a session shown on `surface`.
    pub fn login_url_for(&self, surface: Surface) -> String {
        let token = self.mint_for_at(surface, Instant::now());
        format!("{}/login?t={token}", self.origin)
    }

    /// Trades a login token for a new session id. The token is spent
    /// whether or not it was still valid; `None` if it was unknown, used or
    /// expired at `now`.
    pub fn redeem_at(&self, token: &str, now: Instant) -> Option<String> {
        let mut st = self.state();
        let (expires, surface) = st.logins.remove(&digest(token))?;
        if expires <= now {
            return None;
        }
        let session = new_token();
        if st.sessions.len() >= MAX_SESSIONS {
            st.sessions.pop_front();
        }
        st.sessions.push_back((digest(&session), surface));
        if let Some(file) = &self.file
            && let Err(e) = sessions::save(file, &st.sessions)
        {
            tracing::warn!("{e}; this session ends when the engine stops");
        }
        Some(session)
    }

    /// [`Self::redeem_at`] now.
    pub fn redeem(&self, token: &str) -> Option<String> {
        self.redeem_at(token, Instant::now())
    }

    /// Whether `session` is a live session id.
    pub fn has_session(&self, session: &str) -> bool {
        self.surface_of(session).is_some()
    }

    /// Where live session `session` is shown; `None` if it is not live.
    pub fn surface_of(&self, session: &str) -> Option<Surface> {
        let d = digest(session);
        let st = self.state();
        st.sessions.iter().find(|(s, _)| *s == d).map(|(_, w)| *w)
    }

    /// Whether `token` is the console bearer token (constant time).
    pub fn is_bearer(&self, token: &str) -> bool {
        crate::local_http::constant_time_eq(token.as_bytes(), self.bearer.as_bytes())
    }

    /// A short label of a session for "who decided" records: a digest
    /// prefix, never the id itself.
    pub fn session_label(session: &str) -> String {
        hex::encode(&digest(session)[..4])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_token_works_once_and_within_ten_minutes() {
        let auth = ConsoleAuth::new("http://127.0.0.1:1");
        let t0 = Instant::now();
        let token = auth.mint_at(t0);
        assert_eq!(token.len(), 64, "256 bits, hex");
        let session = auth.redeem_at(&token, t0 + Duration::from_secs(1)).unwrap();
        assert!(auth.has_session(&session));
        assert_eq!(auth.redeem_at(&token, t0 + Duration::from_secs(2)), None);

        let late = auth.mint_at(t0);
        assert_eq!(auth.redeem_at(&late, t0 + LOGIN_TTL), None);
        assert_eq!(auth.redeem_at("not-a-token", t0), None);
        assert!(!auth.has_session("not-a-session"));
        assert!(!auth.has_session(&token), "a login token is not a session");
    }

    #[test]
    fn a_session_remembers_where_its_login_link_was_meant_to_open() {
        let auth = ConsoleAuth::new("http://127.0.0.1:1");
        let t0 = Instant::now();
        let window = auth.mint_for_at(Surface::DesktopWindow, t0);
        let window = auth.redeem_at(&window, t0).unwrap();
        let tab = auth.redeem_at(&auth.mint_at(t0), t0).unwrap();
        assert_eq!(auth.surface_of(&window), Some(Surface::DesktopWindow));
        assert_eq!(auth.surface_of(&tab), Some(Surface::Browser));
        assert_eq!(auth.surface_of("nope"), None);
    }

    #[test]
    fn old_sessions_are_forgotten_past_the_cap() {
        let auth = ConsoleAuth::new("http://127.0.0.1:1");
        let t0 = Instant::now();
        let first = auth.redeem_at(&auth.mint_at(t0), t0).unwrap();
        for _ in 0..MAX_SESSIONS {
            auth.redeem_at(&auth.mint_at(t0), t0).unwrap();
        }
        assert!(!auth.has_session(&first));
    }

    #[test]
    fn the_bearer_token_is_separate_and_checked_exactly() {
        let auth = ConsoleAuth::new("http://127.0.0.1:1");
        assert!(auth.is_bearer(auth.bearer()));
        assert!(!auth.is_bearer(""));
        assert!(!auth.is_bearer(&auth.bearer()[1..]));
        assert_ne!(
            ConsoleAuth::new("x").bearer(),
            auth.bearer(),
            "fresh per launch"
        );
    }

    #[test]
    fn a_session_outlives_the_engine_that_minted_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = sessions::file(dir.path());
        let t0 = Instant::now();
        let before = ConsoleAuth::persistent("http://127.0.0.1:1", file.clone()).unwrap();
        let tab = before.redeem_at(&before.mint_at(t0), t0).unwrap();
        let window = before.mint_for_at(Surface::DesktopWindow, t0);
        let window = before.redeem_at(&window, t0).unwrap();

        let after = ConsoleAuth::persistent("http://127.0.0.1:1", file.clone()).unwrap();
        assert_eq!(after.surface_of(&tab), Some(Surface::Browser));
        assert_eq!(after.surface_of(&window), Some(Surface::DesktopWindow));
        assert!(!after.has_session("made-up"));
        assert_ne!(
            after.bearer(),
            before.bearer(),
            "the bearer token stays per launch"
        );

        let body = std::fs::read_to_string(&file).unwrap();
        assert!(!body.contains(&tab), "only digests are written");
        assert!(body.contains(&hex::encode(digest(&tab))));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn the_session_cap_holds_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let file = sessions::file(dir.path());
        let t0 = Instant::now();
        let auth = ConsoleAuth::persistent("http://127.0.0.1:1", file.clone()).unwrap();
        let first = auth.redeem_at(&auth.mint_at(t0), t0).unwrap();
        let mut last = String::new();
        for _ in 0..MAX_SESSIONS {
            last = auth.redeem_at(&auth.mint_at(t0), t0).unwrap();
        }
        let again = ConsoleAuth::persistent("http://127.0.0.1:1", file).unwrap();
        assert!(!again.has_session(&first));
        assert!(again.has_session(&last));
        assert_eq!(again.state().sessions.len(), MAX_SESSIONS);
    }

    #[test]
    fn a_corrupt_sessions_file_is_a_clear_error_and_the_daemon_starts_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let file = sessions::file(dir.path());
        for body in [
            &b"not json"[..],
            br#"{"version":1,"sessions":[{"digest":"zz","surface":"browser"}]}"#,
            br#"{"version":9,"sessions":[]}"#,
            br#"{"version":1,"sessions":[{"digest":"00","surface":"toaster"}]}"#,
        ] {
            std::fs::write(&file, body).unwrap();
            let e = ConsoleAuth::persistent("http://127.0.0.1:1", file.clone()).unwrap_err();
            let message = e.to_string();
            assert!(
                message.contains("console-sessions.json is unreadable")
                    && message.contains("toolgate console"),
                "{message}"
            );
        }
        let auth = ConsoleAuth::persistent_or_fresh("http://127.0.0.1:1", file.clone());
        let t0 = Instant::now();
        let session = auth.redeem_at(&auth.mint_at(t0), t0).unwrap();
        let again = ConsoleAuth::persistent("http://127.0.0.1:1", file).unwrap();
        assert!(
            again.has_session(&session),
            "the next sign-in replaced the bad file"
        );
    }
}

//! What the shell would make of a word before using it as a path: `~`,
//! `~name`, `$HOME`, `${HOME}`, `${VAR:-default}`, variables set earlier in
//! the same command line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Variables taken from toolgate's own environment, which the commands it
/// runs inherit: those that spell the places toolgate keeps its files in.
const INHERITED: [&str; 7] = [
    "HOME",
    "USER",
    "LOGNAME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
];

/// The environment words are expanded in.
#[derive(Debug, Clone, Default)]
pub(super) struct ShellEnv {
    /// `~`.
    pub(super) home: Option<PathBuf>,
    /// `~name` → that user's home, for the users whose home holds a
    /// protected place (no other `~name` can lead into one).
    pub(super) users: Vec<(String, PathBuf)>,
    /// Variables, inherited or set earlier in the line.
    pub(super) vars: HashMap<String, String>,
}

impl ShellEnv {
    /// The process's environment; `~name` for the users (from
    /// `/etc/passwd`, and the current one) whose home is an ancestor of
    /// one of `protected`.
    pub(super) fn from_process(protected: &[&Path]) -> Self {
        let home = directories::BaseDirs::new().map(|b| b.home_dir().to_owned());
        let mut vars: HashMap<String, String> = INHERITED
            .iter()
            .filter_map(|k| Some(((*k).to_owned(), std::env::var(k).ok()?)))
            .collect();
        if let Some(h) = &home {
            vars.entry("HOME".into())
                .or_insert_with(|| h.to_string_lossy().into_owned());
        }
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let mut users = users_of(&passwd);
        for key in ["USER", "LOGNAME"] {
            if let (Some(name), Some(h)) = (vars.get(key), &home) {
                users.push((name.clone(), h.clone()));
            }
        }
        users.retain(|(_, h)| holds_any(h, protected));
        Self { home, users, vars }
    }

    /// `word` with `~` at its start and every known `$VAR`, `${VAR}`,
    /// `${VAR:-default}` expanded; unknown variables stay as written.
    pub(super) fn expand(&self, word: &str) -> String {
        let tilde = self.tilde(word);
        self.variables(tilde.as_deref().unwrap_or(word))
    }

    /// `~`, `~/…`, `~name`, `~name/…`.
    fn tilde(&self, word: &str) -> Option<String> {
        let rest = word.strip_prefix('~')?;
        let (name, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let home = if name.is_empty() {
            self.home.as_deref()?
        } else {
            self.users
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, h)| h.as_path())?
        };
        Some(format!("{}{tail}", home.display()))
    }

    fn variables(&self, word: &str) -> String {
        let mut out = String::with_capacity(word.len());
        let mut rest = word;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            match self.variable(after) {
                Some((value, used)) => {
                    out.push_str(&value);
                    rest = &after[used..];
                }
                None => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// The value of the variable reference at the start of `text` (after
    /// its `$`) and how many bytes the reference takes.
    fn variable(&self, text: &str) -> Option<(String, usize)> {
        if let Some(body) = text.strip_prefix('{') {
            let end = closing_brace(body)?;
            let inner = &body[..end];
            let (name, default) = match inner.find([':', '-']) {
                Some(i) => (&inner[..i], Some(inner[i..].trim_start_matches([':', '-']))),
                None => (inner, None),
            };
            let value = match (self.vars.get(name), default) {
                (Some(v), _) => v.clone(),
                (None, Some(d)) => self.expand(d),
                (None, None) => return None,
            };
            return Some((value, end + 2));
        }
        let len = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(text.len());
        let value = self.vars.get(&text[..len])?;
        Some((value.clone(), len))
    }
}

/// Where the `}` that closes a `${` ends `body` (nested `${…}` skipped).
fn closing_brace(body: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `(name, home)` of every user in a `/etc/passwd` text.
pub(super) fn users_of(passwd: &str) -> Vec<(String, PathBuf)> {
    passwd
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields.as_slice() {
                [name, _, _, _, _, home, ..] if !name.is_empty() && home.starts_with('/') => {
                    Some(((*name).to_owned(), PathBuf::from(home)))
                }
                _ => None,
            }
        })
        .collect()
}

/// Whether `home` (as written or resolved) is an ancestor of one of
/// `protected`; `/` counts for nobody (a daemon user's home).
fn holds_any(home: &Path, protected: &[&Path]) -> bool {
    if home == Path::new("/") {
        return false;
    }
    let real = super::paths::resolve(home);
    protected
        .iter()
        .any(|p| p.starts_with(home) || p.starts_with(&real))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> ShellEnv {
        ShellEnv {
            home: Some("/home/ann".into()),
            users: vec![("bob".into(), "/srv/bob".into())],
            vars: [("HOME", "/home/ann"), ("XDG_CONFIG_HOME", "/cfg")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    #[test]
    fn home_users_and_variables_are_expanded() {
        let e = env();
        for (word, want) in [
            ("~", "/home/ann"),
            ("~/.config/toolgate", "/home/ann/.config/toolgate"),
            ("~bob/.config", "/srv/bob/.config"),
            ("~carol/x", "~carol/x"),
            ("$HOME/x", "/home/ann/x"),
            ("${HOME}/x", "/home/ann/x"),
            ("${XDG_CONFIG_HOME:-$HOME/.config}/t", "/cfg/t"),
            (
                "${XDG_DATA_HOME:-$HOME/.local/share}/t",
                "/home/ann/.local/share/t",
            ),
            (
                "${XDG_DATA_HOME:-${HOME}/.local/share}/t",
                "/home/ann/.local/share/t",
            ),
            ("$UNKNOWN/x", "$UNKNOWN/x"),
            ("a$HOME", "a/home/ann"),
            ("cost: 5$", "cost: 5$"),
            ("${unterminated", "${unterminated"),
        ] {
            assert_eq!(e.expand(word), want, "{word}");
        }
    }

    #[test]
    fn passwd_lines_give_names_and_homes() {
        let users = users_of(
            "root:x:0:0:root:/root:/bin/bash\n# junk\nann:x:1000:1000::/home/ann:/bin/sh\nbad::\n",
        );
        assert_eq!(
            users,
            [
                ("root".to_owned(), PathBuf::from("/root")),
                ("ann".to_owned(), PathBuf::from("/home/ann"))
            ]
        );
        assert!(holds_any(
            Path::new("/home/ann"),
            &[Path::new("/home/ann/.config/toolgate")]
        ));
        assert!(!holds_any(Path::new("/"), &[Path::new("/x")]));
    }
}

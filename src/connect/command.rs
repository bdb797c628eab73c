//! The command a client's config and an agent's hook settings start
//! toolgate with.
//!
//! `toolgate` when `toolgate` on the `PATH` is this very executable, so a
//! config stays valid across upgrades that replace the file in place;
//! otherwise the absolute path of this executable, so a client started
//! with a different `PATH` (a desktop app launched from a menu) still
//! finds it.

use std::path::{Path, PathBuf};

/// The resolved toolgate command for this process (see the module docs).
pub fn resolve() -> String {
    resolved().command
}

/// [`resolve`], with which case applied.
pub fn resolved() -> Resolved {
    let exe = std::env::current_exe().ok();
    let path = std::env::var_os("PATH");
    resolve_with(exe.as_deref(), path.as_deref())
}

/// How a client finds toolgate, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// What a client's config names: `toolgate`, or an absolute path.
    pub command: String,
    /// Which case applied.
    pub found: Found,
}

/// Which case applied to [`Resolved::command`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// `toolgate` on the `PATH` is this executable.
    OnPath,
    /// No `toolgate` is on the `PATH`.
    NotOnPath,
    /// Another `toolgate` comes first on the `PATH`.
    OtherFirst(PathBuf),
    /// This executable's path could not be read.
    Unknown,
}

impl Resolved {
    /// Which case applies, in the words a person reads beside a snippet.
    pub fn explain(&self) -> String {
        match &self.found {
            Found::OnPath => {
                "`toolgate` on your PATH is this toolgate, so the snippet names it by name."
                    .to_owned()
            }
            Found::NotOnPath => format!(
                "`toolgate` is not on your PATH, so the snippet names this toolgate by its full \
                 path: {}",
                self.command
            ),
            Found::OtherFirst(other) => format!(
                "The `toolgate` first on your PATH is a different one ({}), so the snippet names \
                 this toolgate by its full path: {}",
                other.display(),
                self.command
            ),
            Found::Unknown => {
                "toolgate could not find its own program, so the snippet names `toolgate` and \
                 relies on your PATH."
                    .to_owned()
            }
        }
    }
}

/// [`resolved`] with the executable and `PATH` given, for tests.
pub fn resolve_with(exe: Option<&Path>, path: Option<&std::ffi::OsStr>) -> Resolved {
    let Some(exe) = exe else {
        return Resolved {
            command: "toolgate".to_owned(),
            found: Found::Unknown,
        };
    };
    let exe_real = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_owned());
    let absolute = exe_real.to_string_lossy().into_owned();
    let found = match path.and_then(|p| on_path("toolgate", p)) {
        None => Found::NotOnPath,
        Some(first) if std::fs::canonicalize(&first).is_ok_and(|f| f == exe_real) => {
            return Resolved {
                command: "toolgate".to_owned(),
                found: Found::OnPath,
            };
        }
        Some(first) => Found::OtherFirst(first),
    };
    Resolved {
        command: absolute,
        found,
    }
}

/// The `mcpServers` snippet a person pastes into a stdio client's config:
/// the bridge started by `resolved`'s command, with `TOOLGATE_DATA_DIR`
/// when the engine's data dir is not the one the bridge finds by itself.
/// Typed, so it prints `command` before `args`, as clients' docs show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Snippet {
    /// The one server, `toolgate`.
    #[serde(rename = "mcpServers")]
    pub mcp_servers: SnippetServers,
}

/// See [`Snippet`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SnippetServers {
    /// toolgate's entry.
    pub toolgate: SnippetEntry,
}

/// See [`Snippet`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SnippetEntry {
    /// The resolved toolgate command.
    pub command: String,
    /// `["mcp-bridge"]`.
    pub args: Vec<String>,
    /// `TOOLGATE_DATA_DIR`, when needed.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
}

/// See [`Snippet`].
pub fn snippet(resolved: &Resolved, data_dir: &Path) -> Snippet {
    let default = crate::paths::default_data_dir();
    let same = |a: &Path, b: &Path| {
        a == b
            || matches!(
                (std::fs::canonicalize(a), std::fs::canonicalize(b)),
                (Ok(x), Ok(y)) if x == y
            )
    };
    let mut env = std::collections::BTreeMap::new();
    if !same(data_dir, &default) {
        env.insert(
            "TOOLGATE_DATA_DIR".to_owned(),
            data_dir.to_string_lossy().into_owned(),
        );
    }
    Snippet {
        mcp_servers: SnippetServers {
            toolgate: SnippetEntry {
                command: resolved.command.clone(),
                args: vec!["mcp-bridge".to_owned()],
                env,
            },
        },
    }
}

impl Snippet {
    /// The bridge as one shell command line (`TOOLGATE_DATA_DIR=…
    /// toolgate mcp-bridge`), for clients that take a command line, each
    /// word quoted where a shell would split it.
    pub fn command_line(&self) -> String {
        let entry = &self.mcp_servers.toolgate;
        let env = entry.env.iter().map(|(k, v)| format!("{k}={}", quote(v)));
        env.chain(std::iter::once(quote(&entry.command)))
            .chain(entry.args.iter().map(|w| quote(w)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `word` as a shell reads it back (quoted when it holds a space or a
/// shell character; a word with a NUL cannot be quoted and is shown as it
/// is).
fn quote(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| word.to_owned(), |q| q.into_owned())
}

/// The first executable called `name` in `path`.
fn on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bare_name_only_when_path_finds_this_executable() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join("toolgate");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = std::ffi::OsString::from(format!("/nonexistent:{}", bin.display()));
        let on_path = resolve_with(Some(&exe), Some(&path));
        assert_eq!(on_path.command, "toolgate");
        assert_eq!(on_path.found, Found::OnPath);
        assert!(
            on_path.explain().contains("by name"),
            "{}",
            on_path.explain()
        );

        // Another toolgate first on PATH: this one by its full path, and
        // the other named.
        let other = dir.path().join("other-toolgate");
        std::fs::copy(&exe, &other).unwrap();
        let abs = resolve_with(Some(&other), Some(&path));
        let other_real = other.canonicalize().unwrap();
        assert_eq!(abs.command, other_real.to_string_lossy());
        assert_eq!(abs.found, Found::OtherFirst(exe.clone()));
        assert!(
            abs.explain().contains(&exe.display().to_string()),
            "{}",
            abs.explain()
        );

        // None on PATH.
        let none = resolve_with(Some(&other), Some(std::ffi::OsStr::new("/nonexistent")));
        assert_eq!(none.command, other_real.to_string_lossy());
        assert_eq!(none.found, Found::NotOnPath);
        assert!(
            none.explain().contains("not on your PATH"),
            "{}",
            none.explain()
        );
        assert_eq!(resolve_with(Some(&other), None).found, Found::NotOnPath);
    }

    #[test]
    fn the_snippet_carries_the_data_dir_only_when_the_bridge_would_miss_it() {
        let r = Resolved {
            command: "/opt/my tools/toolgate".into(),
            found: Found::NotOnPath,
        };
        let default = snippet(&r, &crate::paths::default_data_dir());
        assert_eq!(
            serde_json::to_string(&default).unwrap(),
            r#"{"mcpServers":{"toolgate":{"command":"/opt/my tools/toolgate","args":["mcp-bridge"]}}}"#
        );
        assert_eq!(
            default.command_line(),
            "'/opt/my tools/toolgate' mcp-bridge"
        );
        let custom = snippet(&r, Path::new("/srv/tg data"));
        assert_eq!(
            custom.mcp_servers.toolgate.env["TOOLGATE_DATA_DIR"],
            "/srv/tg data"
        );
        assert_eq!(
            custom.command_line(),
            "TOOLGATE_DATA_DIR='/srv/tg data' '/opt/my tools/toolgate' mcp-bridge"
        );
    }
}

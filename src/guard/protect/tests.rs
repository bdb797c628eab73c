use std::fs;
use std::os::unix::fs::symlink;

use super::*;

/// A temp dir laid out like a daemon's: `config.toml`, `data/` (with an
/// audit db, a log, a token file), `run/agent.sock*`, and a root `proj/`.
struct Layout {
    dir: tempfile::TempDir,
}

impl Layout {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        fs::write(p.join("config.toml"), "").unwrap();
        fs::create_dir_all(p.join("data/pins")).unwrap();
        fs::write(p.join("data/audit.db"), "rows").unwrap();
        fs::write(p.join("data/engine.log"), "console: http://x/login?t=1").unwrap();
        fs::write(p.join("data/pins/srv.json"), "{}").unwrap();
        fs::write(p.join("data/console.token"), "secret").unwrap();
        fs::create_dir_all(p.join("run")).unwrap();
        fs::write(p.join("run/agent.sock.http"), "{\"token\":\"t\"}").unwrap();
        fs::write(p.join("run/notes.txt"), "").unwrap();
        fs::create_dir_all(p.join("proj")).unwrap();
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn own(&self) -> OwnFiles {
        OwnFiles::none()
            .config_file(self.path("config.toml"))
            .data_dir(self.path("data"))
            .socket(&self.path("run/agent.sock"))
    }

    fn protected(&self) -> Protected {
        Protected::new(&self.own(), &[resolve(&self.path("proj"))])
    }

    /// A path as the path guard hands it over: resolved.
    fn resolved(&self, rel: &str) -> PathBuf {
        resolve(&self.path(rel))
    }
}

#[test]
fn nothing_in_toolgates_places_may_be_read_or_changed() {
    let l = Layout::new();
    let p = l.protected();
    for rel in [
        "config.toml",
        "data",
        "data/audit.db",
        "data/engine.log",
        "data/engine.json",
        "data/pins/srv.json",
        "data/new-file",
        "data/console.token",
        "run/agent.sock",
        "run/agent.sock.ctl",
        "run/agent.sock.http",
    ] {
        let e = p.check_path(&l.resolved(rel)).unwrap_err();
        assert!(matches!(e, Refusal::Touches { .. }), "{rel}: {e}");
        assert!(e.to_string().contains("may not read or change it"), "{e}");
    }
    let e = p.check_path(&l.resolved("config.toml")).unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "config file `{}`",
            l.resolved("config.toml").display()
        )) && e.to_string().contains("may hold credentials"),
        "the reason names the protected path and why: {e}"
    );
    let e = p.check_path(&l.resolved("data/engine.log")).unwrap_err();
    assert!(e.to_string().contains("login link"), "{e}");
    // Beside them is fine; `run/` is a shared directory here (not called
    // `toolgate`): only the socket's own files are off limits.
    for rel in ["proj/a.txt", "config.toml.bak", "database", "run/notes.txt"] {
        assert_eq!(p.check_path(&l.resolved(rel)), Ok(()), "{rel}");
    }
}

#[test]
fn dirs_of_toolgates_own_are_protected_whole() {
    let dir = tempfile::tempdir().unwrap();
    let rt = dir.path().join("run/toolgate");
    let cfg = dir.path().join("cfg/toolgate");
    fs::create_dir_all(&rt).unwrap();
    fs::create_dir_all(&cfg).unwrap();
    let own = OwnFiles::none()
        .socket(&rt.join("agent.sock"))
        .config_file(cfg.join("config.toml"));
    let p = Protected::new(&own, &[]);
    for path in [
        rt.join("anything"),
        cfg.join("config.toml.bak"),
        cfg.clone(),
    ] {
        let e = p.check_path(&resolve(&path)).unwrap_err();
        assert!(matches!(e, Refusal::Touches { .. }), "{e}");
    }
    // A config file in a shared directory protects only itself.
    let p = Protected::new(
        &OwnFiles::none().config_file(dir.path().join("x.toml")),
        &[],
    );
    assert_eq!(p.check_path(&resolve(&dir.path().join("y.toml"))), Ok(()));
}

#[test]
fn a_hard_link_to_any_file_in_a_protected_place_is_that_file() {
    let l = Layout::new();
    let p = l.protected();
    for (target, link) in [
        ("config.toml", "proj/innocent.toml"),
        ("data/audit.db", "proj/notes.db"),
        ("data/engine.log", "proj/log.txt"),
        ("data/pins/srv.json", "proj/deep.json"),
        // Beside a socket in a shared directory, its token file.
        ("run/agent.sock.http", "proj/endpoint.json"),
    ] {
        fs::hard_link(l.path(target), l.path(link)).unwrap();
        let e = p.check_path(&l.resolved(link)).unwrap_err();
        assert!(matches!(e, Refusal::HardLink { .. }), "{link}: {e}");
        assert!(
            e.to_string()
                .contains(&format!("hard link to `{}`", l.resolved(target).display())),
            "the reason names the linked file: {e}"
        );
    }
    // Two names of an ordinary file are fine.
    fs::write(l.path("proj/a.txt"), "a").unwrap();
    fs::hard_link(l.path("proj/a.txt"), l.path("proj/b.txt")).unwrap();
    assert_eq!(p.check_path(&l.resolved("proj/b.txt")), Ok(()));
}

#[test]
fn text_naming_a_protected_path_is_refused_in_every_spelling() {
    let l = Layout::new();
    let p = l.protected();
    symlink(l.path("run"), l.path("proj/rt")).unwrap();
    let data = l.path("data").display().to_string();
    let config = l.path("config.toml").display().to_string();
    for text in [
        format!("rm -rf {data}"),
        format!("{data}/audit.db"),
        format!("--config={config}"),
        format!("echo '[policy]' >> \"{config}\""),
        // `..`, a symlink and a glob lead there too.
        format!("cat {}/proj/../data/audit.db", l.path("").display()),
        format!("cat {}/proj/rt/agent.sock.http", l.path("").display()),
        format!("cat {}/da?a/audit.db", l.path("").display()),
        // The socket's name alone, relative to anywhere.
        "socat - UNIX-CONNECT:agent.sock.ctl".to_owned(),
    ] {
        let e = p.check_text(&text).unwrap_err();
        assert!(matches!(e, Refusal::Mention { .. }), "{text}: {e}");
        assert!(e.to_string().contains("toolgate's"), "{e}");
    }
    for text in [
        format!("{data}base/x"),
        format!("{config}.bak"),
        "a note about data".to_owned(),
        format!("{}/proj/src/main.rs", l.path("").display()),
    ] {
        assert_eq!(p.check_text(&text), Ok(()), "{text}");
    }
}

/// A home with toolgate's default places in it, and a protected set that
/// expands `~`, `~ann` and `$HOME` to it.
struct Home {
    dir: tempfile::TempDir,
    p: Protected,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = resolve(&dir.path().join("ann"));
        fs::create_dir_all(home.join(".config/toolgate")).unwrap();
        fs::create_dir_all(home.join(".config/git")).unwrap();
        fs::create_dir_all(home.join(".local/share/toolgate")).unwrap();
        fs::create_dir_all(home.join("projects/toolgate")).unwrap();
        fs::write(home.join(".config/toolgate/config.toml"), "").unwrap();
        fs::write(home.join(".local/share/toolgate/audit.db"), "").unwrap();
        let own = OwnFiles::none()
            .config_file(home.join(".config/toolgate/config.toml"))
            .data_dir(home.join(".local/share/toolgate"));
        let mut p = Protected::new(&own, std::slice::from_ref(&home));
        let h = home.display().to_string();
        p.env = ShellEnv {
            home: Some(home.clone()),
            users: vec![("ann".into(), home)],
            vars: [("HOME", h.as_str()), ("USER", "ann")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        };
        Self { dir, p }
    }

    fn home(&self) -> PathBuf {
        resolve(&self.dir.path().join("ann"))
    }
}

#[test]
fn shell_spellings_of_a_protected_path_are_refused() {
    let h = Home::new();
    for cmd in [
        r#"cat "$HOME"/.config/toolgate/config.toml"#,
        "cat ${HOME}/.config/toolgate/config.toml",
        "cat $HOME/.config/toolgate/config.toml",
        "cat ~/.config/toolgate/config.toml",
        "cat ~ann/.config/toolgate/config.toml",
        r#"cat "$HOME/.config/toolgate/config.toml""#,
        r#"cat "$HOME"'/.config/toolgate'/config.toml"#,
        "cat ~/.config/t''oolgate/config.toml",
        r"cat ~/.config/tool\gate/config.toml",
        "cat ~/.config/toolgate/config.tom?",
        "cat ~/.config/toolg*/config.toml",
        "cat ~/.config/[t]oolgate/config.toml",
        "cat ~/.config/{git,toolgate}/config.toml",
        "cd ~/.config/toolgate && cat config.toml",
        "cd ~/.config; cat toolgate/config.toml",
        "cd ~ && cd .local/share && sqlite3 toolgate/audit.db .dump",
        "sqlite3 ${XDG_DATA_HOME:-$HOME/.local/share}/toolgate/audit.db",
        "D=~/.local/share/toolgate; rm $D/audit.db",
        "tail -f ~/.local/share/toolgate/engine.log",
        "ls ~/.local/share/toolgate",
        "echo '[policy]' >> ~/.config/toolgate/config.toml",
        "sh -c \"cat ~/.config/toolgate/config.toml\"",
        "echo \"$(cat ~/.config/toolgate/config.toml)\"",
        "some-tool --config=~/.config/toolgate/config.toml",
        "ls ~/.config/*",
    ] {
        let e = h.p.check_command(cmd).unwrap_err();
        assert!(matches!(e, Refusal::Mention { .. }), "{cmd}: {e}");
        assert!(
            e.to_string().contains(&format!("{}", h.home().display())),
            "the reason names the protected place: {e}"
        );
    }
    for cmd in [
        "ls ~/projects",
        "cat ~/.config/git/config",
        "ls ~/.config",
        "cd ~/.config && ls",
        "cd ~/projects/toolgate && cargo test --test integration audit::",
        "echo toolgate",
        "ls ~/.config/toolgate-notes",
    ] {
        assert_eq!(h.p.check_command(cmd), Ok(()), "{cmd}");
    }
}

#[test]
fn relative_paths_are_read_from_the_commands_working_directory() {
    let h = Home::new();
    let home = h.home();
    for cmd in [
        "cat .config/toolgate/config.toml",
        "cat .config/toolgate/*",
        "cd projects && cat ../.config/toolgate/config.toml",
    ] {
        let e = h.p.check_command_in(cmd, Some(&home)).unwrap_err();
        assert!(matches!(e, Refusal::Mention { .. }), "{cmd}: {e}");
    }
    assert_eq!(
        h.p.check_command_in("cat .config/git/config", Some(&home)),
        Ok(())
    );
    // Where the command runs is unknown: relative words say nothing.
    assert_eq!(h.p.check_command("cat .config/git/config"), Ok(()));
}

#[test]
fn home_relative_and_root_relative_spellings_are_recognised_in_text() {
    let h = Home::new();
    for text in [
        "rm ~ann/.local/share/toolgate/audit.db",
        "rm $HOME/.local/share/toolgate/audit.db",
        // Relative to a root, as a command run in that root would say it.
        "rm -rf .local/share/toolgate/audit.db",
    ] {
        let e = h.p.check_text(text).unwrap_err();
        assert!(matches!(e, Refusal::Mention { .. }), "{text}: {e}");
    }
}

#[test]
fn commands_that_use_toolgates_control_plane_are_refused() {
    let p = Protected::default();
    for (cmd, named) in [
        ("toolgate approve 1", "toolgate approve"),
        ("toolgate console --print", "toolgate console"),
        ("toolgate tools", "toolgate tools"),
        ("toolgate approvals --json", "toolgate approvals"),
        ("toolgate audit --tail", "toolgate audit"),
        ("toolgate serve --no-http", "toolgate serve"),
        ("toolgate frobnicate", "toolgate frobnicate"),
        ("/usr/local/bin/toolgate approve 3", "toolgate approve"),
        ("t''oolgate approve 1", "toolgate approve"),
        ("\"toolgate\" deny 2", "toolgate deny"),
        (
            "env TOOLGATE_LOG=debug toolgate deny 2 --reason ok",
            "toolgate deny",
        ),
        ("sh -c 'toolgate approve 1'", "toolgate approve"),
        (
            "bash -lc \"sudo -E toolgate rules --rm 4\"",
            "toolgate rules",
        ),
        (
            "toolgate --json --socket /tmp/x.sock approve 9",
            "toolgate approve",
        ),
        ("TG=toolgate; $TG approve 1", "toolgate approve"),
        ("export T=toolgate && \"$T\" pins", "toolgate pins"),
        ("$(which toolgate) approve 1", "toolgate approve"),
        ("toolgate secret get github_token", "toolgate secret"),
        (
            "cargo run --bin toolgate -- pins --approve srv__tool",
            "toolgate pins",
        ),
        ("toolgate breakers --reset shell_exec", "toolgate breakers"),
        (
            "echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"toolgate/approve\",\"params\":{\"id\":1}}' | nc -U x",
            "toolgate/approve",
        ),
        (
            "echo '{\"method\":\"toolgate/console/login\"}' | socat - x",
            "toolgate/console/login",
        ),
        ("printf toolgate/rules/rm", "toolgate/rules/rm"),
        (
            "python3 -c \"import subprocess; subprocess.run(['toolgate','approve','1'])\"",
            "toolgate approve",
        ),
    ] {
        let e = p.check_command(cmd).unwrap_err();
        let Refusal::Control { command } = &e else {
            panic!("{cmd}: {e}")
        };
        assert_eq!(command, named, "{cmd}");
        assert!(e.to_string().contains("steers toolgate itself"), "{e}");
    }
    for cmd in [
        "toolgate",
        "toolgate --version",
        "toolgate -V",
        "toolgate --help",
        "toolgate help",
        "echo approve deny rules",
        "git commit -m 'approve the rules'",
        "ls ~/projects/toolgate-notes",
        "grep -r toolgate src | grep rules",
        "cat src/toolgate/rules.rs",
        "cd toolgate && cargo test",
    ] {
        assert_eq!(p.check_command(cmd), Ok(()), "{cmd}");
    }
}

#[test]
fn every_control_method_is_recognised() {
    let p = Protected::default();
    for method in crate::wire::CONTROL_METHODS {
        let cmd = format!("echo '{{\"method\":\"{method}\"}}' | nc -U /x/agent.sock.ctl");
        assert_eq!(
            p.check_command(&cmd),
            Err(Refusal::Control {
                command: method.to_owned()
            }),
            "{cmd}"
        );
    }
}

#[test]
fn malformed_command_lines_are_read_without_failing() {
    let h = Home::new();
    for cmd in [
        "cat '~/.config/toolgate/config.toml",
        "echo $(cat ~/.config/toolgate/config.toml",
        "))) cat ~/.config/toolgate/config.toml",
    ] {
        assert!(h.p.check_command(cmd).is_err(), "{cmd}");
    }
    for cmd in ["", "'", "\"", "$(", "`", "${", "~", "\\", "))) ((("] {
        assert_eq!(h.p.check_command(cmd), Ok(()), "{cmd:?}");
    }
}

#[test]
fn resolve_follows_symlinks_and_keeps_what_does_not_exist() {
    let l = Layout::new();
    symlink("../data", l.path("proj/d")).unwrap();
    assert_eq!(l.resolved("proj/d/audit.db"), l.resolved("data/audit.db"));
    assert_eq!(l.resolved("proj/d/new/x"), l.resolved("data").join("new/x"));
    assert_eq!(l.resolved("proj/missing/../../data"), l.resolved("data"));
}

use std::fs;
use std::os::unix::fs::symlink;

use super::*;

/// A temp dir laid out like a daemon's: `config.toml`, `data/` (with an
/// audit db and a token file), `run/agent.sock*`, and a root `proj/`.
struct Layout {
    dir: tempfile::TempDir,
}

impl Layout {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        fs::write(p.join("config.toml"), "").unwrap();
        fs::create_dir_all(p.join("data")).unwrap();
        fs::write(p.join("data/audit.db"), "").unwrap();
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
fn the_data_dir_may_be_read_but_not_written_and_the_config_file_not_even_read() {
    let l = Layout::new();
    let p = l.protected();
    let e = p
        .check_path(&l.resolved("config.toml"), Access::Read)
        .unwrap_err();
    assert!(matches!(e, Refusal::Secret { .. }), "{e}");
    assert!(e.to_string().contains("may hold credentials"), "{e}");
    for rel in ["data/audit.db", "data/new-file", "data"] {
        assert_eq!(
            p.check_path(&l.resolved(rel), Access::Read),
            Ok(()),
            "{rel}"
        );
        let e = p.check_path(&l.resolved(rel), Access::Write).unwrap_err();
        assert!(matches!(e, Refusal::Write { .. }), "{rel}: {e}");
        assert!(
            e.to_string()
                .contains("may not change toolgate's own files"),
            "{e}"
        );
    }
    let e = p
        .check_path(&l.resolved("config.toml"), Access::Write)
        .unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "config file `{}`",
            l.resolved("config.toml").display()
        )),
        "the reason names the protected path: {e}"
    );
    // Beside them is fine.
    assert_eq!(
        p.check_path(&l.resolved("proj/a.txt"), Access::Write),
        Ok(())
    );
    assert_eq!(
        p.check_path(&l.resolved("config.toml.bak"), Access::Write),
        Ok(())
    );
}

#[test]
fn tokens_and_sockets_may_not_even_be_read() {
    let l = Layout::new();
    let p = l.protected();
    for rel in [
        "run/agent.sock",
        "run/agent.sock.ctl",
        "run/agent.sock.http",
        "data/console.token",
    ] {
        let e = p.check_path(&l.resolved(rel), Access::Read).unwrap_err();
        assert!(matches!(e, Refusal::Secret { .. }), "{rel}: {e}");
        assert!(e.to_string().contains("sockets and tokens"), "{e}");
    }
    // `run/` is a shared directory here (not called `toolgate`): only the
    // socket's own files are off limits.
    assert_eq!(
        p.check_path(&l.resolved("run/notes.txt"), Access::Write),
        Ok(())
    );
}

#[test]
fn a_runtime_dir_of_its_own_is_protected_whole() {
    let dir = tempfile::tempdir().unwrap();
    let rt = dir.path().join("toolgate");
    fs::create_dir_all(&rt).unwrap();
    let p = Protected::new(&OwnFiles::none().socket(&rt.join("agent.sock")), &[]);
    let e = p
        .check_path(&resolve(&rt.join("anything")), Access::Read)
        .unwrap_err();
    assert!(matches!(e, Refusal::Secret { .. }), "{e}");
}

#[test]
fn a_hard_link_to_the_config_file_is_the_config_file() {
    let l = Layout::new();
    let p = l.protected();
    fs::hard_link(l.path("config.toml"), l.path("proj/innocent.toml")).unwrap();
    let e = p
        .check_path(&l.resolved("proj/innocent.toml"), Access::Read)
        .unwrap_err();
    assert!(matches!(e, Refusal::Secret { .. }), "{e}");
    assert!(e.to_string().contains("config file"), "{e}");
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
        // `..` and a symlink lead there too.
        format!("cat {}/proj/../data/audit.db", l.path("").display()),
        format!("cat {}/proj/rt/agent.sock.http", l.path("").display()),
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

#[test]
fn home_relative_and_root_relative_spellings_are_recognised() {
    let Some(home) = directories::BaseDirs::new().map(|b| b.home_dir().to_owned()) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs a HOME"
        );
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix(".tg-protect-test")
        .tempdir_in(&home)
        .unwrap();
    let data = dir.path().join(".local/share/toolgate");
    fs::create_dir_all(&data).unwrap();
    let root = resolve(dir.path());
    let p = Protected::new(
        &OwnFiles::none().data_dir(&data),
        std::slice::from_ref(&root),
    );
    let rel = resolve(&data)
        .strip_prefix(resolve(&home))
        .unwrap()
        .display()
        .to_string();
    for text in [
        format!("rm ~/{rel}/audit.db"),
        format!("rm $HOME/{rel}/audit.db"),
        format!("rm ${{HOME}}/{rel}/audit.db"),
        // Relative to a root, as a command run in that root would say it.
        "rm -rf .local/share/toolgate/audit.db".to_owned(),
    ] {
        let e = p.check_text(&text).unwrap_err();
        assert!(matches!(e, Refusal::Mention { .. }), "{text}: {e}");
    }
}

#[test]
fn commands_that_steer_toolgate_are_refused() {
    let p = Protected::default();
    for cmd in [
        "toolgate approve 1",
        "/usr/local/bin/toolgate approve 3",
        "env TOOLGATE_LOG=debug toolgate deny 2 --reason ok",
        "sh -c 'toolgate approve 1'",
        "bash -lc \"sudo -E toolgate rules --rm 4\"",
        "toolgate --json --socket /tmp/x.sock approve 9",
        "TG=toolgate; $TG approve 1",
        "toolgate secret get github_token",
        "cargo run --bin toolgate -- pins --approve srv__tool",
        "toolgate breakers --reset shell_exec",
        "echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"toolgate/approve\",\"params\":{\"id\":1}}' | nc -U x",
        "python3 -c \"import subprocess; subprocess.run(['toolgate','approve','1'])\"",
    ] {
        let e = p.check_command(cmd).unwrap_err();
        assert!(matches!(e, Refusal::Control { .. }), "{cmd}: {e}");
        assert!(e.to_string().contains("steers toolgate itself"), "{e}");
    }
    for cmd in [
        "toolgate tools",
        "toolgate approvals",
        "toolgate call fs_read --args '{\"path\":\"a\"}'",
        "echo approve deny rules",
        "git commit -m 'approve the rules'",
        "ls ~/projects/toolgate-notes",
    ] {
        assert_eq!(p.check_command(cmd), Ok(()), "{cmd}");
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

//! `toolgate console --print-snippet`: the command a client's config needs
//! on *this* machine, run as a person would run it, with three PATHs:
//! toolgate on it (a link to this very binary, as a package's
//! `/usr/bin/toolgate` or `cargo install` puts it), not on it, and a
//! different toolgate first on it.
//!
//! Run from a package, toolgate is a file of its own in a bin dir on PATH,
//! started by name: `started_by_name_from_a_bin_dir_on_path` lays that
//! out here; the package itself needs a clean system to install into, so
//! `scripts/package-check` checks it: inside a fresh Debian
//! 12 root with the `.deb` installed, `toolgate console --print-snippet`
//! in a stripped environment must name `toolgate` (on PATH as
//! `/usr/bin/toolgate`, this very binary), and the official Python MCP
//! SDK's `stdio_client` must start that command and list the tools.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");

/// The printed snippet's command and the line saying which case applied.
fn snippet(path: &str, home: &Path) -> (String, String) {
    let out = Command::new(TOOLGATE)
        .args(["console", "--print-snippet"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(
        v["mcpServers"]["toolgate"]["args"],
        serde_json::json!(["mcp-bridge"])
    );
    let command = v["mcpServers"]["toolgate"]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    (
        command,
        String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    )
}

#[test]
fn the_snippet_names_toolgate_as_it_resolves_here() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let real = std::fs::canonicalize(TOOLGATE).unwrap();

    // On PATH: a bin dir whose `toolgate` is this binary.
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(&real, bin.join("toolgate")).unwrap();
    let (command, why) = snippet(&format!("{}:/usr/bin:/bin", bin.display()), &home);
    assert_eq!(command, "toolgate");
    assert!(why.contains("on your PATH is this toolgate"), "{why}");

    // Not on PATH: the full path, and the line says so.
    let (command, why) = snippet("/usr/bin:/bin", &home);
    assert_eq!(Path::new(&command), real);
    assert!(why.contains("not on your PATH"), "{why}");

    // Another toolgate first on PATH: this one by its full path, the
    // other named.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let fake = other.join("toolgate");
    std::fs::write(&fake, "#!/bin/sh\necho old toolgate\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (command, why) = snippet(
        &format!("{}:{}:/usr/bin:/bin", other.display(), bin.display()),
        &home,
    );
    assert_eq!(Path::new(&command), real);
    assert!(why.contains(&fake.display().to_string()), "{why}");
}

#[test]
fn started_by_name_from_a_bin_dir_on_path() {
    // As a package installs it (`/usr/bin/toolgate`): a file of its own,
    // not a link, in a bin dir on PATH, and started by name, as an MCP
    // client starts the snippet's command.
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let bin = tmp.path().join("usr/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("toolgate");
    if std::fs::hard_link(TOOLGATE, &installed).is_err() {
        std::fs::copy(TOOLGATE, &installed).unwrap();
    }
    let out = Command::new("toolgate")
        .args(["console", "--print-snippet"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{why}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(
        v["mcpServers"]["toolgate"],
        serde_json::json!({"command": "toolgate", "args": ["mcp-bridge"]})
    );
    assert!(why.contains("on your PATH is this toolgate"), "{why}");
}

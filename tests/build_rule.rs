//! The release-without-UI rule of `build.rs`, run for real: the build
//! script is compiled with `rustc` and run the way cargo runs it (cwd =
//! the package, `OUT_DIR`, `PROFILE`), in a copy of the package that has
//! `ui/` sources but no `ui/dist` and a PATH without npm. A release build
//! stops with one line naming the command; a debug build embeds the
//! placeholder. (Building the UI with npm is what `scripts/test` and CI
//! do before every build, so that path runs there.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The build script, compiled once into `dir`.
fn compile_build_script(dir: &Path) -> PathBuf {
    let exe = dir.join("build-script");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(["--edition", "2024", "--crate-name", "build_script", "-o"])
        .arg(&exe)
        .arg(Path::new(MANIFEST_DIR).join("build.rs"))
        .output()
        .expect("rustc runs");
    assert!(
        out.status.success(),
        "build.rs compiles: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// A package dir with `ui/package.json` but no `ui/dist`.
fn package_without_dist(dir: &Path) -> PathBuf {
    let pkg = dir.join("pkg");
    std::fs::create_dir_all(pkg.join("ui")).unwrap();
    std::fs::write(pkg.join("ui/package.json"), "{}").unwrap();
    pkg
}

fn run(script: &Path, pkg: &Path, profile: &str, out_dir: &Path) -> Output {
    std::fs::create_dir_all(out_dir).unwrap();
    // A PATH with no npm on it: an empty directory.
    let empty = pkg.join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    Command::new(script)
        .current_dir(pkg)
        .env_clear()
        .env("PATH", &empty)
        .env("OUT_DIR", out_dir)
        .env("PROFILE", profile)
        .output()
        .expect("the build script runs")
}

#[test]
fn a_release_build_without_the_ui_and_without_npm_stops_naming_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let script = compile_build_script(tmp.path());
    let pkg = package_without_dist(tmp.path());

    let out = run(&script, &pkg, "release", &tmp.path().join("out-release"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a release build must stop: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains("npm --prefix ui ci && npm --prefix ui run build"),
        "{stderr}"
    );
    assert!(
        !tmp.path().join("out-release/ui/index.html").exists(),
        "no placeholder was put in place"
    );

    let out = run(&script, &pkg, "debug", &tmp.path().join("out-debug"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(tmp.path().join("out-debug/ui/index.html")).unwrap();
    assert!(page.contains("was not built into this binary"), "{page}");
}

//! Build steps:
//! - rebuild when a migration is added (`sqlx::migrate!` embeds them);
//! - put the console UI where `console::assets` embeds it from: a copy of
//!   `ui/dist` in `$OUT_DIR/ui`. When the UI was not built, a debug or
//!   test build (a clean clone, `cargo test` without npm) embeds a
//!   one-page placeholder that names the build command, so Rust-only work
//!   never needs Node; a release build builds the UI with npm or stops
//!   with one line (the rule: `build/ui_rule.rs`).

use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Stdio};

#[path = "build/ui_rule.rs"]
mod ui_rule;

use ui_rule::UiSource;

const PLACEHOLDER: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>toolgate console</title></head>
<body>
<h1>toolgate console</h1>
<p>The console UI was not built into this binary. Build it, then rebuild toolgate:</p>
<pre>npm --prefix ui ci &amp;&amp; npm --prefix ui run build
cargo build</pre>
<p>The console API under <code>/api</code> works without it.</p>
</body>
</html>
"#;

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Whether `npm --version` runs.
fn npm_runs() -> bool {
    Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds `ui/dist` with npm, as `ui_rule::BUILD_COMMAND` says; the
/// build's output shows with `cargo build -vv`, and a failure stops the
/// build with npm's own message above it. npm writes to our stderr, never
/// to the stdout cargo reads instructions from.
fn build_ui() {
    println!(
        "cargo:warning=ui/dist is not built; building the console UI with npm for this release build"
    );
    for args in [
        &["--prefix", "ui", "ci"][..],
        &["--prefix", "ui", "run", "build"],
    ] {
        let to_stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null());
        let status = Command::new("npm").args(args).stdout(to_stderr).status();
        if !status.is_ok_and(|s| s.success()) {
            refuse(&format!(
                "`npm {}` failed while building the console UI for a release build; run `{}` to see why",
                args.join(" "),
                ui_rule::BUILD_COMMAND
            ));
        }
    }
}

/// Stops the build with `line` as its one error line.
fn refuse(line: &str) -> ! {
    eprintln!("error: {line}");
    println!("cargo:warning={line}");
    std::process::exit(1);
}

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=ui/dist");
    println!("cargo:rerun-if-env-changed=TOOLGATE_PLACEHOLDER_UI");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let ui = Path::new(&out).join("ui");
    // Start clean so files deleted from ui/dist are not served stale.
    let _ = std::fs::remove_dir_all(&ui);
    let dist = Path::new("ui/dist");
    let built = || dist.join("index.html").is_file();
    let source = ui_rule::decide(
        &profile,
        built(),
        Path::new("ui/package.json").is_file(),
        npm_runs(),
        std::env::var_os("TOOLGATE_PLACEHOLDER_UI").is_some_and(|v| v == "1"),
    );
    match source {
        UiSource::Refuse(line) => refuse(&line),
        UiSource::BuildWithNpm => build_ui(),
        UiSource::Dist | UiSource::Placeholder => {}
    }
    if built() {
        copy_dir(dist, &ui).expect("copy ui/dist into OUT_DIR");
    } else {
        std::fs::create_dir_all(&ui).expect("create OUT_DIR/ui");
        std::fs::write(ui.join("index.html"), PLACEHOLDER).expect("write the placeholder UI");
    }
}

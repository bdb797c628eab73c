//! The one Python interpreter every test runs: the virtual environment that
//! `scripts/setup-test-deps` makes in `tests/fixtures/.venv`, with the
//! pinned `mcp` SDK. Debian's `python3` has no pip and may not install
//! packages (PEP 668), so the SDK lives only there.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const SETUP: &str =
    "run `scripts/setup-test-deps` first (it makes tests/fixtures/.venv with the pinned `mcp` SDK)";

/// The venv's python, checked once to import `mcp`. Outside CI a `python3`
/// on PATH that imports it will do; under `CI=true` only the venv counts,
/// so CI proves the setup script works on a fresh machine.
pub(crate) fn python() -> &'static Path {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(find) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// [`python`] as a string, for configs and shell lines.
pub(crate) fn python_str() -> String {
    python().to_string_lossy().into_owned()
}

fn find() -> Result<PathBuf, String> {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/.venv/bin/python");
    if imports_mcp(&venv) {
        return Ok(venv);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        return Err(format!("{} cannot import `mcp`: {SETUP}", venv.display()));
    }
    let system = PathBuf::from("python3");
    if imports_mcp(&system) {
        return Ok(system);
    }
    Err(format!("no python with the `mcp` SDK: {SETUP}"))
}

fn imports_mcp(python: &Path) -> bool {
    std::process::Command::new(python)
        .args(["-c", "import mcp.server.mcpserver, mcp.client.stdio"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs the fixture client `tests/fixtures/<script>` with `args` under
/// [`python`] and returns the one JSON object it prints; fails the test,
/// with the client's stderr, when it does not succeed.
pub(crate) async fn run_client(script: &str, args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(script);
    let out = tokio::process::Command::new(python())
        .arg(path)
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "python client {script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

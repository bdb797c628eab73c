//! The environment a benchmark's `toolgate serve` runs in: every place
//! it reads or writes (home, runtime dir, data, config, its root) under
//! one directory of the run, and nothing of this process's environment
//! but `PATH` and `USER`, so a run never touches the person's own engine.
//! Shared by `bench/team.rs` and `bench/reliability`.

use std::path::Path;

use tokio::process::Command;

/// `bin serve` with its dirs under `base` (which holds `home`, `run`,
/// `share`, `config/config.toml`, `data` and `root`); `user` stands in for
/// an unset `USER`. Add serve's own flags, stdio and spawn it.
pub(crate) fn serve(bin: &Path, base: &Path, user: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("HOME", base.join("home"))
        .env(
            "USER",
            std::env::var_os("USER").unwrap_or_else(|| user.into()),
        )
        .env("XDG_RUNTIME_DIR", base.join("run"))
        .env("XDG_DATA_HOME", base.join("share"))
        .env("XDG_CONFIG_HOME", base.join("config"))
        .env("TOOLGATE_LOG", "warn")
        .arg("--config")
        .arg(base.join("config/config.toml"))
        .arg("--data-dir")
        .arg(base.join("data"))
        .arg("--root")
        .arg(base.join("root"))
        .arg("serve");
    cmd
}

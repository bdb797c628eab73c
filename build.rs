//! Build steps:
//! - rebuild when a migration is added (`sqlx::migrate!` embeds them);
//! - put the console UI where `console::assets` embeds it from: a copy of
//!   `ui/dist` in `$OUT_DIR/ui`, or, when the UI was not built (a clean
//!   clone, `cargo test` without npm), a one-page placeholder that names
//!   the build command. So the Rust build never needs Node.

use std::path::Path;

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

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=ui/dist");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    let ui = Path::new(&out).join("ui");
    // Start clean so files deleted from ui/dist are not served stale.
    let _ = std::fs::remove_dir_all(&ui);
    let dist = Path::new("ui/dist");
    if dist.join("index.html").is_file() {
        copy_dir(dist, &ui).expect("copy ui/dist into OUT_DIR");
    } else {
        std::fs::create_dir_all(&ui).expect("create OUT_DIR/ui");
        std::fs::write(ui.join("index.html"), PLACEHOLDER).expect("write the placeholder UI");
    }
}

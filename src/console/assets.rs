//! The console's web UI: the Vite build (`ui/dist`) embedded at build time
//! (see build.rs; a placeholder page when it was not built), or served from
//! a directory with `toolgate serve --ui-dir DIR` while developing it.
//!
//! Any GET of a path that is not a file answers `index.html`, so the UI's
//! own routes (`/approvals`, `/calls/42`) survive a reload. Paths under
//! `/api` never get here (their router answers 404 itself).

use std::path::{Component, Path, PathBuf};

use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

/// The embedded bundle.
#[derive(rust_embed::Embed)]
#[folder = "$OUT_DIR/ui"]
struct Bundle;

/// Where the UI comes from.
#[derive(Debug, Clone, Default)]
pub enum UiSource {
    /// Built into the binary.
    #[default]
    Embedded,
    /// Read from this directory on every request (development).
    Dir(PathBuf),
}

impl UiSource {
    async fn get(&self, path: &str) -> Option<Vec<u8>> {
        match self {
            Self::Embedded => Bundle::get(path).map(|f| f.data.into_owned()),
            Self::Dir(dir) => {
                // Only plain relative names: no `..`, no absolute paths.
                let rel = Path::new(path);
                if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
                    return None;
                }
                tokio::fs::read(dir.join(rel)).await.ok()
            }
        }
    }
}

fn content_type(path: &str) -> HeaderValue {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    HeaderValue::from_str(mime.as_ref())
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

/// Answers a GET for `uri` from `ui`.
pub(super) async fn serve(ui: &UiSource, method: &Method, uri: &Uri) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            "the console UI is read-only",
        )
            .into_response();
    }
    let path = uri.path().trim_start_matches('/');
    let (path, body) = match ui
        .get(if path.is_empty() { "index.html" } else { path })
        .await
    {
        Some(body) => (path, body),
        None => match ui.get("index.html").await {
            Some(body) => ("index.html", body),
            None => {
                return (StatusCode::NOT_FOUND, "the console UI has no index.html").into_response();
            }
        },
    };
    let name = if path.is_empty() { "index.html" } else { path };
    // The index names the hashed bundle files, so it must be re-read;
    // the bundle files themselves never change under one name.
    let cache = if name.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    (
        [
            (header::CONTENT_TYPE, content_type(name)),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_embedded_index_is_there() {
        let index = UiSource::Embedded.get("index.html").await.unwrap();
        assert!(String::from_utf8_lossy(&index).contains("toolgate"));
    }

    #[tokio::test]
    async fn a_ui_dir_serves_only_names_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ui/assets")).unwrap();
        std::fs::write(dir.path().join("ui/assets/app.js"), "js").unwrap();
        std::fs::write(dir.path().join("secret"), "no").unwrap();
        let ui = UiSource::Dir(dir.path().join("ui"));
        assert_eq!(ui.get("assets/app.js").await.unwrap(), b"js");
        assert_eq!(ui.get("../secret").await, None);
        assert_eq!(ui.get("/etc/passwd").await, None);
        assert_eq!(content_type("assets/app.js"), "text/javascript");
        assert_eq!(content_type("index.html"), "text/html");
    }
}

/// The rule `build.rs` follows for the embedded UI, tested here because a
/// build script has no tests of its own.
#[cfg(test)]
#[path = "../../build/ui_rule.rs"]
mod ui_rule;

#[cfg(test)]
mod build_rule_tests {
    use super::ui_rule::{UiSource, decide};

    #[test]
    fn a_built_ui_is_embedded_in_every_profile() {
        for profile in ["debug", "release"] {
            assert_eq!(decide(profile, true, true, false, false), UiSource::Dist);
        }
    }

    #[test]
    fn debug_builds_take_the_placeholder_without_node() {
        assert_eq!(
            decide("debug", false, true, false, false),
            UiSource::Placeholder
        );
        assert_eq!(
            decide("debug", false, false, true, false),
            UiSource::Placeholder
        );
    }

    #[test]
    fn a_release_build_without_the_ui_builds_it_or_refuses_in_one_line() {
        assert_eq!(
            decide("release", false, true, true, false),
            UiSource::BuildWithNpm
        );
        let UiSource::Refuse(line) = decide("release", false, true, false, false) else {
            panic!("a release build without npm must refuse");
        };
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.contains("npm --prefix ui ci && npm --prefix ui run build"),
            "{line}"
        );
        let UiSource::Refuse(line) = decide("release", false, false, true, false) else {
            panic!("a release build without ui sources must refuse");
        };
        assert!(line.contains("TOOLGATE_PLACEHOLDER_UI=1"), "{line}");
    }

    #[test]
    fn a_release_build_takes_the_placeholder_only_when_asked() {
        assert_eq!(
            decide("release", false, true, false, true),
            UiSource::Placeholder
        );
    }
}

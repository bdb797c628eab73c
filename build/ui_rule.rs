//! Where the console UI embedded in a build comes from. Shared by
//! `build.rs` and the library's unit tests (see `src/console/assets.rs`),
//! so the rule is tested without running a build.
//!
//! A release binary is what people install, so it always carries the
//! console: when `ui/dist` was not built, the build builds it (npm
//! present) or stops with one line naming the command. Debug and test
//! builds keep the placeholder page, so Rust-only work needs no Node.
//! `TOOLGATE_PLACEHOLDER_UI=1` lets a release build take the placeholder
//! on purpose (benchmarks of the engine alone); it is never the default.

/// Where the UI comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UiSource {
    /// `ui/dist` is built: embed it.
    Dist,
    /// Embed the page that names the build command.
    Placeholder,
    /// Run npm to build `ui/dist` first, then embed it.
    BuildWithNpm,
    /// Stop the build with this one line.
    Refuse(String),
}

/// The command that builds the console UI from a checkout.
pub(crate) const BUILD_COMMAND: &str = "npm --prefix ui ci && npm --prefix ui run build";

/// What the build embeds. `profile` is cargo's `PROFILE` (`release` for
/// release and bench builds, `debug` otherwise); `ui_sources` is whether
/// this source tree has the UI's sources (`ui/package.json`; a packaged
/// crate may not).
pub(crate) fn decide(
    profile: &str,
    dist_built: bool,
    ui_sources: bool,
    npm: bool,
    placeholder_asked: bool,
) -> UiSource {
    if dist_built {
        return UiSource::Dist;
    }
    if profile != "release" || placeholder_asked {
        return UiSource::Placeholder;
    }
    if !ui_sources {
        return UiSource::Refuse(
            "a release build embeds the console UI, but this source tree has no ui/ to build it \
             from; build from a git checkout, or set TOOLGATE_PLACEHOLDER_UI=1 to ship without it"
                .to_owned(),
        );
    }
    if !npm {
        return UiSource::Refuse(format!(
            "a release build embeds the console UI, and ui/dist is not built; npm is not on PATH \
             to build it, so run `{BUILD_COMMAND}` (Node >= 20.19) and build again"
        ));
    }
    UiSource::BuildWithNpm
}

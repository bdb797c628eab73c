//! The command line of `toolgate-desktop`: `--version` and `--help` are
//! answered at once, before any window, display or engine, so a package
//! check (or a person) can see that the installed binary and its
//! libraries load on a machine without a display. Every other argument
//! starts the app (`--hidden` starts it in the tray, as the login entry
//! does).

/// What the app prints for `--help`.
pub const HELP: &str = "\
toolgate-desktop: toolgate's engine with a window, a tray and notifications

Usage: toolgate-desktop [--hidden]

  --hidden     start in the tray, without showing the window (the login entry uses it)
  --version    print the version and exit
  --help       print this help and exit

It attaches to the engine that owns the data dir when one runs (for example
`toolgate serve` as the user service `toolgate.service`), and otherwise runs
the engine itself. The CLI, `toolgate`, is beside it.";

/// The line `--version` prints.
pub fn version() -> String {
    format!("toolgate-desktop {}", env!("CARGO_PKG_VERSION"))
}

/// The text to print and exit with, when the arguments (without the
/// program name) ask only for it: `--version`/`-V` or `--help`/`-h`.
pub fn answer<I, S>(args: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    args.into_iter().find_map(|a| match a.as_ref() {
        "--version" | "-V" => Some(version()),
        "--help" | "-h" => Some(HELP.to_owned()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_help_are_answered_and_other_arguments_start_the_app() {
        assert_eq!(
            answer(["--version"]).as_deref(),
            Some(concat!("toolgate-desktop ", env!("CARGO_PKG_VERSION")))
        );
        assert_eq!(answer(["-V"]), answer(["--version"]));
        assert!(answer(["--help"]).unwrap().starts_with("toolgate-desktop:"));
        assert_eq!(answer(["-h"]), answer(["--help"]));
        assert_eq!(answer(["--hidden", "--version"]), Some(version()));
        assert_eq!(answer::<[&str; 0], &str>([]), None);
        assert_eq!(answer(["--hidden"]), None);
    }
}

//! Inert shell commands: the ones `default:shell-simple` lowers from
//! critical to high risk, so the `autonomous` preset runs them unasked.
//!
//! An allowlist, not a list of dangers: a command is inert only when it is
//! one of [`INERT_COMMANDS`], none of whose options runs a program, loads
//! code or writes a file, with plain arguments that stay inside the
//! working directory. Anything that runs code someone can configure is
//! out: git (hooks, `core.fsmonitor`, aliases, pagers, diff and merge
//! drivers, credential helpers, all read from a `.git/config` the agent
//! may have written), build tools and package scripts (make, npm, cargo's
//! build scripts), interpreters and scripts, `env`/`xargs`/`find -exec`,
//! programs with hooks of their own (`less` with `LESSOPEN`, `rg --pre`,
//! `sort --compress-program`), and any shell syntax (substitutions,
//! redirections, pipes, globs, quotes, variables). `docs/policy.md`
//! lists the commands and why each is safe.

/// Commands none of whose options runs another program, loads
/// configurable code or writes a file; with their reason.
pub const INERT_COMMANDS: [(&str, &str); 19] = [
    ("ls", "lists files"),
    ("pwd", "prints the working directory"),
    ("echo", "prints its arguments (no redirection is allowed)"),
    ("date", "prints the date; setting it needs root"),
    ("whoami", "prints the user name"),
    ("id", "prints user and group ids"),
    ("uname", "prints the system's name"),
    ("wc", "counts lines, words and bytes"),
    ("head", "prints the start of files"),
    ("tail", "prints the end of files"),
    ("cat", "prints files"),
    ("grep", "searches files; no option runs a program"),
    ("basename", "prints a name's last part"),
    ("dirname", "prints a name's directory"),
    ("realpath", "prints a resolved path"),
    ("stat", "prints file metadata"),
    ("du", "prints disk usage"),
    ("df", "prints free space"),
    ("true", "does nothing"),
];

/// Exact command lines that are inert beyond the table: `git --version`
/// reads no repository, so no hook, alias or helper of one runs.
pub const INERT_LINES: [&str; 1] = ["git --version"];

/// One path segment: `.`, or a name that does not start with `..` and
/// holds no shell syntax (no `$`, quotes, globs, `~`, operators, spaces).
const SEGMENT: &str = r"(?:\.|\.?[A-Za-z0-9_+%@,:=-][A-Za-z0-9_.+%@,:=-]*)";

/// Spaces and tabs: not `\s`, which takes a newline, a command separator.
const BLANK: &str = r"[ \t]";
const BLANKS: &str = r"[ \t]+";

/// The regex `default:shell-simple` matches `/command` with: an inert
/// command with arguments that are options or relative paths without `..`
/// (so `cat` reads inside the working directory, which the path guard
/// keeps inside a root), or one of [`INERT_LINES`].
pub(super) fn regex() -> String {
    let names: Vec<&str> = INERT_COMMANDS.iter().map(|(name, _)| *name).collect();
    let arg = format!("{SEGMENT}(?:/{SEGMENT})*/?");
    let lines: Vec<String> = INERT_LINES
        .iter()
        .map(|l| l.split(' ').collect::<Vec<_>>().join(BLANKS))
        .collect();
    format!(
        r"^{BLANK}*(?:(?:{})(?:{BLANKS}{arg})*|{}){BLANK}*$",
        names.join("|"),
        lines.join("|")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inert(command: &str) -> bool {
        regex::Regex::new(&regex()).unwrap().is_match(command)
    }

    #[test]
    fn only_inert_commands_with_plain_arguments_match() {
        for cmd in [
            "ls",
            "ls -la src",
            "pwd",
            "echo hello world",
            "date +%Y-%m-%d",
            "wc -l src/main.rs",
            "head -n 5 README.md",
            "cat src/lib.rs ./Cargo.toml",
            "grep -rn needle src",
            "ls --color=auto .",
            "git --version",
            "  true  ",
        ] {
            assert!(inert(cmd), "{cmd}");
        }
        for cmd in [
            // git reads the repository's config: hooks, fsmonitor, aliases.
            "git status",
            "git log",
            "git diff",
            "git -c core.pager=x --version",
            // Build tools, package scripts, interpreters, scripts.
            "make",
            "npm test",
            "npm run build",
            "yarn lint",
            "pnpm install",
            "cargo build",
            "python3 x.py",
            "node x.js",
            "ruby -e 1",
            "perl -e 1",
            "sh script.sh",
            "bash -c ls",
            "./run.sh",
            "src/run",
            // Running other programs, options that do.
            "env FOO=1 ls",
            "xargs ls",
            "find . -exec rm {} ;",
            "sort --compress-program=x f",
            "less file",
            "rg --pre x needle",
            // Shell syntax.
            "ls $(id)",
            "ls `id`",
            "echo hi > file",
            "cat x | sh",
            "ls; make",
            "ls && make",
            "echo \"hi\"",
            "echo $HOME",
            "ls *.rs",
            "ls {a,b}",
            "echo a\\;b",
            "ls\nmake",
            // Outside the working directory.
            "cat ../x",
            "cat src/../../x",
            "cat /etc/passwd",
            "cat ~/.ssh/id_rsa",
            "ls ..",
            "cat .../x",
        ] {
            assert!(!inert(cmd), "{cmd}");
        }
    }
}

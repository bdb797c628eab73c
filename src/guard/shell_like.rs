//! Which tools run shell commands. toolgate knows what its own tools do;
//! for an upstream, plugin or agent tool only its definition speaks, so a
//! tool is *shell-like* when its name, its parameters or its description
//! say it runs commands (the rule in `docs/policy.md`, "Shell-like tools").
//! `[tools.NAME] shell = true | false` overrides the rule for one tool.
//!
//! The guard stage reads the command lines of shell-like tools as a shell
//! would (`Protected::check_command_in`) instead of only scanning them
//! for paths; the OS barrier may refuse shell-like tools where the kernel
//! cannot confine them.

use std::sync::LazyLock;

use regex::Regex;

use crate::tool::ToolDef;

/// Parameter names that hold a command line.
pub const COMMAND_PARAMS: [&str; 7] = [
    "command",
    "cmd",
    "commandline",
    "command_line",
    "script",
    "shell_command",
    "shellcommand",
];

/// Words of a tool's own name (after the `server__` prefix) that say it
/// runs commands: `execute_command`, `run_shell`, `bash`, `terminal_exec`.
const NAME_WORDS: [&str; 13] = [
    "shell",
    "bash",
    "sh",
    "zsh",
    "fish",
    "powershell",
    "pwsh",
    "terminal",
    "cmd",
    "command",
    "commands",
    "exec",
    "subprocess",
];

/// Verbs that, before `code` or `script` in a name, say it runs code
/// (`execute_code`, `run_script`, `eval_python`).
const RUN_WORDS: [&str; 5] = ["run", "execute", "exec", "eval", "spawn"];
/// What such a verb runs.
const CODE_WORDS: [&str; 6] = ["code", "script", "python", "javascript", "js", "node"];

/// A description that says the tool runs commands: a verb of running
/// followed within a few words by a command, shell or script, or a shell
/// named outright.
static DESCRIBES_SHELL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(run|runs|running|execute|executes|executing|exec|invoke|invokes|spawn|spawns)\b(\W+\w+){0,4}?\W+(commands?|command[- ]lines?|shell|scripts?|programs?|process(es)?)\b|\b(shell|terminal|bash|zsh|powershell)\b",
    )
    .ok()
});

/// What makes a tool shell-like, worked out once per definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellLike {
    /// Its string parameters that hold a command line; empty when only
    /// its name or description said so (then every string may be one).
    pub command_args: Vec<String>,
}

impl ShellLike {
    /// Whether `def` runs shell commands, by its name, its parameters or
    /// its description; `None` when nothing says so.
    pub fn of(def: &ToolDef) -> Option<Self> {
        let command_args = command_params(def);
        let shell = !command_args.is_empty()
            || name_says_shell(def.name.as_str())
            || DESCRIBES_SHELL
                .as_ref()
                .is_some_and(|r| r.is_match(&def.description));
        shell.then_some(Self { command_args })
    }

    /// Whether the command line is in `arg`.
    pub fn holds_command(&self, arg: &str) -> bool {
        self.command_args.is_empty() || self.command_args.iter().any(|a| a == arg)
    }
}

/// Whether `def` is shell-like (see [`ShellLike::of`]).
pub fn is_shell_like(def: &ToolDef) -> bool {
    ShellLike::of(def).is_some()
}

/// The top-level string parameters named like a command line.
fn command_params(def: &ToolDef) -> Vec<String> {
    let Some(props) = def
        .input_schema
        .get("properties")
        .and_then(|p| p.as_object())
    else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(name, schema)| {
            COMMAND_PARAMS.contains(&name.to_ascii_lowercase().as_str()) && takes_string(schema)
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// A parameter schema that admits a string (no `type` admits anything).
fn takes_string(schema: &serde_json::Value) -> bool {
    match schema.get("type") {
        None => true,
        Some(serde_json::Value::String(t)) => t == "string",
        Some(serde_json::Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        Some(_) => false,
    }
}

/// The words of a tool's own name: split at `_`, `-` and lower-to-upper
/// case changes, lower-cased, after any `server__` prefix.
fn name_words(name: &str) -> Vec<String> {
    let own = name.rsplit("__").next().unwrap_or(name);
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in own.chars() {
        let boundary = c == '_' || c == '-' || (c.is_ascii_uppercase() && prev_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        if c != '_' && c != '-' {
            word.push(c.to_ascii_lowercase());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

fn name_says_shell(name: &str) -> bool {
    let words = name_words(name);
    let has = |set: &[&str], w: &String| set.contains(&w.as_str());
    words.iter().any(|w| has(&NAME_WORDS, w))
        || (words.iter().any(|w| has(&RUN_WORDS, w)) && words.iter().any(|w| has(&CODE_WORDS, w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolName;
    use serde_json::json;

    fn def(name: &str, description: &str, schema: serde_json::Value) -> ToolDef {
        let serde_json::Value::Object(schema) = schema else {
            panic!("object schema")
        };
        ToolDef::new(ToolName::new(name).unwrap(), description, schema)
    }

    fn props(names: &[(&str, &str)]) -> serde_json::Value {
        let props: serde_json::Map<_, _> = names
            .iter()
            .map(|(n, t)| ((*n).to_owned(), json!({"type": t})))
            .collect();
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn names_that_say_they_run_commands_are_shell_like() {
        for name in [
            "execute_command",
            "desktop__execute_command",
            "run_command",
            "shell",
            "run_shell",
            "exec",
            "bash",
            "terminal",
            "srv__runTerminalCmd",
            "execute_code",
            "run-script",
            "sh",
        ] {
            let d = def(name, "", props(&[]));
            assert!(is_shell_like(&d), "{name}");
            assert_eq!(
                ShellLike::of(&d).unwrap().command_args,
                Vec::<String>::new()
            );
        }
        for name in [
            "execute_query",
            "run_tests",
            "read_file",
            "search",
            "shelve_item",
            "fetch_commits",
            "git__show",
            "python_docs",
        ] {
            assert!(
                !is_shell_like(&def(name, "Reads things.", props(&[]))),
                "{name}"
            );
        }
    }

    #[test]
    fn a_command_parameter_makes_a_tool_shell_like() {
        let d = def(
            "do_it",
            "",
            props(&[("command", "string"), ("cwd", "string")]),
        );
        let s = ShellLike::of(&d).unwrap();
        assert_eq!(s.command_args, ["command"]);
        assert!(s.holds_command("command") && !s.holds_command("cwd"));
        let d = def("go", "", props(&[("commandLine", "string")]));
        assert_eq!(ShellLike::of(&d).unwrap().command_args, ["commandLine"]);
        // A `command` that is not a string is something else.
        assert!(!is_shell_like(&def(
            "go",
            "",
            props(&[("command", "integer")])
        )));
    }

    #[test]
    fn a_description_that_says_it_runs_commands_makes_a_tool_shell_like() {
        for text in [
            "Runs a shell command and returns its output.",
            "Execute the given command line.",
            "Executes arbitrary commands on the host",
            "Opens a terminal session.",
            "Spawns a process.",
        ] {
            assert!(is_shell_like(&def("do_it", text, props(&[]))), "{text}");
        }
        for text in [
            "Returns the weather for a city.",
            "Run the test suite of the project.",
            "Lists recent commands sent to the device? no: lists devices.",
        ] {
            assert!(!is_shell_like(&def("do_it", text, props(&[]))), "{text}");
        }
    }
}

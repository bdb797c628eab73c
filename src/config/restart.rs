//! Which edits of the config file wait for a restart. A reload applies the
//! policy, the allow/deny lists and the upstream servers; every other
//! setting (the barrier, the built-in tools' roots, pipeline limits, the
//! data dir) is read once at start. A person who edits one of those should
//! be told it is not in force yet, not left to guess.

/// Top-level keys a reload applies (`hooks` is read by each `toolgate hook
/// run`, so an edit applies to the next hook at once).
const APPLIED_ON_RELOAD: &[&str] = &[
    "policy",
    "allowed_tools",
    "denied_tools",
    "servers",
    "hooks",
];

/// The top-level keys whose value differs between the file as the engine
/// started with it and as it is now, leaving out those a reload applies;
/// sorted. Text that does not parse yields nothing (the reload reports it).
pub fn start_only_changes(at_start: &str, now: &str) -> Vec<String> {
    let (Ok(a), Ok(b)) = (
        toml::from_str::<toml::Table>(at_start),
        toml::from_str::<toml::Table>(now),
    ) else {
        return Vec::new();
    };
    let mut keys: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| !APPLIED_ON_RELOAD.contains(&k.as_str()))
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The note a person reads about `keys` (from [`start_only_changes`]).
pub fn restart_note(keys: &[String]) -> Option<String> {
    let (last, rest) = keys.split_last()?;
    let names = |k: &String| format!("`{k}`");
    let list = if rest.is_empty() {
        names(last)
    } else {
        format!(
            "{} and {}",
            rest.iter().map(names).collect::<Vec<_>>().join(", "),
            names(last)
        )
    };
    Some(format!(
        "Your edit of {list} is saved but takes effect only when the engine restarts."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_settings_read_at_start_are_named() {
        let start = "allowed_tools = [\"*\"]\n[policy]\npreset = \"default\"\n[barrier]\nwhen_unavailable = \"refuse\"\n";
        let policy_only = start.replace("default", "strict");
        assert!(start_only_changes(start, &policy_only).is_empty());
        let hooks = format!("{start}[hooks]\nwhen_engine_down = \"deny\"\n");
        assert!(start_only_changes(start, &hooks).is_empty());
        let barrier = start.replace("refuse", "run");
        assert_eq!(start_only_changes(start, &barrier), ["barrier"]);
        let added = format!("{barrier}[builtin]\nroots = [\"/srv\"]\n");
        let keys = start_only_changes(start, &added);
        assert_eq!(keys, ["barrier", "builtin"]);
        assert_eq!(
            restart_note(&keys).unwrap(),
            "Your edit of `barrier` and `builtin` is saved but takes effect only when the engine restarts."
        );
        assert_eq!(restart_note(&[]), None);
        assert!(start_only_changes(start, "not = [toml").is_empty());
    }
}

//! Process relations read from `/proc`: a process's parent, its command
//! line, and the children of a process. Read at the moments that need
//! them (a control connection arriving, a warden cleaning up), never per
//! call.
//!
//! `/proc/<pid>/task/<tid>/children` would list children directly, but it
//! needs `CONFIG_PROC_CHILDREN`, which not every kernel has; scanning
//! `/proc` for parents works everywhere.

use std::path::Path;

/// `pid`'s parent, from `/proc/<pid>/stat` (`None`: gone, or no parent).
pub fn parent_of(pid: i32) -> Option<i32> {
    stat_field(Path::new(&format!("/proc/{pid}/stat")), 1)
}

/// Field `n` after the command name (0: state, 1: ppid, …) of a
/// `/proc/<pid>/stat` file. The name is in parentheses and may itself hold
/// spaces and parentheses, so fields are counted from the last `)`.
fn stat_field(path: &Path, n: usize) -> Option<i32> {
    let stat = std::fs::read_to_string(path).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(n)?.parse().ok()
}

/// `pid`'s command line, split at its NULs.
pub fn cmdline(pid: i32) -> Vec<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(<[u8]>::to_vec)
                .collect()
        })
        .unwrap_or_default()
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|child| parent_of(*child) == Some(pid))
        .collect()
}

/// The first process on `pid`'s way up to init (itself included) for
/// which `is` holds. The walk is bounded, so a loop in what `/proc` says
/// (a pid reused mid-walk) cannot hang it.
pub fn ancestor_where(pid: i32, is: impl Fn(i32) -> bool) -> Option<i32> {
    let mut at = pid;
    for _ in 0..128 {
        if is(at) {
            return Some(at);
        }
        match parent_of(at) {
            Some(p) if p > 0 && p != at => at = p,
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_parent_and_children_are_read_from_proc() {
        let me = std::process::id() as i32;
        let parent = parent_of(me).expect("a parent");
        assert!(parent >= 0);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(children_of(me).contains(&pid));
        assert_eq!(parent_of(pid), Some(me));
        assert_eq!(ancestor_where(pid, |p| p == me), Some(me));
        assert_eq!(ancestor_where(pid, |_| false), None);
        assert_eq!(cmdline(pid), vec![b"sleep".to_vec(), b"30".to_vec()]);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_command_name_with_parentheses_does_not_shift_the_fields() {
        let dir = tempfile::tempdir().unwrap();
        let stat = dir.path().join("stat");
        std::fs::write(&stat, "42 (a) b (c)) S 7 42 42 0").unwrap();
        assert_eq!(stat_field(&stat, 1), Some(7));
    }
}

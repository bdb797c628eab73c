//! Shell command lines, read the way the shell would: split into simple
//! commands, quotes removed, `~`, `~name`, `$HOME` and variables set
//! earlier in the line expanded, globs matched against the protected
//! places, `cd` followed, and a word that holds a command line itself
//! (`sh -c '…'`, `"$(…)"`) read again. Each simple command is then checked
//! for a toolgate invocation and each word for a protected path.

use std::path::{Path, PathBuf};

use super::expand::ShellEnv;
use super::paths::resolve_in;
use super::words::{Token, holds_command, lex};
use super::{Protected, Refusal, control, glob};

/// How deep words holding command lines are read again (`sh -c "bash -c
/// '…'"`); deeper text is still searched for protected paths as written.
const MAX_DEPTH: usize = 4;

/// Shell builtins whose arguments are assignments (`export D=~/x`).
const DECLARING: [&str; 6] = ["export", "declare", "local", "readonly", "typeset", "set"];

/// One simple command as lexed: its words and its redirection targets.
#[derive(Debug, Default)]
struct Simple {
    words: Vec<String>,
    files: Vec<String>,
}

/// A nested command being read (`( … )`, `$( … )`, `` ` … ` ``): the
/// simple command in progress and every word seen inside it so far.
#[derive(Debug, Default)]
struct Frame {
    current: Simple,
    all: Vec<String>,
}

/// A command line being read: where it runs and what it has set.
pub(super) struct Reader<'a> {
    protected: &'a Protected,
    env: ShellEnv,
    /// The working directory, resolved, while it is known.
    cwd: Option<PathBuf>,
    depth: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(protected: &'a Protected, cwd: Option<&Path>) -> Self {
        Self {
            protected,
            env: protected.env.clone(),
            cwd: cwd.map(super::paths::resolve),
            depth: 0,
        }
    }

    /// Reads `line`, checking each simple command as it ends.
    pub(super) fn line(&mut self, line: &str) -> Result<(), Refusal> {
        let mut root = Frame::default();
        let mut nested: Vec<Frame> = Vec::new();
        let mut redirect = false;
        for token in lex(line) {
            match token {
                Token::Open => {
                    nested.push(Frame::default());
                    continue;
                }
                Token::Close if !nested.is_empty() => {
                    self.close(&mut nested, &mut root)?;
                    continue;
                }
                _ => {}
            }
            let frame = nested.last_mut().unwrap_or(&mut root);
            match token {
                Token::Word(w) if redirect => {
                    redirect = false;
                    frame.current.files.push(w);
                }
                Token::Word(w) => frame.current.words.push(w),
                Token::Redirect => redirect = true,
                Token::Sep | Token::Close | Token::Open => self.end(frame)?,
            }
        }
        while !nested.is_empty() {
            self.close(&mut nested, &mut root)?;
        }
        self.end(&mut root)
    }

    /// Ends the innermost nested command; its words belong to the command
    /// around it too (`$(echo toolgate) approve`).
    fn close(&mut self, nested: &mut Vec<Frame>, root: &mut Frame) -> Result<(), Refusal> {
        let Some(mut inner) = nested.pop() else {
            return Ok(());
        };
        self.end(&mut inner)?;
        let outer = nested.last_mut().unwrap_or(root);
        outer.current.words.extend(inner.all);
        Ok(())
    }

    fn end(&mut self, frame: &mut Frame) -> Result<(), Refusal> {
        let simple = std::mem::take(&mut frame.current);
        frame.all.extend(simple.words.iter().cloned());
        self.simple(&simple)
    }

    fn simple(&mut self, s: &Simple) -> Result<(), Refusal> {
        if s.words.is_empty() && s.files.is_empty() {
            return Ok(());
        }
        let words: Vec<String> = s.words.iter().map(|w| self.env.expand(w)).collect();
        let command_at = self.assignments(&words);
        let rest = &words[command_at..];
        for (raw, word) in s.words.iter().zip(&words) {
            control::check_methods(raw)?;
            control::check_methods(word)?;
            control::check_embedded(raw)?;
        }
        control::check_words(rest.iter().map(String::as_str))?;
        if rest.first().is_some_and(|w| control::is_toolgate(w)) {
            control::check_invocation(rest)?;
        }
        for word in words.iter().chain(s.files.iter()) {
            self.paths_in(word)?;
        }
        for raw in &s.words {
            self.nested(raw)?;
        }
        if let Some(cmd) = rest.first()
            && matches!(cmd.as_str(), "cd" | "pushd")
        {
            self.cd(&rest[1..]);
        }
        Ok(())
    }

    /// Records the assignments that start the command (`D=~/x cmd`, or
    /// `export D=~/x`); returns where the command word is.
    fn assignments(&mut self, words: &[String]) -> usize {
        let mut at = 0;
        let declaring = words
            .first()
            .is_some_and(|w| DECLARING.contains(&w.as_str()));
        for (i, w) in words.iter().enumerate() {
            match assignment(w) {
                Some((name, value)) => {
                    self.env.vars.insert(name.to_owned(), value.to_owned());
                    if !declaring {
                        at = i + 1;
                    }
                }
                None if declaring => {}
                None => break,
            }
        }
        at
    }

    /// A word that holds a command line of its own, read again.
    fn nested(&self, raw: &str) -> Result<(), Refusal> {
        if self.depth >= MAX_DEPTH || !holds_command(raw) {
            return Ok(());
        }
        let mut inner = Reader {
            protected: self.protected,
            env: self.env.clone(),
            cwd: self.cwd.clone(),
            depth: self.depth + 1,
        };
        inner.line(raw)
    }

    /// Follows `cd DIR` / `pushd DIR`: the working directory is known
    /// while every `cd` leads somewhere this reader can tell.
    fn cd(&mut self, args: &[String]) {
        let target = args
            .iter()
            .find(|a| !a.starts_with('-') || a.as_str() == "-");
        self.cwd = match target.map(String::as_str) {
            None => self.env.home.as_deref().map(super::paths::resolve),
            Some("-") => None,
            Some(t) if glob::is_glob(t) => None,
            Some(t) => self.absolute(t),
        };
    }

    /// `piece` as an absolute path, resolved: as written when absolute,
    /// else from the working directory when it is known.
    fn absolute(&self, piece: &str) -> Option<PathBuf> {
        if piece.starts_with('/') {
            return Some(resolve_in(PathBuf::new(), Path::new(piece)));
        }
        let cwd = self.cwd.clone()?;
        Some(resolve_in(cwd, Path::new(piece)))
    }

    /// Checks a word, and each of its `=`/`:` pieces (`--config=~/x`,
    /// `PATH=/a:/b`; the shell expands `~` after them in assignments), as
    /// a path.
    fn paths_in(&self, word: &str) -> Result<(), Refusal> {
        let pieces = std::iter::once(word.to_owned())
            .chain(word.split(['=', ':']).skip(1).map(|p| self.env.expand(p)));
        for piece in pieces.filter(|p| !p.is_empty()) {
            self.path(word, &piece)?;
        }
        Ok(())
    }

    fn path(&self, word: &str, piece: &str) -> Result<(), Refusal> {
        if glob::is_glob(piece) {
            let pattern = if piece.starts_with('/') {
                PathBuf::from(piece)
            } else {
                match &self.cwd {
                    Some(cwd) => cwd.join(piece),
                    None => return Ok(()),
                }
            };
            return match self.protected.glob_names(&pattern) {
                Some(r) => Err(r.mentioned_as(word)),
                None => Ok(()),
            };
        }
        match self.absolute(piece) {
            Some(path) => self
                .protected
                .check_path(&path)
                .map_err(|r| r.mentioned_as(word)),
            None => Ok(()),
        }
    }
}

/// `NAME=value` as the shell reads an assignment.
fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some((name, value))
}

//! A small shell lexer: enough of POSIX `sh` to see which words a command
//! line runs and which it passes on, split and unquoted the way the shell
//! would.
//!
//! Written here rather than taken from `shlex` or `shell-words`: those
//! split one simple command into words and give up on unbalanced quotes,
//! while the checks need the operators (`;`, `&&`, `|`, `$(…)`, backquotes,
//! redirections) to know where each command starts, and must read any
//! text, malformed or not. Here an unterminated quote runs to the end of
//! the text, and nothing fails.

/// One piece of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    /// A word with its quotes and backslashes removed.
    Word(String),
    /// Ends a simple command: `;`, `&`, `&&`, `||`, `|`, a newline.
    Sep,
    /// Opens a nested command: `(`, `$(`, an opening backquote.
    Open,
    /// Closes one.
    Close,
    /// A redirection (`>`, `>>`, `<`, `2>&1`…): the next word is a file.
    Redirect,
}

/// The tokens of `line`.
pub(super) fn lex(line: &str) -> Vec<Token> {
    Lexer::default().run(line)
}

#[derive(Default)]
struct Lexer {
    out: Vec<Token>,
    word: String,
    /// Whether a word has started (`''` is an empty word).
    started: bool,
    /// Open backquotes, to tell a closing one from an opening one.
    backquotes: usize,
}

impl Lexer {
    fn run(mut self, line: &str) -> Vec<Token> {
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('\n') | None => {}
                    Some(n) => self.push(n),
                },
                '\'' => {
                    self.started = true;
                    for n in chars.by_ref() {
                        if n == '\'' {
                            break;
                        }
                        self.word.push(n);
                    }
                }
                '"' => self.double_quoted(&mut chars),
                '$' if chars.peek() == Some(&'(') => {
                    chars.next();
                    self.op(Token::Open);
                }
                '`' => {
                    let t = if self.backquotes > 0 {
                        self.backquotes -= 1;
                        Token::Close
                    } else {
                        self.backquotes += 1;
                        Token::Open
                    };
                    self.op(t);
                }
                '(' => self.op(Token::Open),
                ')' => self.op(Token::Close),
                ';' | '&' | '|' | '\n' => {
                    // `&&`, `||`, `;;`, `|&` are one separator.
                    while chars.peek().is_some_and(|n| matches!(n, '&' | '|' | ';')) {
                        chars.next();
                    }
                    self.op(Token::Sep);
                }
                '<' | '>' => {
                    // `>>`, `<<`, `<<<`, `>&2`, `>|`: one redirection.
                    while chars
                        .peek()
                        .is_some_and(|n| matches!(n, '<' | '>' | '&' | '|'))
                    {
                        chars.next();
                    }
                    self.op(Token::Redirect);
                }
                c if c.is_whitespace() => self.end_word(),
                c => self.push(c),
            }
        }
        self.end_word();
        self.out
    }

    /// Inside `"…"` the shell still expands `$…` and `` `…` ``; they stay
    /// in the word as written (a word that holds a command is read again
    /// by the caller), and only `\` before `"`, `\`, `$`, `` ` `` is removed.
    fn double_quoted(&mut self, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
        self.started = true;
        while let Some(n) = chars.next() {
            match n {
                '"' => return,
                '\\' => match chars.peek() {
                    Some('"' | '\\' | '$' | '`') => {
                        self.word.extend(chars.next());
                    }
                    Some('\n') => {
                        chars.next();
                    }
                    _ => self.word.push('\\'),
                },
                n => self.word.push(n),
            }
        }
    }

    fn push(&mut self, c: char) {
        self.started = true;
        self.word.push(c);
    }

    fn end_word(&mut self) {
        if self.started {
            self.out.push(Token::Word(std::mem::take(&mut self.word)));
            self.started = false;
        }
    }

    fn op(&mut self, t: Token) {
        self.end_word();
        self.out.push(t);
    }
}

/// Whether a word holds more than one word of a command line (a `sh -c`
/// script, a quoted `$(…)`): such a word is read again as a command line.
pub(super) fn holds_command(word: &str) -> bool {
    word.contains(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '`' | '(' | ')'))
}

#[cfg(test)]
mod tests {
    use super::Token::{Close, Open, Redirect, Sep, Word};
    use super::*;

    fn w(s: &str) -> Token {
        Word(s.to_owned())
    }

    #[test]
    fn quotes_and_backslashes_are_removed_as_the_shell_would() {
        assert_eq!(
            lex(r#"cat "$HOME"/.config/t''oolgate/conf\ig.toml 'a b' """#),
            [
                w("cat"),
                w("$HOME/.config/toolgate/config.toml"),
                w("a b"),
                w("")
            ]
        );
        assert_eq!(lex(r#"echo "a\"b\$c\d""#), [w("echo"), w(r#"a"b$c\d"#)]);
    }

    #[test]
    fn operators_separate_commands() {
        assert_eq!(
            lex("cd ~/x && cat a|wc -l; echo $(id -u) `pwd` > out 2>&1"),
            [
                w("cd"),
                w("~/x"),
                Sep,
                w("cat"),
                w("a"),
                Sep,
                w("wc"),
                w("-l"),
                Sep,
                w("echo"),
                Open,
                w("id"),
                w("-u"),
                Close,
                Open,
                w("pwd"),
                Close,
                Redirect,
                w("out"),
                w("2"),
                Redirect,
                w("1"),
            ]
        );
    }

    #[test]
    fn malformed_text_is_read_to_its_end() {
        assert_eq!(lex("echo 'unterminated"), [w("echo"), w("unterminated")]);
        assert_eq!(lex("echo \"x"), [w("echo"), w("x")]);
        assert_eq!(lex("a \\"), [w("a")]);
        assert_eq!(lex(""), []);
        assert_eq!(lex(")))"), [Close, Close, Close]);
    }
}

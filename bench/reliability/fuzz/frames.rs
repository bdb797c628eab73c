//! Seeded frame generators, one per category. Everything comes from one
//! `StdRng`, so a seed names a run exactly: `--seed N` repeats it.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

/// The kinds of hostile frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Random bytes (binary, printable, or JSON tokens in any order).
    RandomBytes,
    /// A well-formed request cut short.
    Truncated,
    /// Arrays and objects nested up to 20,000 deep.
    DeepNesting,
    /// Strings from 1 KiB to several MiB in a request's fields; a few
    /// frames over the 16 MiB frame limit.
    HugeStrings,
    /// One field of a request replaced by a value of another type.
    WrongTypes,
    /// Well-typed calls with hostile arguments: path escapes, SSRF URLs,
    /// shell metacharacters.
    Hostile,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Self; 6] = [
        Self::RandomBytes,
        Self::Truncated,
        Self::DeepNesting,
        Self::HugeStrings,
        Self::WrongTypes,
        Self::Hostile,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::RandomBytes => "random bytes",
            Self::Truncated => "truncated JSON",
            Self::DeepNesting => "deep nesting",
            Self::HugeStrings => "huge strings",
            Self::WrongTypes => "wrong types",
            Self::Hostile => "hostile arguments",
        }
    }
}

/// One frame to send (no newline).
pub struct Frame {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Its category.
    pub category: Category,
}

/// Hostile values the generator draws from, besides its own.
#[derive(Clone, Default)]
pub struct Hostile {
    /// Paths that escape the root.
    pub paths: Vec<String>,
    /// URLs the SSRF guard must refuse.
    pub urls: Vec<String>,
    /// Shell commands with metacharacters (each would touch the canary).
    pub commands: Vec<String>,
}

/// Well-formed requests whose fields the generator mutates: the MCP
/// handshake, listing, every built-in tool, gate mode.
pub fn templates() -> Vec<Value> {
    let req = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let call =
        |name: &str, args: Value| req("tools/call", json!({"name": name, "arguments": args}));
    vec![
        req(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": true}},
                   "clientInfo": {"name": "fuzz", "version": "1"}}),
        ),
        req("tools/list", json!({"cursor": "c"})),
        req("ping", json!({})),
        call("fs_read", json!({"path": "sub/file.txt", "max_bytes": 100})),
        call("fs_list", json!({"path": "sub"})),
        call(
            "fs_write",
            json!({"path": "w.txt", "content": "x", "mode": "append", "create_dirs": true}),
        ),
        call(
            "http_fetch",
            json!({"url": "http://127.0.0.1:1/", "method": "GET", "max_bytes": 10}),
        ),
        call(
            "shell_exec",
            json!({"command": "echo hi", "cwd": ".", "timeout_ms": 1000}),
        ),
        req(
            "toolgate/register",
            json!({"agentId": "fz", "tools": [{"name": "t", "description": "d", "risk": "low",
                   "inputSchema": {"type": "object"}}]}),
        ),
        req("toolgate/gate", json!({"name": "t", "arguments": {}})),
        req(
            "toolgate/report",
            json!({"gateId": "g1-0", "result": {"content": [{"type": "text", "text": "r"}], "isError": false}}),
        ),
    ]
}

/// A field of a template: the template's index and the keys/indices down
/// to it.
pub type FieldPath = (usize, Vec<Step>);

/// One step down a JSON value.
#[derive(Debug, Clone)]
pub enum Step {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// Every field of every template (each object member and array element,
/// at any depth).
pub fn fields(templates: &[Value]) -> Vec<FieldPath> {
    fn walk(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        match v {
            Value::Object(o) => {
                for (k, child) in o {
                    path.push(Step::Key(k.clone()));
                    out.push(path.clone());
                    walk(child, path, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    path.push(Step::Index(i));
                    out.push(path.clone());
                    walk(child, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut all = Vec::new();
    for (i, t) in templates.iter().enumerate() {
        let mut out = Vec::new();
        walk(t, &mut Vec::new(), &mut out);
        all.extend(out.into_iter().map(|p| (i, p)));
    }
    all
}

fn at_mut<'a>(v: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, step| match step {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::Index(i) => v.get_mut(*i),
    })
}

/// Values of every JSON type, including the edges of numbers.
pub fn wrong_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!(1e308),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(""),
        json!("x"),
        json!("\u{0}\u{202e}\u{feff}é漢😀"),
        json!([]),
        json!([1, "a", null, {}]),
        json!({}),
        json!({"nested": {"deeper": [[]]}}),
    ]
}

fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
        && !(a.is_number() && (a.is_f64() != b.is_f64()))
}

/// Template `t` with the field at `path` set to `value`, and a fresh id
/// unless the id is the field.
pub fn mutate(templates: &[Value], (t, path): &FieldPath, value: Value, id: u64) -> Value {
    let mut v = templates[*t].clone();
    v["id"] = json!(format!("fz-{id}"));
    if let Some(slot) = at_mut(&mut v, path) {
        *slot = value;
    }
    v
}

/// Every (field, wrong value) pair whose types differ: the systematic part
/// of the wrong-types category, sent before the random part.
pub fn every_wrong_type(templates: &[Value]) -> Vec<(FieldPath, Value)> {
    let mut out = Vec::new();
    for f in fields(templates) {
        let mut probe = templates[f.0].clone();
        let Some(current) = at_mut(&mut probe, &f.1).map(|v| v.clone()) else {
            continue;
        };
        for w in wrong_values() {
            if !same_type(&current, &w) {
                out.push((f.clone(), w));
            }
        }
    }
    out
}

/// The generator of one connection.
pub struct Gen {
    rng: StdRng,
    templates: Vec<Value>,
    fields: Vec<FieldPath>,
    hostile: Hostile,
    next_id: u64,
    /// Largest string the huge-strings category makes.
    pub max_huge: usize,
    /// How many frames over 16 MiB it may still make.
    pub oversized_left: usize,
}

impl Gen {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64, hostile: Hostile, max_huge: usize, oversized: usize) -> Self {
        let templates = templates();
        let fields = fields(&templates);
        Self {
            rng: StdRng::seed_from_u64(seed),
            templates,
            fields,
            hostile,
            next_id: 0,
            max_huge,
            oversized_left: oversized,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A request from a random template, with a fresh id.
    fn request(&mut self) -> Value {
        let mut v = self
            .templates
            .choose(&mut self.rng)
            .cloned()
            .unwrap_or_default();
        let id = self.id();
        // Ids are strings and integers alike.
        v["id"] = if id.is_multiple_of(2) {
            json!(format!("fz-{id}"))
        } else {
            json!(id)
        };
        v
    }

    /// The next frame of a random category.
    pub fn next(&mut self) -> Frame {
        let category = *Category::ALL
            .choose(&mut self.rng)
            .unwrap_or(&Category::RandomBytes);
        self.of(category)
    }

    /// A frame of `category`.
    pub fn of(&mut self, category: Category) -> Frame {
        let bytes = match category {
            Category::RandomBytes => self.random_bytes(),
            Category::Truncated => self.truncated(),
            Category::DeepNesting => self.deep(),
            Category::HugeStrings => self.huge(),
            Category::WrongTypes => self.wrong_type(),
            Category::Hostile => self.hostile(),
        };
        Frame { bytes, category }
    }

    /// A wrong-types frame from the systematic list.
    pub fn systematic(&mut self, field: &FieldPath, value: Value) -> Frame {
        let id = self.id();
        let v = mutate(&self.templates, field, value, id);
        Frame {
            bytes: v.to_string().into_bytes(),
            category: Category::WrongTypes,
        }
    }

    fn random_bytes(&mut self) -> Vec<u8> {
        let len = self.rng.random_range(1..2048);
        let mut out = match self.rng.random_range(0..3) {
            0 => {
                let mut b = vec![0u8; len];
                self.rng.fill(&mut b[..]);
                b
            }
            1 => (0..len)
                .map(|_| self.rng.random_range(0x20..0x7f))
                .collect(),
            _ => {
                const TOKENS: [&str; 16] = [
                    "{",
                    "}",
                    "[",
                    "]",
                    ":",
                    ",",
                    "\"",
                    "null",
                    "true",
                    "1",
                    "-0.5e9",
                    "\"id\"",
                    "\"method\"",
                    "\"jsonrpc\"",
                    "\"2.0\"",
                    "\\u0000",
                ];
                let mut s = String::new();
                while s.len() < len {
                    s.push_str(TOKENS.choose(&mut self.rng).unwrap_or(&"{"));
                }
                s.into_bytes()
            }
        };
        // One frame per line: a newline would make two.
        for b in &mut out {
            if *b == b'\n' {
                *b = b' ';
            }
        }
        out
    }

    fn truncated(&mut self) -> Vec<u8> {
        let full = self.request().to_string().into_bytes();
        let cut = self.rng.random_range(1..full.len());
        full[..cut].to_vec()
    }

    fn deep(&mut self) -> Vec<u8> {
        // Log-uniform depth: as many shallow as very deep frames.
        let depth = (2f64.powf(self.rng.random_range(1.0..14.3))) as usize;
        let (open, close) = *[("[", "]"), ("{\"a\":", "}")]
            .choose(&mut self.rng)
            .unwrap_or(&("[", "]"));
        let closed = self.rng.random_bool(0.8);
        let nest = |inner: &str| {
            let mut s = open.repeat(depth);
            s.push_str(inner);
            if closed {
                s.push_str(&close.repeat(depth));
            }
            s
        };
        match self.rng.random_range(0..3) {
            0 => nest("1").into_bytes(),
            // Inside a call's arguments: the request itself is well framed.
            1 => {
                let mut v = self.request();
                v["params"] = json!({"name": "fs_read", "arguments": {"path": "__DEEP__"}});
                v.to_string()
                    .replace("\"__DEEP__\"", &nest("0"))
                    .into_bytes()
            }
            _ => {
                let v = self.request();
                let text = v.to_string();
                // In the id's place.
                let id = v["id"].to_string();
                text.replacen(&format!("\"id\":{id}"), &format!("\"id\":{}", nest("0")), 1)
                    .into_bytes()
            }
        }
    }

    fn huge_string(&mut self, len: usize) -> String {
        match self.rng.random_range(0..4) {
            0 => "A".repeat(len),
            1 => "漢😀é".repeat(len / 9 + 1),
            2 => "\\\"\u{0}\u{1f}".repeat(len / 4 + 1),
            _ => "../".repeat(len / 3 + 1),
        }
    }

    fn huge(&mut self) -> Vec<u8> {
        let len = if self.oversized_left > 0 && self.rng.random_bool(0.002) {
            self.oversized_left -= 1;
            17 * 1024 * 1024
        } else {
            // Log-uniform from 1 KiB to the maximum.
            let top = (self.max_huge.max(2048) as f64).log2();
            2f64.powf(self.rng.random_range(10.0..top)) as usize
        };
        // An oversized frame is plain ASCII: escapes would make it several
        // times the limit for nothing.
        let s = if len > 16 * 1024 * 1024 {
            "A".repeat(len)
        } else {
            self.huge_string(len)
        };
        let mut v = self.request();
        let field = self.fields.choose(&mut self.rng).cloned();
        match field {
            Some((t, path)) if self.rng.random_bool(0.7) => {
                v = mutate(&self.templates, &(t, path), Value::String(s), self.next_id);
            }
            _ => {
                v["params"]["arguments"]["path"] = Value::String(s);
            }
        }
        v.to_string().into_bytes()
    }

    fn wrong_type(&mut self) -> Vec<u8> {
        let field = self.fields.choose(&mut self.rng).cloned();
        let value = wrong_values()
            .choose(&mut self.rng)
            .cloned()
            .unwrap_or_default();
        let id = self.id();
        match field {
            Some(f) => mutate(&self.templates, &f, value, id)
                .to_string()
                .into_bytes(),
            None => Vec::new(),
        }
    }

    fn hostile(&mut self) -> Vec<u8> {
        let id = self.id();
        let pick =
            |rng: &mut StdRng, list: &[String]| list.choose(rng).cloned().unwrap_or_default();
        let args = match self.rng.random_range(0..6) {
            0 => (
                "fs_read",
                json!({"path": pick(&mut self.rng, &self.hostile.paths)}),
            ),
            1 => (
                "fs_list",
                json!({"path": pick(&mut self.rng, &self.hostile.paths)}),
            ),
            2 => (
                "fs_write",
                json!({"path": pick(&mut self.rng, &self.hostile.paths), "content": "pwned", "create_dirs": true}),
            ),
            3 => (
                "http_fetch",
                json!({"url": pick(&mut self.rng, &self.hostile.urls)}),
            ),
            4 => (
                "shell_exec",
                json!({"command": pick(&mut self.rng, &self.hostile.commands)}),
            ),
            _ => (
                "shell_exec",
                json!({"command": pick(&mut self.rng, &self.hostile.commands),
                       "cwd": pick(&mut self.rng, &self.hostile.paths)}),
            ),
        };
        let mut v = json!({"jsonrpc": "2.0", "id": format!("fz-{id}"), "method": "tools/call",
                           "params": {"name": args.0, "arguments": args.1}});
        if self.rng.random_bool(0.1) {
            // An unknown tool with hostile arguments, and one that pretends
            // to be toolgate's own control methods.
            let name = ["toolgate/approve", "../fs_read", "fs_read\u{0}", "FS_READ"]
                .choose(&mut self.rng)
                .copied()
                .unwrap_or("x");
            v["params"]["name"] = json!(name);
        }
        v.to_string().into_bytes()
    }
}

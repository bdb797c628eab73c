//! The tool registry: every tool toolgate can run, from every source.
//!
//! Reads happen on every call, writes only when tools come and go, so the
//! registry is a copy-on-write snapshot behind an `ArcSwap`: a read is an
//! atomic load with no lock, and a writer builds a new map under a mutex and
//! swaps it in. Each change emits an event (`tool_registered`,
//! `tool_replaced`, `tool_unregistered`) after the swap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::error::CallError;
use crate::events::{Event, EventBus};
use crate::guard::shell_like::ShellLike;
use crate::schema::{CompiledSchema, SchemaError};
use crate::slices::Slice;
use crate::tool::{Source, Tool, ToolDef, ToolName};

/// A tool as the pipeline sees it: definition, compiled schema, runner.
pub struct RegisteredTool {
    /// The definition.
    pub def: ToolDef,
    /// The input schema, compiled once.
    pub schema: CompiledSchema,
    /// What runs it.
    pub runner: Arc<dyn Tool>,
    /// Whether it runs shell commands, and in which arguments, worked out
    /// once from the definition ([`ShellLike::of`]).
    pub shell_like: Option<ShellLike>,
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("def", &self.def)
            .finish_non_exhaustive()
    }
}

/// Why a registry change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Another tool already has the name.
    #[error(
        "tool name `{name}` from {new} collides with the tool of the same name from {existing}"
    )]
    Collision {
        /// The name.
        name: ToolName,
        /// Source of the tool already registered.
        existing: Source,
        /// Source of the tool being added.
        new: Source,
    },
    /// No tool of that name.
    #[error("no tool named `{0}` is registered")]
    NotFound(String),
    /// Replacing a tool owned by another source.
    #[error("tool `{name}` belongs to {owner}, so {by} cannot replace it")]
    NotOwner {
        /// The name.
        name: ToolName,
        /// Its source.
        owner: Source,
        /// Who tried.
        by: Source,
    },
    /// The schema failed to compile.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// An immutable view of all tools at one moment.
#[derive(Debug, Default)]
pub struct Snapshot {
    tools: HashMap<ToolName, Arc<RegisteredTool>>,
}

impl Snapshot {
    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools.get(name)
    }

    /// All tools, sorted by name.
    pub fn sorted(&self) -> Vec<&Arc<RegisteredTool>> {
        let mut v: Vec<_> = self.tools.values().collect();
        v.sort_by(|a, b| a.def.name.cmp(&b.def.name));
        v
    }

    /// Every tool, in no order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools.values()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Names of tools that look like `name`, best first (at most 3): for
    /// "unknown tool" errors, so a model that misspelt a name can recover.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        let lower = name.to_ascii_lowercase();
        let mut scored: Vec<(f64, &str)> = self
            .tools
            .keys()
            .map(|k| {
                let kl = k.as_str().to_ascii_lowercase();
                let mut score = strsim::jaro_winkler(&lower, &kl);
                if !lower.is_empty() && (kl.contains(&lower) || lower.contains(&kl)) {
                    score = score.max(0.9);
                }
                (score, k.as_str())
            })
            .filter(|(s, _)| *s >= 0.8)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(3)
            .map(|(_, n)| n.to_owned())
            .collect()
    }
}

/// The registry. Cloning shares it.
#[derive(Clone)]
pub struct Registry {
    current: Arc<ArcSwap<Snapshot>>,
    write: Arc<Mutex<()>>,
    version: Arc<watch::Sender<u64>>,
    events: EventBus,
    strict_schemas: bool,
}

impl Registry {
    /// An empty registry that reports changes on `events`. With
    /// `strict_schemas`, object schemas are closed (`additionalProperties:
    /// false`) at registration.
    pub fn new(events: EventBus, strict_schemas: bool) -> Self {
        Self {
            current: Arc::new(ArcSwap::from_pointee(Snapshot::default())),
            write: Arc::new(Mutex::new(())),
            version: Arc::new(watch::channel(0).0),
            events,
            strict_schemas,
        }
    }

    /// A receiver that wakes on every change of the tool set. Cheaper than
    /// filtering the event stream for connections that only need to know
    /// "something changed" (MCP `notifications/tools/list_changed`).
    pub fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Tells change subscribers the visible tool set changed for a reason
    /// outside the registry (e.g. a new allowlist); every change inside it
    /// comes here too. Agents' connections hear it as `list_changed`, live
    /// views as [`Slice::Tools`] changing, whatever made the change.
    pub fn touch(&self) {
        self.version.send_modify(|v| *v += 1);
        self.events.changed(Slice::Tools);
    }

    /// How many times the tool set changed: a snapshot taken after
    /// reading it is at least that new (the snapshot is swapped in before
    /// the version moves).
    pub fn version(&self) -> u64 {
        *self.version.borrow()
    }

    /// The current snapshot; lock-free.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Looks a tool up for a call.
    ///
    /// # Errors
    /// [`CallError::UnknownTool`] with close names.
    pub fn resolve(&self, name: &str) -> Result<Arc<RegisteredTool>, CallError> {
        let snap = self.current.load();
        match snap.get(name) {
            Some(t) => Ok(t.clone()),
            None => Err(CallError::UnknownTool {
                name: name.to_owned(),
                suggestions: snap.suggest(name),
            }),
        }
    }

    /// Adds a new tool.
    ///
    /// # Errors
    /// The name is taken (the error names both sources) or the schema is bad.
    pub fn register(&self, def: ToolDef, runner: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let entry = self.compile(def, runner)?;
        self.update(|tools| {
            if let Some(old) = tools.get(&entry.def.name) {
                return Err(RegistryError::Collision {
                    name: entry.def.name.clone(),
                    existing: old.def.source.clone(),
                    new: entry.def.source.clone(),
                });
            }
            let ev = Event::ToolRegistered {
                tool: entry.def.name.clone(),
                source: entry.def.source.clone(),
            };
            tools.insert(entry.def.name.clone(), Arc::new(entry));
            Ok(vec![ev])
        })
    }

    /// Replaces a tool with a new definition from the same source, or adds
    /// it if absent.
    ///
    /// # Errors
    /// The name belongs to another source, or the schema is bad.
    pub fn upsert(&self, def: ToolDef, runner: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let entry = self.compile(def, runner)?;
        self.update(|tools| {
            let name = entry.def.name.clone();
            let source = entry.def.source.clone();
            let ev = match tools.get(&name) {
                Some(old) if old.def.source != source => {
                    return Err(RegistryError::NotOwner {
                        name,
                        owner: old.def.source.clone(),
                        by: source,
                    });
                }
                Some(_) => Event::ToolReplaced {
                    tool: name.clone(),
                    source,
                },
                None => Event::ToolRegistered {
                    tool: name.clone(),
                    source,
                },
            };
            tools.insert(name, Arc::new(entry));
            Ok(vec![ev])
        })
    }

    /// Removes a tool.
    ///
    /// # Errors
    /// No such tool.
    pub fn unregister(&self, name: &str) -> Result<(), RegistryError> {
        self.update(|tools| match tools.remove(name) {
            Some(old) => Ok(vec![Event::ToolUnregistered {
                tool: old.def.name.clone(),
                source: old.def.source.clone(),
            }]),
            None => Err(RegistryError::NotFound(name.to_owned())),
        })
    }

    /// Removes every tool of `source` (an agent left, a server was removed);
    /// returns how many were removed.
    pub fn unregister_source(&self, source: &Source) -> usize {
        let mut removed = 0;
        let _ = self.update(|tools| {
            let gone: Vec<ToolName> = tools
                .values()
                .filter(|t| &t.def.source == source)
                .map(|t| t.def.name.clone())
                .collect();
            removed = gone.len();
            Ok(gone
                .into_iter()
                .filter_map(|n| tools.remove(&n))
                .map(|t| Event::ToolUnregistered {
                    tool: t.def.name.clone(),
                    source: t.def.source.clone(),
                })
                .collect())
        });
        removed
    }

    fn compile(
        &self,
        def: ToolDef,
        runner: Arc<dyn Tool>,
    ) -> Result<RegisteredTool, RegistryError> {
        let schema =
            CompiledSchema::compile(def.name.as_str(), &def.input_schema, self.strict_schemas)?;
        Ok(RegisteredTool {
            shell_like: ShellLike::of(&def),
            def,
            schema,
            runner,
        })
    }

    /// Copy, change, swap; events are emitted after the swap so a listener
    /// that reacts by reading the registry sees the change.
    fn update(
        &self,
        change: impl FnOnce(
            &mut HashMap<ToolName, Arc<RegisteredTool>>,
        ) -> Result<Vec<Event>, RegistryError>,
    ) -> Result<(), RegistryError> {
        let _guard = self.write.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tools = self.current.load().tools.clone();
        let events = change(&mut tools)?;
        if !events.is_empty() {
            self.current.store(Arc::new(Snapshot { tools }));
        }
        drop(_guard);
        if !events.is_empty() {
            self.touch();
        }
        events.into_iter().for_each(|e| self.events.emit(e));
        Ok(())
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.current.load().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{JsonObject, ToolResult};
    use futures::FutureExt;
    use serde_json::json;

    fn def(name: &str, source: Source) -> ToolDef {
        let schema = match json!({"type": "object"}) {
            serde_json::Value::Object(o) => o,
            _ => JsonObject::new(),
        };
        ToolDef::new(ToolName::new(name).unwrap(), "d", schema).with_source(source)
    }

    fn runner() -> Arc<dyn Tool> {
        Arc::new(|_, _: &crate::context::CallContext| async { Ok(ToolResult::text("ok")) }.boxed())
    }

    #[test]
    fn collision_names_both_sources() {
        let r = Registry::new(EventBus::new(), false);
        r.register(def("read", Source::Mcp("a".into())), runner())
            .unwrap();
        let e = r
            .register(def("read", Source::Mcp("b".into())), runner())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "tool name `read` from mcp:b collides with the tool of the same name from mcp:a"
        );
    }

    #[test]
    fn changes_emit_events_and_snapshots_are_stable() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let r = Registry::new(bus, false);
        let before = r.snapshot();
        r.register(def("a", Source::Builtin), runner()).unwrap();
        r.upsert(def("a", Source::Builtin), runner()).unwrap();
        assert!(
            r.upsert(def("a", Source::Agent("x".into())), runner())
                .is_err()
        );
        r.register(def("b", Source::Agent("x".into())), runner())
            .unwrap();
        assert_eq!(r.unregister_source(&Source::Agent("x".into())), 1);
        r.unregister("a").unwrap();
        assert!(before.is_empty(), "an old snapshot never changes");
        let all: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| serde_json::to_value(e).unwrap()["type"].to_string())
            .collect();
        // Each change also announces the tools slice to live views.
        let (announced, kinds): (Vec<String>, Vec<String>) = all
            .into_iter()
            .partition(|k| k.as_str() == "\"state_changed\"");
        assert_eq!(announced.len(), 5);
        assert_eq!(
            kinds,
            [
                "\"tool_registered\"",
                "\"tool_replaced\"",
                "\"tool_registered\"",
                "\"tool_unregistered\"",
                "\"tool_unregistered\""
            ]
        );
    }

    #[test]
    fn unknown_tool_suggests_close_names() {
        let r = Registry::new(EventBus::new(), false);
        for n in ["fs_read", "fs_write", "http_fetch"] {
            r.register(def(n, Source::Builtin), runner()).unwrap();
        }
        match r.resolve("fs_reed") {
            Err(CallError::UnknownTool { suggestions, .. }) => {
                assert_eq!(suggestions[0], "fs_read")
            }
            other => panic!("{other:?}"),
        }
        match r.resolve("zzz") {
            Err(CallError::UnknownTool { suggestions, .. }) => assert!(suggestions.is_empty()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_schema_is_rejected_with_the_tool_name() {
        let r = Registry::new(EventBus::new(), false);
        let mut d = def("bad", Source::Builtin);
        d.input_schema = Arc::new(match json!({"type": "array"}) {
            serde_json::Value::Object(o) => o,
            _ => JsonObject::new(),
        });
        let e = r.register(d, runner()).unwrap_err();
        assert!(e.to_string().contains("`bad`"), "{e}");
    }
}

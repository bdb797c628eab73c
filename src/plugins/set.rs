//! The loaded plugins, and what loading one does to the engine.
//!
//! Contract:
//! - A plugin is a folder of the plugin directory holding `plugin.toml`;
//!   its name is the folder's name, and its tools' source is
//!   `plugin:<name>`.
//! - [`PluginSet::reload`] reads every manifest again. A plugin whose
//!   manifest text is unchanged is left alone; one that changed has its
//!   tools replaced (a tool that is gone is unregistered, the others
//!   upserted), so agents hear one `list_changed` per change; one whose
//!   folder or manifest is gone loses its tools and hooks.
//! - A manifest that does not parse is reported with file, line and reason
//!   in its plugin's view, and loads nothing: its old tools and hooks go
//!   too (a half-edited plugin does not run its old code as if nothing
//!   happened). It never stops the other plugins. A tool whose name is
//!   taken by another source is reported the same way, and the plugin's
//!   other tools load.
//! - A plugin's hooks are in force before its tools are registered, so no
//!   call of a new tool runs unhooked.
//! - Trust: a plugin's tools are `untrusted` unless the config's `[plugins]
//!   trusted` names the plugin; then they take the manifest's `trust`
//!   (default `trusted`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use globset::{Glob, GlobSetBuilder};
use serde::Serialize;
use tokio::sync::watch;

use super::command::{self, CommandTool};
use super::hook::{self, CommandHook};
use super::manifest::{MANIFEST_FILE, Manifest, ManifestError};
use crate::Engine;
use crate::config::servers::ServerSpec;
use crate::pipeline::hooks::Hook;
use crate::tool::{JsonObject, Risk, Source, ToolDef, ToolName, Trust};

/// One plugin as a person sees it in the console's Servers view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    /// The folder's name.
    pub name: String,
    /// The folder.
    pub dir: String,
    /// The manifest's description.
    pub description: String,
    /// Whether the config trusts it.
    pub trusted: bool,
    /// Its tools in the registry, by name.
    pub tools: Vec<String>,
    /// Its hooks.
    pub hooks: Vec<PluginHookView>,
    /// Its MCP servers' names (their tools are `<name>__…`).
    pub servers: Vec<String>,
    /// What is wrong with it (a broken manifest, a name taken).
    pub errors: Vec<String>,
    /// The last time one of its hooks failed, and why (cleared when the
    /// plugin is reloaded).
    pub hook_failure: Option<String>,
    /// When that was (ms since the epoch).
    #[ts(type = "number | null")]
    pub hook_failed_ms: Option<u64>,
    /// When its manifest was last read and applied (ms since the epoch).
    #[ts(type = "number")]
    pub reloaded_ms: u64,
}

/// One hook of a plugin, as a person sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PluginHookView {
    /// `plugin/hook`.
    pub name: String,
    /// `before` or `after`.
    pub when: String,
    /// The tool globs it applies to; empty: every tool.
    pub tools: Vec<String>,
}

/// What one loaded plugin holds.
struct Loaded {
    text: Option<String>,
    tools: BTreeSet<ToolName>,
    hooks: Vec<Arc<dyn Hook>>,
    servers: Vec<ServerSpec>,
    view: PluginView,
}

/// The plugins of one directory, applied to one engine. Cloning shares it.
#[derive(Clone)]
pub struct PluginSet {
    inner: Arc<Mutex<State>>,
    views: Arc<watch::Sender<Vec<PluginView>>>,
    servers: Arc<watch::Sender<Vec<ServerSpec>>>,
}

struct State {
    dir: PathBuf,
    engine: Engine,
    trusted: BTreeSet<String>,
    loaded: BTreeMap<String, Loaded>,
}

impl std::fmt::Debug for PluginSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginSet")
            .field("plugins", &self.views.borrow().len())
            .finish()
    }
}

impl PluginSet {
    /// An empty set for the plugin directory `dir`; nothing is read until
    /// [`Self::reload`].
    pub fn new(dir: PathBuf, engine: Engine, trusted: impl IntoIterator<Item = String>) -> Self {
        Self {
            inner: Arc::new(Mutex::new(State {
                dir,
                engine,
                trusted: trusted.into_iter().collect(),
                loaded: BTreeMap::new(),
            })),
            views: Arc::new(watch::channel(Vec::new()).0),
            servers: Arc::new(watch::channel(Vec::new()).0),
        }
    }

    /// Every plugin's MCP servers; `changed()` fires when they change. The
    /// daemon runs them beside the config's (see
    /// [`crate::upstream::Upstreams::apply_configured`]): started when their
    /// plugin is added, restarted when their entry changes, stopped when it
    /// goes.
    pub fn servers(&self) -> watch::Receiver<Vec<ServerSpec>> {
        self.servers.subscribe()
    }

    /// The plugin directory.
    pub fn dir(&self) -> PathBuf {
        self.lock().dir.clone()
    }

    /// Every plugin, by name; `changed()` fires after each reload.
    pub fn views(&self) -> watch::Receiver<Vec<PluginView>> {
        self.views.subscribe()
    }

    /// Changes which plugins are trusted (the config was reloaded) and
    /// loads again those whose trust changed.
    pub fn set_trusted(&self, trusted: impl IntoIterator<Item = String>) {
        let trusted: BTreeSet<String> = trusted.into_iter().collect();
        {
            let mut state = self.lock();
            if state.trusted == trusted {
                return;
            }
            let changed: Vec<String> = state
                .loaded
                .keys()
                .filter(|n| state.trusted.contains(*n) != trusted.contains(*n))
                .cloned()
                .collect();
            state.trusted = trusted;
            for name in changed {
                // Forget the text so the reload below applies it again.
                if let Some(l) = state.loaded.get_mut(&name) {
                    l.text = None;
                }
            }
        }
        self.reload();
    }

    /// Reads the plugin directory again and applies what changed.
    pub fn reload(&self) {
        let report = Reporter {
            inner: Arc::downgrade(&self.inner),
            views: self.views.clone(),
        };
        let mut state = self.lock();
        let found = scan(&state.dir);
        let gone: Vec<String> = state
            .loaded
            .keys()
            .filter(|n| !found.contains_key(*n))
            .cloned()
            .collect();
        for name in gone {
            state.unload(&name);
            tracing::info!(plugin = %name, "plugin removed");
        }
        for (name, (dir, text)) in found {
            let same = state
                .loaded
                .get(&name)
                .is_some_and(|l| l.text.is_some() && l.text == text);
            if !same {
                state.load(&name, &dir, text, &report);
            }
        }
        let hooks: Vec<Arc<dyn Hook>> = state
            .loaded
            .values()
            .flat_map(|l| l.hooks.iter().cloned())
            .collect();
        state.engine.live_hooks().set(hooks);
        let views = state.views();
        let servers: Vec<ServerSpec> = state
            .loaded
            .values()
            .flat_map(|l| l.servers.iter().cloned())
            .collect();
        state.engine.set_plugins(views.clone());
        drop(state);
        self.views.send_replace(views);
        self.servers.send_if_modified(|s| {
            let changed = *s != servers;
            *s = servers;
            changed
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Puts a hook's failure in its plugin's view, so the console shows it
/// beside the plugin (the call's notes show it on the call).
struct Reporter {
    inner: std::sync::Weak<Mutex<State>>,
    views: Arc<watch::Sender<Vec<PluginView>>>,
}

impl Reporter {
    fn sink(&self, plugin: &str) -> hook::FailureSink {
        let (inner, views, plugin) = (self.inner.clone(), self.views.clone(), plugin.to_owned());
        hook::FailureSink::new(move |text| {
            let Some(inner) = inner.upgrade() else { return };
            let mut state = inner.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(loaded) = state.loaded.get_mut(&plugin) else {
                return;
            };
            loaded.view.hook_failure = Some(text);
            loaded.view.hook_failed_ms = u64::try_from(crate::audit::now_ms()).ok();
            let all = state.views();
            state.engine.set_plugins(all.clone());
            drop(state);
            views.send_replace(all);
        })
    }
}

/// Plugin folders by name: their folder and manifest text (`None`: it
/// could not be read).
fn scan(dir: &Path) -> BTreeMap<String, (PathBuf, Option<String>)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') || !path.is_dir() {
            continue;
        }
        let file = path.join(MANIFEST_FILE);
        if !file.exists() {
            continue; // a folder being made, or not a plugin
        }
        let text = std::fs::read_to_string(&file).ok();
        out.insert(name.to_owned(), (path, text));
    }
    out
}

impl State {
    fn unload(&mut self, name: &str) {
        if self.loaded.remove(name).is_some() {
            self.engine
                .registry()
                .unregister_source(&Source::Plugin(name.into()));
        }
    }

    /// Puts every loaded plugin's hooks in force, with `new` as the hooks
    /// of `name` (in plugin-name order, as [`PluginSet::reload`] does).
    fn publish_hooks(&self, name: &str, new: &[Arc<dyn Hook>]) {
        let mut all: Vec<Arc<dyn Hook>> = Vec::new();
        let mut placed = false;
        for (n, l) in &self.loaded {
            if !placed && n.as_str() > name {
                all.extend(new.iter().cloned());
                placed = true;
            }
            if n != name {
                all.extend(l.hooks.iter().cloned());
            }
        }
        if !placed {
            all.extend(new.iter().cloned());
        }
        self.engine.live_hooks().set(all);
    }

    fn views(&self) -> Vec<PluginView> {
        self.loaded.values().map(|l| l.view.clone()).collect()
    }

    fn load(&mut self, name: &str, dir: &Path, text: Option<String>, report: &Reporter) {
        let file = dir.join(MANIFEST_FILE);
        let trusted = self.trusted.contains(name);
        let mut view = PluginView {
            name: name.to_owned(),
            dir: dir.display().to_string(),
            description: String::new(),
            trusted,
            tools: Vec::new(),
            hooks: Vec::new(),
            servers: Vec::new(),
            errors: Vec::new(),
            hook_failure: None,
            hook_failed_ms: None,
            reloaded_ms: u64::try_from(crate::audit::now_ms()).unwrap_or(0),
        };
        let parsed = match &text {
            Some(t) => Manifest::parse(t, &file)
                .and_then(|m| m.server_specs(t, &file).map(|servers| (m, servers))),
            None => Err(ManifestError::whole(&file, "cannot be read")),
        };
        let (manifest, servers) = match parsed {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("plugin `{name}` not loaded: {e}");
                view.errors.push(e.to_string());
                self.unload(name);
                self.loaded.insert(
                    name.to_owned(),
                    Loaded {
                        text,
                        tools: BTreeSet::new(),
                        hooks: Vec::new(),
                        servers: Vec::new(),
                        view,
                    },
                );
                return;
            }
        };
        view.description = manifest.description.clone();
        // Hooks first: a tool must never be callable before the hooks
        // that guard it are in force.
        let hooks = self.hooks(name, dir, &manifest, &mut view, report);
        self.publish_hooks(name, &hooks);
        let old = self
            .loaded
            .remove(name)
            .map(|l| l.tools)
            .unwrap_or_default();
        let tools = self.register_tools(name, dir, &manifest, trusted, &mut view);
        view.tools.sort();
        for gone in old.difference(&tools) {
            let _ = self.engine.registry().unregister(gone.as_str());
        }
        let servers: Vec<ServerSpec> = servers
            .into_iter()
            .map(|mut spec| {
                // The same rule as for its command tools.
                if !trusted {
                    spec.trust = Trust::Untrusted;
                }
                view.servers.push(spec.name.clone());
                spec
            })
            .collect();
        tracing::info!(plugin = %name, tools = tools.len(), hooks = hooks.len(), servers = servers.len(), "plugin loaded");
        self.loaded.insert(
            name.to_owned(),
            Loaded {
                text,
                tools,
                hooks,
                servers,
                view,
            },
        );
    }

    fn register_tools(
        &self,
        name: &str,
        dir: &Path,
        manifest: &Manifest,
        trusted: bool,
        view: &mut PluginView,
    ) -> BTreeSet<ToolName> {
        let mut names = BTreeSet::new();
        for spec in &manifest.tools {
            let Ok(tool_name) = ToolName::new(&spec.name) else {
                continue; // the manifest check refused it already
            };
            let trust = if trusted {
                spec.trust.unwrap_or(Trust::Trusted)
            } else {
                Trust::Untrusted
            };
            let schema = spec.input_schema.clone().unwrap_or_else(any_object);
            let def = ToolDef::new(tool_name.clone(), spec.description.clone(), schema)
                .with_source(Source::Plugin(name.into()))
                .with_trust(trust)
                .with_risk(spec.risk.unwrap_or(Risk::Medium));
            let runner = CommandTool {
                label: format!("plugin `{name}` tool `{}`", spec.name),
                argv: resolve(dir, &spec.command),
                dir: dir.to_owned(),
                timeout: spec
                    .timeout_ms
                    .map_or(command::DEFAULT_TIMEOUT, Duration::from_millis),
                barrier: self.engine.barrier().clone(),
            };
            match self.engine.registry().upsert(def, Arc::new(runner)) {
                Ok(()) => {
                    names.insert(tool_name);
                    view.tools.push(spec.name.clone());
                }
                Err(e) => view.errors.push(format!("tool `{}`: {e}", spec.name)),
            }
        }
        names
    }

    fn hooks(
        &self,
        name: &str,
        dir: &Path,
        manifest: &Manifest,
        view: &mut PluginView,
        report: &Reporter,
    ) -> Vec<Arc<dyn Hook>> {
        let mut out: Vec<Arc<dyn Hook>> = Vec::new();
        for spec in &manifest.hooks {
            let tools = match &spec.tools {
                None => None,
                Some(globs) => {
                    let mut b = GlobSetBuilder::new();
                    for g in globs {
                        // Checked when the manifest was parsed.
                        if let Ok(glob) = Glob::new(g) {
                            b.add(glob);
                        }
                    }
                    b.build().ok()
                }
            };
            let full = format!("{name}/{}", spec.name);
            view.hooks.push(PluginHookView {
                name: full.clone(),
                when: match spec.when {
                    super::manifest::HookWhen::Before => "before".into(),
                    super::manifest::HookWhen::After => "after".into(),
                },
                tools: spec.tools.clone().unwrap_or_default(),
            });
            out.push(Arc::new(CommandHook {
                name: full,
                when: spec.when,
                argv: resolve(dir, &spec.command),
                dir: dir.to_owned(),
                tools,
                timeout: spec
                    .timeout_ms
                    .map_or(hook::DEFAULT_TIMEOUT, Duration::from_millis),
                barrier: self.engine.barrier().clone(),
                failed: report.sink(name),
            }));
        }
        out
    }
}

/// `command` with a program given relative to the plugin (`./run.py`,
/// `bin/tool`) made absolute; a bare name is looked up on `PATH`.
fn resolve(dir: &Path, command: &[String]) -> Vec<String> {
    let mut argv = command.to_vec();
    if let Some(first) = argv.first_mut()
        && first.contains('/')
        && !Path::new(first.as_str()).is_absolute()
    {
        *first = dir.join(first.as_str()).display().to_string();
    }
    argv
}

fn any_object() -> JsonObject {
    let mut o = JsonObject::new();
    o.insert("type".into(), "object".into());
    o
}

//! The tool-search fixture (`tests/fixtures/search/`): 660 real tool
//! definitions from 39 MCP servers and 116 plain-language queries, loaded
//! into a registry the way upstream servers' tools are registered.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::FutureExt;
use serde::Deserialize;
use serde_json::Value;
use toolgate::events::EventBus;
use toolgate::registry::Registry;
use toolgate::tool::{Annotations, JsonObject, Source, Tool, ToolDef, ToolResult, Trust};

#[derive(Deserialize)]
pub(crate) struct Catalog {
    pub(crate) servers: Vec<Server>,
}

#[derive(Deserialize)]
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) tools: Vec<CatalogTool>,
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CatalogTool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    pub(crate) input_schema: JsonObject,
}

#[derive(Deserialize)]
pub(crate) struct Query {
    pub(crate) query: String,
    pub(crate) expected: String,
}

/// `tests/fixtures/search/<file>` from the repository root.
pub(crate) fn fixture(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/search")
        .join(file)
}

/// A catalog file in the fixture's format.
pub(crate) fn load(path: &Path) -> Catalog {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The queries in the fixture's `file`.
pub(crate) fn queries(file: &str) -> Vec<Query> {
    let text = std::fs::read_to_string(fixture(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The definitions of `catalog`, named and sourced as upstream tools are.
pub(crate) fn defs(catalog: &Catalog) -> Vec<ToolDef> {
    let mut out = Vec::new();
    for server in &catalog.servers {
        for t in &server.tools {
            let name = toolgate::upstream::tool_name(&server.name, &t.name).unwrap();
            let annotations = Annotations {
                title: t.title.clone(),
                ..Annotations::default()
            };
            out.push(
                ToolDef::new(
                    name,
                    t.description.clone().unwrap_or_default(),
                    t.input_schema.clone(),
                )
                .with_source(Source::Mcp(server.name.as_str().into()))
                .with_trust(Trust::External)
                .with_annotations(annotations),
            );
        }
    }
    out
}

/// A runner that is never called: the fixture is only searched.
pub(crate) fn idle() -> Arc<dyn Tool> {
    Arc::new(|_: Value, _: &toolgate::context::CallContext| {
        async { Ok(ToolResult::text("")) }.boxed()
    })
}

/// A registry holding `defs`.
pub(crate) fn registry(defs: Vec<ToolDef>) -> Registry {
    let r = Registry::new(EventBus::new(), false);
    for d in defs {
        r.register(d, idle()).unwrap();
    }
    r
}

/// How `index` ranks the queries of the fixture's `file`: the number of
/// queries, top-1 hits, top-3 hits, and each miss in words.
pub(crate) fn rank(
    index: &toolgate::search::ToolIndex,
    file: &str,
) -> (usize, usize, usize, Vec<String>) {
    let queries = queries(file);
    let (mut top1, mut top3, mut misses) = (0, 0, Vec::new());
    for q in &queries {
        let found: Vec<String> = index
            .search(&q.query, 3, |_| true)
            .into_iter()
            .map(|h| h.tool.def.name.to_string())
            .collect();
        top1 += usize::from(found.first() == Some(&q.expected));
        if found.contains(&q.expected) {
            top3 += 1;
        } else {
            misses.push(format!("{:?} → {found:?}, wanted {}", q.query, q.expected));
        }
    }
    (queries.len(), top1, top3, misses)
}

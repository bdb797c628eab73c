use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};

use super::ToolIndex;
use crate::events::EventBus;
use crate::registry::Registry;
use crate::tool::{Source, Tool, ToolDef, ToolName, ToolResult};

fn runner() -> Arc<dyn Tool> {
    Arc::new(|_, _: &crate::context::CallContext| async { Ok(ToolResult::text("ok")) }.boxed())
}

fn def(name: &str, server: &str, description: &str, params: Value) -> ToolDef {
    let Value::Object(schema) = json!({"type": "object", "properties": params}) else {
        unreachable!()
    };
    ToolDef::new(ToolName::new(name).unwrap(), description, schema)
        .with_source(Source::Mcp(server.into()))
}

fn registry() -> Registry {
    let r = Registry::new(EventBus::new(), false);
    for d in [
        def(
            "github__create_issue",
            "github",
            "Create a new issue in a GitHub repository.",
            json!({"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"}}),
        ),
        def(
            "github__list_pull_requests",
            "github",
            "List pull requests in a repository.",
            json!({"state": {"type": "string", "description": "open, closed or all"}}),
        ),
        def(
            "fs__move_file",
            "fs",
            "Move or rename files and directories.",
            json!({"source": {"type": "string"}, "destination": {"type": "string"}}),
        ),
        def(
            "fs__delete_directory",
            "fs",
            "Removes a folder with everything in it.",
            json!({"path": {"type": "string"}}),
        ),
        def(
            "time__get_current_time",
            "time",
            "Get the current time in a specific timezone.",
            json!({"timezone": {"type": "string", "description": "IANA timezone name"}}),
        ),
    ] {
        r.register(d, runner()).unwrap();
    }
    r
}

fn names(index: &ToolIndex, query: &str) -> Vec<String> {
    index
        .search(query, 5, |_| true)
        .into_iter()
        .map(|h| h.tool.def.name.as_str().to_owned())
        .collect()
}

#[test]
fn words_of_the_name_rank_first() {
    let r = registry();
    let index = ToolIndex::new();
    index.sync(&r);
    assert_eq!(names(&index, "create issue")[0], "github__create_issue");
    assert_eq!(
        names(&index, "pull requests")[0],
        "github__list_pull_requests"
    );
    assert_eq!(
        names(&index, "what time is it in Tokyo")[0],
        "time__get_current_time"
    );
}

#[test]
fn synonyms_reach_a_tool_described_in_other_words() {
    let r = registry();
    let index = ToolIndex::new();
    index.sync(&r);
    assert_eq!(
        names(&index, "open a bug report")[0],
        "github__create_issue"
    );
    assert_eq!(names(&index, "erase a folder")[0], "fs__delete_directory");
}

#[test]
fn nothing_in_common_falls_back_to_name_substrings() {
    let r = registry();
    let index = ToolIndex::new();
    index.sync(&r);
    // "ithu" is no word of any tool, but part of "github".
    assert_eq!(
        names(&index, "ithu"),
        ["github__create_issue", "github__list_pull_requests"]
    );
    assert!(names(&index, "zzzz").is_empty());
}

#[test]
fn the_filter_hides_tools_from_the_results() {
    let r = registry();
    let index = ToolIndex::new();
    index.sync(&r);
    let hits = index.search("create issue", 5, |t| {
        t.def.name.as_str() != "github__create_issue"
    });
    assert!(
        hits.iter()
            .all(|h| h.tool.def.name.as_str() != "github__create_issue")
    );
    let fallback = index.search("ithu", 5, |t| !t.def.name.as_str().starts_with("github"));
    assert!(fallback.is_empty());
}

#[test]
fn the_index_follows_the_registry_tool_by_tool() {
    let r = registry();
    let index = ToolIndex::new();
    index.sync(&r);
    assert_eq!(index.len(), 5);
    r.register(
        def(
            "slack__post_message",
            "slack",
            "Post a message to a Slack channel.",
            json!({}),
        ),
        runner(),
    )
    .unwrap();
    r.unregister("fs__move_file").unwrap();
    index.sync(&r);
    assert_eq!(index.len(), 5);
    assert_eq!(names(&index, "slack message")[0], "slack__post_message");
    assert!(!names(&index, "move file").contains(&"fs__move_file".to_owned()));
    // A replaced definition is indexed with its new words.
    r.upsert(
        def(
            "slack__post_message",
            "slack",
            "Say something in a workspace conversation.",
            json!({}),
        ),
        runner(),
    )
    .unwrap();
    index.sync(&r);
    assert_eq!(
        names(&index, "workspace conversation")[0],
        "slack__post_message"
    );
}

#[test]
fn limit_caps_the_results_and_ties_read_the_same_every_time() {
    let r = Registry::new(EventBus::new(), false);
    for i in 0..30 {
        r.register(
            def(
                &format!("s__tool_{i:02}"),
                "s",
                "Does the same thing.",
                json!({}),
            ),
            runner(),
        )
        .unwrap();
    }
    let index = ToolIndex::new();
    index.sync(&r);
    let first = names(&index, "same thing");
    assert_eq!(first.len(), 5);
    assert_eq!(first[0], "s__tool_00");
    assert_eq!(first, names(&index, "same thing"));
}

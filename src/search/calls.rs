//! The engine's side of search and disclosure: what a client is listed,
//! ranked search for people, and the bridge tools' answers.

use std::sync::Arc;

use serde_json::{Value, json};

use super::bridge::{self, CallArgs, DescribeArgs, SearchArgs};
use super::{CorePinError, CoreView, DeferMode, Hit, Plan};
use crate::cancel::Cancel;
use crate::context::Session;
use crate::engine::{CallReply, Engine};
use crate::error::{ArgProblem, CallError};
use crate::registry::RegisteredTool;
use crate::tool::{ToolDef, ToolName, ToolResult};

impl Engine {
    /// What `client` (its `initialize` name) is listed, and why.
    pub fn plan(&self, client: Option<&str>) -> Plan {
        let d = self.disclosure();
        let chosen = client.and_then(|c| d.chosen(c));
        Plan::make(&d.config(), &d.pins(), client, chosen, self.tools())
    }

    /// Why `tool` is never deferred, for people, or `None`: it may be.
    pub fn core_view(&self, tool: &ToolDef) -> Option<CoreView> {
        let d = self.disclosure();
        super::core_tools::view(&d.config(), &d.pins(), tool)
    }

    /// What `client` is listed, as a person reads it; `connected` says
    /// whether it is connected now.
    pub fn client_view(&self, client: &str, connected: bool) -> super::ClientView {
        let chosen = self.disclosure().chosen(client);
        self.plan(Some(client)).view(client, connected, chosen)
    }

    /// Chooses deferral for `client` from the console (`None` follows the
    /// config again). Every connected agent hears `list_changed` when it
    /// changed, and lists again under the new choice.
    pub fn choose_deferral(&self, client: &str, mode: Option<DeferMode>) -> bool {
        let changed = self.disclosure().choose(client, mode);
        if changed {
            self.registry().touch();
        }
        changed
    }

    /// Pins `tool` as core (never deferred, for every client), or unpins
    /// it. The name need not be registered now: a pin holds for a server
    /// that is down. Like a deferral switch, a change tells every
    /// connected agent `list_changed`, and each lists again.
    ///
    /// # Errors
    /// Pinning more than [`super::core_tools::MAX_PINS`] tools.
    pub fn pin_core(&self, tool: &ToolName, pinned: bool) -> Result<bool, CorePinError> {
        let changed = self.disclosure().pin(tool, pinned)?;
        if changed {
            self.registry().touch();
        }
        Ok(changed)
    }

    /// Counts a connection of the agent client `name` (its `initialize`
    /// name) while the returned guard lives.
    pub fn client_connected(&self, name: &str) -> super::clients::ClientPresence {
        super::clients::ClientPresence::new(
            self.disclosure().clients().clone(),
            self.events().clone(),
            name,
        )
    }

    /// The visible tools matching `query`, best first: the console's and
    /// the CLI's search, through the same index as `tool_search`.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<Hit> {
        let index = self.disclosure().index();
        index.sync(self.registry());
        let filter = self.filter();
        index.search(query, limit, |t| {
            filter.permits(t.def.name.as_str()).is_ok()
        })
    }

    /// Answers `tools/call` of a bridge tool ([`bridge::is_bridge`]). A
    /// search covers the tools any client may have deferred (visible, not
    /// core), whether or not this one defers them now.
    pub async fn bridge_call(
        &self,
        session: &Session,
        name: &str,
        args: Value,
        cancel: &Cancel,
    ) -> Bridged {
        match name {
            bridge::SEARCH => Bridged::Answer(self.tool_search(args)),
            bridge::DESCRIBE => Bridged::Answer(self.tool_describe(args)),
            bridge::CALL => match bridge::args::<CallArgs>(name, args) {
                Err(e) => Bridged::Answer(Err(invalid(name, e))),
                Ok(call) if bridge::is_bridge(&call.name) => Bridged::Answer(Err(invalid(
                    name,
                    format!(
                        "`{}` is a bridge tool: call it directly, not through tool_call",
                        call.name
                    ),
                ))),
                Ok(call) => {
                    let args = Value::Object(call.arguments.unwrap_or_default());
                    let through = through_tool_call(session);
                    Bridged::Call(
                        self.call_cancellable(&through, &call.name, args, cancel)
                            .await,
                    )
                }
            },
            other => Bridged::Answer(Err(CallError::internal(format!(
                "`{other}` is not a bridge tool"
            )))),
        }
    }

    fn tool_search(&self, args: Value) -> Result<ToolResult, CallError> {
        let args: SearchArgs =
            bridge::args(bridge::SEARCH, args).map_err(|e| invalid(bridge::SEARCH, e))?;
        // What the plan would call deferrable (visible, not core), decided
        // per tool: the plan itself estimates every tool's tokens, which
        // a search does not need.
        let d = self.disclosure();
        let (config, pins, filter) = (d.config(), d.pins(), self.filter());
        let searchable = |t: &ToolDef| {
            filter.permits(t.name.as_str()).is_ok()
                && super::core_tools::reason(&config, &pins, t).is_none()
        };
        let index = d.index();
        index.sync(self.registry());
        let hits = index.search(&args.query, args.limit(), |t| searchable(&t.def));
        let searched = self
            .registry()
            .snapshot()
            .iter()
            .filter(|t| searchable(&t.def))
            .count();
        let results: Vec<Value> = hits.iter().map(|h| found(&h.tool.def)).collect();
        Ok(ToolResult::json(json!({
            "query": args.query,
            "results": results,
            "searched": searched,
        })))
    }

    fn tool_describe(&self, args: Value) -> Result<ToolResult, CallError> {
        let args: DescribeArgs =
            bridge::args(bridge::DESCRIBE, args).map_err(|e| invalid(bridge::DESCRIBE, e))?;
        let tool = self.resolve_visible(&args.name)?;
        let d = &tool.def;
        let mut out = json!({
            "name": d.name.as_str(),
            "description": d.description,
            "inputSchema": &*d.input_schema,
            "risk": d.risk,
            "trust": d.trust,
            "source": d.source.label(),
        });
        if let Some(schema) = d.listed_output_schema() {
            out["outputSchema"] = Value::Object(schema.clone());
        }
        Ok(ToolResult::json(out))
    }

    /// The tool called `name` if the caller may see it, refused exactly as
    /// a direct call of it would be: unknown (with close names among the
    /// visible tools only), or hidden by the allow/deny lists.
    pub fn resolve_visible(&self, name: &str) -> Result<Arc<RegisteredTool>, CallError> {
        let tool = self.resolve(name)?;
        self.filter()
            .permits(name)
            .map_err(|reason| CallError::NotAllowed {
                tool: name.to_owned(),
                reason,
            })?;
        Ok(tool)
    }
}

impl Engine {
    /// The tool called `name`, or [`CallError::UnknownTool`] offering close
    /// names among the tools the caller may see only: a hidden tool's name
    /// is never suggested.
    pub(crate) fn resolve(&self, name: &str) -> Result<Arc<RegisteredTool>, CallError> {
        self.registry().resolve(name).map_err(|e| match e {
            CallError::UnknownTool { name, suggestions } => {
                let filter = self.filter();
                CallError::UnknownTool {
                    name,
                    suggestions: suggestions
                        .into_iter()
                        .filter(|s| filter.permits(s).is_ok())
                        .collect(),
                }
            }
            other => other,
        })
    }
}

/// What a bridge tool's call gave.
#[derive(Debug)]
pub enum Bridged {
    /// `tool_search` or `tool_describe`: answered, no governed call ran.
    Answer(Result<ToolResult, CallError>),
    /// `tool_call`: the real tool's governed call.
    Call(CallReply),
}

/// One `tool_search` result: what a model needs to choose.
fn found(d: &ToolDef) -> Value {
    json!({
        "name": d.name.as_str(),
        "description": bridge::one_line(&d.description),
        "source": d.source.label(),
        "risk": d.risk,
    })
}

fn invalid(tool: &str, message: String) -> CallError {
    CallError::InvalidArgs {
        tool: tool.to_owned(),
        problems: vec![ArgProblem {
            pointer: String::new(),
            message,
        }],
    }
}

/// The session with its caller marked as calling through `tool_call`, so
/// the approval request, the live feed and the audit row say so.
fn through_tool_call(session: &Session) -> Session {
    let mut caller = (*session.caller).clone();
    caller.through_tool_call = true;
    Session {
        id: session.id.clone(),
        caller: Arc::new(caller),
        state: session.state.clone(),
    }
}

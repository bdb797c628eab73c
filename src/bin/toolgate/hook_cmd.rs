//! `toolgate hook …`: installing and removing toolgate's hooks in coding
//! agents' settings (through `toolgate::connect`, like the MCP configs).

use clap::Subcommand;

use crate::connect_cmd::PlanArgs;

/// `toolgate hook …`.
#[derive(Subcommand)]
pub(crate) enum HookAction {
    /// Install toolgate's hooks into an agent's settings
    /// (claude-code, cursor, gemini-cli).
    Install {
        /// The agent.
        client: String,
        #[command(flatten)]
        args: PlanArgs,
    },
    /// Remove the hooks `hook install` added, keeping the person's own.
    Remove {
        /// The agent.
        client: String,
        #[command(flatten)]
        args: PlanArgs,
    },
}

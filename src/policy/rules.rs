//! The policy model: presets, the dangerous-name table, argument rules and
//! per-caller profiles, and the one function that turns them into a verdict
//! for a call ([`PolicyConfig::assess`]).
//!
//! The procedure (also in `docs/policy.md`, which people read):
//!
//! 1. **Profile.** The first `[[policy.callers]]` entry matching the caller
//!    (uid, exe, MCP client name, agent id) supplies the preset, threshold,
//!    timeout and extra rules; otherwise the global ones apply. A profile
//!    that grants more than the global policy names `exe` (see
//!    [`CallerMatch`]).
//! 2. **Risk.** The base risk is the `[tools.NAME] risk` override if set,
//!    else the highest of the tool's declared risk, the dangerous-name table
//!    and, for tools not built in, the MCP `destructiveHint` (hints may
//!    raise risk, never lower it).
//!    If any *argument risk rule* matches, the highest of those replaces the
//!    base: the arguments say more about this call than the name does, and
//!    taking the maximum means a harmless-command rule can never hide a
//!    dangerous pattern in the same command.
//! 3. **Verdict rules** are looked at in tiers: the caller profile's rules,
//!    then the config's (`[[policy.rules]]`, `[tools.NAME] policy`), then the
//!    built-in ones. The first tier with a matching verdict rule decides
//!    (deny beats ask beats allow inside a tier). A verdict rule decides
//!    outright; risk is not consulted.
//! 4. Otherwise the preset: risk at or above its deny threshold is denied,
//!    at or above `ask_at` is asked, `external`/`untrusted` tools are asked
//!    unless the preset trusts them, the rest is allowed.
//!
//! Every [`Assessment`] names the rule that decided and says why in words.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use globset::GlobMatcher;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::matcher::ArgCondition;
use crate::context::Caller;
use crate::tool::{Risk, Source, ToolDef, Trust};

/// A policy verdict.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run without asking.
    Allow,
    /// Never run.
    Deny,
    /// Run only if a person approves.
    Ask,
}

impl Verdict {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }

    fn rank(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Ask => 1,
            Self::Deny => 2,
        }
    }
}

/// The snake_case name of a risk.
pub fn risk_str(r: Risk) -> &'static str {
    match r {
        Risk::Low => "low",
        Risk::Medium => "medium",
        Risk::High => "high",
        Risk::Critical => "critical",
    }
}

/// A named permission preset, after PraisonAI's `Agent(approval=...)`
/// presets. Each is a few thresholds; see [`Preset::spec`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// Only low-risk calls run; everything medium and above is denied
    /// without asking; low-risk external tools are asked.
    ReadOnly,
    /// Everything from medium risk up is asked, external tools too.
    Strict,
    /// PraisonAI's default: reading and editing run, high and critical are
    /// asked (deleting, running commands), external tools are asked.
    #[default]
    Default,
    /// Only critical calls are asked (`rm -rf`, writes outside the project,
    /// arbitrary code); external tools run without asking.
    Autonomous,
}

/// What a preset means, as thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetSpec {
    /// Risk at or above this is denied outright (`None`: never).
    pub deny_at: Option<Risk>,
    /// Risk at or above this is asked.
    pub ask_at: Risk,
    /// `external` and `untrusted` tools are asked whatever their risk.
    pub ask_external: bool,
}

impl Preset {
    /// Every preset, for docs and tests.
    pub const ALL: [Preset; 4] = [
        Self::ReadOnly,
        Self::Strict,
        Self::Default,
        Self::Autonomous,
    ];

    /// The thresholds.
    pub fn spec(self) -> PresetSpec {
        match self {
            Self::ReadOnly => PresetSpec {
                deny_at: Some(Risk::Medium),
                ask_at: Risk::Medium,
                ask_external: true,
            },
            Self::Strict => PresetSpec {
                deny_at: None,
                ask_at: Risk::Medium,
                ask_external: true,
            },
            Self::Default => PresetSpec {
                deny_at: None,
                ask_at: Risk::High,
                ask_external: true,
            },
            Self::Autonomous => PresetSpec {
                deny_at: None,
                ask_at: Risk::Critical,
                ask_external: false,
            },
        }
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Strict => "strict",
            Self::Default => "default",
            Self::Autonomous => "autonomous",
        }
    }
}

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Sets the call's risk (the highest matching risk rule wins).
    Risk(Risk),
    /// Decides outright.
    Verdict(Verdict),
}

/// One rule: tool-name glob, optional argument condition, effect.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Where it came from, e.g. `policy.rules[2]`, `default:rm-recursive`.
    pub id: String,
    /// Tool-name glob.
    pub tool: GlobMatcher,
    /// The glob as written.
    pub tool_glob: String,
    /// Argument condition; `None` = any call of the tool.
    pub when: Option<ArgCondition>,
    /// What it does.
    pub effect: Effect,
    /// Approval timeout when this rule makes the call ask.
    pub timeout: Option<Duration>,
    /// Why, in words (shown to people).
    pub reason: Option<String>,
}

impl Rule {
    /// Whether the argument condition holds (the tool glob is matched
    /// once per name, see [`NameFacts`]).
    fn holds(&self, args: &Value) -> bool {
        self.when.as_ref().is_none_or(|c| c.holds(args))
    }

    /// Why a rule's verdict decided a call, as a person reads it whatever
    /// the rule's reason says: the reason is quoted after the rule's own
    /// words, never glued into a sentence ("says allow for builds are
    /// routine").
    fn verdict_reason(&self, v: Verdict) -> String {
        let does = match (&self.when, v) {
            (Some(c), Verdict::Allow) => format!("allows the call when {}", c.describe()),
            (Some(c), Verdict::Ask) => format!("asks a person when {}", c.describe()),
            (Some(c), Verdict::Deny) => format!("refuses the call when {}", c.describe()),
            (None, Verdict::Allow) => format!("allows every `{}` call", self.tool_glob),
            (None, Verdict::Ask) => format!("asks a person about every `{}` call", self.tool_glob),
            (None, Verdict::Deny) => format!("refuses every `{}` call", self.tool_glob),
        };
        match &self.reason {
            Some(r) => format!("rule {} {does} — reason: “{r}”", self.id),
            None => format!("rule {} {does}", self.id),
        }
    }

    fn describe(&self) -> String {
        match (&self.reason, &self.when) {
            (Some(r), Some(c)) => format!("{r} ({})", c.describe()),
            (Some(r), None) => format!("{r} (`{}`)", self.tool_glob),
            (None, Some(c)) => format!("`{}` with {}", self.tool_glob, c.describe()),
            (None, None) => format!("`{}`", self.tool_glob),
        }
    }
}

/// What the policy can tell from a tool's name alone: the rules whose tool
/// glob matches it, per tier, and its dangerous-table entry. The globs
/// (compiled to regexes, dozens of them) depend only on the name while every
/// call of the tool asks again, so this is worked out once per name and a
/// call only tests the argument conditions of the rules naming its tool.
#[derive(Debug)]
struct NameFacts {
    /// Index of the highest-risk table entry matching (the first of equals).
    table_hit: Option<usize>,
    /// Indices into `PolicyConfig::rules`.
    rules: Box<[usize]>,
    /// Indices into `PolicyConfig::default_rules`.
    default_rules: Box<[usize]>,
    /// Per caller profile, indices into its rules.
    profiles: Box<[Box<[usize]>]>,
    /// Whether a rule naming the tool looks at arguments. If none does, the
    /// assessment follows from the definition and the caller profile, and
    /// is kept in `fixed` instead of being worked out (and its reasons
    /// written) on every call.
    args_matter: bool,
    /// Assessments made while arguments did not matter, per profile slot
    /// and definition; a handful at most (a name has one definition at a
    /// time).
    fixed: std::sync::Mutex<Vec<Fixed>>,
}

/// A remembered assessment: caller profile slot, definition, answer.
type Fixed = (Option<usize>, DefKey, Arc<Assessment>);

/// What the policy reads of a tool's definition besides its name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DefKey {
    risk: Risk,
    trust: Trust,
    source: Source,
    destructive: Option<bool>,
}

impl DefKey {
    fn of(tool: &ToolDef) -> Self {
        Self {
            risk: tool.risk,
            trust: tool.trust,
            source: tool.source.clone(),
            destructive: tool.annotations.destructive_hint,
        }
    }
}

impl NameFacts {
    fn fixed(&self) -> std::sync::MutexGuard<'_, Vec<Fixed>> {
        self.fixed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The per-name memo of [`NameFacts`]. Cloning yields an empty memo, so a
/// config built from another with different rules (struct update syntax)
/// never reads stale entries.
#[derive(Debug, Default)]
pub struct NameCache(std::sync::Mutex<std::collections::HashMap<String, Arc<NameFacts>>>);

impl Clone for NameCache {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl NameCache {
    fn get_or(&self, name: &str, make: impl FnOnce() -> NameFacts) -> Arc<NameFacts> {
        let lock = || {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(facts) = lock().get(name) {
            return facts.clone();
        }
        let facts = Arc::new(make());
        let mut map = lock();
        // Tool names are bounded in practice; stay bounded regardless.
        if map.len() >= 65_536 {
            map.clear();
        }
        map.insert(name.to_owned(), facts.clone());
        facts
    }
}

/// Matches a caller. Every field set must match; unset fields match all.
///
/// Not every field is proof of who is calling (see `docs/policy.md`, "Who
/// is calling"): `exe` is the kernel's word, `uid` too but it is the same
/// for every peer of the agent socket, `agent` is held by the connection
/// that registered it first, and `client` is the name a client gives
/// itself. So only a profile naming `exe` may grant more than `[policy]`
/// ([`PolicyConfig::loosening`]; the config refuses the others), and the
/// rest narrow it.
#[derive(Debug, Clone, Default)]
pub struct CallerMatch {
    /// Peer uid.
    pub uid: Option<u32>,
    /// Glob on the client's executable, as the kernel reports it (for a
    /// client behind toolgate's stdio bridge, the bridge's parent's).
    pub exe: Option<GlobMatcher>,
    /// Glob on the MCP client's self-reported name; narrows only.
    pub client: Option<GlobMatcher>,
    /// Glob on the agent id the connection registered.
    pub agent: Option<GlobMatcher>,
}

impl CallerMatch {
    /// Whether `caller` matches. A set field never matches a caller that
    /// lacks the value (an unknown exe is not "any exe").
    pub fn matches(&self, caller: &Caller) -> bool {
        let glob = |g: &Option<GlobMatcher>, v: &Option<String>| match g {
            None => true,
            Some(g) => v.as_deref().is_some_and(|v| g.is_match(v)),
        };
        self.uid.is_none_or(|u| caller.uid == Some(u))
            && glob(&self.exe, &caller.exe)
            && glob(&self.client, &caller.client_name)
            && glob(&self.agent, &caller.agent_id)
    }

    /// Whether it names the client program (`exe`), the one fact of a
    /// caller that can tell one local program from another without taking
    /// its word: what a profile that grants must name.
    pub fn names_program(&self) -> bool {
        self.exe.is_some()
    }
}

/// A per-caller profile (`[[policy.callers]]`).
#[derive(Debug, Clone)]
pub struct CallerPolicy {
    /// `policy.callers[i]`.
    pub id: String,
    /// Which callers.
    pub matcher: CallerMatch,
    /// Preset for them (default: the global one).
    pub preset: Option<Preset>,
    /// Threshold for them (default: the preset's).
    pub ask_at: Option<Risk>,
    /// Approval timeout for them.
    pub timeout: Option<Duration>,
    /// Rules looked at before the global ones.
    pub rules: Vec<Rule>,
}

/// Policy settings: the validated `[policy]` table plus per-tool overrides.
///
/// Set the fields before the first [`assess`](Self::assess), then leave
/// them: answers are memoised per value (`name_cache`), and a live
/// policy is changed by swapping in a new value (`PolicyHandle`), whose
/// memo starts empty, never by editing one in place.
#[derive(Debug, Clone)]
pub struct PolicyConfig {
    /// The preset. Default [`Preset::Default`].
    pub preset: Preset,
    /// Overrides the preset's ask threshold (`policy.ask_at`).
    pub ask_at: Option<Risk>,
    /// How long a person has to answer. Default 120 s: long enough to
    /// switch windows and read the call, short enough that an agent is not
    /// stuck for minutes when nobody is there (timeout = deny).
    pub approval_timeout: Duration,
    /// Per-tool risk overrides (`[tools.NAME] risk`), exact names.
    pub risk: std::collections::HashMap<String, Risk>,
    /// Config rules, in file order (`[tools.NAME] policy` first).
    pub rules: Vec<Rule>,
    /// Built-in argument rules (empty with `default_rules = false`).
    pub default_rules: Vec<Rule>,
    /// The dangerous-name table (empty with `default_rules = false`).
    pub risk_table: Vec<(GlobMatcher, String, Risk)>,
    /// Per-name memo of which rules and table entries can apply.
    pub name_cache: NameCache,
    /// Per-caller profiles, first match wins.
    pub callers: Vec<CallerPolicy>,
    /// Where relative paths in arguments are resolved (the first project
    /// directory); shown in reasons.
    pub project_dirs: Vec<PathBuf>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self::with_defaults(Vec::new())
    }
}

/// The policy's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// The verdict.
    pub verdict: Verdict,
    /// The effective risk.
    pub risk: Risk,
    /// Which rule decided (`policy.rules[0]`, `preset:default`, ...).
    pub rule: String,
    /// Why, in words a person can read.
    pub reason: String,
    /// How long to wait for a person if the verdict is ask.
    pub timeout: Duration,
}

/// The rules that can apply to one call's tool, in tier order (profile,
/// config, built-in): each tier's rules and the indices naming the tool.
struct Tiers<'a> {
    tiers: [(&'a [Rule], &'a [usize]); 3],
}

impl PolicyConfig {
    /// The built-in table and rules, with `project_dirs` for the
    /// "write outside the project" rule.
    pub fn with_defaults(project_dirs: Vec<PathBuf>) -> Self {
        Self {
            preset: Preset::Default,
            ask_at: None,
            approval_timeout: Duration::from_secs(120),
            risk: Default::default(),
            rules: Vec::new(),
            default_rules: super::defaults::default_rules(&project_dirs),
            risk_table: super::defaults::risk_table(),
            name_cache: NameCache::default(),
            callers: Vec::new(),
            project_dirs,
        }
    }

    /// How `profile` would let calls through that `[policy]` alone would
    /// not, in words; `None` when it can only restrict. A profile restricts
    /// when its preset and `ask_at` are no looser than the global ones (it
    /// denies from no higher a risk, asks from no higher a risk, and asks
    /// for external tools if the global preset does) and its rules all
    /// deny: an `allow` or `ask` rule of a profile is looked at before the
    /// config's rules, so it can stand in for a `deny` there, and a `risk`
    /// rule can lower a call's risk. Its approval timeout changes only how
    /// long a person has, so it grants nothing.
    pub fn loosening(&self, profile: &CallerPolicy) -> Option<String> {
        let global = self.preset.spec();
        let preset = profile.preset.unwrap_or(self.preset);
        let spec = preset.spec();
        let ask_global = self.ask_at.unwrap_or(global.ask_at);
        let ask = profile.ask_at.or(self.ask_at).unwrap_or(spec.ask_at);
        let mut why = Vec::new();
        let denies_less = match (spec.deny_at, global.deny_at) {
            (None, Some(_)) => true,
            (Some(p), Some(g)) => p > g,
            (_, None) => false,
        };
        if denies_less {
            why.push(format!(
                "preset {} denies less than [policy]'s {}",
                preset.as_str(),
                self.preset.as_str()
            ));
        }
        if ask > ask_global {
            why.push(format!(
                "it asks only at {} and above where [policy] asks at {}",
                risk_str(ask),
                risk_str(ask_global)
            ));
        }
        if global.ask_external && !spec.ask_external {
            why.push(format!(
                "preset {} runs external tools without asking",
                preset.as_str()
            ));
        }
        if let Some(rule) = profile
            .rules
            .iter()
            .find(|r| r.effect != Effect::Verdict(Verdict::Deny))
        {
            let what = match rule.effect {
                Effect::Verdict(Verdict::Allow) => "allows calls",
                Effect::Verdict(_) => "asks, which comes before a deny of [policy]",
                Effect::Risk(_) => "sets a risk, which can lower it",
            };
            why.push(format!("rule {} {what}", rule.id));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The effective ask threshold for the global profile.
    pub fn effective_ask_at(&self) -> Risk {
        self.ask_at.unwrap_or(self.preset.spec().ask_at)
    }

    /// Decides for one call of `tool` with `args` by `caller`.
    pub fn assess(&self, tool: &ToolDef, args: &Value, caller: &Caller) -> Arc<Assessment> {
        let slot = self.callers.iter().position(|p| p.matcher.matches(caller));
        let facts = self.name_facts(tool.name.as_str());
        if facts.args_matter {
            return Arc::new(self.assess_in(tool, args, slot, &facts));
        }
        let key = DefKey::of(tool);
        let known = facts
            .fixed()
            .iter()
            .find(|(s, k, _)| *s == slot && *k == key)
            .map(|(_, _, a)| a.clone());
        if let Some(a) = known {
            return a;
        }
        let a = Arc::new(self.assess_in(tool, args, slot, &facts));
        let mut fixed = facts.fixed();
        if fixed.len() >= 8 {
            fixed.clear();
        }
        fixed.push((slot, key, a.clone()));
        a
    }

    /// [`Self::assess`] for the caller profile in `slot` (`None`: global).
    fn assess_in(
        &self,
        tool: &ToolDef,
        args: &Value,
        slot: Option<usize>,
        facts: &NameFacts,
    ) -> Assessment {
        let profile = slot.and_then(|i| self.callers.get(i));
        let tiers = Tiers {
            tiers: [
                match (profile, slot.and_then(|i| facts.profiles.get(i))) {
                    (Some(p), Some(ix)) => (&p.rules[..], &ix[..]),
                    _ => (&[][..], &[][..]),
                },
                (&self.rules, &facts.rules),
                (&self.default_rules, &facts.default_rules),
            ],
        };
        let timeout = profile
            .and_then(|p| p.timeout)
            .unwrap_or(self.approval_timeout);
        let (risk, risk_rule, risk_why) = self.risk_of(tool, args, &tiers, facts.table_hit);
        if let Some((rule, v)) = tiers.verdict_rule(args) {
            return Assessment {
                verdict: v,
                risk,
                rule: rule.id.clone(),
                reason: rule.verdict_reason(v),
                timeout: rule.timeout.unwrap_or(timeout),
            };
        }
        let timeout = risk_rule.and_then(|r| r.timeout).unwrap_or(timeout);
        self.assess_by_preset(tool, profile, risk, risk_rule, risk_why, timeout)
    }

    fn assess_by_preset(
        &self,
        tool: &ToolDef,
        profile: Option<&CallerPolicy>,
        risk: Risk,
        risk_rule: Option<&Rule>,
        risk_why: String,
        timeout: Duration,
    ) -> Assessment {
        let preset = profile.and_then(|p| p.preset).unwrap_or(self.preset);
        let spec = preset.spec();
        let ask_at = profile
            .and_then(|p| p.ask_at)
            .or(self.ask_at)
            .unwrap_or(spec.ask_at);
        let whose = match profile {
            Some(p) => format!("preset {} (caller profile {})", preset.as_str(), p.id),
            None => format!("preset {}", preset.as_str()),
        };
        let rule_id = |fallback: String| risk_rule.map_or(fallback, |r| r.id.clone());
        let (verdict, rule, why) = if spec.deny_at.is_some_and(|d| risk >= d) {
            (
                Verdict::Deny,
                rule_id(format!("preset:{}", preset.as_str())),
                format!(
                    "{risk_why}; {whose} refuses {} risk and above",
                    risk_str(spec.deny_at.unwrap_or(risk))
                ),
            )
        } else if risk >= ask_at {
            (
                Verdict::Ask,
                rule_id(format!("preset:{}", preset.as_str())),
                format!(
                    "{risk_why}; {whose} asks a person at {} risk and above",
                    risk_str(ask_at)
                ),
            )
        } else if spec.ask_external && matches!(tool.trust, Trust::External | Trust::Untrusted) {
            (
                Verdict::Ask,
                format!("trust:{}", trust_str(tool.trust)),
                format!(
                    "{}; {whose} asks a person before running such tools",
                    trust_words(tool)
                ),
            )
        } else {
            (
                Verdict::Allow,
                rule_id(format!("preset:{}", preset.as_str())),
                format!(
                    "{risk_why}; {whose} asks a person only at {} risk and above",
                    risk_str(ask_at)
                ),
            )
        };
        Assessment {
            verdict,
            risk,
            rule,
            reason: why,
            timeout,
        }
    }

    /// The call's risk, the rule that set it (if an argument rule did) and
    /// a sentence saying why.
    fn risk_of<'a>(
        &self,
        tool: &ToolDef,
        args: &Value,
        tiers: &Tiers<'a>,
        table_hit: Option<usize>,
    ) -> (Risk, Option<&'a Rule>, String) {
        let name = tool.name.as_str();
        let mut best: Option<(&Rule, Risk)> = None;
        for rule in tiers.all() {
            if let Effect::Risk(r) = rule.effect
                && rule.holds(args)
                && best.is_none_or(|(_, b)| r > b)
            {
                best = Some((rule, r));
            }
        }
        let (base, base_why) = self.base_risk(tool, table_hit);
        if let Some((rule, r)) = best {
            // A rule with a reason says why in those words: the person
            // deciding reads "downloads and runs code", not the regex that
            // found it (the rule's id goes with the request as `rule`, and
            // the effective policy shows its condition). A rule that lowers
            // the risk says from what, so its reason reads as the cause of
            // the lowering, not of the risk that remains.
            let level = if r < base {
                format!("{} risk rather than {}", risk_str(r), risk_str(base))
            } else {
                format!("{} risk", risk_str(r))
            };
            let why = match &rule.reason {
                Some(reason) => format!("`{name}` is {level}: {reason}"),
                None => format!(
                    "`{name}` is {level} by rule {}: {}",
                    rule.id,
                    rule.describe()
                ),
            };
            return (r, Some(rule), why);
        }
        (base, None, base_why)
    }

    /// The memoised [`NameFacts`] of `name`.
    fn name_facts(&self, name: &str) -> Arc<NameFacts> {
        self.name_cache.get_or(name, || {
            let naming = |rules: &[Rule]| -> Box<[usize]> {
                rules
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.tool.is_match(name))
                    .map(|(i, _)| i)
                    .collect()
            };
            let rules = naming(&self.rules);
            let default_rules = naming(&self.default_rules);
            let profiles: Box<[Box<[usize]>]> =
                self.callers.iter().map(|p| naming(&p.rules)).collect();
            let conditional =
                |all: &[Rule], ix: &[usize]| tier_rules((all, ix)).any(|r| r.when.is_some());
            let args_matter = conditional(&self.rules, &rules)
                || conditional(&self.default_rules, &default_rules)
                || self
                    .callers
                    .iter()
                    .zip(profiles.iter())
                    .any(|(p, ix)| conditional(&p.rules, ix));
            NameFacts {
                table_hit: self.table_hit(name),
                rules,
                default_rules,
                profiles,
                args_matter,
                fixed: std::sync::Mutex::new(Vec::new()),
            }
        })
    }

    /// Index of the highest-risk table entry matching `name` (the first of
    /// equals).
    fn table_hit(&self, name: &str) -> Option<usize> {
        let mut best: Option<(usize, Risk)> = None;
        for (i, (glob, _, r)) in self.risk_table.iter().enumerate() {
            if best.is_none_or(|(_, b)| *r > b) && glob.is_match(name) {
                best = Some((i, *r));
            }
        }
        best.map(|(i, _)| i)
    }

    fn base_risk(&self, tool: &ToolDef, table_hit: Option<usize>) -> (Risk, String) {
        let name = tool.name.as_str();
        if let Some(r) = self.risk.get(name) {
            return (
                *r,
                format!("`{name}` is {} risk (tools.{name}.risk)", risk_str(*r)),
            );
        }
        let mut risk = tool.risk;
        let mut why = format!("`{name}` declares {} risk", risk_str(risk));
        if let Some(i) = table_hit
            && let Some((_, text, r)) = self.risk_table.get(i)
            && *r > risk
        {
            risk = *r;
            why = format!(
                "`{name}` is {} risk by the dangerous-tool table (`{text}`)",
                risk_str(risk)
            );
        }
        // A built-in's declared risk already accounts for its own hints
        // (fs_write overwrites, yet is medium inside the roots).
        if tool.source != Source::Builtin
            && tool.annotations.destructive_hint == Some(true)
            && risk < Risk::High
        {
            risk = Risk::High;
            why = format!("`{name}` says it is destructive (destructiveHint), so high risk");
        }
        (risk, why)
    }
}

impl<'a> Tiers<'a> {
    fn all(&self) -> impl Iterator<Item = &'a Rule> + '_ {
        self.tiers.iter().flat_map(|t| tier_rules(*t))
    }

    /// The deciding verdict rule: the first tier with any match; inside it
    /// the strongest verdict, first in file order on ties.
    fn verdict_rule(&self, args: &Value) -> Option<(&'a Rule, Verdict)> {
        for tier in self.tiers {
            let mut best: Option<(&Rule, Verdict)> = None;
            for rule in tier_rules(tier) {
                if let Effect::Verdict(v) = rule.effect
                    && rule.holds(args)
                    && best.is_none_or(|(_, b)| v.rank() > b.rank())
                {
                    best = Some((rule, v));
                }
            }
            if best.is_some() {
                return best;
            }
        }
        None
    }
}

/// The rules of one tier that name the tool, in file order.
fn tier_rules<'a>((rules, naming): (&'a [Rule], &'a [usize])) -> impl Iterator<Item = &'a Rule> {
    naming.iter().filter_map(move |&i| rules.get(i))
}

/// Why a tool's trust makes a preset ask, in words: where its output
/// comes from, not the trust level's name.
fn trust_words(tool: &ToolDef) -> String {
    match tool.trust {
        Trust::Untrusted => format!(
            "`{}` comes from {}, which is not trusted",
            tool.name,
            tool.source.words()
        ),
        _ => {
            let from = match tool.source {
                Source::Builtin => String::new(),
                ref other => format!(" (from {})", other.words()),
            };
            format!(
                "`{}`{from} brings in content from outside this machine, which may carry instructions aimed at the agent",
                tool.name
            )
        }
    }
}

fn trust_str(t: Trust) -> &'static str {
    match t {
        Trust::Builtin => "builtin",
        Trust::Trusted => "trusted",
        Trust::External => "external",
        Trust::Untrusted => "untrusted",
    }
}

/// Compiles a tool-name glob (`*` matches anything; names have no `/`).
///
/// # Errors
/// The glob does not compile.
pub fn tool_glob(glob: &str) -> Result<GlobMatcher, super::matcher::PatternError> {
    globset::Glob::new(glob)
        .map(|g| g.compile_matcher())
        .map_err(|e| super::matcher::PatternError {
            kind: "tool glob",
            pattern: glob.to_owned(),
            message: e.kind().to_string(),
        })
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;

//! The graph LangChain's `create_agent` builds: its nodes in LangChain's
//! order (`model`, `tools`, then each middleware's hooks), and the edges
//! out of them, taken by a write that routes nowhere itself and drawn as
//! LangChain draws them.

use std::collections::HashMap;
use std::sync::Arc;

use super::hooks::{AgentMiddleware, Hooks};
use super::nodes::{AgentLoop, HookKind, Places, Then};
use crate::base::HasMessages;
use crate::graph::{NodeContext, StateGraph, END};

/// The model node and, when there are tools, the tools node, with
/// LangChain's edges out of them.
pub(super) fn add_loop_nodes<S>(
    mut graph: StateGraph<S>,
    lp: &Arc<AgentLoop<S>>,
    return_direct: bool,
) -> StateGraph<S>
where
    S: HasMessages + crate::graph::GraphState,
    S::Update: Send + Sync,
{
    let model_loop = Arc::clone(lp);
    // The model node takes a context for its stream writer (the run's
    // `messages` mode).
    graph = graph.add_node("model", move |state: Arc<S>, ctx: NodeContext| {
        let lp = Arc::clone(&model_loop);
        async move { lp.model_step(state, ctx).await }
    });
    if lp.places.has_tools {
        let tools_loop = Arc::clone(lp);
        graph = graph.add_node("tools", move |state: Arc<S>, ctx: NodeContext| {
            let lp = Arc::clone(&tools_loop);
            async move { lp.tools_step(state, ctx).await }
        });
        let names = lp.tools.names.join(", ");
        if !names.is_empty() {
            graph = graph.with_node_metadata("tools", "__tools", &names);
        }
        // LangChain's tools → model edge is conditional: to the exit too
        // when a tool may end the loop.
        let back = lp.places.loop_entry.clone();
        let mut targets = vec![back.clone()];
        if return_direct || lp.retries_structured() {
            targets.push(lp.places.exit.clone());
        }
        graph = graph.add_fallback_edges_to("tools", move |_: &S| back.clone(), targets);
    }
    let after_model = match &lp.places.after_model {
        Some(hook) => Then::Node(hook.clone()),
        None => Then::Route,
    };
    fallback(graph, "model", &after_model, lp)
}

/// The edge LangChain's graph has out of `node`, for a write that routes
/// nowhere itself: one `update_state(.., as_node)` makes. (The nodes route
/// by `Command` when they run, jumps included.) Drawn as LangChain draws
/// it: solid where LangChain has a static edge (to the next node, and out
/// of the loop when there are no tools), dashed for the model → tools
/// edge, to LangChain's targets: the tools, the exit, and the loop entry
/// only where something may answer the calls first (an `after_model` hook,
/// a `wrap_model_call`, a response format). Without tools, a tool
/// strategy's model goes back to the loop entry or out.
fn fallback<S>(
    graph: StateGraph<S>,
    node: &str,
    then: &Then,
    lp: &Arc<AgentLoop<S>>,
) -> StateGraph<S>
where
    S: HasMessages + crate::graph::GraphState,
    S::Update: Send + Sync,
{
    let places = &lp.places;
    match then {
        Then::Node(next) => graph.add_fallback_edge(node, next.clone()),
        Then::Route if !places.has_tools && !lp.retries_structured() => {
            graph.add_fallback_edge(node, places.exit.clone())
        }
        Then::Route => {
            let targets = if places.has_tools {
                let mut targets = vec!["tools".to_owned(), places.exit.clone()];
                if node != "model" || !lp.wrap_model.is_empty() || lp.structured.is_some() {
                    targets.push(places.loop_entry.clone());
                }
                targets
            } else {
                vec![places.loop_entry.clone(), places.exit.clone()]
            };
            let lp = Arc::clone(lp);
            let route = move |s: &S| lp.route(s.messages(), &[], lp.fresh(s));
            graph.add_fallback_edges_to(node, route, targets)
        }
    }
}

pub(super) fn hook_name<S: crate::AgentState>(
    m: &Arc<dyn AgentMiddleware<S>>,
    kind: HookKind,
) -> String {
    format!("{}.{}", m.name(), kind.suffix())
}

type Chain<S> = Vec<Arc<dyn AgentMiddleware<S>>>;

/// The middleware of each hook, in registration order.
pub(super) struct Chains<S: crate::AgentState> {
    pub(super) before_agent: Chain<S>,
    pub(super) before_model: Chain<S>,
    pub(super) after_model: Chain<S>,
    pub(super) after_agent: Chain<S>,
    pub(super) wrap_model: Chain<S>,
    pub(super) wrap_tool: Chain<S>,
}

impl<S> Chains<S>
where
    S: HasMessages + crate::graph::GraphState,
    S::Update: Send + Sync,
{
    pub(super) fn of(middleware: &[Arc<dyn AgentMiddleware<S>>]) -> Self {
        let with = |hook: Hooks| -> Chain<S> {
            let chosen = middleware.iter().filter(|m| m.hooks().contains(hook));
            chosen.cloned().collect()
        };
        Self {
            before_agent: with(Hooks::BEFORE_AGENT),
            before_model: with(Hooks::BEFORE_MODEL),
            after_model: with(Hooks::AFTER_MODEL),
            after_agent: with(Hooks::AFTER_AGENT),
            wrap_model: with(Hooks::WRAP_MODEL_CALL),
            wrap_tool: with(Hooks::WRAP_TOOL_CALL),
        }
    }

    /// LangChain's loop entry and exit, and where the model goes.
    pub(super) fn places(&self, has_tools: bool) -> Places {
        Places {
            loop_entry: self.before_model.first().map_or_else(
                || "model".to_owned(),
                |m| hook_name(m, HookKind::BeforeModel),
            ),
            exit: self
                .after_agent
                .last()
                .map_or_else(|| END.to_owned(), |m| hook_name(m, HookKind::AfterAgent)),
            after_model: self
                .after_model
                .last()
                .map(|m| hook_name(m, HookKind::AfterModel)),
            has_tools,
        }
    }

    /// One node per hook, added as LangChain adds them (each middleware's
    /// hooks together, in middleware order), each leading to the next hook
    /// of its chain in run order, the last to where the chain ends.
    pub(super) fn add_hooks(
        self,
        mut graph: StateGraph<S>,
        middleware: &[Arc<dyn AgentMiddleware<S>>],
        lp: &Arc<AgentLoop<S>>,
    ) -> StateGraph<S> {
        let thens = self.thens(&lp.places);
        let kinds = [
            HookKind::BeforeAgent,
            HookKind::BeforeModel,
            HookKind::AfterModel,
            HookKind::AfterAgent,
        ];
        for m in middleware {
            for kind in kinds {
                let name = hook_name(m, kind);
                let Some(then) = thens.get(&name).cloned() else {
                    continue;
                };
                graph = fallback(graph, &name, &then, lp);
                // Shared with each step's future: no name copied a step.
                let then = Arc::new(then);
                let (lp, m) = (Arc::clone(lp), Arc::clone(m));
                graph = graph.add_node(name, move |state: Arc<S>, ctx: NodeContext| {
                    let (lp, m, then) = (Arc::clone(&lp), Arc::clone(&m), Arc::clone(&then));
                    async move { lp.hook_step(m.as_ref(), kind, &then, &state, &ctx).await }
                });
            }
        }
        graph
    }

    /// Where each hook node goes when it does not jump, by name: the next
    /// hook of its chain in run order (`after_*` reversed), the last to
    /// where the chain ends.
    fn thens(self, places: &Places) -> HashMap<String, Then> {
        let reversed = |list: Chain<S>| list.into_iter().rev().collect::<Chain<S>>();
        let chains = [
            (
                HookKind::BeforeAgent,
                self.before_agent,
                Then::Node(places.loop_entry.clone()),
            ),
            (
                HookKind::BeforeModel,
                self.before_model,
                Then::Node("model".to_owned()),
            ),
            (
                HookKind::AfterModel,
                reversed(self.after_model),
                Then::Route,
            ),
            (
                HookKind::AfterAgent,
                reversed(self.after_agent),
                Then::Node(END.to_owned()),
            ),
        ];
        let mut thens = HashMap::new();
        for (kind, chain, last) in chains {
            for (k, m) in chain.iter().enumerate() {
                let then = chain
                    .get(k + 1)
                    .map_or_else(|| last.clone(), |n| Then::Node(hook_name(n, kind)));
                thens.insert(hook_name(m, kind), then);
            }
        }
        thens
    }
}

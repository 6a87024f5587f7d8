//! Sub-agents: `spawn_worker` and `delegate` run a worker, a turn of its own session
//! (`PARENT/worker:NAME`, its history started afresh each time) with a system prompt made
//! of its instructions, the parent's providers, budget, channel rules and autonomy, and
//! the parent's tools minus the worker tools and those its definition denies. Its answer
//! is the call's result. It runs inside the parent's tool call, so whatever ends the
//! parent's turn (shutdown, a dropped HTTP turn) drops it, provider call and tools too.
//!
//! # Bounds
//! At most `agent.max_workers` running at once in the process (past it the call fails at
//! once), `agent.worker_max_turns` tool rounds each (then a last request without tools).
//!
//! # Threads
//! Executor thread, inside the parent turn's tool call.

use super::{Agent, AgentError};
use crate::chat::ToolCall;
use crate::config::tool_rules::WORKER_TOOLS;
use crate::store::workers::Worker;
use crate::tools::{Args, CallContext, ToolError, workers};

/// A worker's turn: what `answer_once` needs besides its session.
pub(super) struct Run {
    pub def: Worker,
    /// The parent turn's session: approvals and `send_message` act for its chat.
    pub parent: String,
    /// The worker's own session (its history, its audit rows).
    pub session: String,
}

impl Run {
    pub(super) fn prompt(&self) -> String {
        format!(
            "You are the worker \"{}\": an assistant started you for one task. Do it with your tools and answer with the result only.\n\n{}",
            self.def.name, self.def.instructions
        )
    }

    /// Why a worker may not call `name`, if it may not.
    pub(super) fn refuses(&self, name: &str) -> Option<ToolError> {
        if WORKER_TOOLS.contains(&name) {
            return Some(ToolError::Denied(
                "a worker cannot start or manage workers; do the task yourself".into(),
            ));
        }
        self.def
            .deny
            .split(' ')
            .any(|d| d == name)
            .then(|| ToolError::Denied(format!("{name} is denied to this worker")))
    }
}

/// Takes a running worker's slot; gives it back when dropped (the worker ended or was
/// cancelled with its parent).
struct Slot<'a>(&'a Agent, String);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut r = self.0.running_workers.borrow_mut();
        if let Some(i) = r.iter().position(|n| *n == self.1) {
            r.remove(i);
        }
        publish(self.0, &r);
    }
}

fn publish(agent: &Agent, running: &[String]) {
    let v = format!("{} {}", std::process::id(), running.join(" "));
    let db = &agent.db;
    if let Err(e) = db.deferred_sync(|| db.set_state(crate::status::WORKERS_RUNNING_KEY, &v)) {
        log::warn!("the running workers were not recorded: {e}");
    }
}

impl Agent {
    /// Run `spawn_worker` or `delegate` for the turn of `ctx`.
    pub(super) async fn run_worker(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
    ) -> Result<String, ToolError> {
        let args = Args::parse(&call.arguments)?;
        let (def, task) = if call.name == "delegate" {
            workers::delegated(&self.db, &args)?
        } else {
            let (def, task, save) = workers::spawned(&args, crate::time::now())?;
            if save
                && !self
                    .db
                    .save_worker(&def)
                    .map_err(|e| ToolError::Failed(e.to_string()))?
            {
                return Err(ToolError::Failed(format!(
                    "{} workers are saved already: remove_worker one first",
                    crate::limits::MAX_SAVED_WORKERS
                )));
            }
            (def, task)
        };
        let max = self.cfg().agent.max_workers as usize;
        let label = format!("{}@{}", def.name, ctx.session);
        let _slot = {
            let mut r = self.running_workers.borrow_mut();
            if r.len() >= max || r.contains(&label) {
                return Err(ToolError::Failed(format!(
                    "{} worker(s) running, agent.max_workers is {max}: wait for one to finish or do it yourself",
                    r.len()
                )));
            }
            r.push(label.clone());
            publish(self, &r);
            Slot(self, label)
        };
        let run = Run {
            session: format!("{}/worker:{}", ctx.session, def.name),
            parent: ctx.session.clone(),
            def,
        };
        log::info!("worker {} started in {}", run.def.name, ctx.session);
        let answer = self.worker_turn(&run, &task, ctx).await;
        answer.map_err(|e| ToolError::Failed(format!("the worker failed: {e}")))
    }

    async fn worker_turn(
        &self,
        run: &Run,
        task: &str,
        ctx: &CallContext,
    ) -> Result<String, AgentError> {
        self.check_budget()?;
        let task = crate::text::cap_text(task, crate::limits::MAX_USER_MESSAGE_BYTES);
        let msg = crate::chat::Message::new(crate::chat::Role::User, task.as_str());
        let now = crate::time::now();
        self.db.deferred_sync(|| {
            self.db.reset_session(&run.session, now)?;
            self.db.append_message(&run.session, &msg, now)
        })?;
        let sink = &mut super::streaming::NoSink;
        Box::pin(self.answer(&run.session, ctx.channel, Some(&task), sink, Some(run))).await
    }
}

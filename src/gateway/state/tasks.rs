//! The tasks one session's upstreams created for it (MCP 2025-11-25
//! `tasks`): which upstream holds each, so that only this session is served
//! its `tasks/*` (see `forward/tasks.rs`).

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

/// Most tasks a session remembers (the oldest are forgotten first).
const REMEMBERED: usize = crate::grants::MAX_TASKS;

/// The tasks one session's upstreams created for it: task id → the name of
/// the upstream that holds it.
#[derive(Default)]
pub struct SessionTasks(Mutex<VecDeque<(String, Arc<str>)>>);

impl SessionTasks {
    /// Remembers that upstream `upstream` holds task `id`; returns the task
    /// forgotten to make room, if one was.
    pub fn note(&self, id: &str, upstream: &Arc<str>) -> Option<String> {
        let mut tasks = self.0.lock();
        if tasks.iter().any(|(t, _)| t == id) {
            return None;
        }
        let forgotten = (tasks.len() == REMEMBERED).then(|| tasks.pop_front()).flatten().map(|(t, _)| t);
        tasks.push_back((id.to_owned(), upstream.clone()));
        forgotten
    }

    /// Every task remembered, with its upstream's name (a shared session's
    /// record, written back whole).
    pub fn known(&self) -> Vec<(String, String)> {
        self.0.lock().iter().map(|(t, u)| (t.clone(), u.to_string())).collect()
    }

    /// The upstream that holds task `id`, if this session created it.
    pub fn owner(&self, id: &str) -> Option<Arc<str>> {
        self.0.lock().iter().find(|(t, _)| t == id).map(|(_, u)| u.clone())
    }
}

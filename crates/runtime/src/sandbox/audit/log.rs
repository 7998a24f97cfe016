//! [`AuditLog`]: the events of one call, bounded without dropping a decision.
//!
//! - Decisions that change or refuse something (writes, creates, renames, deletes, network,
//!   environment reads, every denial, limits, traps) are always kept.
//! - Allowed reads (`open-read`, `stat`, `read-dir`, `readlink`) are kept one by one up to
//!   [`MAX_ROUTINE_EVENTS`], then counted per action in one [`AuditEvent::Repeated`].
//! - Every value is cut to a bounded length ([`super::bound`]).
//! - Kept events count against the call's audit budget (`Limits::max_audit_bytes`). The
//!   event that spends it is still kept, followed by a `Limit { limit: "audit" }` event;
//!   from then on [`AuditLog::check`] fails, the gates refuse to act on anything, and the
//!   call ends with [`CallError::AuditLimit`](crate::CallError::AuditLimit).
//! - The log remembers whether the last decision a gate made was a file refusal
//!   (`AuditLog::last_refusal`): a tool error right after one is that refusal's doing.

use std::sync::{Arc, Mutex};

use super::{AuditEvent, Decision, bound};

/// Allowed reads kept one by one per call; later ones are counted per action.
pub(crate) const MAX_ROUTINE_EVENTS: usize = 256;

/// Denials per call logged at `warn` (the default level); later ones at `debug`, so a
/// probing tool cannot flood the host's stderr. Every one of them is in the call's events.
const WARNED_DENIALS: usize = 32;

/// The audit budget of a call is spent: nothing more may happen unaudited, so the call
/// ends. Raised as a trap by the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("audit budget spent: the call's audit events reached {budget} bytes")]
pub(crate) struct AuditSpent {
    pub budget: usize,
}

/// The events of one call; cheap to clone, shared by the hooks that record them.
#[derive(Debug, Clone)]
pub(crate) struct AuditLog {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    events: Vec<AuditEvent>,
    budget: usize,
    used: usize,
    routine: usize,
    /// Index in `events` of each routine action's `Repeated` counter.
    repeated: Vec<usize>,
    /// Index in `events` of the `audit` limit event, once the budget is spent.
    spent_at: Option<usize>,
    /// Events recorded after the budget was spent (by a hook that cannot refuse).
    late: u64,
    denials: usize,
    /// The last capability decision, if it was a file refusal (see `last_refusal`).
    last_refusal: Option<AuditEvent>,
}

impl Default for AuditLog {
    /// A log with the default budget (`Limits::default().max_audit_bytes`).
    fn default() -> AuditLog {
        AuditLog::with_budget(crate::Limits::default().max_audit_bytes)
    }
}

/// How loudly to emit an event through `tracing`.
enum Level {
    Warn,
    /// The last denial logged at `warn`, saying that later ones go to `debug`.
    LastWarn,
    Debug,
}

impl AuditLog {
    /// A log whose kept events may hold about `budget` bytes.
    pub(crate) fn with_budget(budget: usize) -> AuditLog {
        AuditLog {
            inner: Arc::new(Mutex::new(Inner {
                events: Vec::new(),
                budget,
                used: 0,
                routine: 0,
                repeated: Vec::new(),
                spent_at: None,
                late: 0,
                denials: 0,
                last_refusal: None,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `event` (its values cut to a bounded length) and emits it through
    /// `tracing`: denials inside the sandbox at `warn`, a call refused as a whole (bad
    /// arguments, an unknown or refused operation) at `info`, since whoever made the call
    /// is told it as the call's error (printed twice, a refused `tool call` read as two
    /// problems), and the rest at `debug`.
    pub fn record(&self, event: AuditEvent) {
        let event = bound::bounded(event);
        let mut inner = self.lock();
        if matches!(event, AuditEvent::Call { .. }) && event.is_denial() {
            tracing::info!(target: "toolhost::audit", ?event, "refused (the caller is told)");
            inner.note_decision(&event);
            inner.push(event);
            return;
        }
        match inner.level(&event) {
            Level::Warn => tracing::warn!(target: "toolhost::audit", ?event, "denied"),
            Level::LastWarn => tracing::warn!(
                target: "toolhost::audit",
                ?event,
                "denied (further denials of this call are logged at debug level)"
            ),
            Level::Debug => tracing::debug!(target: "toolhost::audit", ?event, "recorded"),
        }
        inner.note_decision(&event);
        inner.push(event);
    }

    /// A gate answered the guest without recording it (an allowed write or stat through
    /// an open descriptor, an error that is not a refusal): a refusal before it is no
    /// longer the last thing the guest heard from the sandbox.
    pub(crate) fn answered(&self) {
        self.lock().last_refusal = None;
    }

    /// The file refusal that was the last capability decision of the call, if the last
    /// one was a file refusal: no gate answered the guest after it (allowed or not, file,
    /// network or environment). A tool error returned then is that refusal's doing (see
    /// `call::attribute_file_denial`). Limits, traps and end-of-call totals are not
    /// decisions the guest acted on and leave it as it is.
    pub(crate) fn last_refusal(&self) -> Option<AuditEvent> {
        self.lock().last_refusal.clone()
    }

    /// `Err` once the audit budget is spent: a gate calls this before it acts, so that
    /// nothing happens that could not be recorded.
    pub fn check(&self) -> Result<(), AuditSpent> {
        let inner = self.lock();
        match inner.spent_at {
            None => Ok(()),
            Some(_) => Err(AuditSpent {
                budget: inner.budget,
            }),
        }
    }

    /// Whether the audit budget is spent (the call must end).
    pub(crate) fn is_spent(&self) -> bool {
        self.check().is_err()
    }

    /// Takes the recorded events, leaving the log empty.
    pub fn take(&self) -> Vec<AuditEvent> {
        let mut inner = self.lock();
        if let (Some(at), late) = (inner.spent_at, inner.late)
            && late > 0
            && let Some(AuditEvent::Limit { detail, .. }) = inner.events.get_mut(at)
        {
            detail.push_str(&format!(
                "; {late} later decisions came from hooks that cannot stop the call and \
                 were logged but not kept"
            ));
        }
        inner.repeated.clear();
        std::mem::take(&mut inner.events)
    }
}

/// An allowed read: collapsible into a count once there are many.
fn routine_action(event: &AuditEvent) -> Option<&str> {
    match event {
        AuditEvent::File {
            action,
            decision: Decision::Allowed,
            ..
        } if matches!(
            action.as_str(),
            "open-read" | "stat" | "read-dir" | "readlink"
        ) =>
        {
            Some(action)
        }
        _ => None,
    }
}

impl Inner {
    fn note_decision(&mut self, event: &AuditEvent) {
        match event {
            AuditEvent::File {
                decision: Decision::Denied,
                ..
            } => self.last_refusal = Some(event.clone()),
            AuditEvent::Limit { .. }
            | AuditEvent::Trap { .. }
            | AuditEvent::Repeated { .. }
            | AuditEvent::Written { .. } => {}
            AuditEvent::File { .. }
            | AuditEvent::Http { .. }
            | AuditEvent::Socket { .. }
            | AuditEvent::NameLookup { .. }
            | AuditEvent::EnvRead { .. }
            | AuditEvent::Call { .. } => self.last_refusal = None,
        }
    }

    fn level(&mut self, event: &AuditEvent) -> Level {
        if !event.is_denial() {
            return Level::Debug;
        }
        self.denials += 1;
        match self.denials {
            n if n < WARNED_DENIALS => Level::Warn,
            n if n == WARNED_DENIALS => Level::LastWarn,
            _ => Level::Debug,
        }
    }

    fn push(&mut self, event: AuditEvent) {
        if self.spent_at.is_some() {
            self.late += 1;
            return;
        }
        if let Some(action) = routine_action(&event) {
            if self.routine >= MAX_ROUTINE_EVENTS {
                self.count_repeat(action);
                return;
            }
            self.routine += 1;
        }
        self.keep(event);
    }

    fn count_repeat(&mut self, action: &str) {
        for &i in &self.repeated {
            if let AuditEvent::Repeated { action: a, count } = &mut self.events[i]
                && a == action
            {
                *count += 1;
                return;
            }
        }
        self.repeated.push(self.events.len());
        self.keep(AuditEvent::Repeated {
            action: action.to_string(),
            count: 1,
        });
    }

    /// Keeps `event`, even past the budget: the event that spends it is a decision that
    /// was already taken. Then marks the budget spent.
    fn keep(&mut self, event: AuditEvent) {
        self.used += bound::size(&event);
        self.events.push(event);
        if self.used >= self.budget {
            self.spent_at = Some(self.events.len());
            self.events.push(AuditEvent::Limit {
                limit: "audit".into(),
                detail: format!(
                    "the call's audit events reached the budget of {} bytes after {} events; \
                     the call was ended so that nothing it did would go unaudited",
                    self.budget,
                    self.events.len()
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(i: usize) -> AuditEvent {
        AuditEvent::File {
            action: "stat".into(),
            path: format!("/data/{i}"),
            decision: Decision::Allowed,
            reason: None,
        }
    }

    fn denied(path: &str) -> AuditEvent {
        AuditEvent::File {
            action: "open-read".into(),
            path: path.into(),
            decision: Decision::Denied,
            reason: Some("not-permitted".into()),
        }
    }

    #[test]
    fn repeated_reads_collapse_and_decisions_after_them_are_kept() {
        let log = AuditLog::default();
        for i in 0..5_000 {
            log.record(stat(i));
        }
        log.record(denied("/data/../secret"));
        log.record(AuditEvent::EnvRead {
            names: vec!["TOKEN".into()],
        });
        assert!(log.check().is_ok());
        let events = log.take();
        assert_eq!(events.len(), MAX_ROUTINE_EVENTS + 3);
        assert_eq!(
            events[MAX_ROUTINE_EVENTS],
            AuditEvent::Repeated {
                action: "stat".into(),
                count: 5_000 - MAX_ROUTINE_EVENTS as u64
            }
        );
        assert_eq!(events[MAX_ROUTINE_EVENTS + 1], denied("/data/../secret"));
        assert!(matches!(
            events[MAX_ROUTINE_EVENTS + 2],
            AuditEvent::EnvRead { .. }
        ));
    }

    #[test]
    fn denials_are_never_collapsed() {
        let log = AuditLog::default();
        for i in 0..2_000 {
            log.record(denied(&format!("/x/{i}")));
        }
        let events = log.take();
        assert_eq!(events.len(), 2_000);
        assert!(events.iter().all(AuditEvent::is_denial));
    }

    #[test]
    fn a_spent_budget_keeps_the_last_decision_and_refuses_more() {
        let log = AuditLog::with_budget(1_000);
        let mut kept = 0;
        while log.check().is_ok() {
            log.record(denied(&format!("/x/{kept}")));
            kept += 1;
        }
        assert_eq!(log.check(), Err(AuditSpent { budget: 1_000 }));
        log.record(denied("/late"));
        let events = log.take();
        assert_eq!(events.len(), kept + 1, "{events:#?}");
        assert_eq!(events[kept - 1], denied(&format!("/x/{}", kept - 1)));
        match &events[kept] {
            AuditEvent::Limit { limit, detail } => {
                assert_eq!(limit, "audit");
                assert!(detail.contains("budget of 1000 bytes"), "{detail}");
                assert!(detail.contains("1 later decisions"), "{detail}");
            }
            other => panic!("expected the audit limit, got {other:?}"),
        }
    }

    #[test]
    fn only_a_refusal_with_no_decision_after_it_is_the_last_refusal() {
        let log = AuditLog::default();
        assert_eq!(log.last_refusal(), None);
        log.record(denied("/etc/passwd"));
        assert_eq!(log.last_refusal(), Some(denied("/etc/passwd")));
        // Limits and totals are not answers the guest acted on.
        log.record(AuditEvent::Written { bytes: 3 });
        assert_eq!(log.last_refusal(), Some(denied("/etc/passwd")));
        // An allowed read after it, a network decision, or an unrecorded answer: the
        // refusal is no longer the last word.
        log.record(stat(1));
        assert_eq!(log.last_refusal(), None);
        log.record(denied("/etc/shadow"));
        log.record(AuditEvent::NameLookup {
            name: "example.com".into(),
            decision: Decision::Denied,
        });
        assert_eq!(log.last_refusal(), None);
        log.record(denied("/etc/shadow"));
        log.answered();
        assert_eq!(log.last_refusal(), None);
    }

    #[test]
    fn long_values_are_cut_when_recorded() {
        let log = AuditLog::default();
        log.record(AuditEvent::NameLookup {
            name: "x".repeat(4 << 20),
            decision: Decision::Denied,
        });
        match &log.take()[0] {
            AuditEvent::NameLookup { name, .. } => {
                assert!(
                    name.len() < 1024 && name.contains("4194304 bytes"),
                    "{name}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

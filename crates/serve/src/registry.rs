//! The run registry: what the HTTP API asks of a backend (submit, list, get, events,
//! decide, cancel, journal, report), and the JSON shapes it answers with. The embedded
//! backend ([`crate::embedded`]) runs in this process with file journals; a PostgreSQL
//! backend (runs in a table, executed by leased workers, events from the journal's rows)
//! implements the same trait.

use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_engine::approval::Decider;
use toolhost_engine::review::Reach;
use toolhost_engine::validate::{Catalog, ValidPlan};
use toolhost_journal::Record;
use utoipa::ToSchema;

use crate::head::Head;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Accepted, waiting for a free slot.
    Queued,
    Running,
    /// Parked until a decision arrives through `POST /v1/runs/{id}/approval`.
    WaitingForApproval,
    /// Parked until a person answers the plan's question (a `human.ask` step) through
    /// `POST /v1/runs/{id}/answer`.
    WaitingForInput,
    /// Every step of the final plan succeeded, or the planner gave its answer.
    Completed,
    /// Stopped for another reason (a budget, an escalation, a broken journal): `stop`
    /// says which.
    Failed,
    /// A person rejected its plan, a step or a question (`stop.reason`
    /// `rejected_by_human`, `stop.what` says why).
    Rejected,
    Cancelled,
    /// Its journal ends without a stop (the process writing it went away), or `suspended`
    /// (the server shut down while it ran or waited, and has not carried it on yet):
    /// `toolhost resume` carries it on.
    Interrupted,
}

impl RunState {
    pub const ALL: [RunState; 9] = [
        RunState::Queued,
        RunState::Running,
        RunState::WaitingForApproval,
        RunState::WaitingForInput,
        RunState::Completed,
        RunState::Failed,
        RunState::Rejected,
        RunState::Cancelled,
        RunState::Interrupted,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RunState::Queued => "queued",
            RunState::Running => "running",
            RunState::WaitingForApproval => "waiting_for_approval",
            RunState::WaitingForInput => "waiting_for_input",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
            RunState::Rejected => "rejected",
            RunState::Cancelled => "cancelled",
            RunState::Interrupted => "interrupted",
        }
    }

    /// Whether the run is over (nothing more is appended to its journal by this server).
    pub fn is_final(self) -> bool {
        !matches!(
            self,
            RunState::Queued
                | RunState::Running
                | RunState::WaitingForApproval
                | RunState::WaitingForInput
        )
    }

    /// The state of a run that stopped for `reason` (a stop record's `reason`).
    pub fn of_stop(reason: &str) -> RunState {
        match reason {
            "completed" | "planner_stopped" => RunState::Completed,
            "cancelled" => RunState::Cancelled,
            "rejected_by_human" => RunState::Rejected,
            // Carried on at the server's next start; until then, as a crash leaves it.
            "suspended" => RunState::Interrupted,
            _ => RunState::Failed,
        }
    }
}

/// Which task to run.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TaskSource {
    /// A task of the server's task directory, `NAME.toml`.
    Name(String),
    /// A task file's text (TOML), run under the server's policy with tools by name.
    Toml(String),
    /// The same task as a JSON object.
    #[schema(value_type = Object)]
    Json(Value),
}

/// Planner settings replacing the task's, as `toolhost run`'s flags do. The provider's URL
/// and API-key variable are not among them: those stay the operator's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    /// plan-then-execute, step-wise or react.
    pub mode: Option<String>,
    /// scripted, openai, anthropic or openai-compatible.
    pub planner: Option<String>,
    pub model: Option<String>,
    /// Replaces the task's `budgets.max_steps`.
    // A u32, documented by its range: utoipa's `int32` format would promise a maximum of
    // 2^31 - 1 that the server does not hold to (schemathesis found it).
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 4294967295.0)]
    pub max_steps: Option<u32>,
}

/// `POST /v1/runs`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"task": {"name": "seed"}}))]
pub struct SubmitRequest {
    pub task: TaskSource,
    #[serde(default)]
    pub overrides: Overrides,
    /// Park the run for a person's decision on each validated plan and each step that
    /// needs approval (`toolhost run --approve`); without it, the policy's `approval`
    /// decides steps and plans run as validated.
    #[serde(default)]
    pub approve: bool,
}

/// A decision (or an answer) waiting for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Pending {
    /// `plan`, `step` or `question`; `unfinished_steps` for a run taken over from a
    /// replica that died while steps that are not idempotent ran (`step.ids`): approve
    /// runs them again, reject records them failed.
    pub subject: String,
    /// The plan revision under review (subject `plan`).
    pub revision: Option<u32>,
    /// The validated plan (subject `plan`).
    #[schema(value_type = Option<Object>)]
    pub plan: Option<Value>,
    /// The step (subject `step`), and why it needs approval.
    #[schema(value_type = Option<Object>)]
    pub step: Option<Value>,
    pub why: Option<String>,
    /// The question (subject `question`), references interpolated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The JSON Schema the answer must match (subject `question`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub schema: Option<Value>,
    /// What each step under review may do (subjects `plan` and `step`), in the order the
    /// steps run: `step`, `capabilities` (one line per grant of its tool), `sensitive`,
    /// `untrusted` (one line per argument untrusted data would reach, with its flow).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub reach: Vec<Reach>,
}

impl Pending {
    /// A plan's review.
    pub fn plan(plan: &toolhost_engine::Plan) -> Pending {
        Pending {
            subject: "plan".into(),
            revision: Some(plan.revision),
            plan: Some(serde_json::to_value(plan).expect("plans serialise")),
            step: None,
            why: None,
            question: None,
            schema: None,
            reach: Vec::new(),
        }
    }

    /// A validated plan's review, with what each step may do.
    pub fn reviewed(plan: &ValidPlan, catalog: &Catalog) -> Pending {
        Pending {
            reach: toolhost_engine::review::plan(plan, catalog),
            ..Pending::plan(&plan.plan)
        }
    }

    /// A step's approval, why it needs one, and what the step may do.
    pub fn step(step: &toolhost_engine::Step, why: &str, catalog: &Catalog) -> Pending {
        Pending {
            subject: "step".into(),
            revision: None,
            plan: None,
            step: Some(serde_json::to_value(step).expect("steps serialise")),
            why: Some(why.to_string()),
            question: None,
            schema: None,
            reach: vec![toolhost_engine::review::step_only(step, catalog)],
        }
    }

    /// A plan's question (a `human.ask` step).
    pub fn question(q: &toolhost_engine::approval::Question<'_>) -> Pending {
        Pending {
            subject: "question".into(),
            revision: None,
            plan: None,
            step: Some(serde_json::to_value(q.step).expect("steps serialise")),
            why: None,
            question: Some(q.text.to_string()),
            schema: Some(q.schema.clone()),
            reach: Vec::new(),
        }
    }
}

impl Pending {
    /// What the run waits for, in words, for its report: "waiting for approval of the
    /// plan r1", "… of step `s1` (why)", "waiting for an answer to step `q`: question".
    pub fn describe(&self) -> String {
        let step = self
            .step
            .as_ref()
            .and_then(|s| s["id"].as_str())
            .unwrap_or("?");
        match self.subject.as_str() {
            "plan" => format!(
                "waiting for approval of the plan r{}",
                self.revision.unwrap_or(0)
            ),
            "question" => format!(
                "waiting for an answer to step `{step}`: {}",
                self.question.as_deref().unwrap_or("")
            ),
            "step" => format!(
                "waiting for approval of step `{step}` ({})",
                self.why.as_deref().unwrap_or("")
            ),
            other => format!("waiting for a decision on the {other}"),
        }
    }
}

/// A person's decision, checked against what is pending ([`Pending::take`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    Approve,
    Reject(String),
    /// The plan to run instead (it is validated again).
    Edit(Box<toolhost_engine::Plan>),
    /// The answer to a question, matching its schema.
    Answer(Value),
}

impl Pending {
    /// Checks `decision` (on run `id`) against this pending subject: what may be decided
    /// on it, and that an edit is a plan and an answer fits the question's schema (422
    /// with every problem when it does not).
    pub fn take(&self, id: &str, decision: Decision) -> Result<Taken, RegistryError> {
        let bad = |why: String| Err(RegistryError::BadRequest(why));
        let question = self.subject == "question";
        match decision.decision {
            DecisionKind::Answer if !question => bad(format!(
                "nothing asks a question: the pending decision is on a {} (approve, reject or edit it at /v1/runs/{id}/approval)",
                self.subject
            )),
            DecisionKind::Answer => {
                let Some(answer) = decision.answer else {
                    return bad("`answer` needs the `answer`".into());
                };
                let schema = self.schema.clone().unwrap_or_default();
                toolhost_engine::ask::check(&schema, &answer)
                    .map_err(|problems| RegistryError::Invalid { problems })?;
                Ok(Taken::Answer(answer))
            }
            DecisionKind::Approve | DecisionKind::Edit if question => bad(format!(
                "the pending decision is a question: answer it with POST /v1/runs/{id}/answer, or reject it to decline"
            )),
            DecisionKind::Approve => Ok(Taken::Approve),
            DecisionKind::Reject => {
                Ok(Taken::Reject(decision.reason.unwrap_or_else(|| {
                    format!("the {} was rejected", self.subject)
                })))
            }
            DecisionKind::Edit if self.subject != "plan" => bad(format!(
                "only a plan can be edited; the pending decision is on a {}",
                self.subject
            )),
            DecisionKind::Edit => {
                let Some(plan) = decision.plan else {
                    return bad("`edit` needs the edited `plan`".into());
                };
                match serde_json::from_value(plan) {
                    Ok(p) => Ok(Taken::Edit(Box::new(p))),
                    Err(e) => bad(format!("`plan` is not a plan: {e}")),
                }
            }
        }
    }
}

/// Steps by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct StepCounts {
    pub succeeded: u64,
    pub failed: u64,
    pub skipped: u64,
}

/// A run as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RunView {
    pub id: String,
    /// `/v1/runs/{id}`.
    pub url: String,
    pub state: RunState,
    pub goal: String,
    /// The name of the token that submitted it (none on a server without tokens, or for a
    /// run found in the state directory that this server did not submit).
    pub submitter: Option<String>,
    /// The stop record: `reason` and its details (`which` budget, `why`, …).
    #[schema(value_type = Option<Object>)]
    pub stop: Option<Value>,
    /// The run's answer: any JSON value (a planner may answer with a number or a string).
    #[schema(value_type = Option<Value>)]
    pub answer: Option<Value>,
    pub steps: StepCounts,
    /// What the run spent: steps, replans, fuel, tokens, cost, planner calls, wall time.
    #[schema(value_type = Option<Object>)]
    pub usage: Option<Value>,
    pub pending: Option<Pending>,
    /// When it started, its planner, mode and budgets (none while it is queued).
    #[serde(flatten)]
    pub head: Head,
}

/// `POST /v1/runs/{id}/approval`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub decision: DecisionKind,
    /// Why (for a rejection; journaled).
    pub reason: Option<String>,
    /// The plan to run instead (`edit`, plans only; validated again).
    #[schema(value_type = Option<Object>)]
    pub plan: Option<Value>,
    /// The answer to a pending question (`answer`), checked against its schema: any JSON
    /// value the schema allows.
    #[serde(default)]
    #[schema(value_type = Option<Value>)]
    pub answer: Option<Value>,
}

/// `POST /v1/runs/{id}/answer`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The answer, a JSON value (of any type) matching the pending question's `schema`.
    #[schema(value_type = Value)]
    pub answer: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Approve,
    Reject,
    Edit,
    /// Answers a pending question (`POST /v1/runs/{id}/answer` says it shorter).
    Answer,
}

/// The records of a run's journal as they are appended.
pub type RecordStream = Pin<Box<dyn Stream<Item = Record> + Send>>;

/// Why a registry call failed; each maps to one HTTP status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("no run `{0}`")]
    NotFound(String),
    #[error("no task `{0}` in the task directory")]
    NoTask(String),
    /// The request is malformed (400).
    #[error("{0}")]
    BadRequest(String),
    /// The task cannot run (422), with every problem found.
    #[error("the task cannot run: {}", .problems.join("; "))]
    Invalid { problems: Vec<String> },
    /// An edited plan fails validation (422), with every problem (each naming its step);
    /// the run still waits for a decision.
    #[error("the edited plan is invalid: {}", .problems.join("; "))]
    InvalidEdit { problems: Vec<String> },
    /// The run is not in a state that allows it (409).
    #[error("{0}")]
    Conflict(String),
    /// Not accepting this now (starting up, shutting down) (503).
    #[error("{0}")]
    Unavailable(String),
    /// The server is at a bound on queued work: try again after `retry_after_s` seconds
    /// (503 with `Retry-After`).
    #[error("overloaded: {reason}")]
    Overloaded { reason: String, retry_after_s: u64 },
    #[error("{0}")]
    Internal(String),
}

/// A backend of runs.
pub trait Registry: Send + Sync {
    /// Accepts a run (its journal exists when this returns). Blocking: it loads the
    /// task's tools.
    fn submit(
        &self,
        request: SubmitRequest,
        submitter: Option<String>,
    ) -> Result<RunView, RegistryError>;
    /// Every run, oldest first (run ids sort by start time).
    fn list(&self) -> Vec<RunView>;
    fn get(&self, id: &str) -> Result<RunView, RegistryError>;
    /// The records with `seq` above `after`, then those appended, until the run ends.
    fn events(&self, id: &str, after: u64) -> Result<RecordStream, RegistryError>;
    /// Answers the run's pending decision, made `by` the caller the server authenticated
    /// (journaled with the decision).
    fn decide(&self, id: &str, decision: Decision, by: Decider) -> Result<RunView, RegistryError>;
    /// The problems `draft` would meet as an edit of the plan run `id` waits on, checked
    /// by the run's holder as the edit itself will be (none: it would be accepted).
    /// Decides and records nothing. 409 when the run waits on no plan. Blocking.
    fn check_plan(
        &self,
        id: &str,
        draft: &toolhost_engine::Plan,
    ) -> Result<Vec<toolhost_engine::Problem>, RegistryError>;
    /// Cancels run `id` on behalf of `by`, whom its stop names.
    fn cancel(&self, id: &str, by: Decider) -> Result<RunView, RegistryError>;
    /// The journal, JSON lines as stored.
    fn journal(&self, id: &str) -> Result<Vec<u8>, RegistryError>;
    /// The HTML report, as `toolhost report` writes it.
    fn report(&self, id: &str) -> Result<String, RegistryError>;
}

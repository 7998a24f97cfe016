//! [`Canned`]: the one planner that answers from a record instead of a model. Three
//! sources fill it with [`Answer`]s, and differ only in how an answer is found:
//! - a task's script ([`Canned::scripted`], in `scripted`): [`Order::ByKind`], the first unused answer
//!   of the kind asked (a revised plan for the failed step, or for any step); none left,
//!   and the planner gives up, as a scripted demo ends;
//! - a cassette (`toolhost_llm::cassette`) and a journal's planner calls
//!   (`toolhost_journal::replay`): [`Order::Recorded`], the next answer in recorded order,
//!   which must be for the request asked (kind and revision); a request that is not, or
//!   one past the end, fails the call naming both, so a run that went another way
//!   escalates rather than answering the wrong question.
//!
//! Each answer is used once, and a resumed run moves past the answers it already got
//! ([`Planner::fast_forward`]).

use std::collections::VecDeque;

use super::planner::{Ask, PlanFuture, PlanRequest, Planner, PlannerError, Reply, Usage};

/// What an answer is for.
#[derive(Debug, Clone, PartialEq)]
pub enum Serves {
    /// Exactly this request kind (for a replan, this failed step).
    Ask(Ask),
    /// A revised plan after any step failed.
    AnyReplan,
    /// A step-wise turn, first asked or repaired.
    AnyTurn,
}

impl Serves {
    fn serves(&self, ask: &Ask) -> bool {
        match self {
            Serves::Ask(a) => a == ask,
            Serves::AnyReplan => matches!(ask, Ask::Replan { .. }),
            Serves::AnyTurn => matches!(ask, Ask::Turn | Ask::TurnRepair),
        }
    }
}

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub serves: Serves,
    /// The request's revision it answers, where the record says (checked in
    /// [`Order::Recorded`]).
    pub revision: Option<u32>,
    /// The reply, or the failure the recorded planner call ended with.
    pub reply: Result<Reply, PlannerError>,
    /// What the call is charged (recorded usage, or a script's per-call usage).
    pub usage: Usage,
}

/// How the answer for a request is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The first unused answer that serves the request; none, and the planner gives up.
    ByKind,
    /// The next answer in order, which must serve the request; otherwise the call fails.
    Recorded,
}

/// Serves canned [`Answer`]s (see the module doc).
#[derive(Debug)]
pub struct Canned {
    name: String,
    /// Names the record in messages: "the script", "cassette `run.jsonl`", …
    source: String,
    order: Order,
    answers: VecDeque<Answer>,
    /// Charged when no answer serves a request ([`Order::ByKind`]'s give-up).
    miss_usage: Usage,
    served: usize,
}

impl Canned {
    /// A planner named `name` serving `answers` from `source` in `order`.
    pub fn new(
        name: impl Into<String>,
        source: impl Into<String>,
        order: Order,
        answers: impl IntoIterator<Item = Answer>,
    ) -> Canned {
        Canned {
            name: name.into(),
            source: source.into(),
            order,
            answers: answers.into_iter().collect(),
            miss_usage: Usage::default(),
            served: 0,
        }
    }

    /// What a request no answer serves is charged.
    pub fn charging_misses(mut self, usage: Usage) -> Canned {
        self.miss_usage = usage;
        self
    }

    /// The position of the answer for `ask`, if there is one to give.
    fn find(&self, ask: &Ask) -> Option<usize> {
        match self.order {
            Order::ByKind => self.answers.iter().position(|a| a.serves.serves(ask)),
            Order::Recorded => (!self.answers.is_empty()).then_some(0),
        }
    }

    fn fail(&self, reason: String) -> PlannerError {
        PlannerError {
            planner: self.name.clone(),
            reason: format!("{}: {reason}", self.source),
            usage: Usage::default(),
            budget: None,
        }
    }

    /// The answer to `ask` at `revision`, used up.
    #[allow(clippy::result_large_err)] // what `Planner::plan` resolves to, unboxed
    fn answer(&mut self, ask: &Ask, revision: u32) -> Result<(Reply, Usage), PlannerError> {
        let Some(i) = self.find(ask) else {
            return match self.order {
                Order::ByKind => Ok((
                    Reply::GiveUp {
                        why: format!("{} has no {}", self.source, wanted(ask)),
                    },
                    self.miss_usage.clone(),
                )),
                Order::Recorded => Err(self.fail(format!(
                    "the run asked for {} (revision {revision}), but the recording holds only {} planner call(s): the run went another way",
                    describe(ask),
                    self.served
                ))),
            };
        };
        let answer = self.answers.remove(i).expect("found above");
        self.served += 1;
        let fits = answer.serves.serves(ask) && answer.revision.is_none_or(|r| r == revision);
        if !fits {
            return Err(self.fail(format!(
                "planner call {} asks for {} (revision {revision}), where the recording answers {}{}: the run went another way",
                self.served,
                describe(ask),
                answer.serves.describe(),
                answer
                    .revision
                    .map(|r| format!(" (revision {r})"))
                    .unwrap_or_default(),
            )));
        }
        answer.reply.map(|reply| (reply, answer.usage))
    }
}

impl Planner for Canned {
    fn name(&self) -> String {
        self.name.clone()
    }

    /// The usage of the answer the request will get: the budgets see exactly what the
    /// recorded (or scripted) run saw.
    fn estimate(&self, req: &PlanRequest) -> Usage {
        self.find(&Ask::of(req))
            .and_then(|i| self.answers.get(i))
            .map_or_else(|| self.miss_usage.clone(), |a| a.usage.clone())
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        let result = self.answer(&Ask::of(req), req.revision);
        Box::pin(async move { result })
    }

    fn fast_forward(&mut self, asked: &[Ask]) {
        for ask in asked {
            if let Some(i) = self.find(ask) {
                self.answers.remove(i);
                self.served += 1;
            }
        }
    }
}

impl Serves {
    fn describe(&self) -> String {
        match self {
            Serves::Ask(a) => describe(a),
            Serves::AnyReplan => "a revised plan after any failure".into(),
            Serves::AnyTurn => "a turn".into(),
        }
    }
}

/// What a script lacks when it has no answer for `ask`.
fn wanted(ask: &Ask) -> String {
    match ask {
        Ask::Plan => "plan".into(),
        Ask::Replan { failed } => format!("revised plan for a failure of step `{failed}`"),
        Ask::Repair => "repaired plan for the validation problems".into(),
        Ask::Turn | Ask::TurnRepair => "more turns".into(),
    }
}

/// A request kind in words, for messages.
pub fn describe(a: &Ask) -> String {
    match a {
        Ask::Plan => "a first plan".into(),
        Ask::Replan { failed } => format!("a revised plan after step `{failed}` failed"),
        Ask::Repair => "a repaired plan".into(),
        Ask::Turn => "a turn".into(),
        Ask::TurnRepair => "a repaired turn".into(),
    }
}

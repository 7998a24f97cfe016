//! Running an extraction step ([`extract`](crate::extract)): admitted under the token and
//! cost budgets, one at a time, through the embedder's extractor; its value checked against
//! the step's schema again (the extractor is not taken at its word), its tokens charged
//! when it is taken in.

use serde::Deserialize;
use serde_json::{Value, json};
use tracing::Instrument;

use super::launch::{Admission, StepTask};
use super::{Done, Progress};
use crate::ask;
use crate::budget::{Budget, StopReason};
use crate::engine::Engine;
use crate::extract::{ExtractError, Extracted, Extraction, Failure};
use crate::plan::Step;
use crate::planner::Usage;
use crate::record::{ModelCall, StepError, StepRecord, StepStatus};
use crate::state::State;
use toolhost_runtime::Limits;

/// The step error kind of a run budget an extraction ran out of (its value names which).
const BUDGET: &str = "budget_exhausted";

impl Engine<'_> {
    /// Whether an extraction may start: when no other one runs (each may spend all the
    /// tokens the run has left, so they run one at a time). Its budgets are checked at
    /// launch, with its input resolved.
    pub(super) fn admit_extraction(&self, x: &Progress<'_>) -> Admission {
        if x.extracting.is_some() {
            Admission::Wait
        } else {
            Admission::Go(Limits::default().fuel(0))
        }
    }

    /// The task that asks the extractor for `step`'s value (`args` resolved, or why they
    /// could not be) and fills in `record`.
    pub(super) fn launch_extraction(
        &mut self,
        step: &Step,
        args: Result<Value, StepError>,
        mut record: StepRecord,
        span: tracing::Span,
        x: &mut Progress<'_>,
        st: &State,
    ) -> StepTask {
        let id = step.id.clone();
        let started = st.started;
        let finish = move |mut record: StepRecord, span: tracing::Span| {
            record.finished_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            Done {
                id,
                record,
                reserved_fuel: 0,
                span,
            }
        };
        let (args, extractor) = match (args, self.extractor.clone()) {
            (Ok(args), Some(e)) => (args, e),
            (Err(e), _) => {
                record.error = Some(e);
                return Box::pin(std::future::ready(finish(record, span)));
            }
            (Ok(_), None) => {
                record.error = Some(StepError {
                    kind: "no_extractor".into(),
                    message: "the run has no extractor to make the extraction".into(),
                    value: None,
                });
                return Box::pin(std::future::ready(finish(record, span)));
            }
        };
        let mut req = Extraction::of(step, x.revision, &args);
        let left = self.remaining(st);
        req.input_tokens = left.input_tokens;
        req.output_tokens = left.output_tokens;
        req.wall_ms = left.wall_ms;
        let estimate = extractor.estimate(&req);
        if let Some(which) = self.config.budgets.before_planner_call(
            &st.spent,
            estimate.input_tokens,
            estimate.output_tokens,
            self.config.prices.get(&estimate.model),
        ) {
            record.error = Some(StepError {
                kind: BUDGET.into(),
                message: format!(
                    "the extraction could use {} input and {} output tokens of model `{}`, more than the run's {which} budget has left",
                    estimate.input_tokens, estimate.output_tokens, estimate.model
                ),
                value: Some(json!(which)),
            });
            return Box::pin(std::future::ready(finish(record, span)));
        }
        x.extracting = Some(step.id.clone());
        let task_span = span.clone();
        Box::pin(
            async move {
                let schema = req.schema.clone();
                let result = extractor.extract(req).await;
                take_value(&mut record, &schema, result);
                finish(record, span)
            }
            .instrument(task_span),
        )
    }

    /// Takes in a finished extraction step: the next one may start, its tokens are
    /// charged, and a budget it ran out of stops the run.
    pub(super) fn extraction_finished(
        &mut self,
        x: &mut Progress<'_>,
        record: &StepRecord,
        st: &mut State,
    ) {
        if !crate::extract::is(record.tool.as_str(), record.operation.as_str()) {
            return;
        }
        if x.extracting.as_ref() == Some(&record.id) {
            x.extracting = None;
        }
        if let Some(which) = record
            .error
            .as_ref()
            .filter(|e| e.kind == BUDGET)
            .and_then(|e| e.value.as_ref())
            .and_then(|v| Budget::deserialize(v).ok())
        {
            x.stop.get_or_insert(StopReason::BudgetExhausted { which });
        }
        let Some(call) = &record.model_call else {
            return;
        };
        self.charge(st, &Usage::from(call));
    }
}

/// Fills `record` with an extraction's value (checked against `schema`) or failure.
fn take_value(record: &mut StepRecord, schema: &Value, result: Result<Extracted, ExtractError>) {
    let call = |usage: &Usage, attempts| ModelCall {
        model: usage.model.clone(),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        attempts,
    };
    match result {
        Ok(Extracted {
            value,
            usage,
            attempts,
        }) => {
            record.model_call = Some(call(&usage, attempts));
            match ask::check(schema, &value) {
                Ok(()) => {
                    record.status = StepStatus::Succeeded;
                    record.output = Some(value);
                }
                Err(problems) => {
                    record.error = Some(StepError {
                        kind: "bad_extraction".into(),
                        message: format!(
                            "the extracted value does not match the output schema: {}",
                            problems.join("; ")
                        ),
                        value: Some(value),
                    });
                }
            }
        }
        Err(e) => {
            record.model_call = Some(call(&e.usage, e.attempts));
            let (kind, value) = match e.failure {
                Failure::Unusable => ("bad_extraction", None),
                Failure::Unavailable => ("extractor_failed", None),
                Failure::Budget(b) => (BUDGET, Some(json!(b))),
            };
            record.error = Some(StepError {
                kind: kind.into(),
                message: e.reason,
                value,
            });
        }
    }
}

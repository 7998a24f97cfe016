//! References between steps: each one names a step of the plan (or one that succeeded in
//! an earlier revision) whose output has a value at its path; whole-value references are
//! then stood in for by a sample of that value's type, so the arguments' types can be
//! checked before anything runs. The plan's `answer` is checked the same way.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{ProblemKind, Validation};
use crate::ask;
use crate::extract;
use crate::plan::{Step, StepId};
use crate::reference::{self, Found, Ref};
use crate::sample::sample;
use toolhost_runtime::convert;
use toolhost_runtime::tool::{Operation, Returns};
use toolhost_runtime::types::WitType;

/// The type of a step's output, if the step's operation is known.
fn output_type(op: &Operation) -> Option<WitType> {
    match &op.returns {
        Returns::Nothing | Returns::Fallible { ok: None, .. } => None,
        Returns::Value(t) | Returns::Fallible { ok: Some(t), .. } => Some(t.clone()),
    }
}

impl<'a> Validation<'a> {
    /// Each reference in the arguments points at another step whose result has a value at
    /// its path; a reference to a step of this plan is a dependency. Returns stand-ins for
    /// the whole-value references, to type-check the arguments with; `None` once a
    /// reference cannot be typed.
    pub(super) fn references(&mut self, step: &Step) -> Option<StandIns> {
        let mut typed = true;
        let mut stand_ins = StandIns::default();
        for Found {
            reference,
            at,
            interpolated,
        } in reference::find_all(&step.args)
        {
            let r = match reference {
                Ok(r) => r,
                Err(why) => {
                    let message = format!("{at}: {why}");
                    self.push(ProblemKind::BadReference, Some(&step.id), message);
                    typed = false;
                    continue;
                }
            };
            match self.referenced_type(step, &r, &at) {
                Some(ty) if !interpolated => stand_ins.add(&r, &at, ty),
                Some(_) => {}
                None => typed = false,
            }
        }
        typed.then_some(stand_ins)
    }

    /// The type of the value `r` (at `at` in `step`'s arguments) refers to, `Some(None)`
    /// for the whole output of a step that returns nothing; `None` when it cannot be typed
    /// (a problem of this reference, pushed here, or of the producing step).
    fn referenced_type(&mut self, step: &Step, r: &Ref, at: &str) -> Option<Option<WitType>> {
        let here = Some(&step.id);
        if r.step == step.id {
            let message = format!("{at}: `{}` refers to the step itself", r.text);
            self.push(ProblemKind::BadReference, here, message);
            return None;
        }
        let Some((producer_tool, producer_op)) = self.producer_of(&r.step) else {
            self.push(
                ProblemKind::BadReference,
                here,
                format!(
                    "{at}: `{}` refers to `{}`, which is not a step of the plan",
                    r.text, r.step
                ),
            );
            return None;
        };
        // A step of this plan runs first; one that succeeded in an earlier revision
        // has its output already, so it adds no dependency.
        if self.by_id.contains_key(&r.step) {
            self.deps
                .entry(step.id.clone())
                .or_default()
                .insert(r.step.clone());
        }
        let out = match self.builtin_type(producer_tool, producer_op, &r.step) {
            Some(builtin) => Some(builtin?),
            None => output_type(self.catalog.operation(producer_tool, producer_op)?),
        };
        match &out {
            None if r.path.is_empty() => Some(None),
            None => {
                let message = format!("{at}: `{}`: step `{}` returns nothing", r.text, r.step);
                self.push(ProblemKind::BadReference, here, message);
                None
            }
            Some(t) => match reference::type_at(t, &r.path) {
                Ok(t) => Some(Some(t.clone())),
                Err(why) => {
                    let message = format!("{at}: `{}`: the output of `{}` {why}", r.text, r.step);
                    self.push(ProblemKind::BadReference, here, message);
                    None
                }
            },
        }
    }

    /// The tool and operation of step `id`: one of this plan, or one that succeeded in an
    /// earlier revision.
    fn producer_of(&self, id: &StepId) -> Option<(&'a str, &'a str)> {
        let prior = self.prior;
        match self.by_id.get(id) {
            Some(&p) => Some((p.tool.as_str(), p.operation.as_str())),
            None => prior.get(id).map(|(t, o)| (t.as_str(), o.as_str())),
        }
    }

    /// The arguments, with stand-ins for references, convert to the operation's WIT
    /// parameter types.
    pub(super) fn arguments(&mut self, step: &Step, op: &Operation, stand_ins: &StandIns) {
        let args = reference::substitute(&step.args, &mut |r| {
            Ok(stand_ins
                .values
                .get(&r.text)
                .cloned()
                .unwrap_or(Value::String(String::new())))
        });
        if let Ok(args) = args
            && let Err(mut e) = convert::args_to_vals(&op.params, &args)
        {
            // A mismatch at (or inside) a reference is told by the referenced type, not
            // by the stand-in value it was checked with.
            let inside = |s: &&StandIn| {
                e.path
                    .strip_prefix(s.path.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
            };
            if let Some(s) = stand_ins.at.iter().find(inside) {
                let wanted = e.reason.split(", got ").next().unwrap_or(&e.reason);
                e.reason = format!("{wanted}, got `{}`, which is {}", s.text, s.ty);
            }
            self.push(
                ProblemKind::BadArguments,
                Some(&step.id),
                format!("bad arguments: {e}"),
            );
        }
    }

    /// The plan's `answer` references steps of the plan (or steps that already
    /// succeeded), at paths their outputs have.
    pub(super) fn answer(&mut self, answer: &Value) {
        for Found { reference, at, .. } in reference::find_all(answer) {
            let at = at.replacen("args", "answer", 1);
            let r = match reference {
                Ok(r) => r,
                Err(why) => {
                    self.push(ProblemKind::BadReference, None, format!("{at}: {why}"));
                    continue;
                }
            };
            let Some((tool, op)) = self.producer_of(&r.step) else {
                self.push(
                    ProblemKind::BadReference,
                    None,
                    format!(
                        "{at}: `{}` refers to `{}`, which is not a step of the plan",
                        r.text, r.step
                    ),
                );
                continue;
            };
            let ty = if let Some(builtin) = self.builtin_type(tool, op, &r.step) {
                builtin
            } else {
                self.catalog.operation(tool, op).and_then(output_type)
            };
            if let Some(t) = ty
                && let Err(why) = reference::type_at(&t, &r.path)
            {
                self.push(
                    ProblemKind::BadReference,
                    None,
                    format!("{at}: `{}`: the output of `{}` {why}", r.text, r.step),
                );
            }
        }
    }

    /// The output type of a built-in step of this plan (a question's answer, an
    /// extraction's value), from its schema: `None` when `tool.op` is not a built-in step,
    /// `Some(None)` when it is one that cannot be typed here (one of an earlier revision,
    /// or a schema that is wrong, a problem of its own).
    fn builtin_type(&self, tool: &str, op: &str, id: &StepId) -> Option<Option<WitType>> {
        let schema: fn(&Value) -> Value = if ask::is(tool, op) {
            ask::answer_schema
        } else if extract::is(tool, op) {
            extract::output_schema
        } else {
            return None;
        };
        Some(
            self.by_id
                .get(id)
                .and_then(|p| ask::answer_type(&schema(&p.args)).ok()),
        )
    }
}

/// What whole-value references are checked with: a sample of each referenced type.
#[derive(Default)]
pub(super) struct StandIns {
    /// By reference text.
    values: BTreeMap<String, Value>,
    /// Where each sits in the arguments, for messages.
    at: Vec<StandIn>,
}

/// A whole-value reference in the arguments.
struct StandIn {
    /// `$.x[0]`, as argument conversion errors name places.
    path: String,
    text: String,
    /// The referenced value's type, as a message shows it (`` `u32` ``, `nothing`).
    ty: String,
}

impl StandIns {
    /// A sample of `ty` (null for nothing) stands in for the whole-value reference `r`.
    fn add(&mut self, r: &Ref, at: &str, ty: Option<WitType>) {
        let v = ty
            .as_ref()
            .map_or(Value::Null, |t| convert::to_json(t, &sample(t)));
        self.values.insert(r.text.clone(), v);
        self.at.push(StandIn {
            path: format!("${}", at.strip_prefix("args").unwrap_or(at)),
            text: r.text.clone(),
            ty: ty.map_or_else(|| "nothing".to_string(), |t| format!("`{}`", t.wit_name())),
        });
    }
}

//! The planner–executor engine.
//!
//! Data flows: goal → planner → [`Plan`] → [`validate`] (against the [`Catalog`] of tools
//! and their policy) → [`ValidPlan`] → executor → results written back → replan on
//! failure.
//!
//! - [`plan`]: the plan artifact and its published JSON Schema.
//! - [`reference`]: `{"$ref": "s1.output.x"}` and `${s1.output.x}` in arguments.
//! - [`sample`]: stand-in values used to type-check references.
//! - [`validate`]: every problem of a plan, before any step runs.

pub mod plan;
pub mod reference;
mod sample;
pub mod validate;

pub use self::plan::{Expect, Plan, Step, StepId, plan_schema};
pub use self::validate::{Catalog, Entry, Problem, ProblemKind, ValidPlan, validate};

//! [`RunLimits`]: the most an inline task may ask of the server (`[run_limits]` in
//! `serve.toml`). A submitter writes an inline task's `max_parallel` and `[budgets]`; the
//! operator's limits cap them, so no task can ask for more of the host than the operator
//! allowed. A value above its limit is refused (422, naming the value and the limit); a
//! value the task leaves out takes the lower of `toolhost run`'s default and the limit.

use serde::Deserialize;
use toolhost_engine::budget::Budgets;

/// What one inline task may ask for. `RunLimits::default()` is `toolhost run`'s defaults:
/// - `max_parallel`: 4 steps at once;
/// - `budgets`: [`Budgets::default`] (20 steps, 2 replans, 60 s of wall time, 10^10 fuel,
///   100,000 input and 20,000 output tokens, $1.00, 2 plan repairs, waits for a person
///   unbounded).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RunLimits {
    pub max_parallel: usize,
    pub budgets: Budgets,
}

impl Default for RunLimits {
    fn default() -> RunLimits {
        RunLimits {
            max_parallel: 4,
            budgets: Budgets::default(),
        }
    }
}

impl RunLimits {
    /// Checks an inline task's `max_parallel` and `[budgets]` against the limits, filling
    /// in each one it leaves out with the lower of the default and the limit; returns every
    /// value above its limit.
    pub fn apply(&self, task: &mut toml::Table) -> Vec<String> {
        let mut problems = Vec::new();
        let defaults = RunLimits::default();
        let parallel = [(
            "max_parallel",
            as_f64(self.max_parallel),
            as_f64(defaults.max_parallel),
        )];
        cap(task, "", &parallel, &mut problems);
        let budgets = match task
            .entry("budgets")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(t) => t,
            // Not a table: the task's own parsing says so.
            _ => return problems,
        };
        cap(
            budgets,
            "budgets.",
            &budget_limits(&self.budgets, &defaults.budgets),
            &mut problems,
        );
        problems
    }

    /// Checks a submission's `overrides.max_steps`.
    pub fn check_max_steps(&self, n: u32) -> Result<(), String> {
        if n > self.budgets.max_steps {
            return Err(above("overrides.max_steps", n, self.budgets.max_steps));
        }
        Ok(())
    }
}

/// Each numeric budget: its key, its limit, and its default (`max_wait_ms`, unbounded by
/// default, is capped only when the operator sets it).
fn budget_limits(limit: &Budgets, default: &Budgets) -> Vec<(&'static str, f64, f64)> {
    let mut keys = vec![
        (
            "max_steps",
            limit.max_steps.into(),
            default.max_steps.into(),
        ),
        (
            "max_replans",
            limit.max_replans.into(),
            default.max_replans.into(),
        ),
        (
            "max_wall_ms",
            as_f64(limit.max_wall_ms),
            as_f64(default.max_wall_ms),
        ),
        ("max_fuel", as_f64(limit.max_fuel), as_f64(default.max_fuel)),
        (
            "max_input_tokens",
            as_f64(limit.max_input_tokens),
            as_f64(default.max_input_tokens),
        ),
        (
            "max_output_tokens",
            as_f64(limit.max_output_tokens),
            as_f64(default.max_output_tokens),
        ),
        ("max_cost_usd", limit.max_cost_usd, default.max_cost_usd),
        (
            "max_plan_repairs",
            limit.max_plan_repairs.into(),
            default.max_plan_repairs.into(),
        ),
    ];
    if let Some(ms) = limit.max_wait_ms {
        keys.push(("max_wait_ms", as_f64(ms), f64::INFINITY));
    }
    keys
}

/// Numbers compared as `f64`: exact for every limit below 2^53, and a value past that is
/// past any limit anyway.
fn as_f64<T: TryInto<u32> + Copy + std::fmt::Display>(n: T) -> f64 {
    match n.try_into() {
        Ok(small) => f64::from(small),
        Err(_) => n.to_string().parse().unwrap_or(f64::INFINITY),
    }
}

fn cap(
    table: &mut toml::Table,
    prefix: &str,
    limits: &[(&'static str, f64, f64)],
    problems: &mut Vec<String>,
) {
    for &(key, limit, default) in limits {
        let asked = match table.get(key) {
            None => {
                let value = default.min(limit);
                table.insert(key.into(), number(key, value));
                continue;
            }
            Some(toml::Value::Integer(n)) => *n as f64,
            Some(toml::Value::Float(x)) => *x,
            // Not a number: the task's own parsing says so.
            Some(_) => continue,
        };
        if asked > limit {
            problems.push(above(&format!("{prefix}{key}"), asked, limit));
        }
    }
}

/// `value` as `key` is written: a float for the cost, integers for the rest.
fn number(key: &str, value: f64) -> toml::Value {
    if key == "max_cost_usd" {
        toml::Value::Float(value)
    } else {
        toml::Value::Integer(value as i64)
    }
}

fn above(key: &str, asked: impl std::fmt::Display, limit: impl std::fmt::Display) -> String {
    format!(
        "`{key}` {asked} is above this server's limit of {limit} (`run_limits` in its configuration)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_above_the_limits_are_named_and_missing_ones_are_capped() {
        let limits: RunLimits =
            toml::from_str("max_parallel = 2\n[budgets]\nmax_steps = 5\n").unwrap();
        let mut task: toml::Table =
            toml::from_str("max_parallel = 30\n[budgets]\nmax_wall_ms = 1000\n").unwrap();
        let problems = limits.apply(&mut task);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("`max_parallel` 30 is above this server's limit of 2"),
            "{problems:?}"
        );
        let budgets = task["budgets"].as_table().unwrap();
        assert_eq!(budgets["max_steps"].as_integer(), Some(5), "capped default");
        assert_eq!(budgets["max_wall_ms"].as_integer(), Some(1000), "kept");
        assert_eq!(budgets["max_cost_usd"].as_float(), Some(1.0));
        assert!(limits.check_max_steps(6).is_err());
        assert!(
            toml::from_str::<RunLimits>("max_paralel = 2")
                .unwrap_err()
                .to_string()
                .contains("max_paralel")
        );
    }
}

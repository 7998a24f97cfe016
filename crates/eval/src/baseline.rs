//! Baselines: each metric's value from a past run with a tolerance band, and the gate that
//! names every metric the current run took out of its band.
//!
//! ```json
//! {"metrics": {"success_rate": {"value": 0.93, "min": 0.9},
//!              "steps_per_task": {"value": 3.1, "max": 3.5}}}
//! ```
//!
//! [`Baseline::of`] writes the default bands (see [`default_band`]); a metric the file
//! does not name is not gated.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::result::{METRICS, Metrics};

/// One metric's baseline value and the band the current value must stay in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    pub value: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// A baseline: bands by metric name, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub metrics: Vec<(String, Band)>,
}

/// Why a baseline file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("baseline `{path}`: {reason}")]
pub struct BaselineError {
    pub path: String,
    pub reason: String,
}

/// A metric outside its band.
#[derive(Debug, Clone, PartialEq)]
pub struct Breach {
    pub metric: String,
    pub value: f64,
    pub band: Band,
}

impl std::fmt::Display for Breach {
    /// `success_rate 0.80 is below its band's minimum 0.90 (baseline 0.93)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (side, limit) = match (self.band.min, self.band.max) {
            (Some(min), _) if self.value < min => ("below its band's minimum", min),
            (_, Some(max)) => ("above its band's maximum", max),
            (Some(min), None) => ("below its band's minimum", min),
            (None, None) => ("outside its band", self.band.value),
        };
        let m = self.metric.as_str();
        write!(
            f,
            "{m} {} is {side} {} (baseline {})",
            shown(m, self.value),
            shown(m, limit),
            shown(m, self.band.value)
        )
    }
}

/// A value of `metric` for people: whole numbers for the counts (`replans`, tokens), two
/// decimals otherwise ([`num`]).
pub fn shown(metric: &str, x: f64) -> String {
    match metric {
        "replans" | "input_tokens" | "output_tokens" if x.fract() == 0.0 => format!("{x:.0}"),
        _ => num(x),
    }
}

/// Two decimals, more for small non-zero values.
pub fn num(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("{x:.6}")
    } else {
        format!("{x:.2}")
    }
}

/// The band `--write-baseline` gives a metric at `value`:
/// - rates where higher is better (`success_rate`, `tool_success_rate`,
///   `replan_recovery_rate`): at least `value - 0.05`;
/// - `escalation_rate`: within ±0.05 (escalating more is a regression, escalating less
///   may be a loop where an escalation was due);
/// - `evaluator_disagreement_rate`: at most `value + 0.05`;
/// - counts and cost (`steps_per_task`, `replans`, tokens, `cost_usd`): at most 20 % more
///   (and at least `value + 1` for `replans`);
/// - wall times (`wall_ms_p50`, `wall_ms_total`): at most 3× plus 100 ms, as machines vary.
pub fn default_band(metric: &str, value: f64) -> Band {
    let (min, max) = match metric {
        "success_rate" | "tool_success_rate" | "replan_recovery_rate" => {
            (Some((value - 0.05).max(0.0)), None)
        }
        "escalation_rate" => (Some((value - 0.05).max(0.0)), Some((value + 0.05).min(1.0))),
        "evaluator_disagreement_rate" => (None, Some((value + 0.05).min(1.0))),
        "replans" => (None, Some((value * 1.2).max(value + 1.0))),
        "wall_ms_p50" | "wall_ms_total" => (None, Some(value * 3.0 + 100.0)),
        _ => (None, Some(value * 1.2)),
    };
    let round = |x: f64| (x * 1e6).round() / 1e6;
    Band {
        value: round(value),
        min: min.map(round),
        max: max.map(round),
    }
}

impl Baseline {
    /// The current run's values with the default bands.
    pub fn of(m: &Metrics) -> Baseline {
        Baseline {
            metrics: METRICS
                .iter()
                .map(|name| {
                    (
                        name.to_string(),
                        default_band(name, m.get(name).unwrap_or(0.0)),
                    )
                })
                .collect(),
        }
    }

    pub fn to_json(&self) -> Value {
        let metrics: Map<String, Value> = self
            .metrics
            .iter()
            .map(|(k, b)| (k.clone(), serde_json::to_value(b).expect("JSON")))
            .collect();
        serde_json::json!({ "metrics": metrics })
    }

    /// Reads a baseline file, refusing an unknown metric, a band without `min` or `max`,
    /// and a `min` above its `max`.
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let err = |reason: String| BaselineError {
            path: path.display().to_string(),
            reason,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| err(format!("cannot read it: {e}")))?;
        Baseline::parse(&text).map_err(err)
    }

    /// Parses a baseline's JSON text.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Some(obj) = doc.as_object() else {
            return Err("expected an object {\"metrics\": {…}}".into());
        };
        if let Some(k) = obj.keys().find(|k| *k != "metrics") {
            return Err(format!("unknown key `{k}`; a baseline has only `metrics`"));
        }
        let Some(metrics) = obj.get("metrics").and_then(Value::as_object) else {
            return Err("`metrics` is missing or not an object".into());
        };
        let mut out = Vec::new();
        for (name, v) in metrics {
            if !METRICS.contains(&name.as_str()) {
                return Err(format!(
                    "unknown metric `{name}`; the metrics are {}",
                    METRICS.join(", ")
                ));
            }
            let band: Band =
                serde_json::from_value(v.clone()).map_err(|e| format!("metric `{name}`: {e}"))?;
            match (band.min, band.max) {
                (None, None) => {
                    return Err(format!(
                        "metric `{name}`: give its band a `min`, a `max` or both"
                    ));
                }
                (Some(lo), Some(hi)) if lo > hi => {
                    return Err(format!("metric `{name}`: min {lo} is above max {hi}"));
                }
                _ => {}
            }
            out.push((name.clone(), band));
        }
        Ok(Baseline { metrics: out })
    }

    /// Every metric of `m` outside its band, in the baseline's order.
    pub fn breaches(&self, m: &Metrics) -> Vec<Breach> {
        self.metrics
            .iter()
            .filter_map(|(name, band)| {
                let value = m.get(name)?;
                let out =
                    band.min.is_some_and(|lo| value < lo) || band.max.is_some_and(|hi| value > hi);
                out.then(|| Breach {
                    metric: name.clone(),
                    value,
                    band: *band,
                })
            })
            .collect()
    }

    /// The band of `metric`, if the baseline has one.
    pub fn band(&self, metric: &str) -> Option<&Band> {
        self.metrics
            .iter()
            .find(|(n, _)| n == metric)
            .map(|(_, b)| b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(success: f64, steps: f64) -> Metrics {
        Metrics {
            success_rate: success,
            steps_per_task: steps,
            ..Metrics::default()
        }
    }

    #[test]
    fn a_metric_out_of_its_band_is_named_with_the_band_and_the_baseline() {
        let b = Baseline::parse(
            r#"{"metrics": {"success_rate": {"value": 0.93, "min": 0.9}, "steps_per_task": {"value": 3.1, "max": 3.5}}}"#,
        )
        .unwrap();
        assert!(b.breaches(&metrics(0.95, 3.0)).is_empty());
        let out: Vec<String> = b
            .breaches(&metrics(0.8, 4.0))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            out,
            [
                "success_rate 0.80 is below its band's minimum 0.90 (baseline 0.93)",
                "steps_per_task 4.00 is above its band's maximum 3.50 (baseline 3.10)"
            ]
        );
    }

    #[test]
    fn written_baselines_hold_for_the_run_they_came_from() {
        let m = Metrics {
            success_rate: 0.9,
            tool_success_rate: 0.8,
            replan_recovery_rate: 1.0,
            replans: 3,
            wall_ms_p50: 12.0,
            wall_ms_total: 100.0,
            ..Metrics::default()
        };
        let b = Baseline::of(&m);
        let text = b.to_json().to_string();
        let back = Baseline::parse(&text).unwrap();
        assert_eq!(back, b);
        assert!(back.breaches(&m).is_empty());
        assert_eq!(back.band("replans").unwrap().max, Some(4.0));
    }

    #[test]
    fn broken_baselines_say_why() {
        let cases = [
            ("[1]", "expected an object"),
            (
                "{\"metrics\": {\"speed\": {\"value\": 1, \"min\": 0}}}",
                "unknown metric `speed`",
            ),
            (
                "{\"metrics\": {\"replans\": {\"value\": 1}}}",
                "give its band a `min`",
            ),
            (
                "{\"metrics\": {\"replans\": {\"value\": 1, \"min\": 2, \"max\": 1}}}",
                "min 2 is above max 1",
            ),
            (
                "{\"metrics\": {\"replans\": {\"value\": 1, \"mx\": 2}}}",
                "unknown field `mx`",
            ),
            ("{\"metric\": {}}", "unknown key `metric`"),
            ("{", "not JSON"),
        ];
        for (text, want) in cases {
            let e = Baseline::parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}

//! `toolhost plan validate` and `toolhost plan schema`: check a plan against tools and a
//! policy before anything runs; print the plan format's JSON Schema.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::{CmdResult, Failure, exit, load_tool};
use toolhost_engine::{Catalog, Entry, Plan, plan_schema, validate};
use toolhost_runtime::Runtime;
use toolhost_runtime::policy::Policy;

/// Validate a plan (JSON) against tools and a policy, reporting every problem at once.
///
/// Exit code 0 when the plan is valid, 2 when it is not.
#[derive(Debug, clap::Args)]
pub(crate) struct ValidateArgs {
    /// The plan file (JSON, see `toolhost plan schema`).
    plan: PathBuf,
    /// The policy whose sections name what each tool may do.
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// A tool component the plan may use; its name is its policy section's. Repeatable.
    #[arg(long = "tool", value_name = "PATH.wasm", required = true)]
    tools: Vec<PathBuf>,
    /// The most steps a plan may have.
    #[arg(long, value_name = "N", default_value_t = 50)]
    max_steps: usize,
    /// Print `{"valid": …, "problems": […]}`.
    #[arg(long)]
    json: bool,
}

pub(crate) fn validate_cmd(rt: &Runtime, args: ValidateArgs, out: &mut dyn Write) -> CmdResult {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let text = std::fs::read_to_string(&args.plan)
        .map_err(|e| usage(format!("cannot read plan `{}`: {e}", args.plan.display())))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "`{}` is not a plan: {e} (see `toolhost plan schema`)",
            args.plan.display()
        ))
    })?;
    // Every shape problem at once (each malformed step), like the checks below.
    let plan = match Plan::from_json_all(json) {
        Ok(plan) => plan,
        Err(problems) => return report(&args, &Err(problems), out),
    };
    let policy = Policy::load(&args.policy).map_err(|e| usage(e.to_string()))?;
    let mut tools = BTreeMap::new();
    for path in &args.tools {
        let section = policy.section_for(path).ok_or_else(|| {
            Failure::new(
                exit::DENIED,
                format!(
                    "[denied] policy `{}` has no section for `{}`",
                    args.policy.display(),
                    path.display()
                ),
            )
        })?;
        let tool = load_tool(rt, path)?;
        tools.insert(
            section.name.as_str().into(),
            Entry {
                policy: tool.narrow(section),
                tool: Arc::new(tool),
            },
        );
    }
    let catalog = Catalog { tools };
    let result = validate(&plan, &catalog, args.max_steps, &BTreeMap::new());
    report(&args, &result.map(|v| (v.order, v.plan)), out)
}

/// Prints the verdict: the order of a valid plan, or every problem; exit 0 or 2.
fn report(
    args: &ValidateArgs,
    result: &Result<(Vec<toolhost_engine::StepId>, Plan), Vec<toolhost_engine::Problem>>,
    out: &mut dyn Write,
) -> CmdResult {
    if args.json {
        let doc = match &result {
            Ok((order, _)) => json!({"valid": true, "order": order, "problems": []}),
            Err(problems) => json!({"valid": false, "problems": problems}),
        };
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        match &result {
            Ok((order, plan)) => {
                let _ = say!(
                    out,
                    "{}: valid, {} steps, revision {}; order: {}",
                    args.plan.display(),
                    plan.steps.len(),
                    plan.revision,
                    order
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            Err(problems) => {
                let _ = writeln!(
                    out,
                    "{}: {} problem{}:",
                    args.plan.display(),
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" }
                );
                for p in problems {
                    let _ = say!(out, "  - {p}");
                }
            }
        }
    }
    Ok(if result.is_ok() {
        exit::OK
    } else {
        exit::USAGE
    })
}

/// Print the JSON Schema of the plan format.
#[derive(Debug, clap::Args)]
pub(crate) struct SchemaArgs {}

pub(crate) fn schema(_args: SchemaArgs, out: &mut dyn Write) -> CmdResult {
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&plan_schema()).expect("JSON")
    );
    Ok(exit::OK)
}

//! [`LlmPlanner`]: a provider behind the [`Planner`] trait. Each call builds the prompt,
//! sends it within the run's remaining wall time, and decodes the answer; an answer that
//! is not JSON or not the schema's shape is re-asked with the exact errors, at most
//! `max_repairs` times and never past the run's token budgets. Plans that decode but fail
//! validation come back through `req.problems` (the engine's repair rounds), and the
//! previous answer is shown with them.

use std::time::{Duration, Instant};

use super::config::{ApiKey, LlmConfig, key_from_env};
use super::decode::{Answer, decode};
use super::openai::Tokens;
use super::prompt::{self, Prompt};
use super::transport::OnWait;
use super::{LlmError, Provider};
use toolhost_engine::Budget;
use toolhost_engine::planner::{PlanFuture, PlanRequest, Planner, PlannerError, Usage};

/// A planner backed by a model.
#[derive(Debug)]
pub struct LlmPlanner {
    config: LlmConfig,
    provider: Provider,
    /// The last answer's text, shown back when validation asks for a repair.
    previous: Option<String>,
}

impl LlmPlanner {
    /// A planner for `config`, authenticating with `key` (none: no auth header).
    pub fn new(config: LlmConfig, key: Option<ApiKey>) -> Result<LlmPlanner, LlmError> {
        LlmPlanner::watched(config, key, None)
    }

    /// [`LlmPlanner::new`], telling `on_wait` of every retry wait and slow answer.
    pub fn watched(
        config: LlmConfig,
        key: Option<ApiKey>,
        on_wait: Option<OnWait>,
    ) -> Result<LlmPlanner, LlmError> {
        let provider = Provider::new(&config, key, on_wait)?;
        Ok(LlmPlanner {
            config,
            provider,
            previous: None,
        })
    }

    /// A planner for `config` with the key from the environment variable it names.
    pub fn from_env(config: LlmConfig) -> Result<LlmPlanner, LlmError> {
        LlmPlanner::from_env_watched(config, None)
    }

    /// [`LlmPlanner::from_env`], telling `on_wait` of every retry wait and slow answer.
    pub fn from_env_watched(
        config: LlmConfig,
        on_wait: Option<OnWait>,
    ) -> Result<LlmPlanner, LlmError> {
        let key = key_from_env(&config)?;
        LlmPlanner::watched(config, key, on_wait)
    }

    fn prompt(&self, req: &PlanRequest, output_left: u64) -> Prompt {
        let cap = self.config.max_output_tokens.min(output_left).max(1);
        prompt::build(
            req,
            self.config.context_chars,
            cap,
            self.previous.as_deref(),
        )
    }

    async fn answer(
        &mut self,
        req: &PlanRequest,
    ) -> Result<(toolhost_engine::Reply, Usage), (LlmError, Usage)> {
        let deadline = Instant::now() + Duration::from_millis(req.remaining.wall_ms);
        let mut used = Usage {
            model: self.config.model.clone(),
            ..Usage::default()
        };
        let base = self.prompt(req, req.remaining.output_tokens);
        let mut prompt = base.clone();
        let mut errors = Vec::new();
        for attempt in 0..=self.config.max_repairs {
            if attempt > 0 {
                let out_left = req
                    .remaining
                    .output_tokens
                    .saturating_sub(used.output_tokens);
                prompt.max_output_tokens = self.config.max_output_tokens.min(out_left);
                if prompt.max_output_tokens == 0 {
                    return Err((LlmError::Budget("output tokens"), used));
                }
                if used.input_tokens + prompt.input_estimate() > req.remaining.input_tokens {
                    return Err((LlmError::Budget("input tokens"), used));
                }
            }
            let c = match self.provider.complete(&prompt, deadline).await {
                Ok(c) => c,
                Err(e) => return Err((e, used)),
            };
            charge(&mut used, c.usage, &prompt);
            match decode(&c.answer, req.mode) {
                Ok(reply) => {
                    self.previous = Some(c.answer.text());
                    return Ok((reply, used));
                }
                Err(why) => {
                    tracing::debug!(attempt, problems = ?why, "unusable planner answer");
                    prompt.user = ask_again(&base, &c.answer, &why, "a JSON object");
                    errors = why;
                }
            }
        }
        Err((
            LlmError::Unusable {
                attempts: self.config.max_repairs + 1,
                errors: errors.join("; "),
            },
            used,
        ))
    }
}

/// Charges `used` with one answer's `tokens`; a server without a usage block is charged
/// what `prompt` could have used.
pub(crate) fn charge(used: &mut Usage, tokens: Option<Tokens>, prompt: &Prompt) {
    let t = tokens.unwrap_or(Tokens {
        input: prompt.input_estimate(),
        cached: 0,
        output: prompt.max_output_tokens,
    });
    used.input_tokens += t.input;
    used.cached_input_tokens += t.cached;
    used.output_tokens += t.output;
}

/// The user message of `base` asked again after `answer` could not be used, for
/// `problems`: the answer (cut) and the problems, and what to answer with (`shape`).
pub(crate) fn ask_again(
    base: &Prompt,
    answer: &Answer,
    problems: &[String],
    shape: &str,
) -> String {
    format!(
        "{}\n# Your answer could not be used\nIt was:\n```\n{}\n```\nProblems:\n- {}\nAnswer again with only {shape} matching the schema.\n",
        base.user,
        cut(&answer.text(), 4_000),
        problems.join("\n- ")
    )
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max).collect::<String>() + "…"
    }
}

impl Planner for LlmPlanner {
    fn name(&self) -> String {
        format!("{}:{}", self.config.kind.as_str(), self.config.model)
    }

    fn estimate(&self, req: &PlanRequest) -> Usage {
        let p = self.prompt(req, req.remaining.output_tokens);
        Usage {
            model: self.config.model.clone(),
            input_tokens: p.input_estimate(),
            output_tokens: p.max_output_tokens,
            ..Usage::default()
        }
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        Box::pin(async move {
            self.answer(req).await.map_err(|(e, usage)| PlannerError {
                planner: self.name(),
                budget: match &e {
                    LlmError::WallTime { .. } => Some(Budget::WallTime),
                    LlmError::Budget("input tokens") => Some(Budget::InputTokens),
                    LlmError::Budget("output tokens") => Some(Budget::OutputTokens),
                    _ => None,
                },
                reason: e.to_string(),
                usage,
            })
        })
    }
}

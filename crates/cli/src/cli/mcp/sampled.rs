//! `model.extract` in a `run_program` program answered by the MCP client's model
//! ([`ClientExtractor`]), for a server with no model of its own and a client that offers
//! sampling: one `sampling/createMessage` per attempt, with the quarantined extractor's
//! rules and the input as untrusted data (`toolhost_llm::extractor::sampled_prompt`), no
//! tools and no context of the server's. An answer that is not a `{"value": …}` matching
//! the step's schema is asked again once, with its problems; the engine checks the value
//! again and keeps it as tainted as the input. Sampling reports no tokens, so what an
//! attempt spends is estimated from its text (about three characters a token), and the
//! run's token budgets bound it like any extraction.

use serde_json::{Value, json};
use toolhost_engine::extract::{ExtractError, ExtractFuture, Extracted, Extraction, Failure};
use toolhost_engine::{Extractor, Usage};
use toolhost_llm::extractor::{sampled_prompt, sampled_value};
use toolhost_mcp::program::{ClientUser, Reply};
use toolhost_runtime::ask::{Input, Request};

/// How many answers one extraction asks for at most.
const ATTEMPTS: u32 = 2;
/// The most tokens one answer may have.
const MAX_TOKENS: u64 = 2048;
/// What the journal names the model.
const MODEL: &str = "mcp-client";

/// Extractions answered by the client's model.
pub(super) struct ClientExtractor {
    pub user: ClientUser,
}

fn tokens(chars: usize) -> u64 {
    u64::try_from(chars / 3 + 16).unwrap_or(u64::MAX)
}

fn text(role: &str, text: &str) -> Value {
    json!({"role": role, "content": {"type": "text", "text": text}})
}

impl Extractor for ClientExtractor {
    fn name(&self) -> String {
        "the MCP client's model (sampling)".into()
    }

    fn estimate(&self, req: &Extraction) -> Usage {
        let (system, user) = sampled_prompt(req);
        Usage {
            model: MODEL.into(),
            input_tokens: tokens(system.len() + user.len()),
            output_tokens: MAX_TOKENS.min(req.output_tokens),
            ..Usage::default()
        }
    }

    fn extract(&self, req: Extraction) -> ExtractFuture {
        let user = self.user.clone();
        Box::pin(async move {
            let (system, first) = sampled_prompt(&req);
            let mut messages = vec![text("user", &first)];
            let mut used = Usage {
                model: MODEL.into(),
                ..Usage::default()
            };
            let fail = |failure, reason: String, used: &Usage, attempts| ExtractError {
                failure,
                reason,
                usage: used.clone(),
                attempts,
            };
            let mut problems = Vec::new();
            for attempt in 1..=ATTEMPTS {
                let params = json!({
                    "messages": messages,
                    "systemPrompt": system,
                    "includeContext": "none",
                    "maxTokens": MAX_TOKENS.min(req.output_tokens).max(1),
                });
                // A key per attempt: a stateless task's answers are kept by key.
                let key = format!("toolhost.extract.{}.{attempt}", req.step);
                let input = Input::new(key, Request::Sample(params));
                let asker = user.clone();
                let reply = tokio::task::spawn_blocking(move || asker.ask(input)).await;
                used.input_tokens +=
                    tokens(system.len() + Value::from(messages.clone()).to_string().len());
                let answer = match reply.ok().flatten() {
                    Some(Reply::Answer(a)) => a,
                    Some(Reply::Unanswerable(e) | Reply::Failed(e)) => {
                        return Err(fail(Failure::Unavailable, e, &used, attempt));
                    }
                    None => {
                        let why = "the call ended while the client's model answered".into();
                        return Err(fail(Failure::Unavailable, why, &used, attempt));
                    }
                };
                let said = answer["content"]["text"].as_str().unwrap_or_default();
                used.output_tokens += tokens(said.len());
                if let Some(model) = answer["model"].as_str() {
                    used.model = format!("{MODEL}:{model}");
                }
                match sampled_value(said, &req.schema) {
                    Ok(value) => {
                        return Ok(Extracted {
                            value,
                            usage: used,
                            attempts: attempt,
                        });
                    }
                    Err(why) => {
                        messages.push(text("assistant", said));
                        messages.push(text(
                            "user",
                            &format!(
                                "That answer cannot be used: {}. Answer again with one JSON object {{\"value\": …}} matching the schema, and nothing else.",
                                why.join("; ")
                            ),
                        ));
                        problems = why;
                    }
                }
            }
            let why = format!(
                "no answer of the client's model matched the output schema after {ATTEMPTS} attempts: {}",
                problems.join("; ")
            );
            Err(fail(Failure::Unusable, why, &used, ATTEMPTS))
        })
    }
}

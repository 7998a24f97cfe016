//! Anthropic Messages: `POST {base_url}/messages` with `x-api-key` and `anthropic-version`.
//!
//! Structured output is native where the model offers it: `output_config.format` with the
//! strict planner schema, the answer in the message text. A model (or server) that rejects
//! it gets, from then on, a forced tool call: one tool whose `input_schema` is the planner
//! schema and `tool_choice: {type: "tool", name}`; the answer is that call's `input`.
//!
//! Only fields the Messages API declares are sent (`temperature` only when configured).
//! Prompt caching: the system prompt, the forced tool and the stable head of the user
//! message (tools and goal, [`Prompt::stable`]) each carry `cache_control: ephemeral`, so
//! later turns of a run read them from the cache (`cache_read_input_tokens`).

use std::time::Instant;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::LlmError;
use super::config::Structured;
use super::decode::Answer;
use super::openai::{Completion, Tokens};
use super::prompt::Prompt;
use super::transport::{Http, Rejected};

/// The API version this speaks.
pub const VERSION: &str = "2023-06-01";

/// An Anthropic endpoint and what it has shown it supports.
#[derive(Debug, Clone)]
pub struct Anthropic {
    pub http: Http,
    pub base_url: String,
    pub model: String,
    /// Sent only when set.
    pub temperature: Option<f64>,
    pub structured: Structured,
    /// Whether the next request asks for native structured output (else the forced tool).
    native: bool,
}

/// The forced tool's name for a prompt's mode.
fn tool_name(p: &Prompt) -> String {
    format!("submit_{}", p.answer)
}

fn cached() -> Value {
    json!({"type": "ephemeral"})
}

impl Anthropic {
    pub fn new(
        http: Http,
        base_url: String,
        model: String,
        temperature: Option<f64>,
        structured: Structured,
    ) -> Anthropic {
        Anthropic {
            http,
            base_url,
            model,
            temperature,
            structured,
            native: structured != Structured::Tool,
        }
    }

    /// The request body for `p`: native structured output when `native`, else the forced
    /// tool call.
    pub fn body(&self, p: &Prompt, native: bool) -> Value {
        let (stable, rest) = p.user_parts();
        let content: Vec<Value> = [(stable, true), (rest, false)]
            .into_iter()
            // The API rejects empty text blocks.
            .filter(|(text, _)| !text.is_empty())
            .map(|(text, stays)| {
                let mut block = json!({"type": "text", "text": text});
                if stays {
                    block["cache_control"] = cached();
                }
                block
            })
            .collect();
        let mut body = json!({
            "model": self.model,
            "max_tokens": p.max_output_tokens,
            "system": [{"type": "text", "text": p.system, "cache_control": cached()}],
            "messages": [{"role": "user", "content": content}],
        });
        if native {
            body["output_config"] =
                json!({"format": {"type": "json_schema", "schema": p.strict_schema}});
        } else {
            let name = tool_name(p);
            body["tools"] = json!([{
                "name": name,
                "description": format!("Submit your {} as this tool's input.", p.answer),
                "input_schema": p.loose_schema,
                "cache_control": cached(),
            }]);
            body["tool_choice"] = json!({"type": "tool", "name": name});
        }
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        body
    }

    async fn send(
        &self,
        p: &Prompt,
        deadline: Instant,
    ) -> Result<Result<Completion, Rejected>, LlmError> {
        let mut headers: Vec<(HeaderName, HeaderValue)> = vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(VERSION),
        )];
        if let Some(v) = self.http.secret_header("") {
            headers.push((HeaderName::from_static("x-api-key"), v));
        }
        let url = format!("{}/messages", self.base_url.trim_end_matches('/'));
        match self
            .http
            .post(&url, &headers, &self.body(p, self.native), deadline)
            .await?
        {
            Ok(v) => parse(&v, &tool_name(p)).map(Ok),
            Err(r) => Ok(Err(r)),
        }
    }

    pub async fn complete(
        &mut self,
        p: &Prompt,
        deadline: Instant,
    ) -> Result<Completion, LlmError> {
        let rejected = match self.send(p, deadline).await? {
            Ok(c) => return Ok(c),
            Err(r) if self.native && self.structured == Structured::Auto && rejects_format(&r) => {
                tracing::info!(
                    status = r.status,
                    "model rejected output_config.format; using a forced tool call"
                );
                self.native = false;
                match self.send(p, deadline).await? {
                    Ok(c) => return Ok(c),
                    Err(r) => r,
                }
            }
            Err(r) => r,
        };
        Err(LlmError::Rejected {
            status: rejected.status,
            body: rejected.body,
        })
    }
}

/// A client error that names the structured-output request as its cause.
fn rejects_format(r: &Rejected) -> bool {
    let body = r.body.to_ascii_lowercase();
    r.status == 400
        && [
            "output_config",
            "output_format",
            "structured output",
            "json_schema",
        ]
        .iter()
        .any(|w| body.contains(w))
}

/// The forced call's input (or, failing that, the text) and the usage of a `message`.
pub fn parse(resp: &Value, tool: &str) -> Result<Completion, LlmError> {
    if resp["stop_reason"] == "refusal" {
        return Err(LlmError::Refused(text(resp)));
    }
    let blocks = resp["content"]
        .as_array()
        .ok_or_else(|| LlmError::Response("no `content` array in the response".into()))?;
    let call = blocks
        .iter()
        .find(|b| b["type"] == "tool_use" && b["name"] == tool);
    let answer = match call {
        Some(b) => Answer::Json(b["input"].clone()),
        None => Answer::Text(text(resp)),
    };
    let u = &resp["usage"];
    // `input_tokens` counts only what came after the last cache breakpoint: the tokens
    // written to and read from the cache are input too, and count against the budget.
    let read = u["cache_read_input_tokens"].as_u64().unwrap_or(0);
    let written = u["cache_creation_input_tokens"].as_u64().unwrap_or(0);
    let usage = match (u["input_tokens"].as_u64(), u["output_tokens"].as_u64()) {
        (Some(i), Some(output)) => Some(Tokens {
            input: i + read + written,
            cached: read,
            output,
        }),
        _ => None,
    };
    Ok(Completion { answer, usage })
}

/// The text blocks of a `message`, joined.
fn text(resp: &Value) -> String {
    resp["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_and_writes_are_input_and_reads_are_counted_apart() {
        let resp = json!({"content": [{"type": "text", "text": "{}"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "cache_read_input_tokens": 1_000,
                      "cache_creation_input_tokens": 50, "output_tokens": 7}});
        let c = parse(&resp, "submit_plan").unwrap();
        assert_eq!(
            c.usage,
            Some(Tokens {
                input: 1_150,
                cached: 1_000,
                output: 7
            })
        );
        assert_eq!(c.answer, Answer::Text("{}".into()));
        let refused =
            json!({"content": [{"type": "text", "text": "no"}], "stop_reason": "refusal"});
        assert_eq!(parse(&refused, "x"), Err(LlmError::Refused("no".into())));
    }
}

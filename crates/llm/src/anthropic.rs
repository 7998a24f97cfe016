//! Anthropic Messages: `POST {base_url}/messages` with `x-api-key` and `anthropic-version`.
//! Structured output by a forced tool call: one tool whose `input_schema` is the planner
//! schema, and `tool_choice: {type: "tool", name}`; the answer is that call's `input`.

use std::time::Instant;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::LlmError;
use super::decode::Answer;
use super::openai::Completion;
use super::prompt::Prompt;
use super::schema;
use super::transport::Http;

/// The API version this speaks.
pub const VERSION: &str = "2023-06-01";

/// An Anthropic endpoint.
#[derive(Debug, Clone)]
pub struct Anthropic {
    pub http: Http,
    pub base_url: String,
    pub model: String,
    pub temperature: f64,
}

/// The forced tool's name for a prompt's mode.
fn tool_name(p: &Prompt) -> String {
    format!("submit_{}", schema::name(p.mode))
}

impl Anthropic {
    pub fn body(&self, p: &Prompt) -> Value {
        let name = tool_name(p);
        json!({
            "model": self.model,
            "max_tokens": p.max_output_tokens,
            "temperature": self.temperature,
            "system": p.system,
            "messages": [{"role": "user", "content": p.user}],
            "tools": [{
                "name": name,
                "description": format!("Submit your {} as this tool's input.", schema::name(p.mode)),
                "input_schema": p.loose_schema,
            }],
            "tool_choice": {"type": "tool", "name": name},
        })
    }

    pub async fn complete(&self, p: &Prompt, deadline: Instant) -> Result<Completion, LlmError> {
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
            .post(&url, &headers, &self.body(p), deadline)
            .await?
        {
            Ok(v) => parse(&v, &tool_name(p)),
            Err(r) => Err(LlmError::Rejected {
                status: r.status,
                body: r.body,
            }),
        }
    }
}

/// The forced call's input (or, failing that, the text) and the usage of a `message`.
pub fn parse(resp: &Value, tool: &str) -> Result<Completion, LlmError> {
    let blocks = resp["content"]
        .as_array()
        .ok_or_else(|| LlmError::Response("no `content` array in the response".into()))?;
    let call = blocks
        .iter()
        .find(|b| b["type"] == "tool_use" && b["name"] == tool);
    let answer = match call {
        Some(b) => Answer::Json(b["input"].clone()),
        None => Answer::Text(
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
        ),
    };
    let u = &resp["usage"];
    // Cached prompt tokens are input tokens too: they count against the input budget.
    let cached = u["cache_creation_input_tokens"].as_u64().unwrap_or(0)
        + u["cache_read_input_tokens"].as_u64().unwrap_or(0);
    let usage = match (u["input_tokens"].as_u64(), u["output_tokens"].as_u64()) {
        (Some(i), Some(o)) => Some((i + cached, o)),
        _ => None,
    };
    Ok(Completion { answer, usage })
}

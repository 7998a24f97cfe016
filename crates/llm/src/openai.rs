//! OpenAI Chat Completions: `POST {base_url}/chat/completions` with a bearer key and
//! `response_format: {type: "json_schema", json_schema: {name, strict: true, schema}}`.
//! The same wire format serves OpenAI-compatible servers ([`compatible`](super::compatible)).

use std::time::Instant;

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::LlmError;
use super::decode::Answer;
use super::prompt::Prompt;
use super::schema;
use super::transport::{Http, Rejected};

/// What a provider got back: the answer and the usage block, if the server sent one.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub answer: Answer,
    pub usage: Option<(u64, u64)>,
}

/// How the answer's shape is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `json_schema`, strict.
    JsonSchema,
    /// `json_object`, with the schema in the system prompt.
    JsonObject,
}

/// An OpenAI-shaped endpoint.
#[derive(Debug, Clone)]
pub struct OpenAi {
    pub http: Http,
    pub base_url: String,
    pub model: String,
    pub temperature: f64,
    /// OpenAI's own API takes `max_completion_tokens`; compatible servers `max_tokens`.
    pub official: bool,
}

impl OpenAi {
    /// The request body for `p`.
    pub fn body(&self, p: &Prompt, format: Format) -> Value {
        let (system, response_format) = match format {
            Format::JsonSchema => (
                p.system.clone(),
                json!({"type": "json_schema", "json_schema": {
                    "name": schema::name(p.mode), "strict": true, "schema": p.strict_schema}}),
            ),
            Format::JsonObject => (
                format!(
                    "{}\n\nAnswer with a JSON object that matches this JSON Schema:\n{}",
                    p.system, p.loose_schema
                ),
                json!({"type": "json_object"}),
            ),
        };
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": p.user},
            ],
            "temperature": self.temperature,
            "response_format": response_format,
        });
        let cap = if self.official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[cap] = json!(p.max_output_tokens);
        body
    }

    /// Sends `p`; a non-retryable status comes back as `Ok(Err(_))` for the caller to judge.
    pub async fn send(
        &self,
        p: &Prompt,
        format: Format,
        deadline: Instant,
    ) -> Result<Result<Completion, Rejected>, LlmError> {
        let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
        if let Some(v) = self.http.secret_header("Bearer ") {
            headers.push((AUTHORIZATION, v));
        }
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let resp = match self
            .http
            .post(&url, &headers, &self.body(p, format), deadline)
            .await?
        {
            Ok(v) => v,
            Err(r) => return Ok(Err(r)),
        };
        parse(&resp).map(Ok)
    }
}

/// The answer and usage of a `chat.completion` object.
pub fn parse(resp: &Value) -> Result<Completion, LlmError> {
    let message = &resp["choices"][0]["message"];
    if let Some(r) = message["refusal"].as_str() {
        return Err(LlmError::Refused(r.to_string()));
    }
    let Some(content) = message["content"].as_str() else {
        return Err(LlmError::Response(
            "no `choices[0].message.content` in the response".into(),
        ));
    };
    let u = &resp["usage"];
    let usage = match (u["prompt_tokens"].as_u64(), u["completion_tokens"].as_u64()) {
        (Some(i), Some(o)) => Some((i, o)),
        _ => None,
    };
    Ok(Completion {
        answer: Answer::Text(content.to_string()),
        usage,
    })
}

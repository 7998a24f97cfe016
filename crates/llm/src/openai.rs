//! OpenAI's two wire formats, with a bearer key:
//! - the Responses API (the default): `POST {base_url}/responses` with the system prompt as
//!   `instructions` and `text.format: {type: "json_schema", name, strict: true, schema}`;
//! - Chat Completions: `POST {base_url}/chat/completions` with `response_format:
//!   {type: "json_schema", json_schema: {name, strict: true, schema}}`. The same wire format
//!   serves OpenAI-compatible servers ([`compatible`](super::compatible)).
//!
//! OpenAI caches a repeated prompt prefix by itself; the prompt puts what stays the same
//! through a run first ([`Prompt::stable`]), and the cached share of the input comes back
//! in `input_tokens_details.cached_tokens` (`prompt_tokens_details` in Chat Completions).

use std::time::Instant;

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::LlmError;
use super::config::Api;
use super::decode::Answer;
use super::prompt::Prompt;
use super::transport::{Http, Rejected};

/// Tokens a provider reported for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Every input token, cached or not.
    pub input: u64,
    /// How many of `input` were read from the provider's prompt cache.
    pub cached: u64,
    pub output: u64,
}

/// What a provider got back: the answer and the usage block, if the server sent one.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub answer: Answer,
    pub usage: Option<Tokens>,
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
    pub api: Api,
    /// Sent only when set.
    pub temperature: Option<f64>,
    /// OpenAI's own API takes `max_completion_tokens` in Chat Completions; compatible
    /// servers `max_tokens`.
    pub official: bool,
}

impl OpenAi {
    /// The system prompt and the format object for `format`.
    fn system(p: &Prompt, format: Format) -> String {
        match format {
            Format::JsonSchema => p.system.clone(),
            Format::JsonObject => format!(
                "{}\n\nAnswer with a JSON object that matches this JSON Schema:\n{}",
                p.system, p.loose_schema
            ),
        }
    }

    /// The request body for `p`.
    pub fn body(&self, p: &Prompt, format: Format) -> Value {
        let system = OpenAi::system(p, format);
        let mut body = match self.api {
            Api::Responses => json!({
                "model": self.model,
                "instructions": system,
                "input": [{"role": "user", "content": p.user}],
                "text": {"format": match format {
                    Format::JsonSchema => json!({"type": "json_schema",
                        "name": p.answer, "strict": true, "schema": p.strict_schema}),
                    Format::JsonObject => json!({"type": "json_object"}),
                }},
                "max_output_tokens": p.max_output_tokens,
                // Tool outputs are in the prompt: nothing is kept on the provider's side.
                "store": false,
            }),
            Api::Chat => {
                let cap = if self.official {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                };
                json!({
                    "model": self.model,
                    "messages": [
                        {"role": "system", "content": system},
                        {"role": "user", "content": p.user},
                    ],
                    "response_format": match format {
                        Format::JsonSchema => json!({"type": "json_schema", "json_schema": {
                            "name": p.answer, "strict": true, "schema": p.strict_schema}}),
                        Format::JsonObject => json!({"type": "json_object"}),
                    },
                    cap: p.max_output_tokens,
                })
            }
        };
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
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
        let path = match self.api {
            Api::Responses => "responses",
            Api::Chat => "chat/completions",
        };
        let url = format!("{}/{path}", self.base_url.trim_end_matches('/'));
        let resp = match self
            .http
            .post(&url, &headers, &self.body(p, format), deadline)
            .await?
        {
            Ok(v) => v,
            Err(r) => return Ok(Err(r)),
        };
        match self.api {
            Api::Responses => parse_response(&resp),
            Api::Chat => parse(&resp),
        }
        .map(Ok)
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
        (Some(input), Some(output)) => Some(Tokens {
            input,
            cached: u["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0),
            output,
        }),
        _ => None,
    };
    Ok(Completion {
        answer: Answer::Text(content.to_string()),
        usage,
    })
}

/// The answer and usage of a `response` object (Responses API): the text of its message
/// items' `output_text` parts; a `refusal` part is the model refusing.
pub fn parse_response(resp: &Value) -> Result<Completion, LlmError> {
    if let Some(e) = resp["error"].as_object() {
        return Err(LlmError::Response(format!(
            "the response failed: {}",
            e.get("message").and_then(Value::as_str).unwrap_or("")
        )));
    }
    let Some(items) = resp["output"].as_array() else {
        return Err(LlmError::Response(
            "no `output` array in the response".into(),
        ));
    };
    let parts = items
        .iter()
        .filter(|i| i["type"] == "message")
        .filter_map(|i| i["content"].as_array())
        .flatten();
    let mut text = String::new();
    let mut seen = false;
    for part in parts {
        match part["type"].as_str() {
            Some("refusal") => {
                return Err(LlmError::Refused(
                    part["refusal"].as_str().unwrap_or("").to_string(),
                ));
            }
            Some("output_text") => {
                seen = true;
                text.push_str(part["text"].as_str().unwrap_or(""));
            }
            _ => {}
        }
    }
    if !seen {
        return Err(LlmError::Response(format!(
            "no `output_text` in the response's output (status `{}`)",
            resp["status"].as_str().unwrap_or("")
        )));
    }
    let u = &resp["usage"];
    let usage = match (u["input_tokens"].as_u64(), u["output_tokens"].as_u64()) {
        (Some(input), Some(output)) => Some(Tokens {
            input,
            cached: u["input_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0),
            output,
        }),
        _ => None,
    };
    Ok(Completion {
        answer: Answer::Text(text),
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_completions_report_cached_prompt_tokens() {
        let resp = json!({"choices": [{"message": {"role": "assistant", "content": "{}"}}],
            "usage": {"prompt_tokens": 2_000, "completion_tokens": 9,
                      "prompt_tokens_details": {"cached_tokens": 1_920}}});
        assert_eq!(
            parse(&resp).unwrap().usage,
            Some(Tokens {
                input: 2_000,
                cached: 1_920,
                output: 9
            })
        );
    }

    #[test]
    fn a_response_without_output_text_says_its_status() {
        let resp =
            json!({"status": "incomplete", "output": [{"type": "reasoning", "summary": []}]});
        let Err(LlmError::Response(why)) = parse_response(&resp) else {
            panic!()
        };
        assert!(why.contains("`incomplete`"), "{why}");
    }
}

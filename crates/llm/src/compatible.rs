//! OpenAI-compatible servers (Ollama, vLLM, llama.cpp server, LM Studio): the Chat
//! Completions wire format at any base URL. Many accept `json_schema`; one that rejects it
//! gets `json_object` with the schema in the prompt from then on, and the answer is
//! validated here like any other.

use std::time::Instant;

use super::LlmError;
use super::config::Structured;
use super::openai::{Completion, Format, OpenAi};
use super::prompt::Prompt;
use super::transport::Rejected;

/// An OpenAI-compatible endpoint and what it has shown it supports.
#[derive(Debug, Clone)]
pub(crate) struct Compatible {
    pub inner: OpenAi,
    pub format: Format,
    pub structured: Structured,
}

impl Compatible {
    pub fn new(inner: OpenAi, structured: Structured) -> Compatible {
        let format = match structured {
            Structured::JsonObject => Format::JsonObject,
            Structured::Auto | Structured::JsonSchema | Structured::Tool => Format::JsonSchema,
        };
        Compatible {
            inner,
            format,
            structured,
        }
    }

    pub async fn complete(
        &mut self,
        p: &Prompt,
        deadline: Instant,
    ) -> Result<Completion, LlmError> {
        match self.inner.send(p, self.format, deadline).await? {
            Ok(c) => return Ok(c),
            Err(r)
                if self.format == Format::JsonSchema
                    && self.structured == Structured::Auto
                    && rejects_schema(&r) =>
            {
                tracing::info!(
                    status = r.status,
                    "server rejected json_schema; using json_object"
                );
                self.format = Format::JsonObject;
            }
            Err(r) => {
                return Err(LlmError::Rejected {
                    status: r.status,
                    body: r.body,
                });
            }
        }
        match self.inner.send(p, self.format, deadline).await? {
            Ok(c) => Ok(c),
            Err(r) => Err(LlmError::Rejected {
                status: r.status,
                body: r.body,
            }),
        }
    }
}

/// A client error that names the structured-output request as its cause.
fn rejects_schema(r: &Rejected) -> bool {
    let body = r.body.to_ascii_lowercase();
    matches!(r.status, 400 | 404 | 415 | 422 | 501)
        && ["response_format", "json_schema", "structured", "schema"]
            .iter()
            .any(|w| body.contains(w))
}

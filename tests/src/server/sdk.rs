//! The official provider SDKs' request types as JSON Schemas (tests/fixtures/sdk-schemas/,
//! exported by scripts/sdk-schemas.py with every object closed), and the check that a
//! request to a model provider's path is one of them. The queued-reply modes of
//! [`Server`](super::Server) answer a request that fails it with a 400 naming each
//! violation, so a field the SDK does not declare fails the test that sent it.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

/// A provider endpoint and the SDK type its requests are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST …/responses`: `openai.types.responses.ResponseCreateParamsNonStreaming`.
    OpenAiResponses,
    /// `POST …/chat/completions`: `openai.types.chat.CompletionCreateParamsNonStreaming`.
    OpenAiChat,
    /// `POST …/messages`: `anthropic.types.MessageCreateParamsNonStreaming`.
    AnthropicMessages,
}

impl Endpoint {
    /// The endpoint a request path names, if it is a provider's.
    pub fn of(path: &str) -> Option<Endpoint> {
        let path = path.split('?').next().unwrap_or(path);
        if path.ends_with("/responses") {
            Some(Endpoint::OpenAiResponses)
        } else if path.ends_with("/chat/completions") {
            Some(Endpoint::OpenAiChat)
        } else if path.ends_with("/messages") {
            Some(Endpoint::AnthropicMessages)
        } else {
            None
        }
    }

    fn source(self) -> &'static str {
        match self {
            Endpoint::OpenAiResponses => {
                include_str!("../../fixtures/sdk-schemas/openai-responses.json")
            }
            Endpoint::OpenAiChat => include_str!("../../fixtures/sdk-schemas/openai-chat.json"),
            Endpoint::AnthropicMessages => {
                include_str!("../../fixtures/sdk-schemas/anthropic-messages.json")
            }
        }
    }

    /// The schema as exported (with its `x-sdk` record of package and version).
    pub fn schema(self) -> Value {
        serde_json::from_str(self.source()).expect("a committed SDK schema is JSON")
    }

    fn validator(self) -> &'static Validator {
        static CELLS: [OnceLock<Validator>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        CELLS[self as usize].get_or_init(|| {
            jsonschema::validator_for(&self.schema()).expect("a committed SDK schema compiles")
        })
    }

    /// Every way `body` breaks the SDK type: `PATH: reason` lines, none when it conforms.
    pub fn violations(self, body: &Value) -> Vec<String> {
        self.validator()
            .iter_errors(body)
            .map(|e| format!("{}: {e}", e.instance_path))
            .collect()
    }
}

/// Why a request to a provider path is not one the SDK could have sent, if it is not.
pub fn check(target: &str, body: &[u8]) -> Option<String> {
    let endpoint = Endpoint::of(target)?;
    let why = match serde_json::from_slice::<Value>(body) {
        Ok(v) => endpoint.violations(&v),
        Err(e) => vec![format!("the body is not JSON: {e}")],
    };
    (!why.is_empty()).then(|| {
        format!(
            "request to `{target}` does not match the SDK's {endpoint:?} type:\n- {}",
            why.join("\n- ")
        )
    })
}

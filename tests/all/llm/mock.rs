//! The model providers' wire shapes for the test server in its queued-reply mode
//! ([`Server::replying`]): real response bodies built by [`openai`] and [`anthropic`], and
//! [`prompt`], the text a recorded request put before the model.

use serde_json::{Value, json};
use toolhost_tests::server::{Canned, Received, Server};

/// The text of every message (OpenAI shape), or of the system prompt and the first user
/// message joined (Anthropic shape, told apart by its top-level `system`).
pub fn prompt(request: &Received) -> String {
    let body = request.json();
    if let Some(m) = body["messages"].as_array()
        && body.get("system").is_some()
    {
        return format!(
            "{}\n{}",
            body["system"].as_str().unwrap_or(""),
            m[0]["content"].as_str().unwrap_or("")
        );
    }
    body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The base URL a provider config takes: `http://127.0.0.1:PORT/v1`.
pub fn base_url(server: &Server) -> String {
    server.url("/v1")
}

/// A `chat.completion` whose message content is `content`.
pub fn openai(content: &str, prompt_tokens: u64, completion_tokens: u64) -> Canned {
    Canned::json(json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        }
    }))
}

/// A `message` whose only block is a call of `tool` with `input`.
pub fn anthropic(tool: &str, input: Value, input_tokens: u64, output_tokens: u64) -> Canned {
    Canned::json(json!({
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_mock", "name": tool, "input": input}],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}
    }))
}

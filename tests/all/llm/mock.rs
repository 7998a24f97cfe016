//! The model providers' wire shapes for the test server in its queued-reply mode
//! ([`Server::replying`]): real response bodies built by [`openai`] (Chat Completions),
//! [`responses`] (the Responses API), [`anthropic`] and [`anthropic_text`], and [`prompt`],
//! the text a recorded request put before the model. The server checks every request
//! against the official SDKs' request types (`toolhost_tests::server::sdk`).

use serde_json::{Value, json};
use toolhost_tests::server::{Canned, Received, Server};

/// The text of a message's content: a string, or the `text` of each of its blocks.
fn text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The text a request put before the model: the system prompt (`system` in Anthropic's
/// shape, `instructions` in the Responses API's, the first message in Chat Completions')
/// and every message, joined by newlines.
pub fn prompt(request: &Received) -> String {
    let body = request.json();
    let system = body.get("system").or(body.get("instructions")).map(text);
    let messages = body["messages"].as_array().or(body["input"].as_array());
    system
        .into_iter()
        .chain(messages.into_iter().flatten().map(|m| text(&m["content"])))
        .collect::<Vec<_>>()
        .join("\n")
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

/// A `response` (Responses API) whose only output is a message with `text`; `cached` of
/// the `input_tokens` came from the prompt cache.
pub fn responses(text: &str, input_tokens: u64, cached: u64, output_tokens: u64) -> Canned {
    Canned::json(json!({
        "id": "resp_mock",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": "gpt-4.1-mini-2025-04-14",
        "output": [{
            "type": "message",
            "id": "msg_mock",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens
        }
    }))
}

/// A `message` whose only block is `text` (Anthropic's native structured output), with
/// `read` input tokens read from the prompt cache and `written` written to it.
pub fn anthropic_text(
    text: &str,
    input_tokens: u64,
    read: u64,
    written: u64,
    output_tokens: u64,
) -> Canned {
    Canned::json(json!({
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {
            "input_tokens": input_tokens,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": output_tokens
        }
    }))
}

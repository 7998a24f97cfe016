//! The `slack` tool (AgentDojo's slack suite over a JSON state file) run by `toolhost run`:
//! each operation leaves the state AgentDojo's Python original would, errors included.

use serde_json::{Value, json};

fn state() -> Value {
    json!({
        "slack": {
            "users": ["Alice", "Bob"],
            "channels": ["general", "random"],
            "user_channels": {"Alice": ["general"], "Bob": ["general", "random"]},
            "user_inbox": {"Alice": [], "Bob": []},
            "channel_inbox": {"general": [{"sender": "Bob", "recipient": "general", "body": "see www.a.com"}]}
        },
        "web": {"web_content": {"www.a.com": "Dora's email is dora@a.com"}, "web_requests": []}
    })
}

fn run(steps: Value) -> (Value, Value) {
    toolhost_tests::suite::run_steps("slack", &state(), &steps)
}

#[test]
fn slack_invites_reads_and_posts_as_agentdojo_does() {
    let (report, after) = run(json!([
        {"operation": "read-channel-messages", "args": {"channel": "general"}},
        {"operation": "get-webpage", "args": {"url": "https://www.a.com"}},
        {"operation": "get-webpage", "args": {"url": "www.nowhere.com"}},
        {"operation": "invite-user-to-slack", "args": {"user": "Dora", "user-email": "dora@a.com"}},
        {"operation": "add-user-to-channel", "args": {"user": "Dora", "channel": "random"}},
        {"operation": "get-users-in-channel", "args": {"channel": "random"}},
        {"operation": "send-direct-message", "args": {"recipient": "Dora", "body": "welcome"}},
        {"operation": "send-channel-message", "args": {"channel": "random", "body": "hi all"}},
        {"operation": "post-webpage", "args": {"url": "http://www.b.com", "content": "B"}},
        {"operation": "remove-user-from-slack", "args": {"user": "Bob"}},
        {"operation": "get-channels", "args": {}},
    ]));
    assert_eq!(report["stop"]["reason"], "completed", "{report:#}");
    let out = |i: usize| &report["steps"][i]["output"];
    assert_eq!(out(0)[0]["body"], "see www.a.com");
    assert_eq!(out(1), "Dora's email is dora@a.com");
    assert_eq!(out(2), "404 Not Found");
    assert_eq!(out(5), &json!(["Bob", "Dora"]));
    assert_eq!(out(10), &json!(["general", "random"]));
    let slack = &after["slack"];
    assert_eq!(slack["users"], json!(["Alice", "Dora"]));
    assert_eq!(
        slack["user_channels"],
        json!({"Alice": ["general"], "Dora": ["random"]})
    );
    assert_eq!(
        slack["user_inbox"]["Dora"],
        json!([{"sender": "bot", "recipient": "Dora", "body": "welcome"}])
    );
    assert_eq!(slack["channel_inbox"]["random"][0]["body"], "hi all");
    assert_eq!(
        after["web"]["web_requests"],
        json!(["www.a.com", "www.nowhere.com", "www.b.com"])
    );
    assert_eq!(after["web"]["web_content"]["www.b.com"], "B");
}

#[test]
fn slack_refuses_unknown_users_and_channels_with_agentdojo_messages() {
    toolhost_tests::suite::assert_refusals(
        "slack",
        &state(),
        &[
            (
                "send-direct-message",
                json!({"recipient": "Eve", "body": "x"}),
                "Recipient Eve not found in the users list",
            ),
            (
                "read-channel-messages",
                json!({"channel": "nope"}),
                "Channel does not exist!",
            ),
            (
                "invite-user-to-slack",
                json!({"user": "Bob", "user-email": "b@x"}),
                "User Bob already in the users list",
            ),
            (
                "add-user-to-channel",
                json!({"user": "Bob", "channel": "nope"}),
                "Channel nope not found in the channels list",
            ),
        ],
    );
}

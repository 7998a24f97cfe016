//! The official Rust SDK's client (`rmcp`) as the user a sandboxed tool asks: over a stdio
//! session, the conformance fixture's name question (`toolhost:host/ask`) reaches the
//! client's `create_elicitation`, and the tool greets whoever the client answers; a decline
//! reaches the tool as a decline (it greets a stranger).

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::json;
use toolhost_tests::path;

use super::{BIN, cache};

/// A client whose user answers every form with `name`, or declines when `None`.
struct User(Option<&'static str>);

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("rmcp-user", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(match self.0 {
            Some(name) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "name": name }))
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

async fn ask(user: User) -> rmcp::model::CallToolResult {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "version = 1\n[tools.conformance]\nask = true\n").expect("policy");
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("--cache-dir")
        .arg(cache())
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["mcp", "--tool-names", "operation", "--policy"])
        .arg(&policy)
        .arg(path("conformance"))
        .env_remove("TOOLHOST_LOG");
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp")
        .0;
    let client = user.serve(transport).await.expect("MCP handshake");
    let params = CallToolRequestParams::new("test_input_required_result_elicitation");
    let result = client.call_tool(params).await.expect("tools/call");
    client.cancel().await.expect("close");
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rmcp_client_answers_a_tools_question_and_its_decline_reaches_the_tool() {
    let greeted = ask(User(Some("Ada"))).await;
    assert_eq!(greeted.is_error, Some(false), "{greeted:?}");
    let text = &greeted.content[0].as_text().expect("a text block").text;
    assert_eq!(text, "Hello, Ada!", "{greeted:?}");

    let declined = ask(User(None)).await;
    let text = &declined.content[0].as_text().expect("a text block").text;
    assert_eq!(text, "Hello, stranger!", "{declined:?}");
}

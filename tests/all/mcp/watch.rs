//! `--watch`: a changed policy is validated and swapped in without a restart, clients are
//! told the tool list changed; a broken one is refused and the previous tools stay.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::NotificationContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;

use super::Fixture;

#[derive(Clone, Default)]
struct Client {
    changed: Arc<AtomicUsize>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_policy_is_swapped_in_and_a_broken_one_refused() {
    let fixture = Fixture::new();
    let cmd = tokio::process::Command::from(fixture.command(&["--watch"]));
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let handler = Client::default();
    let changed = handler.changed.clone();
    let client = handler.serve(transport).await.unwrap();
    let names = || async {
        client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    assert!(names().await.contains(&"misbehave.spin".to_string()));

    let original = std::fs::read_to_string(&fixture.policy).unwrap();
    let narrowed = original.replace(
        "[tools.misbehave]\n",
        "[tools.misbehave]\noperations = [\"sleep\"]\n",
    );
    assert_ne!(narrowed, original);
    std::fs::write(&fixture.policy, &narrowed).unwrap();
    let started = Instant::now();
    while changed.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no tools/list_changed after the policy changed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let now = names().await;
    assert!(!now.contains(&"misbehave.spin".to_string()), "{now:?}");
    assert!(now.contains(&"misbehave.sleep".to_string()), "{now:?}");

    std::fs::write(&fixture.policy, "version = 1\n[tools.calc\n").unwrap();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(
        names().await,
        now,
        "a broken policy must not replace the tools"
    );
    assert_eq!(changed.load(Ordering::SeqCst), 1);
    let ok = client
        .call_tool(
            CallToolRequestParams::new("calc.eval")
                .with_arguments(json!({"expression": "3*3"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(ok.structured_content, Some(json!({"result": 9})));
    client.cancel().await.unwrap();
}

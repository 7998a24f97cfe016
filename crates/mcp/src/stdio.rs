//! Serving one session over stdin and stdout, the way MCP clients launch local servers.
//! Stdout carries protocol messages only: tools' own output is captured per call by the
//! sandbox, and logs go to stderr.

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::Server;

/// Why a stdio session ended badly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    #[error("the MCP client did not complete the handshake: {0}")]
    Handshake(String),
    #[error("the MCP session stopped unexpectedly: {0}")]
    Session(String),
}

/// Serves `server` on stdin/stdout until the client closes stdin or `stop` is cancelled.
pub async fn serve(server: Server, stop: CancellationToken) -> Result<(), StdioError> {
    let running = server
        .serve_with_ct(rmcp::transport::stdio_pipes(), stop)
        .await
        .map_err(|e| StdioError::Handshake(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| StdioError::Session(e.to_string()))?;
    Ok(())
}

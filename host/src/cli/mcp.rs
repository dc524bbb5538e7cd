//! `wasmind mcp --url URL`: a stdio bridge for MCP clients that start a command instead of
//! calling a URL (Claude Desktop, many editors). It speaks MCP on stdin/stdout and relays every
//! message, unchanged and in order, to a wasmind server's `/mcp` over the streamable HTTP
//! transport with the key in `WASMIND_API_KEY` — both sides are rmcp's own transports, so the
//! bridge holds no protocol logic of its own. A message the server refuses (a revoked key
//! answers 401) is answered to the client as a JSON-RPC error naming why, and logged on stderr.

use anyhow::Context;
use rmcp::{
    ErrorData, RoleClient, RoleServer,
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::{
        IntoTransport, StreamableHttpClientTransport, Transport,
        streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError},
    },
};
use tokio::sync::mpsc;

/// Relays stdio to `url` until the client closes stdin or the server ends the session.
pub fn run(url: &str, key: &str) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(relay(url, key))
}

async fn relay(url: &str, key: &str) -> anyhow::Result<()> {
    let mut client = IntoTransport::<RoleServer, _, _>::into_transport(rmcp::transport::stdio());
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(key);
    let mut server = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);

    // Sends go out one after another, in the client's order (a send is queued to the HTTP
    // worker only when its future first runs); refusals come back through `refused`.
    let (outbox, mut queued) = mpsc::unbounded_channel::<Sending>();
    let (refusals, mut refused) = mpsc::unbounded_channel::<ServerJsonRpcMessage>();
    tokio::spawn(async move {
        while let Some(Sending { id, sent }) = queued.recv().await {
            if let Err(e) = sent.await {
                let why = refusal(&e);
                eprintln!("wasmind mcp: the server refused a message: {why}");
                if let Some(id) = id {
                    let error = ErrorData::internal_error(format!("wasmind server: {why}"), None);
                    let _ = refusals.send(ServerJsonRpcMessage::error(error, Some(id)));
                }
            }
        }
    });

    loop {
        tokio::select! {
            message = Transport::<RoleServer>::receive(&mut client) => {
                let Some(message) = message else { break };
                let id = match &message {
                    ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
                    _ => None,
                };
                let sent = Box::pin(Transport::<RoleClient>::send(&mut server, message));
                if outbox.send(Sending { id, sent }).is_err() {
                    break;
                }
            }
            message = Transport::<RoleClient>::receive(&mut server) => {
                let Some(message) = message else { break };
                Transport::<RoleServer>::send(&mut client, message).await.context("writing to stdout")?;
            }
            Some(refusal) = refused.recv() => {
                Transport::<RoleServer>::send(&mut client, refusal).await.context("writing to stdout")?;
            }
        }
    }
    // Answer what was refused before the end, then close the session on the server.
    while let Ok(refusal) = refused.try_recv() {
        Transport::<RoleServer>::send(&mut client, refusal)
            .await
            .context("writing to stdout")?;
    }
    let _ = Transport::<RoleClient>::close(&mut server).await;
    Ok(())
}

type SendError = StreamableHttpError<reqwest::Error>;

/// Why the server refused, in the words a user of the client can act on.
fn refusal(e: &SendError) -> String {
    match e {
        StreamableHttpError::AuthRequired(_) => "401 invalid_api_key: the server refused the API \
            key in WASMIND_API_KEY (missing, unknown or revoked)"
            .into(),
        other => other.to_string(),
    }
}

/// One message on its way to the server, with the id its refusal must answer.
struct Sending {
    id: Option<rmcp::model::RequestId>,
    sent: std::pin::Pin<Box<dyn Future<Output = Result<(), SendError>> + Send>>,
}

//! The transport to a server started as a child process (MCP's stdio transport): its stdin and
//! stdout carry JSON-RPC lines, its stderr goes to the log, and it is stopped as the protocol
//! asks (its input closed, then `SIGTERM`, then killed) or killed when the transport is dropped.
//!
//! A `tools/call`'s answer is read as the tool result it answers: rmcp's decoding tries its
//! result types one by one and buffers the message twice on the way, the larger part of what
//! relaying a call costs a gateway. Every other message is decoded by rmcp's own codec, and an
//! answer that does not read as a tool result goes to it too.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, ErrorData, JsonRpcMessage, RequestId,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde::Deserialize;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use crate::lines::{self, Line, Lines};

/// How long a server gets to exit after its input closes, and again after `SIGTERM`.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// More `tools/call` requests than this unanswered at once is a server that drops answers:
/// their ids are forgotten, and their answers, if they come, take rmcp's decoding.
const MAX_CALLS_IN_FLIGHT: usize = 4096;

/// A running server and the JSON-RPC lines to and from it.
pub(super) struct ChildTransport {
    /// `None` once it has exited or been killed; killed on drop while it runs.
    child: Option<Child>,
    lines: Lines<ChildStdout>,
    /// `None` once closed: the server reads the end of its input.
    writer: Arc<Mutex<Option<ChildStdin>>>,
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleClient>>,
    /// The ids of the `tools/call` requests sent and not yet answered.
    calls: HashSet<RequestId>,
}

impl ChildTransport {
    /// Starts `command` with its standard streams piped; its stderr is handed back to be read.
    pub(super) fn spawn(mut command: Command) -> std::io::Result<(Self, Option<ChildStderr>)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other(
                "the server's stdin or stdout is not a pipe",
            ));
        };
        let stderr = child.stderr.take();
        let transport = ChildTransport {
            child: Some(child),
            lines: Lines::new(stdout, usize::MAX),
            writer: Arc::new(Mutex::new(Some(stdin))),
            codec: JsonRpcMessageCodec::default(),
            calls: HashSet::new(),
        };
        Ok((transport, stderr))
    }

    /// The message on the line just read, or `None` when there is none for rmcp.
    fn admit(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let text = self.lines.text();
        if text.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        if !self.calls.is_empty()
            && let Some(answer) = tool_result(text, &mut self.calls)
        {
            return Some(answer);
        }
        match lines::decode(&mut self.codec, text) {
            Ok(message) => {
                if let Some(JsonRpcMessage::Response(r)) = &message {
                    self.calls.remove(&r.id);
                } else if let Some(JsonRpcMessage::Error(e)) = &message
                    && let Some(id) = &e.id
                {
                    self.calls.remove(id);
                }
                message
            }
            Err(JsonRpcMessageCodecError::Serde(e))
                if matches!(
                    e.classify(),
                    serde_json::error::Category::Data | serde_json::error::Category::Io
                ) =>
            {
                // JSON that is no message rmcp knows: answered as rmcp's own transport answers
                tracing::debug!(error = %e, "an MCP message of no known shape from the server");
                let answer = TxJsonRpcMessage::<RoleClient>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                if let Ok(line) = lines::encode(&answer) {
                    let writer = self.writer.clone();
                    tokio::spawn(async move { lines::write_line(&writer, &line).await });
                }
                None
            }
            Err(e) => {
                // not JSON: nothing to answer (answering could echo back and forth)
                tracing::debug!(error = %e, "a line from the server that is not JSON");
                None
            }
        }
    }

    /// Stops the server as MCP's stdio transport asks: its input closed, then `SIGTERM`, then
    /// killed, each after a wait for it to exit.
    async fn stop(&mut self) -> std::io::Result<()> {
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        drop(self.writer.lock().await.take());
        if wait_for_exit(child).await? {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|pid| libc::pid_t::try_from(pid).ok()) {
            // SAFETY: kill(2) with a pid this process started and has not reaped, and a signal
            unsafe { libc::kill(pid, libc::SIGTERM) };
            if wait_for_exit(child).await? {
                self.child = None;
                return Ok(());
            }
        }
        child.kill().await?;
        self.child = None;
        Ok(())
    }
}

/// Whether `child` exited within [`EXIT_WAIT`].
async fn wait_for_exit(child: &mut Child) -> std::io::Result<bool> {
    match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
        Ok(status) => status.map(|_| true),
        Err(_) => Ok(false),
    }
}

/// A response as a tool result reads it; anything else fails to read as one.
#[derive(Deserialize)]
struct ToolAnswer<'a> {
    #[serde(borrow)]
    jsonrpc: std::borrow::Cow<'a, str>,
    id: RequestId,
    result: CallToolResult,
    method: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
}

/// The answer on `text` to one of the `tools/call` requests in `calls`, read as the tool result
/// it is, or `None` to leave the line to rmcp's decoding: another message, an answer to
/// another request, or a result that is not a complete tool result (a task, a request for
/// input). rmcp's decoding would read a complete tool result as the same value, or as another
/// result type that the relay reads back as this one.
fn tool_result(
    text: &[u8],
    calls: &mut HashSet<RequestId>,
) -> Option<RxJsonRpcMessage<RoleClient>> {
    let answer: ToolAnswer<'_> = serde_json::from_slice(text).ok()?;
    if answer.jsonrpc != "2.0" || answer.method.is_some() || answer.error.is_some() {
        return None;
    }
    if !calls.remove(&answer.id) {
        return None;
    }
    Some(JsonRpcMessage::response(
        ServerResult::CallToolResult(answer.result),
        answer.id,
    ))
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::CallToolRequest(_)) =>
            {
                if self.calls.len() >= MAX_CALLS_IN_FLIGHT {
                    self.calls.clear();
                }
                self.calls.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.calls.remove(id);
                }
            }
            _ => {}
        }
        // encoded here, so that the future rmcp spawns holds the bytes, not the message
        let line = lines::encode(&item);
        let writer = self.writer.clone();
        async move { lines::write_line(&writer, &line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.lines.next().await {
                Ok(Line::End) | Err(_) => return None,
                Ok(Line::TooLong(n)) => {
                    tracing::warn!(
                        bytes = n,
                        "a line from the server too long to read was skipped"
                    );
                }
                Ok(Line::Whole) => {
                    if let Some(message) = self.admit() {
                        return Some(message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stop().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp's own decoding makes of `line`.
    fn rmcp_reads(line: &str) -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_str(line).unwrap()
    }

    fn answered(message: &RxJsonRpcMessage<RoleClient>) -> (&RequestId, &ServerResult) {
        match message {
            JsonRpcMessage::Response(r) => (&r.id, &r.result),
            other => panic!("not a response: {other:?}"),
        }
    }

    #[test]
    fn a_tool_result_reads_as_rmcp_reads_it() {
        let answers = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"jsonrpc":"2.0","id":"c-2","result":{"content":[],"structuredContent":{"n":1},"isError":false,"_meta":{"k":"v"}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"structuredContent":null,"resultType":"complete"}}"#,
            r#"{"result":{"isError":true,"content":[{"type":"text","text":"no"}]},"id":4,"jsonrpc":"2.0"}"#,
        ];
        for line in answers {
            let theirs = rmcp_reads(line);
            let (id, _) = answered(&theirs);
            let mut calls = HashSet::from([id.clone()]);
            let ours = tool_result(line.as_bytes(), &mut calls).expect("read as a tool result");
            assert!(calls.is_empty(), "the call is answered");
            let (our_id, ours) = answered(&ours);
            let ServerResult::CallToolResult(ours) = ours else {
                panic!("{ours:?}")
            };
            assert_eq!(our_id, id);
            // rmcp reads it as a tool result too, or as a type the relay reads back as one
            let theirs: CallToolResult = match answered(&theirs).1 {
                ServerResult::CallToolResult(r) => r.clone(),
                other => serde_json::from_value(serde_json::to_value(other).unwrap()).unwrap(),
            };
            assert_eq!(ours, &theirs, "{line}");
        }
    }

    #[test]
    fn what_is_not_a_complete_tool_result_is_left_to_rmcp() {
        let id = RequestId::Number(7);
        for line in [
            // the server asks for input before it answers
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","requestState":"s"}}"#,
            // a task
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"t","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
            r#"{"jsonrpc":"1.0","id":7,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
        ] {
            let mut calls = HashSet::from([id.clone()]);
            assert!(tool_result(line.as_bytes(), &mut calls).is_none(), "{line}");
            assert!(calls.contains(&id), "{line}");
        }
        // an answer to a request that was not a tools/call
        let mut calls = HashSet::from([RequestId::Number(8)]);
        let line = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert!(tool_result(line.as_bytes(), &mut calls).is_none());
    }
}

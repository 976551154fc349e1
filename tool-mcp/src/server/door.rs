//! The front door of a byte-stream MCP connection (stdio, a socket): rmcp's transport for it.
//! Every JSON-RPC line is read with a size bound and checked before rmcp sees it, so that each
//! request gets an answer.
//!
//! rmcp decodes a message into its typed requests in one step: a `tools/call` whose `params`
//! do not fit (arguments that are not an object, no tool name) does not decode as a
//! `tools/call` at all and is answered "method not found", and a line of tens of megabytes is
//! buffered whole before anything answers. Here each line is read up to
//! [`DEFAULT_MAX_REQUEST_BYTES`] (or the server's own bound) and answered by the protocol's own
//! errors when it cannot be served: `-32700` (not JSON), `-32600` (too large, or not a request
//! object) and `-32602` (a `tools/call` whose params are wrong). A `tools/call` the check
//! passed is built from the JSON the check read; every other message is decoded by rmcp's own
//! codec, as rmcp's transport decodes it. Answers are written line by line, never interleaved.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ErrorData, JsonRpcMessage,
    NumberOrString, RequestMetaObject,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio::task::JoinSet;

use crate::lines::{self, Line, Lines};

/// The largest JSON-RPC message a server reads by default: 4 MiB, far above any tool call's
/// arguments (the executor bounds those much lower) and far below what would strain memory.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 << 20;

/// JSON-RPC: the message is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the message is not a valid request (here also: larger than the bound).
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the method's parameters are wrong.
const INVALID_PARAMS: i64 = -32602;

fn error(id: &Value, code: i64, message: String) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
}

fn error_line(id: &Value, code: i64, message: String) -> Vec<u8> {
    let mut line = error(id, code, message).to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The JSON-RPC error answer for a message no MCP server can serve as it is, or `None` for one
/// to hand on: `-32700` when it is not JSON; `-32600` when it is not one JSON-RPC 2.0 object
/// (a batch, which MCP removed, a wrong or missing `jsonrpc`, an `id` that is neither a string
/// nor a number); `-32602` for a `tools/call` whose params cannot name a tool and its
/// arguments. The answer carries the message's `id` when it has a usable one, and `id: null`
/// otherwise, as JSON-RPC asks.
///
/// rmcp decodes a message into its typed requests in one step, so without this a `tools/call`
/// with wrong params is "method not found" and a message that is not JSON gets no JSON-RPC
/// answer at all; both byte streams and HTTP serve every message through this check first.
pub fn malformed(message: &[u8]) -> Option<Value> {
    inspect(message).err()
}

/// The message as read, or the error answer [`malformed`] gives it.
fn inspect(message: &[u8]) -> Result<Value, Value> {
    let message: Value = serde_json::from_slice(message).map_err(|e| {
        error(
            &Value::Null,
            PARSE_ERROR,
            format!("the message is not JSON: {e}"),
        )
    })?;
    match verdict(&message) {
        Some(answer) => Err(answer),
        None => Ok(message),
    }
}

/// The error answer for a message read as JSON, or `None` to hand it on.
fn verdict(message: &Value) -> Option<Value> {
    let Some(object) = message.as_object() else {
        // batches were removed from MCP; anything else is not a message
        return Some(error(
            &Value::Null,
            INVALID_REQUEST,
            "a message must be one JSON-RPC object".to_owned(),
        ));
    };
    let id = object.get("id");
    let answer_id = match id {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(error(
            &answer_id,
            INVALID_REQUEST,
            "the message must say \"jsonrpc\": \"2.0\"".to_owned(),
        ));
    }
    let id = match id {
        // a notification, or a response: nothing to answer with an id
        None => return None,
        Some(Value::String(_) | Value::Number(_)) => &answer_id,
        Some(other) => {
            return Some(error(
                &Value::Null,
                INVALID_REQUEST,
                format!(
                    "a request's id must be a string or a number, not {}",
                    kind_of(other)
                ),
            ));
        }
    };
    if object.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let problem = match object.get("params") {
        None | Some(Value::Null) => Some("tools/call needs params with the tool's name".to_owned()),
        Some(Value::Object(params)) => match (params.get("name"), params.get("arguments")) {
            (Some(Value::String(_)), None | Some(Value::Null | Value::Object(_))) => None,
            (Some(Value::String(_)), Some(other)) => Some(format!(
                "params.arguments must be an object of the tool's arguments, not {}",
                kind_of(other)
            )),
            (None, _) => Some("params.name is missing: name the tool to call".to_owned()),
            (Some(other), _) => Some(format!(
                "params.name must be the tool's name as a string, not {}",
                kind_of(other)
            )),
        },
        Some(other) => Some(format!("params must be an object, not {}", kind_of(other))),
    };
    problem.map(|message| error(id, INVALID_PARAMS, message))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// rmcp's transport for a byte stream: JSON-RPC lines read from `R` through the checks of
/// [`malformed`], answers written to `W`.
pub(crate) struct Door<R, W> {
    lines: Lines<R>,
    /// `None` once closed.
    writer: Arc<Mutex<Option<W>>>,
    /// The door's own error answers being written, each under the writer's lock like rmcp's.
    answers: JoinSet<()>,
    /// rmcp's own decoding, for every message but a `tools/call`.
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
}

impl<R, W> Door<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads `reader` and writes `writer`, refusing a line of more than `max` bytes.
    pub(crate) fn new(reader: R, writer: W, max: usize) -> Self {
        Door {
            lines: Lines::new(reader, max),
            writer: Arc::new(Mutex::new(Some(writer))),
            answers: JoinSet::new(),
            codec: JsonRpcMessageCodec::default(),
        }
    }

    /// Writes one of the door's answers. The write runs beside `receive`, which must stay
    /// safe to cancel, so it is a task of its own; `close` waits for it.
    fn answer(&mut self, line: Vec<u8>) {
        while self.answers.try_join_next().is_some() {}
        let writer = self.writer.clone();
        self.answers.spawn(async move {
            if let Err(e) = lines::write_line(&writer, &line).await {
                tracing::debug!(error = %e, "an MCP error answer could not be written");
            }
        });
    }

    /// The message on the line just read, or `None` when there is none for rmcp (a blank
    /// line, one the door answered, a notification rmcp ignores).
    fn admit(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let text = self.lines.text();
        if text.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let message = match inspect(text) {
            Ok(message) => message,
            Err(answer) => {
                let mut line = answer.to_string().into_bytes();
                line.push(b'\n');
                self.answer(line);
                return None;
            }
        };
        if let Some(call) = tool_call(message) {
            return Some(call);
        }
        match lines::decode(&mut self.codec, text) {
            Ok(message) => message,
            Err(JsonRpcMessageCodecError::Serde(e)) => {
                // JSON that is no message rmcp knows: answered as rmcp's own transport answers
                tracing::debug!(error = %e, "an MCP message of no known shape");
                let answer = TxJsonRpcMessage::<RoleServer>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                if let Ok(line) = lines::encode(&answer) {
                    self.answer(line);
                }
                None
            }
            Err(e) => {
                tracing::debug!(error = %e, "an MCP message could not be decoded");
                None
            }
        }
    }
}

/// A `tools/call` the door's check passed, as rmcp's request, built from the JSON already
/// read: rmcp's decoding tries its requests one by one and buffers the message twice on the
/// way, the larger part of what serving a call costs. `None` for any other message, and for a
/// call in a form only rmcp's decoding reads (an id that is not an `i64` or a string, a
/// `_meta` that is not an object): those go to rmcp's codec.
fn tool_call(message: Value) -> Option<RxJsonRpcMessage<RoleServer>> {
    let Value::Object(mut message) = message else {
        return None;
    };
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let id = match message.get("id")? {
        Value::Number(n) => NumberOrString::Number(n.as_i64()?),
        Value::String(s) => NumberOrString::String(s.as_str().into()),
        _ => return None,
    };
    let Some(Value::Object(mut params)) = message.remove("params") else {
        return None;
    };
    // rmcp keeps `params._meta` in the request's extensions, not in its params
    let meta = match params.remove("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(meta)) => Some(meta),
        Some(_) => return None,
    };
    let params: CallToolRequestParams = serde_json::from_value(Value::Object(params)).ok()?;
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request
            .extensions
            .insert(RequestMetaObject::from(meta as Map<String, Value>));
    }
    Some(JsonRpcMessage::request(
        ClientRequest::CallToolRequest(request),
        id,
    ))
}

impl<R, W> Transport<RoleServer> for Door<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // encoded here, so that the future rmcp spawns holds the bytes, not the message
        let line = lines::encode(&item);
        let writer = self.writer.clone();
        async move { lines::write_line(&writer, &line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.lines.next().await {
                Ok(Line::End) | Err(_) => return None,
                Ok(Line::TooLong(n)) => {
                    let max = self.lines.max();
                    tracing::warn!(
                        bytes = n,
                        max,
                        "an MCP message over the size bound was refused"
                    );
                    self.answer(error_line(
                        &Value::Null,
                        INVALID_REQUEST,
                        format!(
                            "the message is {n} bytes, more than the {max} bytes this server reads"
                        ),
                    ));
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
        // the door's answers are written before the output ends
        while self.answers.join_next().await.is_some() {}
        match self.writer.lock().await.take() {
            Some(mut writer) => writer.shutdown().await,
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Option<Value> {
        if line.trim().is_empty() {
            return None;
        }
        malformed(line.as_bytes())
    }

    #[test]
    fn malformed_tool_calls_are_invalid_params_with_their_id() {
        let bad = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":"q"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":3}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
        ];
        for line in bad {
            let a = answer(line).unwrap_or_else(|| panic!("passed on: {line}"));
            assert_eq!(a["id"], 7, "{a}");
            assert_eq!(a["error"]["code"], INVALID_PARAMS, "{a}");
        }
        let good = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "",
        ];
        for line in good {
            assert_eq!(answer(line), None, "{line}");
        }
        assert_eq!(answer("{nope").unwrap()["error"]["code"], PARSE_ERROR);
        assert_eq!(answer("[1, 2]").unwrap()["error"]["code"], INVALID_REQUEST);
        let wrong = answer(r#"{"jsonrpc":"1.0","id":4,"method":"tools/list"}"#).unwrap();
        assert_eq!(
            (&wrong["id"], &wrong["error"]["code"]),
            (&json!(4), &json!(INVALID_REQUEST))
        );
        let null_id = answer(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#).unwrap();
        assert_eq!(null_id["error"]["code"], INVALID_REQUEST);
        let members = null_id.as_object().unwrap();
        assert_eq!(members.get("id"), Some(&Value::Null), "{null_id}");
    }

    /// The request rmcp's own decoding makes of `line`, and the door's, both as sent.
    fn both(line: &str) -> (Value, Value) {
        let theirs: RxJsonRpcMessage<RoleServer> = serde_json::from_str(line).unwrap();
        let ours = tool_call(serde_json::from_str(line).unwrap()).expect("built by the door");
        let meta = |m: &RxJsonRpcMessage<RoleServer>| match m {
            JsonRpcMessage::Request(r) => match &r.request {
                ClientRequest::CallToolRequest(c) => {
                    c.extensions.get::<RequestMetaObject>().cloned()
                }
                other => panic!("not a tools/call: {other:?}"),
            },
            other => panic!("not a request: {other:?}"),
        };
        assert_eq!(meta(&theirs), meta(&ours), "{line}");
        (
            serde_json::to_value(&theirs).unwrap(),
            serde_json::to_value(&ours).unwrap(),
        )
    }

    #[test]
    fn a_tool_call_is_built_as_rmcp_decodes_it() {
        let calls = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x","n":[1,2]}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"search"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s","arguments":null,"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"s","arguments":{},"requestState":"abc","extra":true},"other":1}"#,
            r#"{"id":5,"params":{"arguments":{"k":"v"},"name":"s"},"method":"tools/call","jsonrpc":"2.0"}"#,
        ];
        for line in calls {
            let (theirs, ours) = both(line);
            assert_eq!(theirs, ours, "{line}");
        }
        // forms only rmcp's decoding reads go to it
        for line in [
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","_meta":3}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"s"}}"#,
        ] {
            assert!(
                tool_call(serde_json::from_str(line).unwrap()).is_none(),
                "{line}"
            );
        }
    }

    #[tokio::test]
    async fn a_receive_cut_off_mid_line_loses_nothing_of_it() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut door = Door::new(server, tokio::io::sink(), DEFAULT_MAX_REQUEST_BYTES);
        let line = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}"#;
        let (first, rest) = line.split_at(40);
        client.write_all(first.as_bytes()).await.unwrap();
        // rmcp drops `receive` when something else is ready first: here, a timeout
        let cut = tokio::time::timeout(std::time::Duration::from_millis(50), door.receive()).await;
        assert!(cut.is_err(), "nothing whole to receive yet");
        client.write_all(rest.as_bytes()).await.unwrap();
        client.write_all(b"\n").await.unwrap();
        let message = tokio::time::timeout(std::time::Duration::from_secs(10), door.receive())
            .await
            .expect("the line whose start was read before the cut")
            .expect("the whole line");
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(value["id"], 9);
        assert_eq!(value["params"]["arguments"]["q"], "x");
    }

    #[tokio::test]
    async fn the_doors_answers_are_written_before_the_output_ends() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let (out_write, mut out_read) = tokio::io::duplex(1 << 16);
        let mut door = Door::new(server, out_write, 64);
        client
            .write_all(format!("{{nope\n{}\n", "x".repeat(100)).as_bytes())
            .await
            .unwrap();
        drop(client);
        assert!(door.receive().await.is_none(), "the input ended");
        door.close().await.unwrap();
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_read, &mut written)
            .await
            .unwrap();
        let codes: Vec<i64> = written
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["error"]["code"]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert_eq!(codes, [PARSE_ERROR, INVALID_REQUEST], "{written}");
    }
}

//! The front door of a byte-stream MCP connection (stdio, a socket): every JSON-RPC line is read
//! with a size bound and checked before rmcp sees it, so that each request gets an answer.
//!
//! rmcp decodes a message into its typed requests in one step: a `tools/call` whose `params`
//! do not fit (arguments that are not an object, no tool name) does not decode as a
//! `tools/call` at all and is answered "method not found", and a line of tens of megabytes is
//! buffered whole before anything answers. Here each line is read up to
//! [`DEFAULT_MAX_REQUEST_BYTES`] (or the server's own bound) and answered by the protocol's own
//! errors when it cannot be served: `-32700` (not JSON), `-32600` (too large, or not a request
//! object) and `-32602` (a `tools/call` whose params are wrong). Every other line goes to rmcp
//! unchanged, and rmcp's answers come back line by line, never interleaved with these.

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The largest JSON-RPC message a server reads by default: 4 MiB, far above any tool call's
/// arguments (the executor bounds those much lower) and far below what would strain memory.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 << 20;

/// JSON-RPC: the message is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the message is not a valid request (here also: larger than the bound).
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the method's parameters are wrong.
const INVALID_PARAMS: i64 = -32602;

/// One line as read.
enum Line {
    /// A complete line (without its newline).
    Whole,
    /// A line longer than the bound; its bytes were skipped up to its newline. How many bytes.
    TooLong(usize),
    /// The input ended.
    End,
}

/// Reads one line into `buf` (cleared first), keeping at most `max` bytes: a longer line is
/// consumed to its end without being kept.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut seen = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match seen {
                0 => Line::End,
                n if n > max => Line::TooLong(n),
                _ => Line::Whole,
            });
        }
        let (chunk, newline) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        seen += chunk.len();
        if seen <= max {
            buf.extend_from_slice(chunk);
        } else {
            buf.clear();
        }
        let used = chunk.len() + usize::from(newline);
        reader.consume(used);
        if newline {
            return Ok(if seen > max {
                Line::TooLong(seen)
            } else {
                Line::Whole
            });
        }
    }
}

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

/// The error answer for a line that must not reach rmcp, or `None` to pass it on.
fn refusal(line: &[u8]) -> Option<Vec<u8>> {
    let text = line.strip_suffix(b"\r").unwrap_or(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let mut answer = malformed(text)?.to_string().into_bytes();
    answer.push(b'\n');
    Some(answer)
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
    let message: Value = match serde_json::from_slice(message) {
        Ok(v) => v,
        Err(e) => {
            return Some(error(
                &Value::Null,
                PARSE_ERROR,
                format!("the message is not JSON: {e}"),
            ));
        }
    };
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

/// Connects `reader`/`writer` (the client's side) to `server` (rmcp's side of an in-process
/// pipe) through the door, until the client's input ends and the server's answers are all
/// written.
pub(crate) async fn pump<R, W, S>(reader: R, mut writer: W, server: S, max_request_bytes: usize)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (from_server, mut to_server) = tokio::io::split(server);
    // every line to the client goes through one writer, so that an error answer never lands
    // in the middle of one of rmcp's
    let (lines, mut outbox) = mpsc::channel::<Vec<u8>>(64);
    let write = tokio::spawn(async move {
        while let Some(line) = outbox.recv().await {
            if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    let answers = lines.clone();
    let relay = tokio::spawn(async move {
        let mut from_server = BufReader::new(from_server);
        let mut line = Vec::new();
        loop {
            line.clear();
            match from_server.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if answers.send(line.clone()).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        match read_line(&mut reader, &mut line, max_request_bytes).await {
            Ok(Line::End) | Err(_) => break,
            Ok(Line::TooLong(n)) => {
                tracing::warn!(
                    bytes = n,
                    max = max_request_bytes,
                    "an MCP message over the size bound was refused"
                );
                let answer = error_line(
                    &Value::Null,
                    INVALID_REQUEST,
                    format!(
                        "the message is {n} bytes, more than the {max_request_bytes} bytes this server reads"
                    ),
                );
                if lines.send(answer).await.is_err() {
                    break;
                }
            }
            Ok(Line::Whole) => {
                if let Some(answer) = refusal(&line) {
                    if lines.send(answer).await.is_err() {
                        break;
                    }
                    continue;
                }
                line.push(b'\n');
                if to_server.write_all(&line).await.is_err() {
                    break;
                }
            }
        }
    }
    // the client is done: rmcp sees the end of its input, finishes, and closes its output
    let _ = to_server.shutdown().await;
    drop(to_server);
    drop(lines);
    let _ = relay.await;
    let _ = write.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Option<Value> {
        refusal(line.as_bytes()).map(|l| serde_json::from_slice(&l).unwrap())
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

    #[tokio::test]
    async fn a_line_past_the_bound_is_skipped_to_its_end_and_the_next_is_read() {
        let input = format!("{}\nsecond\n", "x".repeat(100));
        let mut reader = BufReader::with_capacity(16, input.as_bytes());
        let mut buf = Vec::new();
        assert!(matches!(
            read_line(&mut reader, &mut buf, 50).await.unwrap(),
            Line::TooLong(100)
        ));
        assert!(buf.is_empty(), "nothing of it kept");
        assert!(matches!(
            read_line(&mut reader, &mut buf, 50).await.unwrap(),
            Line::Whole
        ));
        assert_eq!(buf, b"second");
        assert!(matches!(
            read_line(&mut reader, &mut buf, 50).await.unwrap(),
            Line::End
        ));
    }
}

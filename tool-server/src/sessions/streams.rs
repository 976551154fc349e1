//! The SSE streams that answer requests of an MCP session, kept so that a client can come back
//! to them: MCP's resumability and polling. Every event of a request's stream carries an id
//! (`N/R`: the `N`th event of the session's `R`th request stream; `0/R` is the priming event
//! with the `retry` hint, sent first). A client whose stream ended before the response (its
//! connection dropped, or the server closed it) sends `GET` with `Last-Event-ID` and gets the
//! events it missed, then the rest as they come, up to the response.
//!
//! The server closes a stream itself when the request has not been answered within the hold
//! ([`Streams::new`]'s `hold`, unset by default): a long tool call then holds no connection,
//! and its client polls, reconnecting after the `retry` interval. A resumed stream is held as
//! long again.
//!
//! The events are kept in this process's memory, from the request until
//! [`SessionLimits::idle_timeout`](super::SessionLimits) after its response, at most
//! [`MAX_EVENTS`] per stream; a stream whose answer went out on the response its client opened
//! is kept only [`DELIVERED_KEEP`], for a client whose connection broke as it went. A client that reconnects to another
//! replica, or later, is told that the event is unknown and sends its request again.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::{mpsc, watch};

/// The most events one stream keeps; a client that missed more starts its request again.
pub(crate) const MAX_EVENTS: usize = 64;

/// How many events wait for a slow client before the stream stops reading, as rmcp's own.
const CHANNEL: usize = 16;

/// A request stream of a session: its id and rmcp's number for the HTTP request.
type Key = (SessionId, u64);

/// Where a `Last-Event-ID` points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventRef {
    /// The `index`th event of the stream of HTTP request `request`.
    Request { index: usize, request: u64 },
    /// An event of the session's standalone stream (`GET` without a request), which rmcp keeps.
    Standalone,
}

impl EventRef {
    /// Reads an event id this server sent; `None` for anything else.
    pub(crate) fn parse(id: &str) -> Option<Self> {
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then_some(())?;
            s.parse::<u64>().ok()
        };
        match id.split_once('/') {
            Some((index, request)) => Some(EventRef::Request {
                index: usize::try_from(number(index)?).ok()?,
                request: number(request)?,
            }),
            None => number(id).map(|_| EventRef::Standalone),
        }
    }
}

/// Why a stream cannot be resumed from an event.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResumeError {
    /// Not an id of this server's.
    #[error(
        "`Last-Event-ID: {0}` is not an event id this server sent (they read `N/R`, or `N` on \
         the session's standalone stream)"
    )]
    Malformed(String),
    /// No stream of the session has (any longer) the event.
    #[error(
        "this MCP session has no stream with the event `{id}` on this server: the stream ended \
         too long ago (it is kept up to {keep_s} s after its answer), the event is too far \
         behind (at most {MAX_EVENTS} events are kept), the stream was opened on another \
         replica, or it never existed; send the request again"
    )]
    Unknown {
        /// The id asked for.
        id: String,
        /// How long a stream is kept after its response, in seconds.
        keep_s: u64,
    },
}

/// One request's stream as recorded.
struct Log {
    /// The events kept, each with its index.
    events: VecDeque<(usize, ServerSseMessage)>,
    /// The index the next event will have.
    next: usize,
    /// Once rmcp's stream ended (the request was answered or cancelled): until when it is kept.
    ended: Option<Instant>,
    /// Wakes the resumed streams that wait for more.
    changed: watch::Sender<()>,
}

/// The streams kept, and when they were last pruned.
struct Logs {
    streams: HashMap<Key, Log>,
    pruned: Instant,
}

/// How long a stream whose answer went out on its first response is kept: several times the
/// `retry` a client waits before it reconnects.
const DELIVERED_KEEP: Duration = Duration::from_secs(15);

/// How often the streams that ended long enough ago are dropped, at most.
const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// The request streams of every session this process serves.
pub(crate) struct Streams {
    logs: Mutex<Logs>,
    /// How long a stream is kept once it ended.
    keep: Duration,
    /// How long one HTTP response waits for a request's answer before the server ends it.
    hold: Option<Duration>,
}

impl Streams {
    /// Streams kept for `keep` after they end; each response is ended after `hold` (if set)
    /// when the request is not answered by then.
    pub(crate) fn new(keep: Duration, hold: Option<Duration>) -> Arc<Self> {
        Arc::new(Streams {
            logs: Mutex::new(Logs {
                streams: HashMap::new(),
                pruned: Instant::now(),
            }),
            keep,
            hold,
        })
    }

    /// The response to a request of `session`: rmcp's `stream`, recorded as it goes. The
    /// recording goes on to the request's end when the client is gone or the hold is over.
    pub(crate) fn serve(
        self: &Arc<Self>,
        session: &SessionId,
        stream: impl Stream<Item = ServerSseMessage> + Send + 'static,
    ) -> Events {
        let (tx, rx) = mpsc::channel(CHANNEL);
        let (streams, session) = (self.clone(), session.clone());
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            let mut to_client = Some(tx);
            let until = streams.hold.map(|hold| tokio::time::Instant::now() + hold);
            let mut key = None;
            let mut delivered = false;
            loop {
                let event = match (until, to_client.is_some()) {
                    (Some(until), true) => tokio::select! {
                        event = stream.next() => event,
                        () = tokio::time::sleep_until(until) => {
                            // the answer is late: the client comes back for it
                            to_client = None;
                            continue;
                        }
                    },
                    _ => stream.next().await,
                };
                let Some(event) = event else { break };
                if let Some(k) = streams.record(&session, &event) {
                    key = Some(k);
                }
                let answer = is_answer(&event);
                if let Some(tx) = &to_client {
                    if tx.send(event).await.is_ok() {
                        delivered |= answer;
                    } else {
                        // the client left: the events wait for it to reconnect
                        to_client = None;
                    }
                }
            }
            if let Some(key) = key {
                streams.ended(&key, delivered);
            }
        });
        Events(rx)
    }

    /// Keeps `event` under its stream; the stream's key when the event has a request's id.
    fn record(&self, session: &SessionId, event: &ServerSseMessage) -> Option<Key> {
        let Some(EventRef::Request { index, request }) =
            event.event_id.as_deref().and_then(EventRef::parse)
        else {
            return None;
        };
        let key = (session.clone(), request);
        let mut logs = self.lock();
        if !logs.streams.contains_key(&key) && logs.pruned.elapsed() >= PRUNE_EVERY {
            self.prune(&mut logs);
        }
        let log = logs.streams.entry(key.clone()).or_insert_with(|| Log {
            events: VecDeque::new(),
            next: 0,
            ended: None,
            changed: watch::channel(()).0,
        });
        if log.events.len() == MAX_EVENTS {
            log.events.pop_front();
        }
        log.events.push_back((index, event.clone()));
        log.next = index + 1;
        log.changed.send_replace(());
        Some(key)
    }

    /// The request of stream `key` ended; `delivered`: its answer went out on the response
    /// its client opened, so only a client whose connection broke as it went comes back for
    /// it, within its `retry`: that stream is kept [`DELIVERED_KEEP`] at most.
    fn ended(&self, key: &Key, delivered: bool) {
        let keep = if delivered {
            self.keep.min(DELIVERED_KEEP)
        } else {
            self.keep
        };
        let mut logs = self.lock();
        if let Some(log) = logs.streams.get_mut(key) {
            log.ended = Some(Instant::now() + keep);
            log.changed.send_replace(());
        }
    }

    /// Drops the streams kept long enough.
    fn prune(&self, logs: &mut Logs) {
        logs.streams
            .retain(|_, log| log.ended.is_none_or(|until| Instant::now() < until));
        logs.pruned = Instant::now();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Logs> {
        self.logs
            .lock()
            .expect("the streams' lock is never poisoned")
    }

    /// Drops every stream of `session` (it ended, or a new copy of it starts numbering its
    /// requests again).
    pub(crate) fn forget(&self, session: &SessionId) {
        let mut logs = self.lock();
        logs.streams.retain(|(s, _), _| s != session);
    }

    /// Whether `session` can resume from event `id`, as [`Streams::resume`] would answer.
    pub(crate) fn check(&self, session: &SessionId, id: &str) -> Result<EventRef, ResumeError> {
        let at = EventRef::parse(id).ok_or_else(|| ResumeError::Malformed(id.to_owned()))?;
        if let EventRef::Request { index, request } = at {
            let logs = self.lock();
            let key = (session.clone(), request);
            if !logs
                .streams
                .get(&key)
                .is_some_and(|log| self.resumable(log, index))
            {
                return Err(self.unknown(id));
            }
        }
        Ok(at)
    }

    /// The events after `index` are all kept, and `index` was sent.
    fn resumable(&self, log: &Log, index: usize) -> bool {
        let first = log.events.front().map_or(log.next, |(i, _)| *i);
        index < log.next
            && index + 1 >= first
            && log.ended.is_none_or(|until| Instant::now() < until)
    }

    fn unknown(&self, id: &str) -> ResumeError {
        ResumeError::Unknown {
            id: id.to_owned(),
            keep_s: self.keep.as_secs(),
        }
    }

    /// The stream of request `request` of `session` after event `index`: the events kept, then
    /// the new ones as they come, up to the request's end (or the hold).
    pub(crate) fn resume(
        self: &Arc<Self>,
        session: &SessionId,
        index: usize,
        request: u64,
        id: &str,
    ) -> Result<Events, ResumeError> {
        let key = (session.clone(), request);
        let mut changed = {
            let logs = self.lock();
            let log = logs
                .streams
                .get(&key)
                .filter(|log| self.resumable(log, index))
                .ok_or_else(|| self.unknown(id))?;
            log.changed.subscribe()
        };
        let (tx, rx) = mpsc::channel(CHANNEL);
        let streams = self.clone();
        tokio::spawn(async move {
            let until = streams.hold.map(|hold| tokio::time::Instant::now() + hold);
            let mut cursor = index + 1;
            loop {
                changed.mark_unchanged();
                let (events, ended) = {
                    let logs = streams.lock();
                    let Some(log) = logs.streams.get(&key) else {
                        return;
                    };
                    let events: Vec<_> = log
                        .events
                        .iter()
                        .filter(|(i, _)| *i >= cursor)
                        .map(|(_, e)| e.clone())
                        .collect();
                    cursor = log.next;
                    (events, log.ended.is_some())
                };
                for event in events {
                    let last = is_answer(&event);
                    if tx.send(event).await.is_err() || last {
                        return;
                    }
                }
                if ended {
                    return;
                }
                match until {
                    Some(until) => tokio::select! {
                        changed = changed.changed() => if changed.is_err() { return },
                        () = tokio::time::sleep_until(until) => return,
                    },
                    None => {
                        if changed.changed().await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Ok(Events(rx))
    }
}

/// The events of a response, as they come.
pub(crate) struct Events(mpsc::Receiver<ServerSseMessage>);

impl Stream for Events {
    type Item = ServerSseMessage;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<ServerSseMessage>> {
        self.0.poll_recv(cx)
    }
}

/// Whether `event` answers its request (its stream ends with it).
fn is_answer(event: &ServerSseMessage) -> bool {
    matches!(
        event.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_of_this_server_are_read_and_others_are_not() {
        assert_eq!(
            EventRef::parse("3/12"),
            Some(EventRef::Request {
                index: 3,
                request: 12
            })
        );
        assert_eq!(EventRef::parse("7"), Some(EventRef::Standalone));
        for bad in ["", "/", "a/1", "1/b", "1/2/3", "-1/2", "+1", " 1/2", "1/"] {
            assert_eq!(EventRef::parse(bad), None, "{bad:?}");
        }
    }
}

//! The approvals page in a real browser: headless Chromium driven through chromedriver
//! (WebDriver). An agent's call appears as a card with the preview; approving it runs the tool
//! and the feed shows it; denying a model's call with a reason resumes the agent's run with the
//! person's words in the model's transcript.
//!
//! Needs `chromium` and `chromedriver` (Debian's `chromium` and `chromium-driver`) on the PATH
//! or in `TOOLS_CHROMIUM` / `TOOLS_CHROMEDRIVER`; skipped without them, except under CI. The
//! helpers here serve `page_diff` too.

use crate::support;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use support::*;
use tool_server::SignInLinks;

fn find(var: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

/// chromedriver on a free port, killed when dropped.
pub(crate) struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn driver() -> Option<(Driver, PathBuf)> {
    let tools = (
        find("TOOLS_CHROMEDRIVER", &["chromedriver"]),
        find(
            "TOOLS_CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        ),
    );
    let (Some(chromedriver), Some(chromium)) = tools else {
        test_support::prerequisite(
            false,
            "chromium or chromedriver",
            "apt-get install chromium chromium-driver",
        );
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(chromedriver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    Some((
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        },
        chromium,
    ))
}

/// A browser session with a fresh profile; the profile's folder is returned for inspection.
pub(crate) async fn browser(driver: &Driver, chromium: &PathBuf) -> (Client, PathBuf) {
    let profile = tempfile::tempdir().unwrap().keep();
    let caps = json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--window-size=1400,1000",
                format!("--user-data-dir={}", profile.display()),
            ]
        }
    });
    let caps = caps.as_object().unwrap().clone();
    // chromedriver takes a moment to listen
    let mut last = None;
    for _ in 0..50 {
        match ClientBuilder::rustls()
            .expect("rustls client")
            .capabilities(caps.clone())
            .connect(&driver.url)
            .await
        {
            Ok(c) => return (c, profile),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no WebDriver session: {last:?}");
}

pub(crate) async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} is not on the page: {e}"))
        .click()
        .await
        .unwrap();
}

pub(crate) async fn text_of(c: &Client, css: &str) -> String {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} did not appear: {e}"))
        .text()
        .await
        .unwrap()
}

/// Waits until the element at `css` has text containing `want`.
pub(crate) async fn wait_text(c: &Client, css: &str, want: &str) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = match c.find(Locator::Css(css)).await {
            Ok(e) => e.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if text.contains(want) {
            return text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{css} never showed {want:?} (last: {text:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn displayed(c: &Client, css: &str) -> bool {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} is not on the page: {e}"))
        .is_displayed()
        .await
        .unwrap()
}

pub(crate) async fn enabled(c: &Client, css: &str) -> bool {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} is not on the page: {e}"))
        .is_enabled()
        .await
        .unwrap()
}

/// Opens a card's details, which fetches the operation whole, and waits for the approval to be
/// possible.
pub(crate) async fn open_card(c: &Client, card: &str) {
    click(c, &format!("{card} .body summary")).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !enabled(c, &format!("{card} .approve")).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{card} never loaded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The notes server and a handle that mints its sign-in links.
pub(crate) async fn start_with_links(model: Option<&str>) -> (Server, SignInLinks) {
    let mut links = None;
    let s = start_full(
        model,
        |_| {},
        |o| {
            links = Some(o.sign_in_links());
            o
        },
    )
    .await;
    (s, links.unwrap())
}

/// A browser signed in to `s` through a fresh one-time link.
pub(crate) async fn signed_in(
    driver: &Driver,
    chromium: &PathBuf,
    s: &Server,
    links: &SignInLinks,
) -> Client {
    let (c, _) = browser(driver, chromium).await;
    c.goto(&links.link(s.addr)).await.unwrap();
    wait_text(&c, "#status", "Live").await;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_decides_pending_calls_from_the_page() {
    let Some((driver, chromium)) = driver() else {
        return;
    };
    let (model, script) = scripted(vec![
        call("c1", "delete_note", json!({"id": "n3"})),
        answer("I kept note n3."),
    ])
    .await;
    let (s, links) = start_with_links(Some(&model)).await;
    let (c, _) = browser(&driver, &chromium).await;

    // without a token the page asks for one; the wrong one is refused and asked for again
    c.goto(&format!("{}/", s.base)).await.unwrap();
    let field = c.wait().for_element(Locator::Css("#token")).await.unwrap();
    field.send_keys(AGENT).await.unwrap();
    click(&c, "#token-form button").await;
    wait_text(&c, "#status", "cannot approve").await;
    assert!(displayed(&c, "#token").await);
    assert!(!displayed(&c, "#app").await);

    // a one-time sign-in link opens the page
    c.goto(&links.link(s.addr)).await.unwrap();
    wait_text(&c, "#status", "Live").await;
    assert!(
        !displayed(&c, "#token-form").await,
        "the token form hides once signed in"
    );
    assert!(!c.current_url().await.unwrap().as_str().contains("code="));
    wait_text(&c, "#tools", "delete_note").await;

    // an agent's call appears as a card with the terminal's preview
    let op = s.park_delete("n1").await;
    let card = format!(".card[data-op=\"{op}\"]");
    let intent = text_of(&c, &format!("{card} .intent")).await;
    assert_eq!(intent, "Delete the note \u{201c}n1\u{201d}");
    assert_eq!(text_of(&c, &format!("{card} .category")).await, "modify");
    assert_eq!(
        text_of(&c, &format!("{card} .undo")).await,
        "cannot be undone"
    );
    assert!(!displayed(&c, &format!("{card} .flag")).await);
    // the listing carries no arguments: they are fetched when the card is opened, and approving
    // waits for them to be shown
    assert!(!enabled(&c, &format!("{card} .approve")).await);
    open_card(&c, &card).await;
    wait_text(&c, &format!("{card} .arguments"), "\"n1\"").await;
    // the previewer's change: the note that goes, marked as removed
    assert_eq!(
        text_of(&c, &format!("{card} .change li.remove .label")).await,
        "note n1"
    );
    assert_eq!(
        text_of(&c, &format!("{card} .change li.remove del")).await,
        "buy milk"
    );
    assert!(
        text_of(&c, &format!("{card} .meta"))
            .await
            .contains("started by model")
    );

    // approve: the tool runs once, the card says so, the feed shows the call
    click(&c, &format!("{card} .approve")).await;
    wait_text(&c, &format!("{card} .result"), "Approved").await;
    assert_eq!(s.notes.get("n1"), None);
    wait_text(&c, "#feed", "delete_note").await;
    let first = text_of(&c, "#feed li[data-status=\"success\"]").await;
    assert!(
        first.contains("delete_note") && first.contains("decided by user"),
        "{first}"
    );

    // an agent's run asks to delete another note; the person denies it from the page with a
    // reason, and the run resumes with the denial in the model's transcript
    s.notes.0.lock().unwrap().insert("n3".into(), "keep".into());
    let (status, run) = s
        .post(
            "/api/v1/chat",
            Some(AGENT),
            json!({"messages": [{"role": "user", "content": "delete note n3"}]}),
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let op = run["pending"][0]["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let card = format!(".card[data-op=\"{op}\"]");
    assert!(
        text_of(&c, &format!("{card} .meta"))
            .await
            .contains("started by model")
    );
    c.find(Locator::Css(&format!("{card} .reason")))
        .await
        .unwrap()
        .send_keys("that note is still needed")
        .await
        .unwrap();
    click(&c, &format!("{card} .deny")).await;
    wait_text(&c, &format!("{card} .result"), "that note is still needed").await;
    assert_eq!(s.notes.get("n3").as_deref(), Some("keep"));
    let run_id = run["run_id"].as_str().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let done = loop {
        let (_, body) = s.get(&format!("/api/v1/chat/{run_id}"), Some(AGENT)).await;
        if body["status"] != "suspended" {
            break body;
        }
        assert!(tokio::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["answer"], "I kept note n3.", "{done}");
    let resumed = script.requests.lock().unwrap()[1].to_string();
    assert!(
        resumed.contains("that note is still needed"),
        "the model's transcript carries the person's reason: {resumed}"
    );
    wait_text(&c, "#feed", "denied").await;

    // an edit with a schema error is shown inline and nothing runs
    let op = s.park_delete("n3").await;
    let card = format!(".card[data-op=\"{op}\"]");
    text_of(&c, &format!("{card} .intent")).await;
    open_card(&c, &card).await;
    wait_text(&c, &format!("{card} .arguments"), "\"n3\"").await;
    click(&c, &format!("{card} .edit-toggle")).await;
    let edit = c
        .find(Locator::Css(&format!("{card} .edit")))
        .await
        .unwrap();
    edit.clear().await.unwrap();
    edit.send_keys("{\"id\": 42}").await.unwrap();
    click(&c, &format!("{card} .approve")).await;
    wait_text(&c, &format!("{card} .errors"), "/id").await;
    assert_eq!(s.notes.get("n3").as_deref(), Some("keep"));

    // the palette runs a read-only tool
    click(&c, "details[data-tool=\"read_note\"] summary").await;
    let args = c
        .find(Locator::Css("details[data-tool=\"read_note\"] textarea"))
        .await
        .unwrap();
    args.clear().await.unwrap();
    args.send_keys("{\"id\": \"n3\"}").await.unwrap();
    click(&c, "details[data-tool=\"read_note\"] button").await;
    wait_text(&c, "details[data-tool=\"read_note\"] .run-result", "keep").await;

    c.close().await.unwrap();
}

/// `document.documentElement.scrollWidth` and the window's width.
pub(crate) async fn widths(c: &Client) -> (u64, u64) {
    let v = c
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            vec![],
        )
        .await
        .unwrap();
    (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
}

/// Characters that hide or reorder text are shown, marked, wherever the page shows a value,
/// and the card says it holds some: the account number that runs is the one the person reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_and_direction_changing_characters_are_shown_and_flagged() {
    let Some((driver, chromium)) = driver() else {
        return;
    };
    let (s, links) = start_with_links(None).await;
    let c = signed_in(&driver, &chromium, &s, &links).await;

    let iban = s.park_delete("DE00 \u{202e}9999 8888 7777\u{202c}").await;
    let card = format!(".card[data-op=\"{iban}\"]");
    let intent = text_of(&c, &format!("{card} .intent")).await;
    assert_eq!(
        intent,
        "Delete the note “DE00 \\u{202e}9999 8888 7777\\u{202c}”"
    );
    assert!(displayed(&c, &format!("{card} .flag")).await);
    assert!(
        text_of(&c, &format!("{card} .flag"))
            .await
            .contains("hidden or direction-changing characters")
    );
    open_card(&c, &card).await;
    let args = text_of(&c, &format!("{card} .arguments")).await;
    assert!(
        args.contains("\"DE00 \\u{202e}9999 8888 7777\\u{202c}\""),
        "{args:?}"
    );
    // the intent comes escaped by the server's display rule; the arguments are the raw value,
    // and the page marks each hidden character in them as an element of its own
    let marks = c
        .find_all(Locator::Css(&format!("{card} .arguments .hidden-char")))
        .await
        .unwrap();
    assert_eq!(marks.len(), 2, "each hidden character is a marked element");
    // the edit box holds the same value, with the characters written as JSON escapes
    let edit = c
        .find(Locator::Css(&format!("{card} .edit")))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap();
    assert!(edit.contains("\\u202e9999 8888 7777\\u202c"), "{edit:?}");

    // a zero-width character inside a word, and a reversed DOI
    let doi = s.park_delete("10.1000/\u{202e}lanigiro").await;
    let zw = s.park_delete("pay\u{200b}ment").await;
    assert_eq!(
        text_of(&c, &format!(".card[data-op=\"{doi}\"] .intent")).await,
        "Delete the note “10.1000/\\u{202e}lanigiro”"
    );
    assert_eq!(
        text_of(&c, &format!(".card[data-op=\"{zw}\"] .intent")).await,
        "Delete the note “pay\\u{200b}ment”"
    );
    assert!(displayed(&c, &format!(".card[data-op=\"{zw}\"] .flag")).await);

    // a plain call is not flagged
    let plain = s.park_delete("n1").await;
    text_of(&c, &format!(".card[data-op=\"{plain}\"] .intent")).await;
    assert!(!displayed(&c, &format!(".card[data-op=\"{plain}\"] .flag")).await);

    // the feed's lines too: a denial's reason with an override
    c.find(Locator::Css(&format!("{card} .reason")))
        .await
        .unwrap()
        .send_keys("wrong \u{202e}tnuocca")
        .await
        .unwrap();
    click(&c, &format!("{card} .deny")).await;
    let line = wait_text(&c, "#feed li[data-status=\"denied\"]", "tnuocca").await;
    assert!(line.contains("wrong \\u{202e}tnuocca"), "{line:?}");
    c.close().await.unwrap();
}

/// A value of any length wraps inside the page and is cut, with its full length shown and a
/// button that shows the rest; the page stays as wide as the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_value_wraps_and_is_cut_and_the_page_keeps_the_window_width() {
    let Some((driver, chromium)) = driver() else {
        return;
    };
    let (s, links) = start_with_links(None).await;
    let c = signed_in(&driver, &chromium, &s, &links).await;

    let op = s.park_delete(&"x".repeat(200_000)).await;
    let card = format!(".card[data-op=\"{op}\"]");
    // the intent sentence quotes the value cut, with its full length
    let intent = wait_text(&c, &format!("{card} .intent"), "(200000 chars)").await;
    assert!(
        intent.starts_with("Delete the note “xxx") && intent.chars().count() < 200,
        "the intent is cut: {intent}"
    );
    let (page, window) = widths(&c).await;
    assert!(
        page <= window,
        "the page is {page} px wide in a {window} px window"
    );

    open_card(&c, &card).await;
    let args = wait_text(&c, &format!("{card} .arguments"), "characters shown").await;
    assert!(
        args.contains("of 200,014 characters shown"),
        "{}",
        &args[args.len() - 80..]
    );
    assert!(args.len() < 3_000);
    click(&c, &format!("{card} .arguments .show-all")).await;
    let all = wait_text(&c, &format!("{card} .arguments"), "xxx\"\n}").await;
    assert!(all.len() > 200_000);
    let (page, window) = widths(&c).await;
    assert!(
        page <= window,
        "expanded: the page is {page} px wide in a {window} px window"
    );
    c.close().await.unwrap();
}

/// Many waiting operations are shown a page of cards at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_cards_come_a_page_at_a_time() {
    let Some((driver, chromium)) = driver() else {
        return;
    };
    let (s, links) = start_with_links(None).await;
    for i in 0..45 {
        s.park_delete(&format!("note-{i}")).await;
    }
    let c = signed_in(&driver, &chromium, &s, &links).await;
    wait_text(&c, "#page-info", "1–20 of 45").await;
    // the intents on the current page; operations parked in the same millisecond may come in
    // either order, so the pages are checked to hold every operation once, not an order
    let intents = |c: &Client| {
        let c = c.clone();
        async move {
            let mut out = Vec::new();
            for e in c.find_all(Locator::Css(".card .intent")).await.unwrap() {
                out.push(e.text().await.unwrap());
            }
            out
        }
    };
    let mut seen = intents(&c).await;
    assert_eq!(seen.len(), 20);
    assert_eq!(text_of(&c, "#pending-count").await, "45");
    assert!(!enabled(&c, "#page-prev").await);
    click(&c, "#page-next").await;
    wait_text(&c, "#page-info", "21–40 of 45").await;
    let page = intents(&c).await;
    assert_eq!(page.len(), 20);
    seen.extend(page);
    click(&c, "#page-next").await;
    wait_text(&c, "#page-info", "41–45 of 45").await;
    let page = intents(&c).await;
    assert_eq!(page.len(), 5);
    seen.extend(page);
    assert!(!enabled(&c, "#page-next").await);
    let distinct: std::collections::HashSet<&String> = seen.iter().collect();
    assert_eq!(distinct.len(), 45, "{seen:?}");
    for i in 0..45 {
        assert!(
            seen.contains(&format!("Delete the note \u{201c}note-{i}\u{201d}")),
            "note-{i} on no page: {seen:?}"
        );
    }
    c.close().await.unwrap();
}

/// Whether `needle`'s bytes, as UTF-8 or UTF-16 (how browsers store some strings), are in any
/// file under `dir`.
fn profile_holds(dir: &std::path::Path, needle: &str) -> Vec<PathBuf> {
    let utf16: Vec<u8> = needle.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let forms = [needle.as_bytes().to_vec(), utf16];
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path)
                && forms
                    .iter()
                    .any(|f| bytes.windows(f.len()).any(|w| w == f.as_slice()))
            {
                found.push(path);
            }
        }
    }
    found
}

/// The link the server prints carries a one-time code, not a token: it signs in once, leaves
/// the address, and the browser's profile keeps neither the code's session nor the approver's
/// token once the browser is closed. A damaged link asks for the token instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_link_works_once_and_the_browser_keeps_no_token() {
    let Some((driver, chromium)) = driver() else {
        return;
    };
    let (s, links) = start_with_links(None).await;
    let (c, profile) = browser(&driver, &chromium).await;

    // a damaged fragment shows the form with a message, not a blank page
    for damaged in ["#token=%E0%A4%A", "#code=%E0%A4%A", "#code=%FF"] {
        c.goto(&format!("{}/{damaged}", s.base)).await.unwrap();
        wait_text(&c, "#status", "damaged").await;
        assert!(displayed(&c, "#token").await, "{damaged}");
        assert!(!c.current_url().await.unwrap().as_str().contains('%'));
        c.goto("about:blank").await.unwrap();
    }

    let link = links.link(s.addr);
    let code = link.rsplit('=').next().unwrap().to_owned();
    c.goto(&link).await.unwrap();
    wait_text(&c, "#status", "Live").await;
    assert!(!c.current_url().await.unwrap().as_str().contains(&code));
    let op = s.park_delete("n1").await;
    text_of(&c, &format!(".card[data-op=\"{op}\"] .intent")).await;

    // the same link again is refused, and the page asks for the token
    c.goto("about:blank").await.unwrap();
    c.goto(&link).await.unwrap();
    wait_text(&c, "#status", "already used").await;
    assert!(displayed(&c, "#token").await);
    let (status, body) = s
        .post("/api/v1/session", None, json!({ "code": code }))
        .await;
    assert_eq!(status, 401, "{body}");
    assert_error(&body, "UNAUTHORIZED");

    // a typed token still signs in, traded for a session like the code
    let field = c.find(Locator::Css("#token")).await.unwrap();
    field.send_keys(APPROVER).await.unwrap();
    click(&c, "#token-form button").await;
    wait_text(&c, "#status", "Live").await;
    text_of(&c, &format!(".card[data-op=\"{op}\"] .intent")).await;
    let stored: String = c
        .execute(
            "return sessionStorage.getItem('tool-server-token');",
            vec![],
        )
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    assert!(stored.starts_with("session1.") && stored != APPROVER);

    c.close().await.unwrap();
    // the browser writes its profile as it quits
    tokio::time::sleep(Duration::from_millis(500)).await;
    // the search finds what a link leaves: the spent code is in the history and session files,
    // where a link with the token would have left the token
    assert!(
        !profile_holds(&profile, &code).is_empty(),
        "the profile search finds nothing, so it proves nothing"
    );
    let leaks = profile_holds(&profile, APPROVER);
    assert!(
        leaks.is_empty(),
        "the approver's token is kept in {leaks:?}"
    );
    let _ = std::fs::remove_dir_all(&profile);
}

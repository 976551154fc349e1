//! The approvals page in a real browser: headless Chromium driven through chromedriver
//! (WebDriver). An agent's call appears as a card with the preview; approving it runs the tool
//! and the feed shows it; denying a model's call with a reason resumes the agent's run with the
//! person's words in the model's transcript.
//!
//! Needs `chromium` and `chromedriver` (Debian's `chromium` and `chromium-driver`) on the PATH
//! or in `TOOLS_CHROMIUM` / `TOOLS_CHROMEDRIVER`; skipped without them, except under CI. With
//! `TOOLS_PAGE_SCREENSHOT=path` the test saves a screenshot of the page with a pending card.

use crate::support;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use support::*;

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
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn driver() -> Option<(Driver, PathBuf)> {
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

async fn browser(driver: &Driver, chromium: &PathBuf) -> Client {
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
            Ok(c) => return c,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no WebDriver session: {last:?}");
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} is not on the page: {e}"))
        .click()
        .await
        .unwrap();
}

async fn text_of(c: &Client, css: &str) -> String {
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
async fn wait_text(c: &Client, css: &str, want: &str) -> String {
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
    let s = start_with_model(&model).await;
    let c = browser(&driver, &chromium).await;

    // without a token the page asks for one; the wrong one is refused and asked for again
    c.goto(&format!("{}/", s.base)).await.unwrap();
    let field = c.wait().for_element(Locator::Css("#token")).await.unwrap();
    field.send_keys(AGENT).await.unwrap();
    click(&c, "#token-form button").await;
    wait_text(&c, "#status", "cannot approve").await;
    assert!(
        c.find(Locator::Css("#token"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap()
    );
    assert!(
        !c.find(Locator::Css("#app"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap()
    );

    // the approver's token from the link's fragment, kept for the tab only
    c.goto(&format!("{}/#token={APPROVER}", s.base))
        .await
        .unwrap();
    wait_text(&c, "#status", "Live").await;
    let form = c.find(Locator::Css("#token-form")).await.unwrap();
    assert!(
        !form.is_displayed().await.unwrap(),
        "the token form hides once signed in"
    );
    assert!(!c.current_url().await.unwrap().as_str().contains(APPROVER));
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
    assert!(
        text_of(&c, &format!("{card} .arguments"))
            .await
            .contains("\"n1\"")
    );
    let change = text_of(&c, &format!("{card} .change")).await;
    assert!(
        change.contains("buy milk"),
        "the previewer's change: {change}"
    );
    assert!(
        text_of(&c, &format!("{card} .meta"))
            .await
            .contains("started by user")
    );
    if let Some(path) = std::env::var_os("TOOLS_PAGE_SCREENSHOT") {
        s.notes
            .0
            .lock()
            .unwrap()
            .insert("n2".into(), "call the plumber on Monday".into());
        let second = s.park_delete("n2").await;
        text_of(&c, &format!(".card[data-op=\"{second}\"] .intent")).await;
        std::fs::write(path, c.screenshot().await.unwrap()).unwrap();
        s.executor.deny(&second, None).unwrap();
    }

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

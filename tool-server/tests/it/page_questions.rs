//! A tool's question and a running call's progress on the approvals page, in headless Chromium:
//! a call that reports progress and then asks shows as a running call with its bar and its
//! message as text; its question is a form built from the question's schema (defaults filled
//! in, required fields marked), which the person submits or declines; an answer the server
//! refuses shows the field's reason and the form stays; the tool's result reaches whoever
//! called, here the page's own Run form.

use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::json;

use crate::page::{browser, click, displayed, driver, text_of, wait_text};
use crate::questions::start;

async fn field(c: &Client, css: &str) -> fantoccini::elements::Element {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} did not appear: {e}"))
}

async fn value_of(c: &Client, css: &str) -> String {
    field(c, css)
        .await
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_a_tools_question_and_watches_a_call_run_on_the_page() {
    let Some((driver, chromium)) = driver() else {
        return;
    };
    let mut links = None;
    let s = start(|o| links = Some(o.sign_in_links())).await;
    let (c, _) = browser(&driver, &chromium).await;
    c.goto(&links.unwrap().link(s.addr)).await.unwrap();
    wait_text(&c, "#status", "Live").await;
    assert!(displayed(&c, "#questions-empty").await);
    assert!(displayed(&c, "#running-empty").await);

    // an agent's call reports progress, then asks whether to go on
    let call = s.call("sync_files", json!({"label": "page"}));
    let running = wait_text(&c, "#running li", "3 of 10").await;
    assert!(running.contains("sync_files"), "{running}");
    // the tool's message is text, never markup
    assert!(running.contains("copying <b>photos</b>"), "{running}");
    assert!(c.find(Locator::Css("#running b")).await.is_err());
    let bar = field(&c, "#running li progress").await;
    assert_eq!(bar.attr("value").await.unwrap().as_deref(), Some("3"));
    assert_eq!(bar.attr("max").await.unwrap().as_deref(), Some("10"));
    assert!(!displayed(&c, "#running-empty").await);

    let card = ".card.question";
    assert_eq!(
        text_of(&c, &format!("{card} .message")).await,
        "Copied 3 of 10: go on?"
    );
    assert_eq!(text_of(&c, &format!("{card} .tool")).await, "sync_files");
    assert_eq!(text_of(&c, "#questions-count").await, "1");
    click(&c, &format!("{card} input[name=go_on]")).await;
    click(&c, &format!("{card} .submit")).await;
    let (_, exec) = call.await.unwrap();
    assert_eq!(exec["value"], "synced 10 of 10");
    wait_text(&c, "#questions-empty", "No tool is asking").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !displayed(&c, "#running-empty").await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call never left Running"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // the person runs a tool from the page; its question comes back to them as a form
    let tool = "[data-tool=\"order\"]";
    click(&c, &format!("{tool} summary")).await;
    let args = field(&c, &format!("{tool} textarea")).await;
    args.clear().await.unwrap();
    args.send_keys(r#"{"label": "from the page"}"#)
        .await
        .unwrap();
    click(&c, &format!("{tool} button[type=submit]")).await;

    let card = ".card.question";
    wait_text(&c, &format!("{card} .message"), "What would you like?").await;
    // defaults filled in, the required field marked
    assert_eq!(value_of(&c, &format!("{card} input[name=cups]")).await, "1");
    let size = field(&c, &format!("{card} select[name=size]")).await;
    let chosen = size
        .find(Locator::Css("option:checked"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(chosen, "medium");
    let name_row = text_of(&c, &format!("{card} [data-field=name] label")).await;
    assert!(name_row.contains('*'), "{name_row}");
    assert!(
        c.find(Locator::Css(&format!("{card} [data-field=cups] .required")))
            .await
            .is_err()
    );

    // a number the form does not take is refused by the server, field by field; the form stays
    field(&c, &format!("{card} input[name=name]"))
        .await
        .send_keys("Ada")
        .await
        .unwrap();
    let cups = field(&c, &format!("{card} input[name=cups]")).await;
    cups.clear().await.unwrap();
    cups.send_keys("-1").await.unwrap();
    click(&c, &format!("{card} .submit")).await;
    wait_text(&c, &format!("{card} .errors"), "/cups").await;

    cups.clear().await.unwrap();
    cups.send_keys("2").await.unwrap();
    size.select_by_label("large").await.unwrap();
    click(&c, &format!("{card} .submit")).await;
    wait_text(
        &c,
        &format!("{tool} .run-result"),
        "2 cups of Large for Ada (sugar: false)",
    )
    .await;
    wait_text(&c, "#questions-empty", "No tool is asking").await;

    // declining tells the tool so (other arguments: the first result is the executor's to reuse)
    args.clear().await.unwrap();
    args.send_keys(r#"{"label": "declined"}"#).await.unwrap();
    click(&c, &format!("{tool} button[type=submit]")).await;
    wait_text(&c, &format!("{card} .message"), "What would you like?").await;
    click(&c, &format!("{card} .decline")).await;
    wait_text(&c, &format!("{tool} .run-result"), "declined").await;
    c.close().await.unwrap();
}

//! The change on an approvals card, in headless Chromium: a replaced text is a diff whose
//! added words are in `<ins>` and removed ones in `<del>`, a hidden character inside them is a
//! marked escape that flags the card, a long unchanged stretch is shortened with its length,
//! and the arguments leave out the optional one the model left unset.
//!
//! With `TOOLS_PAGE_SCREENSHOT=path` the test saves a screenshot of the page with the cards
//! open (the README's picture).

use crate::page::{displayed, driver, open_card, signed_in, start_with_links, text_of, widths};

use fantoccini::{Client, Locator};

/// The texts of every element at `css`.
async fn texts(c: &Client, css: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in c.find_all(Locator::Css(css)).await.unwrap() {
        out.push(e.text().await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_text_is_shown_as_a_marked_diff() {
    let Some((driver, chromium)) = driver() else {
        return;
    };
    let (s, links) = start_with_links(None).await;
    let c = signed_in(&driver, &chromium, &s, &links).await;
    {
        let mut notes = s.notes.0.lock().unwrap();
        notes.insert("n2".into(), "call the plumber on Monday".into());
        notes.insert("iban".into(), "pay to DE00 1111 2222".into());
        let long = format!(
            "{}Paris is the capital of Germany. {}",
            "An introduction that does not change. ".repeat(100),
            "A conclusion that stays. ".repeat(100)
        );
        notes.insert("long".into(), long);
    }

    // one word added: only it is marked
    let edit = s.park_edit("n1", "buy oat milk").await;
    let card = format!(".card[data-op=\"{edit}\"]");
    text_of(&c, &format!("{card} .intent")).await;
    open_card(&c, &card).await;
    let row = format!("{card} .change li.replace");
    assert_eq!(text_of(&c, &format!("{row} .label")).await, "text");
    assert_eq!(text_of(&c, &format!("{row} .diff")).await, "buy oat milk");
    assert_eq!(texts(&c, &format!("{row} ins")).await, ["oat "]);
    assert!(texts(&c, &format!("{row} del")).await.is_empty());
    assert!(!displayed(&c, &format!("{card} .flag")).await);
    // the optional `reason` the model did not set is not listed as null
    let args = text_of(&c, &format!("{card} .arguments")).await;
    assert!(
        args.contains("\"buy oat milk\"") && !args.contains("reason"),
        "{args}"
    );

    // a direction override slipped into the new text: marked inside the addition, card flagged
    let hidden = s.park_edit("iban", "pay to DE00 \u{202e}1111 2222").await;
    let card = format!(".card[data-op=\"{hidden}\"]");
    text_of(&c, &format!("{card} .intent")).await;
    open_card(&c, &card).await;
    let row = format!("{card} .change li.replace");
    assert_eq!(texts(&c, &format!("{row} del")).await, ["1111"]);
    assert_eq!(texts(&c, &format!("{row} ins")).await, ["\\u{202e}1111"]);
    assert_eq!(
        texts(&c, &format!("{row} ins .hidden-char")).await,
        ["\\u{202e}"]
    );
    assert!(displayed(&c, &format!("{card} .flag")).await);

    // a long text: the changed word is marked, the unchanged stretches are shortened
    let long = s
        .park_edit(
            "long",
            &s.notes.get("long").unwrap().replace("Germany.", "France."),
        )
        .await;
    let card = format!(".card[data-op=\"{long}\"]");
    text_of(&c, &format!("{card} .intent")).await;
    open_card(&c, &card).await;
    let row = format!("{card} .change li.replace");
    assert_eq!(texts(&c, &format!("{row} del")).await, ["Germany."]);
    assert_eq!(texts(&c, &format!("{row} ins")).await, ["France."]);
    let gaps = texts(&c, &format!("{row} .cut")).await;
    assert_eq!(
        gaps,
        [
            " … 3,584 unchanged characters … ",
            " … 2,261 unchanged characters … "
        ]
    );
    let shown = text_of(&c, &row).await;
    assert!(shown.len() < 1_500, "{} characters shown", shown.len());
    let (page, window) = widths(&c).await;
    assert!(page <= window, "{page} px in a {window} px window");

    // a deletion next to them, for the picture
    let delete = format!(".card[data-op=\"{}\"]", s.park_delete("n2").await);
    text_of(&c, &format!("{delete} .intent")).await;
    open_card(&c, &delete).await;
    if let Some(path) = std::env::var_os("TOOLS_PAGE_SCREENSHOT") {
        c.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
        std::fs::write(path, c.screenshot().await.unwrap()).unwrap();
    }
    c.close().await.unwrap();
}

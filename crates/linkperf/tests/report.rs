//! `linkperf report` through the real binary, and its page in a real browser: headless Chromium renders it
//! with every chart and no console error. Without Chromium the browser part is skipped, unless
//! LINKPERF_REQUIRE_CHROMIUM=1 (set by CI) makes that a failure.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;

use common::linkperf;

/// Runs of every chart's kind in a fresh database; returns the directory holding it and the database.
fn runs() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db").display().to_string();
    for args in [
        &["latency", "--size", "64,1k,16k", "-n", "500", "--label", "a"][..],
        &["latency", "--size", "64,1k,16k", "-n", "500", "--wait", "spin", "--label", "b"],
        &["throughput", "-d", "2", "-i", "500ms"],
        &["sweep", "--rates", "100M,200M,400M", "--duration", "300ms", "--settle", "100ms"],
    ] {
        let output = linkperf().args(args).args(["--db", &db, "--no-progress", "--label", "all"]).output().unwrap();
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    (dir, db)
}

const CHARTS: [&str; 5] =
    ["rtt-by-size", "rtt-cdf", "goodput-timeline", "received-by-offered-rate", "loss-by-offered-rate"];

#[test]
fn the_report_holds_every_chart_and_writes_them_as_svg() {
    let (dir, db) = runs();
    let html = dir.path().join("report.html");
    let svg = dir.path().join("charts");
    let output = linkperf()
        .args([
            "report",
            "1",
            "2",
            "3",
            "4",
            "--db",
            &db,
            "--html",
            html.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    for id in CHARTS {
        assert!(page.contains(&format!("id=\"chart-{id}\"")), "{id}");
        assert!(std::fs::read_to_string(svg.join(format!("{id}.svg"))).unwrap().starts_with("<svg"), "{id}.svg");
    }
    assert!(page.contains("run 1 (a,all)") && page.contains("run 2 (all,b)"), "runs overlay under their labels");
    let by_label = linkperf().args(["report", "--label", "a", "--label", "b", "--db", &db]).output().unwrap();
    assert!(String::from_utf8_lossy(&by_label.stdout).contains("chart-rtt-by-size"), "to stdout without --html");
    // A label selects every run carrying it: here all four, through the label given to each.
    let all = linkperf().args(["report", "--label", "all", "--db", &db]).output().unwrap();
    let page = String::from_utf8_lossy(&all.stdout);
    assert_eq!(page.matches("<details>").count(), 4, "a full table per run");
    let nothing = linkperf().args(["report", "--db", &db]).output().unwrap();
    assert_eq!(nothing.status.code(), Some(2));
    let png = dir.path().join("png");
    let output = linkperf().args(["report", "1", "4", "--db", &db, "--png", png.to_str().unwrap()]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bytes = std::fs::read(png.join("rtt-cdf.png")).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "a PNG with content");
}

/// The browser, if there is one.
fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        assert!(std::env::var_os("LINKPERF_REQUIRE_CHROMIUM").is_none(), "chromium is required here");
        eprintln!("skipped: no chromium (apt-get install chromium)");
    }
    found
}

#[test]
fn the_report_renders_in_a_browser_with_every_chart_and_no_console_error() {
    let Some(browser) = chromium() else { return };
    let (dir, db) = runs();
    let html = dir.path().join("report.html");
    let output =
        linkperf().args(["report", "1", "2", "3", "4", "--db", &db, "--html", html.to_str().unwrap()]).output();
    assert!(output.unwrap().status.success());
    let url = format!("file://{}", html.display());
    let headless =
        ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"];
    let dom = Command::new(browser).args(headless).args(["--dump-dom", &url]).output().unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let rendered = String::from_utf8_lossy(&dom.stdout);
    for id in CHARTS {
        let at = rendered.find(&format!("id=\"chart-{id}\"")).unwrap_or_else(|| panic!("{id} in the rendered page"));
        let figure = &rendered[at..at + rendered[at..].find("</figure>").unwrap()];
        assert!(figure.contains("<svg") && figure.contains("</svg>"), "{id} holds its chart");
    }
    assert!(rendered.matches("<svg").count() >= CHARTS.len());
    let log = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let shot = dir.path().join("report.png");
    let screenshot = Command::new(browser)
        .args(headless)
        .args(["--window-size=1100,2600", &format!("--screenshot={}", shot.display()), &url])
        .output()
        .unwrap();
    assert!(screenshot.status.success(), "{}", String::from_utf8_lossy(&screenshot.stderr));
    assert!(std::fs::metadata(&shot).unwrap().len() > 20_000, "a screenshot with content");
}

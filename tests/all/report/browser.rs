//! The report in a real browser: Debian's headless Chromium loads the page, from disk or
//! from a real `toolhost serve`, and the DOM it dumps proves the page's script ran to its
//! end without an error, that none of the planted markup became an element or an
//! attribute, and that a served run's page shows the chain's verdict.
//!
//! Chromium must be installed (`scripts/test.sh` installs it when it can); without it this
//! test fails, unless `TOOLHOST_SKIP_BROWSER=1` says to skip it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::hostile_report;

/// How long one headless load may take before the test gives up on the browser.
const DEADLINE: Duration = Duration::from_secs(90);

fn chromium() -> Option<PathBuf> {
    let names = ["chromium", "chromium-browser"];
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// Runs headless Chromium on `url` (a `file://` page or a server's); returns (the dumped
/// DOM, stderr).
fn dump_dom(browser: &Path, url: &str, profile: &Path) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("dom"), dir.path().join("err"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", browser.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("headless Chromium did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "chromium exited with {status}: {err}");
    (std::fs::read_to_string(&out).unwrap(), err)
}

/// The opening tags in `dom` (text nodes hold `<` only as `&lt;`, so every `<` opens one).
fn tags(dom: &str) -> impl Iterator<Item = &str> {
    dom.split('<')
        .skip(1)
        .map(|t| t.split('>').next().unwrap_or(""))
}

/// A report page rendered by headless Chromium, its script run to its end without an
/// error: (the `<html …>` tag, the whole DOM). `None` when there is no browser and
/// `TOOLHOST_SKIP_BROWSER=1` says to skip.
pub(crate) fn render(url: &str) -> Option<(String, String)> {
    let Some(browser) = chromium() else {
        if std::env::var_os("TOOLHOST_SKIP_BROWSER").is_some_and(|v| v == "1") {
            eprintln!("skipped: no chromium on PATH and TOOLHOST_SKIP_BROWSER=1");
            return None;
        }
        panic!(
            "no `chromium` on PATH: install it (`apt-get install -y chromium`; scripts/test.sh does \
             this when run as root) or set TOOLHOST_SKIP_BROWSER=1 to skip this test"
        );
    };
    let profile = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (dom, stderr) = dump_dom(&browser, url, profile.path());
    eprintln!("headless chromium took {:?}", started.elapsed());

    let root = tags(&dom)
        .find(|t| t.starts_with("html"))
        .unwrap_or_else(|| panic!("no <html> in the dumped DOM:\n{dom}"))
        .to_string();
    assert!(
        root.contains(r#"data-rendered="ok""#),
        "the page's script did not run to its end: <{root}>\n{stderr}"
    );
    assert!(
        !root.contains("data-script-errors"),
        "script errors: <{root}>"
    );
    for line in stderr.lines() {
        assert!(
            !line.contains("Uncaught")
                && !line.contains("Refused to")
                && !line.contains(":CONSOLE"),
            "the browser reported: {line}"
        );
    }
    Some((root, dom))
}

#[test]
fn the_report_renders_in_headless_chromium_without_script_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_, page, _) = hostile_report(dir.path());
    let Some((root, dom)) = render(&format!("file://{}", page.display())) else {
        return;
    };
    // The planted markup stayed text.
    assert!(!root.contains("pwned"), "<{root}>");
    for tag in tags(&dom) {
        assert!(
            !tag.contains("pwned"),
            "planted markup became a tag: <{tag}>"
        );
    }
    assert!(dom.contains("&lt;script&gt;document.documentElement.dataset.pwned"));
    // What a reader sees: the timeline and the DAG were laid out.
    assert!(dom.contains(r#"<svg class="lanes""#) && dom.contains(r#"<svg class="dag""#));
}

#[test]
fn a_served_run_s_report_renders_from_the_server_with_its_verdict() {
    let f = crate::serve::Fixture::new();
    let server = f.start(&[]);
    let (status, run) = server.post("/v1/runs", serde_json::json!({"task": {"name": "seed"}}));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap();
    server.wait(id, |r| r["state"] == "completed");
    let report = format!("{}/v1/runs/{id}/report", server.url);
    let Some((_, dom)) = render(&report) else {
        return;
    };
    let verdict = dom
        .split(r#"<div class="verdict ok" id="verdict">"#)
        .nth(1)
        .unwrap_or_else(|| panic!("no verified chain's verdict in the DOM of {report}:\n{dom}"));
    assert!(verdict.starts_with("✔ Chain verified: "), "{verdict}");
    assert!(
        !verdict
            .split("</div>")
            .next()
            .unwrap()
            .contains("no stop record"),
        "{verdict}"
    );
    assert!(dom.contains(id), "the run's id is not on its page");
}

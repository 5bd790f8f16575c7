//! The HTML reports in a real browser (headless Chromium, which .ci/run installs): no console
//! errors, no network requests, every chart rendered with a size; and the example reports in
//! reports/ are what the current code generates.

use crate::common::{bin, fixture, root};
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Runs headless Chromium on a page with a fresh profile; returns (stdout, stderr).
fn chrome(exe: &Path, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
        ])
        .args([
            "--no-first-run",
            "--disable-sync",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Measures the page from inside: chart sizes and any resource it fetched.
const PROBE: &str = r#"<script>document.body.setAttribute('data-probe', JSON.stringify({
  svgs: Array.from(document.querySelectorAll('svg')).map(function(s){var r=s.getBoundingClientRect();return [r.width,r.height];}),
  resources: performance.getEntriesByType('resource').map(function(e){return e.name;})}));</script>"#;

fn check_page(exe: &Path, html: &Path, shot: &Path) {
    let text = std::fs::read_to_string(html).unwrap();
    // 1. The page as written: nothing on the console (errors, CSP violations).
    let (_, log) = chrome(
        exe,
        html,
        &["--enable-logging=stderr", "--v=0", "--dump-dom"],
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "{}: console output:\n{}",
        html.display(),
        console.join("\n")
    );
    // 2. A copy with a probe at the end of the body: sizes and fetched resources.
    let probed = html.with_extension("probe.html");
    std::fs::write(&probed, text.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let (dom, _) = chrome(exe, &probed, &["--dump-dom"]);
    let start = dom.find("data-probe=\"").expect("the probe ran") + "data-probe=\"".len();
    let raw = &dom[start..start + dom[start..].find('"').unwrap()];
    let probe: serde_json::Value =
        serde_json::from_str(&raw.replace("&quot;", "\"").replace("&amp;", "&")).unwrap();
    let svgs = probe["svgs"].as_array().unwrap();
    assert_eq!(
        svgs.len(),
        text.matches("<svg").count(),
        "every chart is in the DOM"
    );
    assert!(!svgs.is_empty());
    for s in svgs {
        assert!(
            s[0].as_f64().unwrap() > 50.0 && s[1].as_f64().unwrap() > 20.0,
            "{}: chart of size {s}",
            html.display()
        );
    }
    assert_eq!(
        probe["resources"],
        serde_json::json!([]),
        "{}: the page fetched resources",
        html.display()
    );
    // 3. A screenshot.
    let _ = chrome(exe, html, &[&format!("--screenshot={}", shot.display())]);
    assert!(
        std::fs::metadata(shot)
            .map(|m| m.len() > 10_000)
            .unwrap_or(false),
        "no screenshot of {}",
        html.display()
    );
}

#[test]
fn html_reports_render_offline_in_chromium() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: Chromium is not installed here (.ci/run installs it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single.html");
    bin()
        .arg(fixture("kineto/h100/eager_manual_attn.json.gz"))
        .arg("--html")
        .arg(&single)
        .assert()
        .success();
    let diff = dir.path().join("diff.html");
    bin()
        .arg("diff")
        .arg(fixture("kineto/h100/eager_sdpa_fused.json.gz"))
        .arg(fixture("kineto/h100/compiled_clean.json.gz"))
        .arg("--html")
        .arg(&diff)
        .assert()
        .success();
    check_page(&exe, &single, &dir.path().join("single.png"));
    check_page(&exe, &diff, &dir.path().join("diff.png"));
}

#[test]
fn html_escapes_kernel_names() {
    let out = bin()
        .args(["--html", "-"])
        .arg(fixture("kineto/h100/eager_manual_attn.json.gz"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let html = String::from_utf8(out).unwrap();
    assert!(html.contains("softmax_warp_forward&lt;c10::BFloat16"));
    assert!(!html.contains("softmax_warp_forward<c10"));
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "no external resources"
    );
}

#[test]
fn example_reports_are_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("bash")
        .arg(root().join("reports/generate.sh"))
        .env("BIN", assert_cmd::cargo::cargo_bin("rocprof-classify"))
        .env("OUT", dir.path())
        .env("NO_SCREENSHOTS", "1")
        .status()
        .expect("bash runs");
    assert!(status.success());
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let committed = std::fs::read(root().join("reports").join(&name)).unwrap_or_default();
        if committed != std::fs::read(&path).unwrap() {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "reports/ is stale ({}): run `bash reports/generate.sh` and commit",
        stale.join(", ")
    );
}

/// The book's example output is the committed report, and the README's short one is taken from
/// it, so neither can go stale.
#[test]
fn the_example_reports_are_the_committed_report() {
    let report = std::fs::read_to_string(root().join("reports/eager_manual_attn.txt")).unwrap();
    let page = std::fs::read_to_string(root().join("docs/guide/reading-a-report.md")).unwrap();
    let intro = "`rocprof-classify fixtures/kineto/h100/eager_manual_attn.json.gz` (from `reports/`):\n\n```\n";
    let start = page.find(intro).expect("the page shows the example") + intro.len();
    let block = &page[start..start + page[start..].find("```\n").unwrap()];
    assert_eq!(
        block.trim_end(),
        report.trim_end(),
        "docs/guide/reading-a-report.md differs from reports/eager_manual_attn.txt: paste it in"
    );
    // The README shows some of its lines, in order, after the command line.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let intro = "```\n$ rocprof-classify fixtures/kineto/h100/eager_manual_attn.json.gz\n";
    let start = readme.find(intro).expect("the README shows an example") + intro.len();
    let block = &readme[start..start + readme[start..].find("```\n").unwrap()];
    let mut lines = report.lines();
    for shown in block.lines().filter(|l| *l != "  ..." && !l.is_empty()) {
        assert!(
            lines.any(|l| l == shown),
            "README example line not in reports/eager_manual_attn.txt (in order): {shown}"
        );
    }
}

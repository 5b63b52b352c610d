//! `mlport report --format html` of a real stored run (tests/fixtures/diff/after with real
//! NumPy and PyTorch on cpu: one case fails, one answer is wrong), opened in headless Chromium
//! (Debian's `chromium`, installed here when missing): the page needs no network (its CSP
//! forbids any fetch and Chromium loads it from file://), the numbers Chromium's DOM holds
//! equal `report --format json`'s for the same store, and the filter box (filled from the
//! URL's `#filter=`) hides the failing cases that do not match. Kept under 60 s.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{mlport, stdout};
use serde_json::Value;

/// Chromium's binary, installing Debian's `chromium` when it is missing (we run as root, as CI does).
fn chromium() -> PathBuf {
    let found = |name: &str| {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|p| p.is_file()))
    };
    if let Some(p) = found("chromium") {
        return p;
    }
    let ok = Command::new("sh")
        .arg("-c")
        .arg("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "cannot install Debian's chromium (apt-get install -y chromium)");
    found("chromium").expect("chromium installed but not on PATH")
}

/// Chromium, headless, on `url` with `extra` (`--dump-dom` or `--screenshot=FILE`); its stdout.
fn headless(browser: &Path, profile: &Path, url: &str, extra: &str) -> String {
    let out = Command::new(browser)
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--window-size=1200,1600", "--virtual-time-budget=2000", extra, url])
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The text of the cell `data-field="FIELD"` in the row `id="ROW"` of a DOM dump.
fn cell(dom: &str, row: &str, field: &str) -> String {
    let start = dom.find(&format!("id=\"{row}\"")).unwrap_or_else(|| panic!("no row {row} in the DOM"));
    let tr = &dom[start..start + dom[start..].find("</tr>").unwrap()];
    let at = tr.find(&format!("data-field=\"{field}\">")).unwrap_or_else(|| panic!("no {field} in row {row}"))
        + format!("data-field=\"{field}\">").len();
    tr[at..at + tr[at..].find('<').unwrap()].to_string()
}

#[test]
fn the_html_report_opens_offline_in_chromium_and_shows_the_json_numbers() {
    let started = std::time::Instant::now();
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.db");
    common::run_catalogue(&db, "diff/after", &["--device", "cpu", "--framework", "numpy,torch", "--budget-ms", "30"]);
    let page = tmp.path().join("report.html");
    mlport().args(["report", "--format", "html", "-o"]).arg(&page).arg("--db").arg(&db).assert().success();
    let json: Value =
        serde_json::from_str(&stdout(mlport().args(["report", "--format", "json", "--db"]).arg(&db))).unwrap();

    // Refused clearly: html without -o, -o without html, a view the page does not hold.
    for (args, says) in [
        (&["--format", "html"][..], "add -o FILE"),
        (&["--format", "json", "-o", "x.json"][..], "only --format html writes to a file"),
        (&["--format", "html", "-o", "x.html", "--modes"][..], "--modes is not in the page yet"),
    ] {
        let out = mlport().arg("report").args(args).arg("--db").arg(&db).output().unwrap();
        let e = String::from_utf8(out.stderr).unwrap();
        assert!(!out.status.success() && e.contains(says), "{args:?}: {e}");
    }

    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(
            "content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\""
        ),
        "the page forbids every fetch"
    );
    for fetch in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(fetch), "the page fetches nothing ({fetch})");
    }

    let profile = tmp.path().join("profile");
    let url = format!("file://{}", page.display());
    let dom = headless(&browser, &profile, &url, "--dump-dom");
    let targets = json["targets"].as_array().unwrap();
    assert!(!targets.is_empty());
    let mut failing = 0;
    for t in targets {
        let (fw, dev) = (t["framework"].as_str().unwrap(), t["device"].as_str().unwrap());
        let row = format!("t-{fw}-{}", dev.replace(':', "-"));
        for (field, want) in [
            ("functions_run", &t["functions_run"]),
            ("success", &t["success"]["count"]),
            ("partial", &t["partial"]["count"]),
            ("complete_failure", &t["complete_failure"]["count"]),
            ("wrong_result", &t["wrong_result"]["count"]),
            ("cases_passed", &t["cases"]["passed"]),
            ("cases_failed", &t["cases"]["failed"]),
            ("cases_wrong", &t["cases"]["wrong_result"]),
        ] {
            assert_eq!(cell(&dom, &row, field), want.to_string(), "{row} {field}");
        }
        let percent: f64 = cell(&dom, &row, "success_percent").parse().unwrap();
        assert!((percent - t["success"]["percent"].as_f64().unwrap()).abs() < 0.005, "{row} success %");
        failing += t["cases"]["failed"].as_u64().unwrap() + t["cases"]["wrong_result"].as_u64().unwrap();
    }
    assert!(failing >= 2, "the fixture makes a failure and a wrong result: {json:#}");
    // Every failing case is listed with its repro command, and the script counted them all.
    assert_eq!(dom.matches("<tr class=\"case\"").count() as u64, failing);
    assert!(dom.contains("<code>mlport repro "), "repro commands");
    assert!(dom.contains("Dtype matrix of 5 rows"), "the dtype heatmap and its text alternative");
    assert!(dom.contains(&format!("data-shown=\"{failing}\"")), "the script ran: nothing filtered");

    // The filter, filled from the URL: only torch.cumsum's failing case stays shown.
    let filtered = headless(&browser, &profile, &format!("{url}#filter=cumsum"), "--dump-dom");
    assert!(filtered.contains("data-shown=\"1\""), "filter=cumsum shows one case");
    let hidden =
        filtered.split("<tr class=\"case\"").skip(1).filter(|r| r[..r.find('>').unwrap()].contains("hidden")).count();
    assert_eq!(hidden as u64, failing - 1, "the other cases are hidden");

    // With --slowdown: the run of tests/fixtures/diff/before against this one (`after`); the
    // caption's medians and geometric means with their intervals are the JSON's, to 3 decimals.
    common::run_catalogue(
        &db,
        "diff/before",
        &["--device", "cpu", "--framework", "numpy,torch", "--budget-ms", "30", "--label", "before"],
    );
    let spec = ["--slowdown", "cpu@before..cpu@1", "--run", "1"];
    let slow = tmp.path().join("slowdown.html");
    mlport().args(["report", "--format", "html", "-o"]).arg(&slow).args(spec).arg("--db").arg(&db).assert().success();
    let sd: Value =
        serde_json::from_str(&stdout(mlport().args(["report", "--format", "json"]).args(spec).arg("--db").arg(&db)))
            .unwrap();
    let dom = headless(&browser, &profile, &format!("file://{}", slow.display()), "--dump-dom");
    assert!(dom.contains("<section id=\"slowdown\">"), "the slowdown section");
    let frameworks = sd["frameworks"].as_array().unwrap();
    assert!(!frameworks.is_empty());
    for f in frameworks {
        let d = &f["by_median"];
        let ci = &d["geometric_mean_ci"];
        let want = format!(
            "<li>{}: {} functions compared, median {:.3}×, geometric mean {:.3}× (95% interval {:.3}×–{:.3}×), {} faster on B, {} past 10×.</li>",
            f["framework"].as_str().unwrap(),
            d["functions"],
            d["median"].as_f64().unwrap(),
            d["geometric_mean"].as_f64().unwrap(),
            ci["lower"].as_f64().unwrap(),
            ci["upper"].as_f64().unwrap(),
            d["faster"],
            d["intolerable"],
        );
        assert!(dom.contains(&want), "{want} in the DOM");
    }

    // A screenshot (looked at by eye; README's docs/report-html.png came from one).
    let shot = tmp.path().join("report.png");
    headless(&browser, &profile, &url, &format!("--screenshot={}", shot.display()));
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000, "a screenshot was taken");
    if let Some(dir) = std::env::var_os("MLPORT_HTML_SCREENSHOT") {
        std::fs::copy(&shot, Path::new(&dir)).unwrap();
    }
    assert!(started.elapsed().as_secs() < 60, "took {:?}", started.elapsed());
}

/// `--format html` is refused clearly by every command other than `report`, before any work.
#[test]
fn html_is_refused_by_the_other_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.json");
    let out = mlport()
        .args(["import", "pytest-json"])
        .arg(&missing)
        .args(["--framework", "torch", "--device", "cpu", "--format", "html", "--db"])
        .arg(tmp.path().join("none.db"))
        .output()
        .unwrap();
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(e.contains("--format html is written by `mlport report --format html -o FILE` only"), "{e}");
}

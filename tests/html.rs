//! `mlport report --format html` of a real stored run (tests/fixtures/diff/after with real
//! NumPy and PyTorch on cpu: one case fails, one answer is wrong), opened in headless Chromium
//! (Debian's `chromium`, installed here when missing): the page needs no network (its CSP
//! forbids any fetch and Chromium loads it from file://), the numbers Chromium's DOM holds
//! equal `report --format json`'s for the same store, and the filter box (filled from the
//! URL's `#filter=`) hides the failing cases that do not match. Every page load is checked for
//! console messages (Chromium's `--enable-logging=stderr`) and for requests the page made
//! (Chromium's `--log-net-log`: any request from the page's file:// context that is not
//! file:// or data:), its load time (the page's own `performance.now()` at its load event) is
//! printed and bounded, a link and the filter box are driven by a script in a probe page that
//! frames the report, and screenshots are taken (`MLPORT_HTML_SCREENSHOTS=DIR` keeps them).
//! A second test does the same on the paper's imported raw data.

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

/// Chromium, headless, on `url` with `extra` (`--dump-dom` or `--screenshot=FILE`); its
/// stdout. Fails the test on any console message of the page and on any request the page
/// made that is not a file:// or data: URL (Chromium's own update checks, which carry no
/// file:// network isolation key, are not the page's).
fn headless(browser: &Path, profile: &Path, url: &str, extra: &str) -> String {
    let net = profile.with_extension(format!("net-{}.json", std::process::id()));
    let out = Command::new(browser)
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions"])
        .args(["--allow-file-access-from-files", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--log-net-log={}", net.display()))
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--window-size=1200,1600", "--virtual-time-budget=3000", extra, url])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages on {url}: {console:#?}");
    let log: Value = serde_json::from_slice(&std::fs::read(&net).unwrap()).expect("Chromium's net log is JSON");
    let requests: Vec<&str> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["params"]["network_isolation_key"].as_str().is_some_and(|k| k.starts_with("file://")))
        .filter_map(|e| e["params"]["url"].as_str())
        .filter(|u| !u.starts_with("file:") && !u.starts_with("data:"))
        .collect();
    assert!(requests.is_empty(), "the page at {url} made network requests: {requests:?}");
    std::fs::remove_file(&net).unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// The page's own load time (ms from navigation start to its load event), from the DOM.
fn load_ms(dom: &str) -> u64 {
    let at = dom.find("data-load-ms=\"").expect("the page's script recorded its load time") + 14;
    dom[at..at + dom[at..].find('"').unwrap()].parse().unwrap()
}

/// Drives the report at `page` from a probe page that frames it (same origin under
/// `--allow-file-access-from-files`): clicks the first reasons link, types `word` into the
/// filter box, clicks the failing cases' first sortable header twice; returns what the
/// report's DOM said, as JSON.
fn probe(browser: &Path, profile: &Path, page: &Path, word: &str) -> Value {
    let probe = page.with_extension("probe.html");
    let script = r##"
var f = document.getElementById('f');
f.onload = function () {
  var d = f.contentDocument, w = f.contentWindow, out = {};
  var a = d.querySelector('#reasons a[href^="#g-"]');
  out.href = a.getAttribute('href');
  a.click();
  var t = d.querySelector(':target');
  out.target = t ? t.id : null;
  out.hash = w.location.hash;
  var i = d.getElementById('filter');
  i.value = WORD;
  i.dispatchEvent(new Event('input'));
  out.shown = d.getElementById('shown').getAttribute('data-shown');
  out.visible = Array.prototype.filter.call(d.querySelectorAll('#failure-table tbody tr'), function (r) { return !r.hidden; }).map(function (r) { return r.textContent; });
  var th = d.querySelector('#failure-table th[data-sort]');
  th.click(); th.click();
  out.sorted = Array.prototype.map.call(d.querySelectorAll('#failure-table tbody tr'), function (r) { return r.children[0].textContent; });
  document.getElementById('out').textContent = JSON.stringify(out);
};"##
    .replace("WORD", &serde_json::to_string(word).unwrap());
    let name = page.file_name().unwrap().to_string_lossy();
    std::fs::write(
        &probe,
        format!("<!DOCTYPE html><html><body><iframe id=\"f\" src=\"{name}\" width=\"1200\" height=\"900\"></iframe><pre id=\"out\"></pre><script>{script}</script></body></html>"),
    )
    .unwrap();
    let dom = headless(browser, profile, &format!("file://{}", probe.display()), "--dump-dom");
    let at = dom.find("<pre id=\"out\">").unwrap() + "<pre id=\"out\">".len();
    let text = &dom[at..at + dom[at..].find("</pre>").unwrap()];
    serde_json::from_str(&text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
        .unwrap_or_else(|e| panic!("the probe's output {text}: {e}"))
}

/// Checks a probe's answers: the clicked link's target is the row it names, the filter shows
/// only rows holding `word`, and the second click on the header sorted the column descending.
fn check_probe(p: &Value, word: &str, failing: u64) {
    let href = p["href"].as_str().unwrap();
    assert_eq!(p["hash"].as_str(), Some(href), "the link was followed: {p:#}");
    assert_eq!(p["target"].as_str(), Some(&href[1..]), "its row is the :target: {p:#}");
    let visible = p["visible"].as_array().unwrap();
    assert_eq!(p["shown"].as_str().unwrap(), visible.len().to_string(), "{p:#}");
    assert!(!visible.is_empty() && (visible.len() as u64) < failing, "the filter {word} keeps some rows: {p:#}");
    assert!(visible.iter().all(|r| r.as_str().unwrap().to_lowercase().contains(word)), "{p:#}");
    let sorted: Vec<&str> = p["sorted"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let mut want = sorted.clone();
    want.sort_by_key(|s| std::cmp::Reverse(s.to_lowercase()));
    assert_eq!(sorted, want, "sorted descending after two clicks");
}

/// Copies a screenshot into `MLPORT_HTML_SCREENSHOTS` when set (the docs' *.png come from there).
fn keep(shot: &Path) {
    assert!(std::fs::metadata(shot).unwrap().len() > 1000, "a screenshot was taken");
    if let Some(dir) = std::env::var_os("MLPORT_HTML_SCREENSHOTS") {
        std::fs::copy(shot, Path::new(&dir).join(shot.file_name().unwrap())).unwrap();
    }
}

/// The text of the cell `data-field="FIELD"` in the row `id="ROW"` of a DOM dump.
fn cell(dom: &str, row: &str, field: &str) -> String {
    let start = dom.find(&format!("id=\"{row}\"")).unwrap_or_else(|| panic!("no row {row} in the DOM"));
    let tr = &dom[start..start + dom[start..].find("</tr>").unwrap()];
    let at = tr.find(&format!("data-field=\"{field}\">")).unwrap_or_else(|| panic!("no {field} in row {row}"))
        + format!("data-field=\"{field}\">").len();
    tr[at..at + tr[at..].find('<').unwrap()].to_string()
}

/// Checks the DOM's counts table against `report --format json`'s targets; returns the
/// listed cases (failed, wrong on the device or everywhere, dtype changed) the JSON counts.
fn check_targets(dom: &str, json: &Value) -> u64 {
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
            ("wrong_everywhere", &t["wrong_everywhere"]["count"]),
            ("cases_wrong_everywhere", &t["cases"]["wrong_everywhere"]),
            ("cases_dtype_changed", &t["cases"]["dtype_changed"]),
        ] {
            assert_eq!(cell(dom, &row, field), want.to_string(), "{row} {field}");
        }
        let percent: f64 = cell(dom, &row, "success_percent").parse().unwrap();
        assert!((percent - t["success"]["percent"].as_f64().unwrap()).abs() < 0.005, "{row} success %");
        failing += ["failed", "wrong_result", "wrong_everywhere", "dtype_changed"]
            .iter()
            .map(|k| t["cases"][*k].as_u64().unwrap())
            .sum::<u64>();
    }
    failing
}

/// Checks that a slowdown section's caption holds `report --slowdown --format json`'s numbers
/// (the `dist` distribution: `by_median` for mlport's rule, `by_mean` for the paper's), to 3
/// decimals.
fn check_caption(dom: &str, sd: &Value, dist: &str) {
    let frameworks = sd["frameworks"].as_array().unwrap();
    assert!(!frameworks.is_empty());
    for f in frameworks {
        let d = &f[dist];
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
        (&["--format", "html", "-o", "x.html", "--run", "all"][..], "--run all is not in the page"),
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
    let ms = load_ms(&dom);
    eprintln!("report.html ({} bytes) loaded in {ms} ms", html.len());
    assert!(ms < 5000, "the page loads in {ms} ms");
    let failing = check_targets(&dom, &json);
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
    check_probe(&probe(&browser, &profile, &page, "cumsum"), "cumsum", failing);

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
    assert!(dom.contains("<section id=\"slowdown\" class=\"slowdown\">"), "the slowdown section");
    check_caption(&dom, &sd, "by_median");

    // A screenshot (looked at by eye; docs/report-html.png came from one).
    let shot = tmp.path().join("report-html.png");
    headless(&browser, &profile, &url, &format!("--screenshot={}", shot.display()));
    keep(&shot);
    eprintln!("the test took {:?}", started.elapsed());
}

/// The paper's imported raw data (PyTorch on TPU v3, the run with the most failures): the
/// counts equal the JSON's, two `--slowdown` sections under the authors' rule (T4 → TPU v3
/// across runs, and the TPU run's CPU copies → TPU) hold their JSON's numbers, the probe's
/// link and filter work, no console message or request, a screenshot.
#[test]
fn the_html_report_of_the_paper_data_shows_the_json_numbers_and_two_slowdowns() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("paper.db");
    mlport().args(["import", "paper"]).arg(common::paper_dir()).arg("--db").arg(&db).assert().success();
    let run = ["--run", "paper/torch/tpu_vm/tpu", "--rule", "paper"];
    let pairs = ["cuda:0@paper/torch/t4_vm/gpu..tpu:0@paper/torch/tpu_vm/tpu", "cpu..tpu:0"];
    let page = tmp.path().join("report-html-paper.html");
    mlport()
        .args(["report", "--format", "html", "-o"])
        .arg(&page)
        .args(run)
        .args(["--slowdown", pairs[0], "--slowdown", pairs[1], "--db"])
        .arg(&db)
        .assert()
        .success();
    let json: Value =
        serde_json::from_str(&stdout(mlport().args(["report", "--format", "json"]).args(run).arg("--db").arg(&db)))
            .unwrap();
    let profile = tmp.path().join("profile");
    let url = format!("file://{}", page.display());
    let dom = headless(&browser, &profile, &url, "--dump-dom");
    let ms = load_ms(&dom);
    eprintln!("{} ({} bytes) loaded in {ms} ms", page.display(), std::fs::metadata(&page).unwrap().len());
    assert!(ms < 5000, "the page loads in {ms} ms");
    let failing = check_targets(&dom, &json);
    assert!(failing > 50, "PyTorch on TPU v3 fails often: {failing}");
    assert!(dom.contains("<section id=\"slowdown\" class=\"slowdown\">"), "first slowdown");
    assert!(dom.contains("<section id=\"slowdown-2\" class=\"slowdown\">"), "second slowdown");
    for pair in pairs {
        let sd: Value = serde_json::from_str(&stdout(
            mlport().args(["report", "--format", "json", "--slowdown", pair]).args(run).arg("--db").arg(&db),
        ))
        .unwrap();
        assert_eq!(sd["method"], "paper");
        check_caption(&dom, &sd, "by_mean");
    }
    check_probe(&probe(&browser, &profile, &page, "not_implemented"), "not_implemented", failing);
    let shot = tmp.path().join("report-html-paper.png");
    headless(&browser, &profile, &url, &format!("--screenshot={}", shot.display()));
    keep(&shot);
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

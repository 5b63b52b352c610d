//! Bundles between real stores: two "machines" (two real runs of a small catalogue with real
//! NumPy and PyTorch, `--machine gpu-box` and `--machine tpu-box`, each in its own SQLite store)
//! exported and imported into a third store, and into PostgreSQL (a real server the test starts,
//! `common/postgres.rs`), give the same runs and the same reports; importing twice adds nothing;
//! truncated, foreign, tampered and newer-version bundles are refused with the file named and
//! nothing imported, and a bundle whose run fails half-way through its write leaves nothing of it
//! in either engine.

mod common;

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use common::postgres::PgServer;
use common::{mlport, stdout};
use mlport::store::{Location, Store};
use serde_json::Value;

fn report(db: impl AsRef<OsStr>, run: &str) -> Value {
    let out = stdout(mlport().args(["report", "--functions", "--format", "json", "--run", run, "--db"]).arg(db));
    let mut v: Value = serde_json::from_str(&out).unwrap();
    strip_ids(&mut v);
    v
}

/// The report without the store's own ids (a run's and its results' ids differ between stores).
fn strip_ids(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !matches!(k.as_str(), "id" | "result_id"));
            m.values_mut().for_each(strip_ids);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_ids),
        _ => {}
    }
}

fn import(db: impl AsRef<OsStr>, bundles: &[&Path]) -> assert_cmd::assert::Assert {
    mlport().args(["import", "bundle"]).args(bundles).arg("--db").arg(db).assert()
}

/// The bundle's members, by name, in order.
fn members(bundle: &Path) -> Vec<(String, Vec<u8>)> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(bundle).unwrap());
    let mut archive = tar::Archive::new(gz);
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            (e.path().unwrap().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

/// Writes `members` as a gzip-compressed tar.
fn write_members(path: &Path, members: &[(String, Vec<u8>)]) {
    let gz = flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (name, bytes) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, name, bytes.as_slice()).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
}

/// The store `db` names (an SQLite path or a PostgreSQL URL).
fn store(db: impl AsRef<OsStr>) -> Store {
    Store::open_at(&Location::parse(db.as_ref().to_str().unwrap()).unwrap()).unwrap()
}

fn runs_in(db: impl AsRef<OsStr>) -> usize {
    store(db).runs().unwrap().len()
}

/// A refused bundle: exit 1, the file and `why` named, and `db` left with `runs` runs.
fn refused(db: impl AsRef<OsStr>, bundle: &Path, why: &str, runs: usize) {
    let out = import(&db, &[bundle]).code(1).get_output().stderr.clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains(&bundle.display().to_string()) && err.contains(why), "{err}");
    assert_eq!(runs_in(db), runs, "nothing of {} was imported", bundle.display());
}

/// A copy of the one-run bundle `from` whose last result names a case its run does not plan,
/// with the manifest's size and SHA-256 made to match: it passes every check made before
/// writing, and its import fails after the run, its plan and its other results were written.
fn fails_half_way(from: &Path, to: &Path) {
    let mut m = members(from);
    let i = m.iter().position(|(name, _)| name.starts_with("runs/")).unwrap();
    let mut record: Value = serde_json::from_slice(&m[i].1).unwrap();
    let results = record["run"]["results"].as_array_mut().unwrap();
    assert!(results.len() > 2, "a run with results to write before the bad one");
    results.last_mut().unwrap()["case_key"] = "numpy/numpy.nothing/default/float32".into();
    m[i].1 = serde_json::to_vec(&record).unwrap();
    let mut manifest: Value = serde_json::from_slice(&m[0].1).unwrap();
    let member = manifest["members"].as_array_mut().unwrap().iter_mut().find(|x| x["path"] == m[i].0.as_str()).unwrap();
    member["bytes"] = m[i].1.len().into();
    member["sha256"] = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&m[i].1)).into();
    m[0].1 = serde_json::to_vec(&manifest).unwrap();
    write_members(to, &m);
}

/// Rows of every table a run writes to, in the store `db` names, by table.
fn rows_in(db: &str, server: Option<&PgServer>) -> Vec<(String, String)> {
    let tables = ["runs", "functions", "cases", "devices", "results", "samples", "reference_outputs", "comparisons"];
    tables
        .iter()
        .map(|t| {
            let sql = format!("SELECT COUNT(*) FROM {t}");
            let n = match server {
                Some(s) => s.sql(db.rsplit('/').next().unwrap(), &sql),
                None => rusqlite::Connection::open(db)
                    .unwrap()
                    .query_row(&sql, [], |r| r.get::<_, i64>(0))
                    .unwrap()
                    .to_string(),
            };
            (t.to_string(), n)
        })
        .collect()
}

#[test]
fn two_machines_exported_and_imported_into_a_third_store_give_identical_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (a, b, c) = (t.join("gpu.db"), t.join("tpu.db"), t.join("all.db"));
    for (db, machine) in [(&a, "gpu-box"), (&b, "tpu-box")] {
        common::run_catalogue(
            db,
            "diff/before",
            &[
                "--device",
                "cpu",
                "--framework",
                "numpy,torch",
                "--budget-ms",
                "30",
                "--machine",
                machine,
                "--label",
                machine,
            ],
        );
    }
    let (ba, bb) = (t.join("gpu.mlport-bundle"), t.join("tpu.mlport-bundle"));
    mlport().args(["export", "gpu-box", "-o"]).arg(&ba).arg("--db").arg(&a).assert().success();
    mlport().args(["export", "tpu-box", "--with-outputs", "-o"]).arg(&bb).arg("--db").arg(&b).assert().success();

    import(&c, &[&ba, &bb]).success();
    let (sa, sb, sc) = (Store::open(&a).unwrap(), Store::open(&b).unwrap(), Store::open(&c).unwrap());
    let runs = sc.runs().unwrap();
    assert_eq!(
        runs.iter().map(|r| r.origin.machine.as_deref()).collect::<Vec<_>>(),
        [Some("gpu-box"), Some("tpu-box")]
    );
    // The gpu-box run came without its files: its record is the original, field for field.
    let original = sa.run_record(1).unwrap();
    assert_eq!(sc.run_record(runs[0].id).unwrap(), original);
    assert_eq!(runs[0].uid, sa.run(1).unwrap().uid);
    assert!(!original.references.is_empty() && !original.comparisons.is_empty(), "references and comparisons travel");
    // The tpu-box run came with its files: the same but for the paths, which point at copies
    // beside the third store holding the same bytes.
    let (rb, rc) = (sb.run_record(1).unwrap(), sc.run_record(runs[1].id).unwrap());
    assert_eq!((&rc.run.info, &rc.run.cases, &rc.comparisons), (&rb.run.info, &rb.run.cases, &rb.comparisons));
    for (x, y) in rb.run.results.iter().zip(&rc.run.results) {
        assert_eq!((&x.case_key, x.outcome, &x.samples_ns), (&y.case_key, y.outcome, &y.samples_ns));
        for (ox, oy) in x.outputs.as_array().unwrap().iter().zip(y.outputs.as_array().unwrap()) {
            let (px, py) = (PathBuf::from(ox["path"].as_str().unwrap()), PathBuf::from(oy["path"].as_str().unwrap()));
            assert!(py.starts_with(t.join(".mlport")) && py != px, "{}", py.display());
            assert_eq!(std::fs::read(&px).unwrap(), std::fs::read(&py).unwrap(), "{}", py.display());
        }
    }
    // Identical reports.
    for (db, label) in [(&a, "gpu-box"), (&b, "tpu-box")] {
        assert_eq!(report(db, label), report(&c, label), "{label}");
    }

    // Importing again adds nothing, and says so.
    let before = std::fs::read(&c).unwrap().len();
    let out = import(&c, &[&ba, &bb]).success().get_output().stderr.clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("is already in") && err.contains("skipped") && err.contains("imported 0 runs"), "{err}");
    assert_eq!(runs_in(&c), 2);
    assert_eq!(Store::open(&c).unwrap().run_record(runs[0].id).unwrap(), original);
    assert!(std::fs::read(&c).unwrap().len() <= before);

    // Refused, nothing imported: truncated, tampered, newer, foreign.
    let d = t.join("fresh.db");
    let whole = std::fs::read(&bb).unwrap();
    let cut = t.join("cut.mlport-bundle");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    refused(&d, &cut, "truncated or damaged", 0);
    let mut m = members(&ba);
    let last = m.len() - 1;
    m[last].1[10] ^= 1;
    let tampered = t.join("tampered.mlport-bundle");
    write_members(&tampered, &m);
    refused(&d, &tampered, "does not match its size and SHA-256", 0);
    let mut m = members(&ba);
    let mut manifest: Value = serde_json::from_slice(&m[0].1).unwrap();
    assert_eq!((manifest["format"].as_str(), manifest["version"].as_u64()), (Some("mlport.bundle"), Some(1)));
    manifest["version"] = 2.into();
    m[0].1 = serde_json::to_vec(&manifest).unwrap();
    let newer = t.join("newer.mlport-bundle");
    write_members(&newer, &m);
    refused(&d, &newer, "bundle version 2 was written by a newer mlport", 0);
    let foreign = t.join("foreign.tar.gz");
    write_members(&foreign, &[("README".into(), b"hello".to_vec())]);
    refused(&d, &foreign, "not an mlport bundle (its first member is README", 0);
    refused(&d, &a, "not an mlport bundle (not a gzip-compressed tar", 0);
    // A bundle that passes every check but fails half-way through its write leaves nothing.
    let half = t.join("half.mlport-bundle");
    fails_half_way(&ba, &half);
    refused(&d, &half, "does not plan", 0);
    assert!(
        rows_in(d.to_str().unwrap(), None).iter().all(|(_, n)| n == "0"),
        "{:?}",
        rows_in(d.to_str().unwrap(), None)
    );
    // A bad bundle beside a good one: every bundle is checked before any is imported, so
    // neither is.
    import(&d, &[&ba, &cut]).code(1);
    assert_eq!(runs_in(&d), 0);

    // The same bundles into PostgreSQL: the same runs and reports as their import into SQLite.
    let server = PgServer::start();
    let pg = server.create_database();
    import(&pg, &[&ba, &bb]).success();
    let sp = store(&pg);
    let runs = sp.runs().unwrap();
    assert_eq!(
        runs.iter().map(|r| r.uid.as_str()).collect::<Vec<_>>(),
        [sa.run(1).unwrap().uid, sb.run(1).unwrap().uid]
    );
    assert_eq!(sp.run_record(runs[0].id).unwrap(), original);
    for label in ["gpu-box", "tpu-box"] {
        assert_eq!(report(&pg, label), report(&c, label), "{label} from PostgreSQL");
    }
    drop(sp);
    // Again: nothing added.
    let before = rows_in(&pg, Some(&server));
    let out = import(&pg, &[&ba, &bb]).success().get_output().stderr.clone();
    assert!(String::from_utf8_lossy(&out).contains("imported 0 runs"), "{}", String::from_utf8_lossy(&out));
    assert_eq!(rows_in(&pg, Some(&server)), before);
    // Refused, nothing imported, also half-way through a write.
    let fresh = server.create_database();
    for (bundle, why) in [
        (&cut, "truncated or damaged"),
        (&tampered, "does not match its size and SHA-256"),
        (&newer, "bundle version 2 was written by a newer mlport"),
        (&foreign, "not an mlport bundle (its first member is README"),
        (&half, "does not plan"),
    ] {
        refused(&fresh, bundle, why, 0);
    }
    let left = rows_in(&fresh, Some(&server));
    assert!(left.iter().all(|(_, n)| n == "0"), "{left:?}");
}

/// The stderr of a command that must exit with `code`.
fn stderr_of(a: assert_cmd::assert::Assert, code: i32) -> String {
    String::from_utf8_lossy(&a.code(code).get_output().stderr).into_owned()
}

/// A run exported while another process still writes it: the bundle is one consistent moment of
/// it (it imports, every comparison naming a result it holds) and says the run has not finished;
/// the bundle of the finished run, imported later, replaces it under the same id, and the
/// earlier bundle imported again changes nothing.
#[test]
fn a_run_exported_while_it_runs_is_a_snapshot_that_its_finished_export_replaces() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (live, copy) = (t.join("live.db"), t.join("copy.db"));
    // The fleet catalogue with 1 s of timing per case: long enough to export in its middle.
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mlport"))
        .current_dir(t)
        .args(["run", "--device", "cpu", "--budget-ms", "1000", "--label", "live", "--catalogue"])
        .arg(common::fixture("fleet"))
        .arg("--db")
        .arg(&live)
        .arg("--python")
        .arg(common::python())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while !live.exists() || store(&live).runs().unwrap().first().is_none_or(|r| r.results < 2) {
        assert!(std::time::Instant::now() < deadline, "the run wrote no results within 300 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let part = t.join("part.mlport-bundle");
    let err = stderr_of(mlport().args(["export", "live", "-o"]).arg(&part).arg("--db").arg(&live).assert(), 0);
    assert!(
        err.contains("run 1 is still running (or was killed)") && err.contains("planned cases have a result"),
        "{err}"
    );
    let snapshot = mlport::bundle::read(&part).unwrap().records.remove(0);
    let planned = snapshot.run.cases.len();
    assert_eq!(snapshot.state, mlport::model::RunState::Running);
    assert!((2..planned).contains(&snapshot.run.results.len()), "{} of {planned}", snapshot.run.results.len());
    for c in &snapshot.comparisons {
        assert!(
            snapshot.run.results.iter().any(|r| r.case_key == c.case_key && r.device == c.device),
            "a comparison of {} without its result",
            c.case_key
        );
    }
    let err = stderr_of(import(&copy, &[&part]), 0);
    assert!(err.contains("was still running (or killed) when it was exported"), "{err}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let whole = t.join("whole.mlport-bundle");
    mlport().args(["export", "live", "-o"]).arg(&whole).arg("--db").arg(&live).assert().success();
    let err = stderr_of(import(&copy, &[&whole]), 0);
    assert!(err.contains(&format!("replaced by the bundle's, finished with {planned} results (still run 1)")), "{err}");
    let original = store(&live).run_record(1).unwrap();
    assert_eq!(store(&copy).run_record(1).unwrap(), original, "the finished run, field for field");
    assert_eq!(runs_in(&copy), 1);
    assert_eq!(report(&copy, "live"), report(&live, "live"));
    // The earlier state again: not newer, skipped.
    let err = stderr_of(import(&copy, &[&part]), 0);
    assert!(err.contains("not newer") && err.contains("skipped"), "{err}");
    assert_eq!(store(&copy).run_record(1).unwrap(), original);
}

/// Files that are no bundle, or a bundle with something after it, are refused naming the file,
/// before the store is opened (none is created), also beside a good bundle; a bundle named twice
/// is imported once.
#[test]
fn empty_files_folders_trailing_bytes_and_repeats_are_named_and_import_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let src = t.join("src.db");
    common::run_catalogue(&src, "fleet", &["--device", "cpu", "--function", "numpy.sum", "--budget-ms", "5"]);
    let good = t.join("good.mlport-bundle");
    mlport().args(["export", "1", "-o"]).arg(&good).arg("--db").arg(&src).assert().success();
    let bytes = std::fs::read(&good).unwrap();
    let empty = t.join("empty.mlport-bundle");
    std::fs::write(&empty, b"").unwrap();
    let folder = t.join("folder.mlport-bundle");
    std::fs::create_dir(&folder).unwrap();
    let trailing = t.join("trailing.mlport-bundle");
    std::fs::write(&trailing, [bytes.as_slice(), b"x"].concat()).unwrap();
    let twice = t.join("twice.mlport-bundle");
    std::fs::write(&twice, [bytes.as_slice(), bytes.as_slice()].concat()).unwrap();
    let missing = t.join("missing.mlport-bundle");
    let dev_null = PathBuf::from("/dev/null");

    let db = t.join("new.db");
    for (files, named, why) in [
        (vec![&empty], &empty, "not an mlport bundle (an empty file, 0 bytes)"),
        (vec![&dev_null], &dev_null, "not an mlport bundle (an empty file, 0 bytes)"),
        (vec![&folder], &folder, "not an mlport bundle (a folder; name the bundle file in it)"),
        (vec![&trailing], &trailing, "1 byte after the end of its compressed data"),
        (vec![&twice], &twice, &format!("{} bytes after the end of its compressed data", bytes.len())),
        (vec![&good, &trailing], &trailing, "1 byte after the end"),
        (vec![&good, &missing], &missing, "cannot open"),
    ] {
        let files: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        let err = stderr_of(import(&db, &files), 1);
        assert!(err.contains(&format!("error: {}", named.display())) && err.contains(why), "{files:?}: {err}");
        assert!(!db.exists(), "{files:?}: nothing imported, no store created");
    }
    // The same bundle twice (two spellings of one path) is imported once.
    let again = t.join(".").join("good.mlport-bundle");
    let err = stderr_of(import(&db, &[&good, &again]), 0);
    assert!(err.contains("is named twice on the command line; importing it once"), "{err}");
    assert_eq!(err.matches("imported 1 run from").count(), 1, "{err}");
    assert_eq!(runs_in(&db), 1);
}

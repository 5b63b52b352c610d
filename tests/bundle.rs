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
    // A bad bundle beside a good one: the good one is imported in its own transaction.
    import(&d, &[&ba, &cut]).code(1);
    assert_eq!(runs_in(&d), 1);

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

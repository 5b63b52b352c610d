//! Issue 23, "Also": inputs that must be refused with a clear error and stores that must not
//! be changed, through the real `mlport` binary: read-only commands leave a 0-byte file
//! empty; `--catalogue` refuses a device and a FIFO (reading either could last forever);
//! invalid UTF-8 is placed by line, column and byte offset; a 10 MB case id is refused;
//! a store with damaged pages is refused before anything is written, and `runs --check` says so.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::mlport;
use predicates::prelude::*;

/// `mlport list --catalogue PATH` (reads the catalogue, touches no store), with its stderr.
fn list_catalogue(path: &Path) -> (Option<i32>, String) {
    let out = mlport().args(["list", "--catalogue"]).arg(path).timeout(Duration::from_secs(60)).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn read_only_commands_leave_an_empty_file_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("empty.db");
    std::fs::write(&db, b"").unwrap();
    for args in [vec!["runs"], vec!["report"], vec!["runs", "--check"]] {
        mlport()
            .args(&args)
            .arg("--db")
            .arg(&db)
            .assert()
            .failure()
            .stderr(predicate::str::contains("the file is empty: no mlport store has been written to it"));
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "`mlport {}` wrote to the empty file", args.join(" "));
        let beside: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(beside, ["empty.db"], "no -wal or -shm file either");
    }
}

#[test]
fn a_device_or_a_fifo_is_no_catalogue() {
    let started = Instant::now();
    let (code, err) = list_catalogue(Path::new("/dev/zero"));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cannot read catalogue /dev/zero: it is a device; mlport reads catalogue files (*.toml)"),
        "{err}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("cat.toml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let (code, err) = list_catalogue(&fifo);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("it is a FIFO (named pipe)"), "{err}");
    // A FIFO inside a catalogue folder is refused the same way.
    let (code, err) = list_catalogue(tmp.path());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&format!("cannot read catalogue {}: it is a FIFO", fifo.display())), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30), "refused without reading");
}

#[test]
fn invalid_utf8_is_placed_by_line_column_and_byte_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.toml");
    let mut text = b"format = 1\nframework = \"numpy\"\nversion = \"t\"\nnote = \"t\xc3\xa9".to_vec();
    let offset = text.len();
    text.extend_from_slice(b"\xff\xfe\"\n");
    std::fs::write(&path, &text).unwrap();
    let (code, err) = list_catalogue(&path);
    assert_eq!(code, Some(1), "{err}");
    // Line 4, column 11 (the é before it counts as one character), byte offset 56.
    assert_eq!(offset, 56);
    assert!(
        err.contains(&format!(
            "{}:4:11: not UTF-8: byte 0xff at byte offset 56; catalogue files are UTF-8",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn a_10_mb_case_id_is_refused_without_being_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("long.toml");
    let id = "x".repeat(10 << 20);
    let text = format!(
        "format = 1\nframework = \"numpy\"\nversion = \"t\"\n\n[[function]]\nname = \"numpy.sum\"\n  [[function.case]]\n  \
         id = \"{id}\"\n"
    );
    std::fs::write(&path, text).unwrap();
    let (code, err) = list_catalogue(&path);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{}:8:8: the case id is 10485760 characters long (it begins `{}`); at most 256 are allowed",
            path.display(),
            "x".repeat(40)
        )),
        "{err:.400}"
    );
    assert!(err.len() < 4096, "the id is not echoed: {} bytes of stderr", err.len());
}

/// A store with one imported run: the paper's data is large enough to span many pages.
fn store_with_pages(db: &Path) {
    mlport().args(["import", "paper"]).arg(common::paper_dir()).arg("--db").arg(db).assert().success();
}

#[test]
fn a_store_with_damaged_pages_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    store_with_pages(&db);
    mlport()
        .args(["runs", "--check", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stderr(predicate::str::contains(format!("mlport: store {}: ok (SQLite's quick_check)", db.display())));
    // Random bytes over a page in the middle of the file (page size 4096).
    let mut bytes = std::fs::read(&db).unwrap();
    let pages = bytes.len() / 4096;
    assert!(pages > 20, "{pages} pages");
    let page = pages / 2;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for b in &mut bytes[page * 4096..(page + 1) * 4096] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(&db, &bytes).unwrap();
    let damaged = std::fs::read(&db).unwrap();
    for args in [vec!["runs", "--check"], vec!["import", "paper"]] {
        let mut cmd = mlport();
        cmd.args(&args);
        if args[0] == "import" {
            cmd.arg(common::paper_dir());
        }
        cmd.arg("--db")
            .arg(&db)
            .assert()
            .failure()
            .stderr(predicate::str::contains(format!("{}: the store is damaged (SQLite's quick_check: ", db.display())))
            .stderr(predicate::str::contains("nothing was written to it"));
        assert_eq!(std::fs::read(&db).unwrap(), damaged, "`mlport {}` changed the damaged store", args.join(" "));
    }
}

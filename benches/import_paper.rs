//! The wall time of importing the paper's whole published data set and printing its report,
//! end to end through the release binary as a user runs it:
//! `mlport import paper ../shared/paper-data --db NEW.db` (which prints the overview of the
//! 18 runs it stores) followed by `mlport report --run all --db NEW.db`.
//! Run with `cargo bench --bench import_paper`; prints the figure (target: under 5 s).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

const ROUNDS: usize = 5;

fn main() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/paper-data");
    assert!(data.join("pytorch_timings").is_dir(), "the paper's data set is missing at {}", data.display());
    let exe = env!("CARGO_BIN_EXE_mlport");
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let mut import_s = Vec::new();
    let mut report_s = Vec::new();
    let mut total_s = Vec::new();
    for round in 0..ROUNDS {
        let db = tmp.path().join(format!("paper-{round}.db"));
        let start = Instant::now();
        let import =
            Command::new(exe).args(["import", "paper"]).arg(&data).arg("--db").arg(&db).output().expect("mlport runs");
        let imported = start.elapsed().as_secs_f64();
        assert!(import.status.success(), "import failed: {}", String::from_utf8_lossy(&import.stderr));
        let report = Command::new(exe).args(["report", "--run", "all", "--db"]).arg(&db).output().expect("mlport runs");
        let total = start.elapsed().as_secs_f64();
        assert!(report.status.success(), "report failed: {}", String::from_utf8_lossy(&report.stderr));
        assert!(String::from_utf8_lossy(&report.stdout).contains("35 (54.69%)"));
        import_s.push(imported);
        report_s.push(total - imported);
        total_s.push(total);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mi, mr, mt) = (median(&mut import_s), median(&mut report_s), median(&mut total_s));
    println!(
        "import paper (18 runs, overview printed): median {mi:.3} s; report --run all: median {mr:.3} s; \
         together: median {mt:.3} s, min {:.3} s, max {:.3} s over {ROUNDS} rounds (target: under 5 s) — {}",
        total_s[0],
        total_s[ROUNDS - 1],
        if mt < 5.0 { "met" } else { "NOT met" }
    );
}

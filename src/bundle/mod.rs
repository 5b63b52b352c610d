//! Bundles: a versioned, self-contained file of whole runs ([`RunRecord`]s) for machines that
//! cannot reach a shared store. A bundle is a gzip-compressed tar (the `tar` and `flate2`
//! crates) whose first member is `manifest.json` — `{"format": "mlport.bundle", "version": 1,
//! ...}` listing every other member with its size and SHA-256 — then one JSON document per run
//! (`runs/<uid>.json`) and, when exported with the output arrays, the run's files under
//! `outputs/<uid>/` (the `.npy` outputs, inputs and references of its run folder).
//!
//! [`read`] checks everything before anything is imported: the manifest comes first and names
//! this format and a version this mlport reads; every listed member is present once, of its
//! size and hash, and nothing else is there; every run document parses. A truncated, foreign,
//! tampered or newer bundle is a [`BundleError`] naming the file.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::bufread::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::RunRecord;

/// The manifest's `format`.
pub const FORMAT: &str = "mlport.bundle";
/// The bundle version this mlport writes and the newest it reads.
pub const VERSION: u32 = 1;
/// The manifest's member name, always the first.
const MANIFEST: &str = "manifest.json";
/// The most bytes a manifest may hold (about a million members' names, sizes and hashes); a
/// bundle whose first member claims more is refused before it is read.
const MAX_MANIFEST_BYTES: u64 = 256 << 20;

/// Why a bundle cannot be written or read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{}: cannot {what}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("{}: not an mlport bundle ({why})", path.display())]
    Foreign { path: PathBuf, why: String },
    #[error(
        "{}: bundle version {found} was written by a newer mlport (this one reads version {VERSION} and older); \
         import it with a newer mlport",
        path.display()
    )]
    TooNew { path: PathBuf, found: u32 },
    #[error("{}: the bundle is truncated or damaged: {why}; nothing was imported", path.display())]
    Damaged { path: PathBuf, why: String },
}

/// A member of the bundle as the manifest lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// Its path inside the bundle (`runs/<uid>.json`, `outputs/<uid>/torch-cpu/x.npy`).
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// A run as the manifest lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestRun {
    /// The run's globally unique id.
    pub uid: String,
    /// Its label, if any.
    pub label: Option<String>,
    /// The machine it was measured on (its `--machine`, else its host).
    pub machine: String,
    /// Its campaign, if any.
    pub campaign: Option<String>,
    /// The member holding its [`RunRecord`] as JSON.
    pub member: String,
    /// When its files are in the bundle: the folder they were in on the exporting machine (the
    /// paths its results name start with it) and the bundle folder holding them.
    pub outputs: Option<OutputsDir>,
}

/// Where a run's files were and are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputsDir {
    /// The run folder on the exporting machine (absolute).
    pub was: String,
    /// The bundle folder (`outputs/<uid>/`).
    pub member_prefix: String,
}

/// The first member: what the bundle is and holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] when written by this mlport.
    pub version: u32,
    /// When it was written (RFC 3339 UTC).
    pub created_at: String,
    /// The mlport that wrote it.
    pub mlport_version: String,
    /// The runs, in the order given.
    pub runs: Vec<ManifestRun>,
    /// Every other member, in bundle order.
    pub members: Vec<Member>,
}

/// One run to export: its record and, for `--with-outputs`, its run folder.
pub struct ToExport {
    /// The whole run.
    pub record: RunRecord,
    /// The folder of its files, when they are to travel with it (a missing folder adds none).
    pub run_dir: Option<PathBuf>,
}

/// What a written bundle holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    /// Runs written.
    pub runs: usize,
    /// Members besides the manifest.
    pub members: usize,
    /// Bytes of the members before compression.
    pub raw_bytes: u64,
    /// The bundle's size on disk.
    pub bytes: u64,
}

/// A bundle read and checked: the manifest, each run's record, and each run's files by path
/// relative to its run folder.
pub struct Bundle {
    /// The manifest.
    pub manifest: Manifest,
    /// The runs, in manifest order.
    pub records: Vec<RunRecord>,
    /// Per run uid, its files (path relative to the run folder, bytes).
    pub outputs: HashMap<String, Vec<(PathBuf, Vec<u8>)>>,
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The files under `dir`, recursively, as (path relative to `dir`, bytes), sorted by path;
/// none when `dir` does not exist. Lock files (`run.lock`) are left out.
fn files_under(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>, root: &Path) -> io::Result<()> {
    let mut entries: Vec<_> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.collect::<io::Result<_>>()?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        let ty = e.file_type()?;
        if ty.is_dir() {
            files_under(&p, out, root)?;
        } else if ty.is_file() && p.file_name().is_some_and(|n| n != "run.lock") {
            out.push((p.strip_prefix(root).expect("under root").to_path_buf(), std::fs::read(&p)?));
        }
    }
    Ok(())
}

/// Writes `runs` as a bundle at `path` (replacing it only once the whole bundle is written:
/// it is written beside it, then renamed). `created_at` is recorded in the manifest.
///
/// Errors: [`BundleError::Io`] naming the file that could not be read or written.
pub fn write(path: &Path, runs: &[ToExport], created_at: &str) -> Result<Written, BundleError> {
    let io_err = |what: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| BundleError::Io { path: p, what, source }
    };
    let mut members: Vec<(Member, Vec<u8>)> = Vec::new();
    let mut listed = Vec::new();
    let mut add = |path: String, bytes: Vec<u8>| {
        members.push((Member { path, bytes: bytes.len() as u64, sha256: sha256_hex(&bytes) }, bytes));
    };
    for r in runs {
        let uid = r.record.run.uid.clone().expect("stored runs have a uid");
        let member = format!("runs/{uid}.json");
        let json = serde_json::to_vec(&r.record).expect("records serialise");
        add(member.clone(), json);
        let outputs = match &r.run_dir {
            Some(dir) => {
                let mut files = Vec::new();
                files_under(dir, &mut files, dir).map_err(io_err("read the run's files under", dir))?;
                let prefix = format!("outputs/{uid}/");
                for (rel, bytes) in files {
                    add(format!("{prefix}{}", rel.to_string_lossy()), bytes);
                }
                Some(OutputsDir { was: dir.to_string_lossy().into_owned(), member_prefix: prefix })
            }
            None => None,
        };
        let origin = &r.record.run.origin;
        listed.push(ManifestRun {
            uid,
            label: origin.label.clone(),
            machine: origin.machine.clone().unwrap_or_else(|| r.record.run.info.host.clone()),
            campaign: origin.campaign.clone(),
            member,
            outputs,
        });
    }
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        created_at: created_at.into(),
        mlport_version: env!("CARGO_PKG_VERSION").into(),
        runs: listed,
        members: members.iter().map(|(m, _)| m.clone()).collect(),
    };
    let partial = path.with_extension("partial");
    let file = File::create(&partial).map_err(io_err("create", &partial))?;
    let mut tar = tar::Builder::new(GzEncoder::new(BufWriter::new(file), Compression::default()));
    let mut append = |name: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes)
    };
    let manifest_json = serde_json::to_vec_pretty(&manifest).expect("the manifest serialises");
    let result = append(MANIFEST, &manifest_json)
        .and_then(|()| members.iter().try_for_each(|(m, bytes)| append(&m.path, bytes)))
        .and_then(|()| tar.into_inner())
        .and_then(|gz| gz.finish())
        .and_then(|mut w| w.flush());
    if let Err(e) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(BundleError::Io { path: partial, what: "write", source: e });
    }
    std::fs::rename(&partial, path).map_err(io_err("write", path))?;
    let bytes = std::fs::metadata(path).map_err(io_err("read", path))?.len();
    Ok(Written {
        runs: runs.len(),
        members: members.len(),
        raw_bytes: members.iter().map(|(m, _)| m.bytes).sum(),
        bytes,
    })
}

/// Reads and checks the bundle at `path` (see the module's description); nothing is trusted
/// before the manifest and every hash check out.
///
/// Errors: [`BundleError::Foreign`] (not gzip, not a tar, no manifest first, another format),
/// [`BundleError::TooNew`], [`BundleError::Damaged`] (truncated, a member missing, extra,
/// duplicated, of another size or hash, or a run document that does not parse),
/// [`BundleError::Io`].
pub fn read(path: &Path) -> Result<Bundle, BundleError> {
    let io_err = |what: &'static str| move |source| BundleError::Io { path: path.into(), what, source };
    let foreign = |why: &str| BundleError::Foreign { path: path.into(), why: why.into() };
    let damaged = |why: String| BundleError::Damaged { path: path.into(), why };
    if std::fs::metadata(path).map_err(io_err("open"))?.is_dir() {
        return Err(foreign("a folder; name the bundle file in it"));
    }
    let file = File::open(path).map_err(io_err("open"))?;
    let mut reader = BufReader::new(file);
    let mut magic = Vec::with_capacity(2);
    (&mut reader).take(2).read_to_end(&mut magic).map_err(io_err("read"))?;
    match magic.as_slice() {
        [] => return Err(foreign("an empty file, 0 bytes")),
        [0x1f, 0x8b] => {}
        _ => return Err(foreign("not a gzip-compressed tar file")),
    }
    let file = File::open(path).map_err(io_err("open"))?;
    // `bufread`'s decoder reads no further than the end of the compressed data, so that what
    // follows it (a byte appended, a second bundle concatenated) can be found and refused.
    let mut archive = tar::Archive::new(GzDecoder::new(BufReader::new(file)));
    let mut entries = archive.entries().map_err(|e| damaged(e.to_string()))?;
    // A member is read only when its tar header's size is what the manifest allows (`limit`
    // of its name): a damaged or hostile header claiming terabytes is refused before any
    // memory is taken for it.
    let mut next = |what: &str,
                    limit: &dyn Fn(&str) -> Result<u64, BundleError>|
     -> Result<Option<(String, Vec<u8>)>, BundleError> {
        match entries.next() {
            None => Ok(None),
            Some(Err(e)) => Err(damaged(format!("{what}: {e}"))),
            Some(Ok(mut entry)) => {
                let name = entry.path().map_err(|e| damaged(e.to_string()))?.to_string_lossy().into_owned();
                let allowed = limit(&name)?;
                if entry.size() > allowed {
                    return Err(damaged(format!(
                        "{name} claims {} bytes, more than the {allowed} its manifest allows",
                        entry.size()
                    )));
                }
                let mut bytes = Vec::with_capacity(entry.size() as usize);
                entry.read_to_end(&mut bytes).map_err(|e| damaged(format!("{name}: {e}")))?;
                Ok(Some((name, bytes)))
            }
        }
    };
    let manifest: Manifest = match next("reading the first member", &|_| Ok(MAX_MANIFEST_BYTES)) {
        Ok(Some((name, bytes))) if name == MANIFEST => {
            let head: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| foreign(&format!("manifest.json is not JSON: {e}")))?;
            if head.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
                return Err(foreign(&format!("its manifest's format is {}, not {FORMAT}", head["format"])));
            }
            let version = head.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
            if version > u64::from(VERSION) {
                return Err(BundleError::TooNew { path: path.into(), found: version.min(u64::from(u32::MAX)) as u32 });
            }
            serde_json::from_value(head).map_err(|e| damaged(format!("manifest.json: {e}")))?
        }
        Ok(Some((name, _))) => return Err(foreign(&format!("its first member is {name}, not {MANIFEST}"))),
        Ok(None) => return Err(foreign("an empty archive")),
        Err(_) => return Err(foreign("not a tar archive")),
    };
    let expected: BTreeMap<&str, &Member> = manifest.members.iter().map(|m| (m.path.as_str(), m)).collect();
    let mut found: HashMap<String, Vec<u8>> = HashMap::new();
    let allowed = |name: &str| {
        expected.get(name).map(|m| m.bytes).ok_or_else(|| damaged(format!("{name} is not in the manifest")))
    };
    while let Some((name, bytes)) = next("reading a member", &allowed)? {
        let m = expected.get(name.as_str()).ok_or_else(|| damaged(format!("{name} is not in the manifest")))?;
        if bytes.len() as u64 != m.bytes || sha256_hex(&bytes) != m.sha256 {
            return Err(damaged(format!("{name} does not match its size and SHA-256 in the manifest")));
        }
        if found.insert(name.clone(), bytes).is_some() {
            return Err(damaged(format!("{name} is in the bundle twice")));
        }
    }
    if let Some(missing) = expected.keys().find(|k| !found.contains_key(**k)) {
        return Err(damaged(format!("{missing} is missing ({} of {} members present)", found.len(), expected.len())));
    }
    check_nothing_after(archive.into_inner()).map_err(damaged)?;
    let mut records = Vec::new();
    let mut outputs = HashMap::new();
    for run in &manifest.runs {
        let bytes = found.remove(&run.member).ok_or_else(|| damaged(format!("run {} has no member", run.uid)))?;
        let record: RunRecord = serde_json::from_slice(&bytes).map_err(|e| damaged(format!("{}: {e}", run.member)))?;
        if record.run.uid.as_deref() != Some(run.uid.as_str()) {
            return Err(damaged(format!("{} holds another run than {}", run.member, run.uid)));
        }
        records.push(record);
        if let Some(o) = &run.outputs {
            let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
            let names: Vec<String> = found.keys().filter(|k| k.starts_with(&o.member_prefix)).cloned().collect();
            for name in names {
                let rel = PathBuf::from(&name[o.member_prefix.len()..]);
                if rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
                    return Err(damaged(format!("{name} leaves its run folder")));
                }
                files.push((rel, found.remove(&name).expect("listed")));
            }
            files.sort_by(|a, b| a.0.cmp(&b.0));
            outputs.insert(run.uid.clone(), files);
        }
    }
    Ok(Bundle { manifest, records, outputs })
}

/// Reads the rest of a bundle whose last member has been read: the tar's end (zero blocks, as
/// tar writes them), the end of the compressed data, and then nothing. Errors: why not — bytes
/// after the compressed data (garbage appended, bundles concatenated), or the data cut short.
fn check_nothing_after(mut gz: GzDecoder<BufReader<File>>) -> Result<(), String> {
    let mut rest = Vec::new();
    gz.read_to_end(&mut rest).map_err(|e| format!("after its last member: {e}"))?;
    if rest.iter().any(|b| *b != 0) {
        return Err(format!("{} bytes of data follow the end of its tar archive", rest.len()));
    }
    let mut after = Vec::new();
    gz.into_inner().read_to_end(&mut after).map_err(|e| format!("after its compressed data: {e}"))?;
    if !after.is_empty() {
        return Err(format!(
            "{} after the end of its compressed data (a file appended to it, or two bundles in one file?)",
            if after.len() == 1 { "1 byte".to_string() } else { format!("{} bytes", after.len()) }
        ));
    }
    Ok(())
}

/// `value` with every string that starts with `was` (a run folder on the exporting machine)
/// starting with `now` instead: the `.npy` paths of a result's or a reference's outputs.
pub fn relocate(value: &mut serde_json::Value, was: &str, now: &str) {
    match value {
        serde_json::Value::String(s) => {
            if let Some(rest) = s.strip_prefix(was) {
                *s = format!("{now}{rest}");
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| relocate(v, was, now)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| relocate(v, was, now)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_old_run_folder_move() {
        let mut v = serde_json::json!([{"path": "/a/.mlport/x-run-3/torch-cpu/o.npy", "shape": [2]}, "/elsewhere"]);
        relocate(&mut v, "/a/.mlport/x-run-3", "/b/.mlport/y-bundle-u1");
        assert_eq!(v[0]["path"], "/b/.mlport/y-bundle-u1/torch-cpu/o.npy");
        assert_eq!(v[1], "/elsewhere");
    }

    /// A bundle whose second member's tar header claims 2^44 bytes (a damaged or hostile
    /// header; the data is three bytes) is refused as damaged; reading it once aborted the
    /// process trying to allocate 16 TiB.
    #[test]
    fn a_member_claiming_more_than_its_manifest_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.mlport.tar.gz");
        let manifest = serde_json::json!({
            "format": FORMAT, "version": VERSION, "created_at": "2026-01-01T00:00:00Z", "mlport_version": "0",
            "runs": [], "members": [{"path": "runs/a.json", "bytes": 3, "sha256": sha256_hex(b"abc")}],
        });
        let manifest = serde_json::to_vec(&manifest).unwrap();
        let mut tar = tar::Builder::new(GzEncoder::new(File::create(&path).unwrap(), Compression::fast()));
        let mut header = tar::Header::new_gnu();
        header.set_size(manifest.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, MANIFEST, manifest.as_slice()).unwrap();
        let mut huge = tar::Header::new_gnu();
        huge.set_path("runs/a.json").unwrap();
        huge.set_size(1 << 44);
        huge.set_mode(0o644);
        huge.set_cksum();
        // Written by hand after the manifest (the builder would write the claimed size).
        tar.get_mut().write_all(huge.as_bytes()).unwrap();
        tar.get_mut().write_all(b"abc").unwrap();
        tar.get_mut().write_all(&[0; 509]).unwrap();
        tar.into_inner().unwrap().finish().unwrap();
        let e = read(&path).err().expect("refused");
        assert!(matches!(e, BundleError::Damaged { .. }), "{e:?}");
        assert!(e.to_string().contains("runs/a.json claims 17592186044416 bytes, more than the 3"), "{e}");
    }
}

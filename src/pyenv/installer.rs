//! Which tool installs packages into the managed environment: `uv` (Astral's installer, a
//! PyPI package; its `uv pip install` downloads and unpacks wheels in parallel) when it can be
//! had, else the venv's own pip. uv lives in a small bootstrap venv of its own under the cache
//! folder (`tools/uv-<version>`), installed once with pip; nothing else of the managed
//! environment depends on it, so a machine without it (or without network for it) falls back to
//! pip with the same lock file as constraints. `MLPORT_INSTALLER=pip` forces pip;
//! `MLPORT_INSTALLER=uv` refuses the fallback.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};

/// The uv release the bootstrap venv installs (pinned: the installer is part of what makes an
/// environment reproducible). PyPI: <https://pypi.org/project/uv/>.
pub const UV_VERSION: &str = "0.13.8";

/// An installer of packages into a venv.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installer {
    /// `<uv> pip install --python <venv python> -c LOCK PKGS`.
    Uv(PathBuf),
    /// `<venv python> -m pip install -c LOCK PKGS`.
    Pip,
}

/// What `MLPORT_INSTALLER` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preference {
    /// Unset or `auto`: uv when its bootstrap works, else pip.
    Auto,
    /// `uv`: uv or an error.
    Uv,
    /// `pip`: pip only (no bootstrap is attempted).
    Pip,
}

impl Preference {
    /// Reads `MLPORT_INSTALLER` (`auto`, `uv`, `pip`; unset is `auto`).
    ///
    /// Errors: any other value, naming the variable.
    pub fn from_env(value: Option<&str>) -> Result<Preference> {
        match value.map(str::trim) {
            None | Some("") | Some("auto") => Ok(Preference::Auto),
            Some("uv") => Ok(Preference::Uv),
            Some("pip") => Ok(Preference::Pip),
            Some(other) => bail!("MLPORT_INSTALLER={other}: expected `auto`, `uv` or `pip`"),
        }
    }
}

/// The installer to use given the preference and how the uv bootstrap went (`bootstrap` is
/// called only when uv may be used). Returns the installer and, when it fell back to pip, why.
///
/// Errors: `MLPORT_INSTALLER=uv` and uv could not be bootstrapped.
pub fn choose(pref: Preference, bootstrap: impl FnOnce() -> Result<PathBuf>) -> Result<(Installer, Option<String>)> {
    if pref == Preference::Pip {
        return Ok((Installer::Pip, None));
    }
    match bootstrap() {
        Ok(uv) => Ok((Installer::Uv(uv), None)),
        Err(e) if pref == Preference::Uv => Err(e.context("MLPORT_INSTALLER=uv, but uv could not be installed")),
        Err(e) => Ok((Installer::Pip, Some(format!("{e:#}")))),
    }
}

/// The bootstrap venv's folder for [`UV_VERSION`] under `cache`.
pub fn uv_dir(cache: &Path) -> PathBuf {
    cache.join("tools").join(format!("uv-{UV_VERSION}"))
}

/// The `uv` executable in a bootstrap venv folder.
fn uv_exe(dir: &Path) -> PathBuf {
    if cfg!(windows) { dir.join("Scripts").join("uv.exe") } else { dir.join("bin").join("uv") }
}

/// uv in its bootstrap venv under `cache`, made with `base -m venv` and `pip install
/// uv==UV_VERSION` when missing (about 20 MB, a few seconds).
///
/// Errors: the venv or the pip install failed (no network, no wheel for the platform), with
/// the tool's last words; a half-made folder is removed.
pub fn bootstrap_uv(base: &str, cache: &Path) -> Result<PathBuf> {
    let dir = uv_dir(cache);
    let exe = uv_exe(&dir);
    if exe.exists() {
        return Ok(exe);
    }
    let python = super::venv_python(&dir);
    let steps: [(&str, Command); 2] = [
        ("create the uv bootstrap venv", {
            let mut c = Command::new(base);
            c.args(["-m", "venv"]).arg(&dir);
            c
        }),
        ("pip install uv", {
            let mut c = Command::new(&python);
            c.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q"])
                .arg(format!("uv=={UV_VERSION}"));
            c
        }),
    ];
    for (what, mut cmd) in steps {
        let out = cmd.output();
        let failed = match out {
            Ok(o) if o.status.success() => None,
            Ok(o) => Some(format!("{}: {}", o.status, tail(&String::from_utf8_lossy(&o.stderr)))),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = failed {
            let _ = std::fs::remove_dir_all(&dir);
            bail!("could not {what} in {}: {why}", dir.display());
        }
    }
    if !exe.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        bail!("pip installed uv into {} but {} is missing", dir.display(), exe.display());
    }
    Ok(exe)
}

/// The last 5 lines of a tool's output.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// The command that installs `pkgs` into the venv of `python` with `lock` as constraints.
pub fn install_command(installer: &Installer, python: &Path, lock: &Path, pkgs: &[&str]) -> Command {
    match installer {
        Installer::Uv(uv) => {
            let mut c = Command::new(uv);
            c.args(["pip", "install", "--python"]).arg(python).arg("-c").arg(lock).args(pkgs);
            c
        }
        Installer::Pip => {
            let mut c = Command::new(python);
            c.args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
                "-c",
            ])
            .arg(lock)
            .args(pkgs);
            c
        }
    }
}

impl Installer {
    /// `uv` or `pip`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Installer::Uv(_) => "uv",
            Installer::Pip => "pip",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preference_is_read_from_the_environment() {
        assert_eq!(Preference::from_env(None).unwrap(), Preference::Auto);
        assert_eq!(Preference::from_env(Some("auto")).unwrap(), Preference::Auto);
        assert_eq!(Preference::from_env(Some("uv")).unwrap(), Preference::Uv);
        assert_eq!(Preference::from_env(Some(" pip ")).unwrap(), Preference::Pip);
        assert!(Preference::from_env(Some("conda")).unwrap_err().to_string().contains("MLPORT_INSTALLER=conda"));
    }

    #[test]
    fn uv_is_used_when_its_bootstrap_works_and_pip_otherwise() {
        let uv = PathBuf::from("/c/tools/uv/bin/uv");
        assert_eq!(choose(Preference::Auto, || Ok(uv.clone())).unwrap(), (Installer::Uv(uv.clone()), None));
        let (i, why) = choose(Preference::Auto, || bail!("no network")).unwrap();
        assert_eq!(i, Installer::Pip);
        assert_eq!(why.as_deref(), Some("no network"));
        // pip forced: the bootstrap is never attempted.
        let (i, why) = choose(Preference::Pip, || -> Result<PathBuf> { panic!("bootstrap attempted") }).unwrap();
        assert_eq!((i, why), (Installer::Pip, None));
        // uv forced: no silent fallback.
        let e = choose(Preference::Uv, || bail!("no wheel")).unwrap_err();
        assert!(format!("{e:#}").contains("MLPORT_INSTALLER=uv") && format!("{e:#}").contains("no wheel"), "{e:#}");
    }

    #[test]
    fn install_commands_pass_the_lock_as_constraints() {
        let (py, lock) = (Path::new("/e/bin/python"), Path::new("/e/requirements.lock"));
        let c = install_command(&Installer::Uv("/t/uv".into()), py, lock, &["numpy", "torch"]);
        let args: Vec<_> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(c.get_program(), "/t/uv");
        assert_eq!(
            args,
            ["pip", "install", "--python", "/e/bin/python", "-c", "/e/requirements.lock", "numpy", "torch"]
        );
        let c = install_command(&Installer::Pip, py, lock, &["numpy"]);
        let args: Vec<_> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(c.get_program(), "/e/bin/python");
        assert_eq!(&args[..3], ["-m", "pip", "install"]);
        assert_eq!(&args[args.len() - 3..], ["-c", "/e/requirements.lock", "numpy"]);
    }
}

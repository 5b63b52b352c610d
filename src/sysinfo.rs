//! What machine a run ran on: host, OS, CPU model and accelerators with driver
//! versions (from `nvidia-smi` / `rocm-smi` when present), recorded with every run.

use std::process::Command;

/// Host name, or "unknown".
pub fn host() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "unknown".into())
}

/// e.g. "Linux 6.1.0-18-amd64 x86_64".
pub fn os() -> String {
    match nix::sys::utsname::uname() {
        Ok(u) => format!(
            "{} {} {}",
            u.sysname().to_string_lossy(),
            u.release().to_string_lossy(),
            u.machine().to_string_lossy()
        ),
        Err(_) => format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    }
}

/// The CPU model from /proc/cpuinfo (`model name`), or the architecture.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Logical CPU cores available to this process.
pub fn cpu_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Accelerators with driver versions, one line each; empty when no tool reports any.
pub fn accelerators() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(o) = Command::new("nvidia-smi")
        .args(["--query-gpu=index,name,driver_version,memory.total", "--format=csv,noheader"])
        .output()
        && o.status.success()
    {
        out.extend(String::from_utf8_lossy(&o.stdout).lines().map(|l| format!("nvidia {}", l.trim())));
    }
    if let Ok(o) = Command::new("rocm-smi").args(["--showproductname", "--csv"]).output()
        && o.status.success()
    {
        out.extend(String::from_utf8_lossy(&o.stdout).lines().skip(1).map(|l| format!("amd {}", l.trim())));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn facts_are_not_empty() {
        assert!(!super::os().is_empty());
        assert!(!super::cpu_model().is_empty());
        assert!(super::cpu_cores() >= 1);
    }
}

//! Evidence that the kernel's out-of-memory killer acted: its kill counters, read before a
//! request and again when the worker is found dead. A worker killed by SIGKILL that mlport did
//! not send, while a counter rose, was (in all likelihood) the OOM killer's victim; the
//! decision is [`crate::outcome::crash`]'s.
//!
//! Sources, all readable by an ordinary user on Linux ≥ 4.13: `oom_kill` in `/proc/vmstat`
//! (every OOM kill on the machine, memory-cgroup ones included) and, under cgroup v2,
//! `oom_kill` in the `memory.events` of mlport's own cgroup (where its workers run). Elsewhere
//! no counter is read and no kill is attributed to memory.

use std::path::{Path, PathBuf};

/// OOM kills the kernel has counted so far, by source; compare two readings with [`Self::since`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OomKills {
    /// `/proc/vmstat`'s `oom_kill`, when present.
    pub machine: Option<u64>,
    /// `oom_kill` of `memory.events` in mlport's cgroup (v2), when present.
    pub cgroup: Option<u64>,
}

impl OomKills {
    /// The counters now.
    pub fn read() -> OomKills {
        OomKills {
            machine: std::fs::read_to_string("/proc/vmstat").ok().and_then(|t| counter(&t, "oom_kill")),
            cgroup: own_cgroup_events()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .and_then(|t| counter(&t, "oom_kill")),
        }
    }

    /// OOM kills counted since `earlier` (the larger rise of the two sources; 0 when neither
    /// could be read both times).
    pub fn since(&self, earlier: &OomKills) -> u64 {
        let rise = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(now), Some(then)) => now.saturating_sub(then),
            _ => 0,
        };
        rise(self.machine, earlier.machine).max(rise(self.cgroup, earlier.cgroup))
    }
}

/// The value of `name` in a `key value` per line file (`/proc/vmstat`, `memory.events`).
fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

/// `memory.events` of this process's cgroup v2 (`0::/path` in `/proc/self/cgroup`).
fn own_cgroup_events() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let file = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/')).join("memory.events");
    file.is_file().then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_from_the_kernels_files() {
        // As Linux 6.x writes them (excerpts).
        let vmstat = "pgmajfault 1203\noom_kill 4\nnuma_hit 99\n";
        assert_eq!(counter(vmstat, "oom_kill"), Some(4));
        let events = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(counter(events, "oom_kill"), Some(1));
        assert_eq!(counter(events, "oom"), Some(2), "`oom` is not `oom_kill`'s prefix match");
        assert_eq!(counter("pgfault 3\n", "oom_kill"), None);
    }

    #[test]
    fn a_rise_in_either_counter_counts() {
        let then = OomKills { machine: Some(10), cgroup: Some(0) };
        assert_eq!(OomKills { machine: Some(10), cgroup: Some(0) }.since(&then), 0);
        assert_eq!(OomKills { machine: Some(12), cgroup: Some(0) }.since(&then), 2);
        assert_eq!(OomKills { machine: Some(10), cgroup: Some(1) }.since(&then), 1);
        assert_eq!(OomKills { machine: None, cgroup: None }.since(&then), 0, "unreadable: no evidence");
        // This machine's counters read (Linux): the same reading twice shows no kill.
        let now = OomKills::read();
        assert_eq!(now.since(&now), 0);
        if std::path::Path::new("/proc/vmstat").exists() {
            assert!(now.machine.is_some(), "/proc/vmstat has oom_kill on Linux >= 4.13");
        }
    }
}

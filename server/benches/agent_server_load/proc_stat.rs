//! Memory and CPU time of a process and its children, from Linux's
//! `/proc`. A server is counted with its descendants, so one that works in
//! child processes is not measured light.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::Error;

/// The kernel's clock ticks per second in `/proc/*/stat` (`USER_HZ`): 100
/// on every architecture Linux's ABI fixes it for that Rust targets.
const TICKS_PER_S: f64 = 100.0;

/// `pid` and every process under it.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut at = 0;
    while at < all.len() {
        let tasks = format!("/proc/{}/task", all[at]);
        for task in std::fs::read_dir(tasks).into_iter().flatten().flatten() {
            let children = std::fs::read_to_string(task.path().join("children"));
            let ids = children.unwrap_or_default();
            all.extend(ids.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
        at += 1;
    }
    all
}

/// A `kB` line of `/proc/{pid}/status`, in bytes.
fn status_kb(pid: u32, key: &str) -> Result<u64, Error> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with(key));
    let kb = line.and_then(|l| l.split_whitespace().nth(1));
    Ok(kb
        .ok_or_else(|| format!("no {key} for {pid}"))?
        .parse::<u64>()?
        * 1024)
}

/// Resident memory of `pid` and its descendants, in bytes.
pub fn tree_rss(pid: u32) -> Result<u64, Error> {
    let mut sum = 0;
    for p in tree(pid) {
        // A child that ended between the listing and the read is gone.
        sum += status_kb(p, "VmRSS:").unwrap_or(0);
    }
    if sum == 0 {
        return Err(format!("process {pid} is gone").into());
    }
    Ok(sum)
}

/// The most resident memory `pid` itself ever had (`VmHWM`), in bytes.
pub fn hwm(pid: u32) -> Result<u64, Error> {
    status_kb(pid, "VmHWM:")
}

/// User and system CPU seconds of a `/proc/.../stat` file, with those of
/// its waited-for children.
fn stat_cpu(path: &str) -> Result<f64, Error> {
    let stat = std::fs::read_to_string(path)?;
    // Fields after the command name, which may hold spaces: field 14
    // (utime) is the 12th of them.
    let rest = &stat[stat.rfind(')').ok_or("bad stat")? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let mut ticks = 0u64;
    for at in 11..15 {
        ticks += fields.get(at).ok_or("short stat")?.parse::<u64>()?;
    }
    Ok(ticks as f64 / TICKS_PER_S)
}

/// CPU seconds this client has used.
pub fn self_cpu() -> Result<f64, Error> {
    stat_cpu("/proc/self/stat")
}

/// CPU seconds `pid` and its descendants have used.
pub fn tree_cpu(pid: u32) -> Result<f64, Error> {
    Ok(tree(pid)
        .into_iter()
        .filter_map(|p| stat_cpu(&format!("/proc/{p}/stat")).ok())
        .sum())
}

/// Seconds `pid`'s and its descendants' threads have run on a CPU, and
/// waited for one while runnable (`/proc/*/task/*/schedstat`): on a shared
/// machine, the wait says how much the others held the server back.
pub fn tree_sched(pid: u32) -> (f64, f64) {
    let (mut run, mut wait) = (0u64, 0u64);
    for p in tree(pid) {
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"));
        for task in tasks.into_iter().flatten().flatten() {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            let mut ns = stat
                .split_whitespace()
                .map(|n| n.parse::<u64>().unwrap_or(0));
            run += ns.next().unwrap_or(0);
            wait += ns.next().unwrap_or(0);
        }
    }
    (run as f64 / 1e9, wait as f64 / 1e9)
}

/// Samples a server's resident memory every 50 ms, keeping the peak.
pub struct Sampler {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `pid` and its descendants.
    pub fn start(pid: u32) -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (Arc::clone(&peak), Arc::clone(&stop));
        let task = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(tree_rss(pid).unwrap_or(0), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        Sampler { peak, stop, task }
    }

    /// The peak resident memory seen, in bytes.
    pub async fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        self.peak.load(Ordering::Relaxed)
    }
}

//! A throwaway PostgreSQL server for the tests, started once per test
//! binary from the server binaries of Debian's `postgresql` package (or
//! `AGENT_STATE_PG_URL`, to use a server of your own).
//!
//! It listens on a Unix socket in its own directory only, so it never
//! clashes with another server, and a watchdog process stops it and removes
//! the directory when the test binary exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The connection string of the test server, starting it on first use.
pub fn url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| std::env::var("AGENT_STATE_PG_URL").unwrap_or_else(|_| start()))
}

fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    // The newest major version, by its number.
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().unwrap_or_else(|| {
        panic!(
            "the PostgreSQL tests need the server binaries: install Debian's `postgresql` \
             package (.ci/run does), or set AGENT_STATE_PG_URL to a server's connection string"
        )
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs a server binary; as root, as the `postgres` user, since the server
/// refuses to run as root.
fn run(root: bool, program: &Path, args: &[&str]) {
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = cmd
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("could not run {}: {e}", program.display());
        });
    assert!(
        out.status.success(),
        "{} {args:?} failed:\n{}\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn start() -> String {
    let bin = bin_dir();
    let root = is_root();
    let dir = std::env::temp_dir().join(format!("agent-state-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    if root {
        let ok = Command::new("chown")
            .args(["postgres:postgres"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not hand {} to the postgres user", dir.display());
    }
    let data = dir.join("data");
    let data_s = data.to_str().unwrap();
    let dir_s = dir.to_str().unwrap();
    run(
        root,
        &bin.join("initdb"),
        &[
            "-D",
            data_s,
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        ],
    );
    let options = format!("-c listen_addresses='' -k {dir_s} -p 5432");
    let log = dir.join("server.log");
    run(
        root,
        &bin.join("pg_ctl"),
        &[
            "-D",
            data_s,
            "-o",
            &options,
            "-l",
            log.to_str().unwrap(),
            "-w",
            "start",
        ],
    );
    // Stop the server and remove its files once this test binary is gone.
    let pg_ctl = bin.join("pg_ctl");
    let stop = format!(
        "{}{} -D {data_s} -m immediate stop",
        if root { "runuser -u postgres -- " } else { "" },
        pg_ctl.display()
    );
    let watchdog = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1; rm -rf {dir_s}",
        pid = std::process::id()
    );
    // Never waited for, on purpose: it outlives this process, which is
    // what it waits for; init adopts and reaps it.
    #[allow(clippy::zombie_processes)]
    Command::new("sh")
        .args(["-c", &watchdog])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the watchdog starts");
    format!("host={dir_s} port=5432 user=postgres dbname=postgres")
}

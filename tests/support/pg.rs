//! A throwaway PostgreSQL server for the tests, started once per test
//! binary from the server binaries found on this machine (Linux or macOS:
//! see [`bin_dir`]), or `AGENT_STATE_PG_URL`, to use a server of your own.
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

/// The directory of the server binaries (`initdb` and `pg_ctl`): the first
/// that has both among `PATH`, `pg_config --bindir`, Debian's
/// `/usr/lib/postgresql/<major>/bin`, the PostgreSQL project's RPMs'
/// `/usr/pgsql-<major>/bin`, Homebrew's `opt/postgresql@<major>/bin` (Apple
/// silicon and Intel prefixes) and Postgres.app, newest major first.
fn bin_dir() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut candidates: Vec<PathBuf> = std::env::split_paths(&path).collect();
    candidates.extend(pg_config_bindir());
    candidates.extend(by_major("/usr/lib/postgresql", ""));
    candidates.extend(by_major("/usr", "pgsql-"));
    candidates.extend(by_major("/opt/homebrew/opt", "postgresql"));
    candidates.extend(by_major("/usr/local/opt", "postgresql"));
    candidates.extend(by_major("/Applications/Postgres.app/Contents/Versions", ""));
    candidates
        .into_iter()
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .unwrap_or_else(|| panic!("{NOT_FOUND}"))
}

/// What to do when no server binaries are found, in one line.
const NOT_FOUND: &str = "the PostgreSQL tests need the server binaries initdb and pg_ctl \
    (not found on PATH, through pg_config, in /usr/lib/postgresql/*/bin or Homebrew's \
    opt/postgresql*/bin): install PostgreSQL (Debian/Ubuntu: apt-get install postgresql; \
    Fedora: dnf install postgresql-server; macOS: brew install postgresql@17), or set \
    AGENT_STATE_PG_URL to a running server's connection string";

/// What `pg_config --bindir` says, when `pg_config` is on `PATH`.
fn pg_config_bindir() -> Option<PathBuf> {
    let out = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !dir.trim().is_empty()).then(|| PathBuf::from(dir.trim()))
}

/// The `bin` directories of `parent/<prefix><major>` (also `<prefix>@<major>`
/// and `<prefix>-<major>`), newest major first; an entry without a number
/// comes last.
fn by_major(parent: &str, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let major = major_of(name.strip_prefix(prefix)?);
            Some((major, entry.path().join("bin")))
        })
        .collect();
    found.sort_by_key(|(major, _)| std::cmp::Reverse(*major));
    found.into_iter().map(|(_, dir)| dir).collect()
}

/// `16` for `16`, `@16`, `-16` or `@9.6` → `9`; `0` for no number.
fn major_of(rest: &str) -> u32 {
    rest.trim_start_matches(['@', '-'])
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or(0)
}

#[test]
fn majors_sort_newest_first_whatever_the_spelling() {
    assert_eq!(major_of("16"), 16);
    assert_eq!(major_of("@17"), 17);
    assert_eq!(major_of("@9.6"), 9);
    assert_eq!(major_of("-15"), 15);
    assert_eq!(major_of(""), 0);
    assert_eq!(major_of("-common"), 0);
    assert!(!NOT_FOUND.contains('\n'), "the error is one line");
    let dir = std::env::temp_dir().join(format!("agent-state-pg-majors-{}", std::process::id()));
    for name in [
        "postgresql@9.6",
        "postgresql@17",
        "postgresql",
        "postgresql@16",
    ] {
        std::fs::create_dir_all(dir.join(name)).unwrap();
    }
    let order = by_major(dir.to_str().unwrap(), "postgresql");
    let names: Vec<_> = order
        .iter()
        .map(|p| p.parent().unwrap().file_name().unwrap().to_str().unwrap())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        names,
        [
            "postgresql@17",
            "postgresql@16",
            "postgresql@9.6",
            "postgresql"
        ]
    );
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
    // Never waited for on purpose: it must outlive this process.
    #[allow(clippy::zombie_processes)]
    let _watchdog = Command::new("sh")
        .args(["-c", &watchdog])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the watchdog starts");
    format!("host={dir_s} port=5432 user=postgres dbname=postgres")
}

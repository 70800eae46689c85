//! Server processes: the `serve` example, built for the test binary that
//! starts them, each on a free port of the test database, stopped by
//! `kill -9` or SIGTERM as a deployment's would be.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::Client;

use super::db::Db;

/// The `serve` example, built once for this binary (with `postgres`).
fn binary() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // target/<profile>/deps/fleet-..: the example goes beside deps.
        let exe = std::env::current_exe().expect("test binary path");
        let profile = exe.parent().and_then(|d| d.parent()).expect("profile dir");
        let target = profile.parent().expect("target dir");
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "agent-state-server",
                "--features",
                "postgres",
            ])
            .args(["--example", "serve"])
            .env("CARGO_TARGET_DIR", target)
            .status()
            .expect("run cargo");
        assert!(status.success(), "building the serve example failed");
        profile.join("examples").join("serve")
    })
}

/// A server process on the test database.
pub struct Node {
    child: Child,
    pub base: String,
}

impl Node {
    /// Starts one (`args`: the queue's settings), ready once `/ok`
    /// answers.
    pub async fn start(db: &Db, args: &[&str]) -> Node {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = std::env::temp_dir().join(format!("agent-state-fleet-{port}.log"));
        let log = std::fs::File::create(&log).expect("log file");
        let child = Command::new(binary())
            .args(["--port", &port.to_string(), "--postgres", &db.url()])
            .args(args)
            // Its log lines (on stdout) and anything it prints on stderr.
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start the serve example");
        let node = Node {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let c = Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while c.get(format!("{}/ok", node.base)).send().await.is_err() {
            assert!(Instant::now() < deadline, "server on {port} never came up");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        node
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }

    /// `kill -TERM`, then its exit status once it exited (within `within`).
    pub async fn terminate(&mut self, within: Duration) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.expect("kill").success());
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

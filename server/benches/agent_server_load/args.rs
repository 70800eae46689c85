//! The `run` command's flags.

use std::path::PathBuf;

use serde_json::Value;

use crate::Error;

/// What to drive and how hard.
pub struct Args {
    /// The server's base URL.
    pub url: String,
    /// The server's process id, whose memory and CPU time are read.
    pub pid: u32,
    /// A database server's process id, when the server keeps its state in
    /// one (PostgreSQL): its memory and CPU are reported apart.
    pub db_pid: Option<u32>,
    /// The name the table gives this server.
    pub label: String,
    /// Where the JSON report goes.
    pub out: PathBuf,
    /// The assistant (or graph name) each run is of.
    pub graph: String,
    /// Each run's input.
    pub input: Value,
    /// Fields the last `values` event must hold, as text.
    pub expect: Vec<(String, String)>,
    /// Runs before anything is timed (at least one: it sets the events
    /// every later run must stream).
    pub warmup: usize,
    /// Runs timed to their first event.
    pub samples: usize,
    /// Concurrent client counts, each measured in turn.
    pub clients: Vec<usize>,
    /// How long each client count runs.
    pub seconds: f64,
}

impl Args {
    /// Reads `--flag value` pairs.
    pub fn parse(argv: &[String]) -> Result<Self, Error> {
        let mut args = Args {
            url: String::new(),
            pid: 0,
            db_pid: None,
            label: String::new(),
            out: PathBuf::new(),
            graph: "debate".to_owned(),
            input: serde_json::json!({"topic": "Should AI be regulated?", "maxRounds": 2}),
            expect: Vec::new(),
            warmup: 3,
            samples: 20,
            clients: vec![1, 16],
            seconds: 10.0,
        };
        for pair in argv.chunks(2) {
            let [flag, value] = pair else {
                return Err(format!("{} needs a value", pair[0]).into());
            };
            args.set(flag, value)?;
        }
        if args.url.is_empty() || args.pid == 0 || args.out.as_os_str().is_empty() {
            return Err("--url, --pid and --out are required".into());
        }
        args.warmup = args.warmup.max(1);
        Ok(args)
    }

    fn set(&mut self, flag: &str, value: &str) -> Result<(), Error> {
        match flag {
            "--url" => self.url = value.trim_end_matches('/').to_owned(),
            "--pid" => self.pid = value.parse()?,
            "--db-pid" => self.db_pid = Some(value.parse()?),
            "--label" => self.label = value.to_owned(),
            "--out" => self.out = value.into(),
            "--graph" => self.graph = value.to_owned(),
            "--input" => self.input = serde_json::from_str(value)?,
            "--expect" => {
                let (key, want) = value.split_once('=').ok_or("--expect KEY=VALUE")?;
                self.expect.push((key.to_owned(), want.to_owned()));
            }
            "--warmup" => self.warmup = value.parse()?,
            "--samples" => self.samples = value.parse()?,
            "--clients" => {
                let counts: Result<Vec<usize>, _> = value.split(',').map(str::parse).collect();
                self.clients = counts?;
            }
            "--seconds" => self.seconds = value.parse()?,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
        Ok(())
    }
}

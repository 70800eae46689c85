//! Human approval across two processes: a writer drafts a post, a review
//! node pauses the run with the draft (`NodeContext::interrupt`), the
//! process exits; later a second process reads the pause from the SQLite
//! file, approves (or rejects) it, and the run finishes.
//!
//! ```sh
//! cargo run --example approval -- start --db /tmp/approval.db
//! cargo run --example approval -- approve --db /tmp/approval.db     # or: reject
//! ```
//!
//! `--db PATH` defaults to `approval.db` in the current directory,
//! `--thread ID` to `post-1`.

mod graph;

use agent_state::checkpoint::block_on;
use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::graph::{Input, Resume};
use graph::{graph, PostUpdate, Verdict};

struct Options {
    command: String,
    db: String,
    thread: String,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let command = args
        .next()
        .ok_or("usage: approval start|approve|reject [--db PATH] [--thread ID]")?;
    let (mut db, mut thread) = ("approval.db".to_owned(), "post-1".to_owned());
    while let Some(flag) = args.next() {
        let slot = match flag.as_str() {
            "--db" => &mut db,
            "--thread" => &mut thread,
            other => {
                return Err(format!(
                    "unknown option `{other}`; expected --db or --thread"
                ))
            }
        };
        *slot = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
    }
    Ok(Options {
        command,
        db,
        thread,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opts = options()?;
    let saver = SqliteCheckpointer::open(&opts.db)?;
    let graph = graph()?;
    match opts.command.as_str() {
        "start" => {
            let input = Input::Update(PostUpdate::new().topic("Rust async".to_owned()));
            let out = block_on(graph.run(input).on_thread(&saver, &opts.thread))?;
            let pause = out.interrupts.first().ok_or("the run did not pause")?;
            println!(
                "Paused in `{}` (interrupt {}): {}",
                pause.node, pause.id, pause.value
            );
            println!("The process exits now; run `approval approve` (or `reject`) to go on.");
        }
        "approve" | "reject" => {
            // Another process: what is the thread waiting for?
            let state = block_on(graph.get_state(&saver, &opts.thread))?;
            let pause = state.interrupts.first().ok_or("the thread is not paused")?;
            println!(
                "Thread `{}` waits in `{}`: {}",
                opts.thread, pause.node, pause.value
            );
            let approve = opts.command == "approve";
            let verdict = Verdict {
                approve,
                comment: if approve { "Looks good." } else { "Not yet." }.to_owned(),
            };
            let resume = Resume::new().answer(&pause.id, verdict);
            let out = block_on(
                graph
                    .run(Input::ResumeWith(resume))
                    .on_thread(&saver, &opts.thread),
            )?;
            println!("Draft: {}", out.state.draft);
            println!("Status: {} ({})", out.state.status, out.state.comment);
        }
        other => return Err(format!("unknown command `{other}`: start, approve or reject").into()),
    }
    Ok(())
}

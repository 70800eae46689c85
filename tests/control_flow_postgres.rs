//! The control-flow scenarios of `support/flow.rs` on PostgreSQL (a real
//! server, see `support/pg.rs`), two connections standing for two
//! processes.
#![cfg(feature = "postgres")]

mod support;

use agent_state::checkpoint::postgres::PostgresCheckpointer;
use support::{flow, pg};

async fn connect() -> PostgresCheckpointer {
    PostgresCheckpointer::connect(pg::url()).await.unwrap()
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let (a, b) = (connect().await, connect().await);
            let prefix = concat!("flow-", stringify!($name));
            flow::$name(&a, &b, prefix).await.unwrap();
        }
    )*};
}

scenarios!(
    interrupt_pauses_and_resumes_elsewhere,
    resume_errors_leave_the_pause,
    interrupts_in_one_node_match_by_order,
    parallel_interrupts_keep_finished_nodes,
    cancelling_mid_step_keeps_finished_tasks,
    send_fans_out_and_resumes,
    command_sends_are_stored,
    joins_wait_across_steps_and_resumes,
    breakpoints_pause_and_resume,
    input_to_a_stopped_thread_carries_on,
    editing_a_thread,
    unknown_writers_are_errors,
    subgraph_pauses_under_a_namespace,
    mapped_subgraph_runs_under_a_namespace,
    untracked_fields_are_never_stored,
);

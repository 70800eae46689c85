//! `GET /assistants/{id}/graph` with and without `xray`, compared with
//! what the official server answered for the same graphs
//! (`fixtures/official_graph_xray.json`), over HTTP on the real server.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::Value;
use support::http::get;
use support::{fresh_db, start};

const RECORDED: &str = include_str!("fixtures/official_graph_xray.json");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphs_are_drawn_as_the_official_server_draws_them_at_every_xray_depth() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let recorded: Value = serde_json::from_str(RECORDED).expect("fixture");
    let mut compared = 0;
    for (graph, answers) in recorded.as_object().expect("graphs") {
        for (query, official) in answers.as_object().expect("queries") {
            let (status, ours) = get(&c, format!("{b}/assistants/{graph}/graph{query}")).await;
            let at = format!("{graph}{query}");
            assert_eq!(status.as_u16(), official["status"], "{at}: {ours}");
            if status == StatusCode::OK {
                assert_eq!(ours, official["body"], "{at}");
            } else {
                // A refusal names the parameter and the value.
                let detail = ours["detail"].as_str().expect("a detail");
                let value = query.trim_start_matches("?xray=");
                assert!(
                    detail.starts_with("xray:") && detail.contains(&format!("`{value}`")),
                    "{at}: {detail}"
                );
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 18, "every recorded answer compared");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xray_spellings_and_refusals() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let url = |q: &str| format!("{b}/assistants/deep/graph{q}");
    let (_, plain) = get(&c, url("")).await;
    let (_, all) = get(&c, url("?xray=true")).await;
    // The official server reads Python's spellings too, and an empty value
    // as none.
    assert_eq!(
        get(&c, url("?xray=")).await,
        (StatusCode::OK, plain.clone())
    );
    assert_eq!(get(&c, url("?xray=False")).await, (StatusCode::OK, plain));
    assert_eq!(
        get(&c, url("?xray=True")).await,
        (StatusCode::OK, all.clone())
    );
    // A depth past the graph's, even past what a number holds, is all.
    assert_eq!(get(&c, url("?xray=7")).await, (StatusCode::OK, all.clone()));
    let huge = "?xray=99999999999999999999999";
    assert_eq!(get(&c, url(huge)).await, (StatusCode::OK, all));
    // A number as Python's `int()` reads it.
    for spelled in ["%2B2", "%201%20", "0_2", "01"] {
        let (status, _) = get(&c, url(&format!("?xray={spelled}"))).await;
        assert_eq!(status, StatusCode::OK, "{spelled}");
    }
    for bad in ["yes", "1e3", "-0", "00", "1__0", "_1", "-", "%20"] {
        let (status, answer) = get(&c, url(&format!("?xray={bad}"))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {answer}");
        assert!(answer["detail"].as_str().unwrap().contains("xray"));
    }
    // An unknown assistant is a 404 whatever `xray` says, as the
    // official server answers.
    let unknown = "00000000-0000-0000-0000-000000000000";
    let (status, _) = get(&c, format!("{b}/assistants/{unknown}/graph?xray=abc")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

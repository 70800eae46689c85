//! The side-by-side table: the first report is the reference, each other
//! one is shown beside it with its ratio to it.

use serde_json::Value;

use crate::Error;

/// Which way a figure is better, and the ratio's words.
#[derive(Clone, Copy)]
enum Better {
    /// Smaller is better: the ratio is reference ÷ this, "N× sooner".
    Lower(&'static str),
    /// Larger is better: the ratio is this ÷ reference, "N×".
    Higher,
    /// Shown, not compared.
    Neither,
}

/// A row: its title, the goal for the ratio (if any), how to read it.
struct Row {
    title: &'static str,
    goal: &'static str,
    better: Better,
    value: fn(&Value) -> Option<f64>,
}

fn rate(report: &Value, clients: u64) -> Option<f64> {
    let all = report["throughput"].as_array()?;
    let one = all
        .iter()
        .find(|t| t["clients"].as_u64() == Some(clients))?;
    one["runs_per_s"].as_f64()
}

fn at_most_clients(report: &Value, key: &str) -> Option<f64> {
    let all = report["throughput"].as_array()?;
    let most = all.iter().max_by_key(|t| t["clients"].as_u64())?;
    most[key].as_f64()
}

const ROWS: &[Row] = &[
    Row {
        title: "first event, median ms",
        goal: "≥ 100× sooner",
        better: Better::Lower("sooner"),
        value: |r| r["first_event_ms"]["median"].as_f64(),
    },
    Row {
        title: "first event, 90th percentile ms",
        goal: "",
        better: Better::Lower("sooner"),
        value: |r| r["first_event_ms"]["p90"].as_f64(),
    },
    Row {
        title: "runs/s, 1 client",
        goal: "",
        better: Better::Higher,
        value: |r| rate(r, 1),
    },
    Row {
        title: "runs/s, most clients (`--clients`)",
        goal: "≥ 50× at 16",
        better: Better::Higher,
        value: |r| at_most_clients(r, "runs_per_s"),
    },
    Row {
        title: "server CPU ms per run (most clients)",
        goal: "",
        better: Better::Lower("less"),
        value: |r| at_most_clients(r, "server_cpu_ms_per_run"),
    },
    Row {
        title: "its database server's CPU ms per run (most clients)",
        goal: "",
        better: Better::Neither,
        value: |r| at_most_clients(r, "db_cpu_ms_per_run"),
    },
    Row {
        title: "server's time waiting for a CPU ÷ on one (most clients)",
        goal: "",
        better: Better::Neither,
        value: |r| at_most_clients(r, "server_wait_per_cpu"),
    },
    Row {
        title: "resident memory, peak MiB (VmRSS)",
        goal: "≤ 1/5",
        better: Better::Lower("less"),
        value: |r| r["rss_peak_mib"].as_f64(),
    },
    Row {
        title: "its database server's resident memory, peak MiB",
        goal: "",
        better: Better::Neither,
        value: |r| r["db_rss_peak_mib"].as_f64(),
    },
    Row {
        title: "resident memory, high-water mark MiB (VmHWM)",
        goal: "",
        better: Better::Lower("less"),
        value: |r| r["hwm_mib"].as_f64(),
    },
    Row {
        title: "resident memory, after warm-up MiB",
        goal: "",
        better: Better::Lower("less"),
        value: |r| r["rss_idle_mib"].as_f64(),
    },
    Row {
        title: "load client's CPU share (most clients)",
        goal: "",
        better: Better::Neither,
        value: |r| at_most_clients(r, "client_cpu_share"),
    },
];

fn number(x: f64) -> String {
    match x {
        x if x >= 100.0 => format!("{x:.0}"),
        x if x >= 10.0 => format!("{x:.1}"),
        x => format!("{x:.2}"),
    }
}

fn ratio(better: Better, reference: f64, this: f64) -> String {
    match better {
        Better::Lower(word) if this > 0.0 => format!("{}× {word}", number(reference / this)),
        Better::Higher if reference > 0.0 => format!("{}×", number(this / reference)),
        _ => String::new(),
    }
}

fn cells(row: &Row, reports: &[Value]) -> String {
    let reference = (row.value)(&reports[0]);
    let mut line = format!("| {} | {} |", row.title, row.goal);
    line += &format!(" {} |", reference.map(number).unwrap_or_default());
    for report in &reports[1..] {
        let this = (row.value)(report);
        let r = match (reference, this) {
            (Some(a), Some(b)) => ratio(row.better, a, b),
            _ => String::new(),
        };
        line += &format!(" {} | {r} |", this.map(number).unwrap_or_default());
    }
    line
}

fn events(report: &Value) -> String {
    let counts = report["events_per_run"].as_object();
    let each = counts
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k} {v}"));
    each.collect::<Vec<_>>().join(", ")
}

/// Prints the table of the reports in `files`, the first the reference.
pub fn print(files: &[String]) -> Result<(), Error> {
    let mut reports: Vec<Value> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
        let report = serde_json::from_str(&text).map_err(|e| format!("{file}: {e}"))?;
        reports.push(report);
    }
    if reports.is_empty() {
        return Err("table: no report".into());
    }
    let label = |r: &Value| r["label"].as_str().unwrap_or("?").to_owned();
    let mut head = format!("| | goal | {} |", label(&reports[0]));
    let mut rule = "| --- | --- | --- |".to_owned();
    for report in &reports[1..] {
        head += &format!(" {} | ratio |", label(report));
        rule += " --- | --- |";
    }
    println!("{head}\n{rule}");
    // A row no report has (a database server's, with none) is left out.
    let shown = ROWS
        .iter()
        .filter(|row| reports.iter().any(|r| (row.value)(r).is_some()));
    for row in shown {
        println!("{}", cells(row, &reports));
    }
    let mut line = format!("| events per run | | {} |", events(&reports[0]));
    for report in &reports[1..] {
        line += &format!(" {} | |", events(report));
    }
    println!("{line}");
    Ok(())
}

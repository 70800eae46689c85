//! Ids and timestamps as the official server writes them.

use std::time::{SystemTime, UNIX_EPOCH};

use uuid::Uuid;

/// The namespace the official server derives an assistant's id from its
/// graph's name in (UUID v5), so a client that stored an id keeps it
/// across servers and restarts.
const GRAPH_NAMESPACE: Uuid = Uuid::from_u128(0x6ba7b821_9dad_11d1_80b4_00c04fd430c8);

/// The id of the assistant serving graph `name`.
pub(crate) fn assistant_id(name: &str) -> String {
    Uuid::new_v5(&GRAPH_NAMESPACE, name.as_bytes()).to_string()
}

/// A new id for a thread or a run: time-ordered, as the official server's.
pub(crate) fn new_id() -> String {
    Uuid::now_v7().to_string()
}

/// Whether `id` is a UUID (a thread, run or assistant id must be one).
pub(crate) fn is_uuid(id: &str) -> bool {
    Uuid::parse_str(id).is_ok()
}

/// Now, as the official server writes times: RFC 3339 in UTC with
/// microseconds and `+00:00`.
pub(crate) fn now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_time(since.as_secs(), since.subsec_micros())
}

/// A time in milliseconds since the epoch, written as [`now`] writes one.
pub(crate) fn from_millis(ms: u64) -> String {
    format_time(ms / 1000, (ms % 1000) as u32 * 1000)
}

fn format_time(secs: u64, micros: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (the
/// well-known era-based conversion).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_ids_match_the_official_server() {
        // What langgraph-api 0.16.7 answered for a graph named `approval`.
        assert_eq!(
            assistant_id("approval"),
            "e234584d-b7bf-527f-9d06-ba77f8f5172d"
        );
    }

    #[test]
    fn times_are_rfc3339_with_micros() {
        assert_eq!(format_time(0, 0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(
            format_time(1_795_643_499, 514_946),
            "2026-11-25T21:51:39.514946+00:00"
        );
        assert_eq!(
            from_millis(951_782_400_123),
            "2000-02-29T00:00:00.123000+00:00"
        );
    }
}

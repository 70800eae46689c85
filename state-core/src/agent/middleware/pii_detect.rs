//! What [`Pii`](super::Pii) finds and what it writes instead: LangChain's
//! built-in detectors (email, credit card, IP, MAC address, URL) with its
//! regular expressions and checks, and its four strategies, to the letter
//! (`_redaction.py`).

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use regex::Regex;
use sha2::{Digest, Sha256};

/// One piece of PII in a text: its type, the text matched and where it is
/// (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiiMatch {
    /// The PII type (`email`, or a custom type's name).
    pub kind: String,
    /// The matched text.
    pub value: String,
    /// Where it starts, in bytes.
    pub start: usize,
    /// Where it ends, in bytes.
    pub end: usize,
}

/// Finds PII in a text: a built-in detector, a pattern, or a function.
pub type Detector = Arc<dyn Fn(&str) -> Vec<PiiMatch> + Send + Sync>;

/// What to do with the PII found: LangChain's `strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PiiStrategy {
    /// Stop the run with an error naming the type (`PIIDetectionError`).
    Block,
    /// `[REDACTED_EMAIL]` (the default).
    #[default]
    Redact,
    /// Partly hidden: `user@****.com`, `****-****-****-1111`,
    /// `*.*.*.1`, `**:**:**:**:**:5E`, `[MASKED_URL]`, `****` and the last
    /// four characters for custom types.
    Mask,
    /// `<email_hash:1a2b3c4d>`: the first 8 hex digits of the value's
    /// SHA-256, the same for the same value.
    Hash,
}

/// The built-in PII types, in LangChain's order.
pub const BUILTIN_PII: [&str; 5] = ["email", "credit_card", "ip", "mac_address", "url"];

/// The built-in detector of `kind`, if there is one.
pub fn builtin_detector(kind: &str) -> Option<Detector> {
    let detect: fn(&str) -> Vec<PiiMatch> = match kind {
        "email" => detect_email,
        "credit_card" => detect_credit_card,
        "ip" => detect_ip,
        "mac_address" => detect_mac_address,
        "url" => detect_url,
        _ => return None,
    };
    Some(Arc::new(detect))
}

/// A detector of `kind` for every match of `pattern`.
pub fn pattern_detector(kind: &str, pattern: Regex) -> Detector {
    let kind = kind.to_owned();
    Arc::new(move |text: &str| matches_of(&pattern, &kind, text).collect())
}

fn matches_of<'a>(
    pattern: &'a Regex,
    kind: &'a str,
    text: &'a str,
) -> impl Iterator<Item = PiiMatch> + 'a {
    pattern.find_iter(text).map(move |m| PiiMatch {
        kind: kind.to_owned(),
        value: m.as_str().to_owned(),
        start: m.start(),
        end: m.end(),
    })
}

/// One regular expression, compiled once.
fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a built-in PII pattern compiles"))
}

/// Email addresses (LangChain's pattern).
pub fn detect_email(text: &str) -> Vec<PiiMatch> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(&RE, r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,}\b");
    matches_of(re, "email", text).collect()
}

/// Card numbers: four groups of four digits, spaces or dashes between
/// them or not, that pass the Luhn check.
pub fn detect_credit_card(text: &str) -> Vec<PiiMatch> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(&RE, r"\b\d{4}[\s-]?\d{4}[\s-]?\d{4}[\s-]?\d{4}\b");
    matches_of(re, "credit_card", text)
        .filter(|m| passes_luhn(&m.value))
        .collect()
}

/// Whether a card number's digits (13 to 19 of them) pass the Luhn check.
fn passes_luhn(number: &str) -> bool {
    let digits: Vec<u32> = number.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(index, &digit)| match (index % 2, digit * 2) {
            (1, doubled) if doubled > 9 => doubled - 9,
            (1, doubled) => doubled,
            _ => digit,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// IPv4 addresses that parse (no octet over 255, no leading zeros).
pub fn detect_ip(text: &str) -> Vec<PiiMatch> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(&RE, r"\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b");
    matches_of(re, "ip", text)
        .filter(|m| m.value.parse::<IpAddr>().is_ok())
        .collect()
}

/// MAC addresses, colon- or dash-separated.
pub fn detect_mac_address(text: &str) -> Vec<PiiMatch> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(&RE, r"\b([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\b");
    matches_of(re, "mac_address", text).collect()
}

/// URLs: `http(s)://` ones with a host, then bare ones that do not overlap
/// them and have a path or start with `www.`.
pub fn detect_url(text: &str) -> Vec<PiiMatch> {
    static SCHEME: OnceLock<Regex> = OnceLock::new();
    static BARE: OnceLock<Regex> = OnceLock::new();
    let scheme = regex(&SCHEME, r#"https?://[^\s<>"{}|\\^`\[\]]+"#);
    let bare = regex(
        &BARE,
        r"\b(?:www\.)?[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+(?:/[^\s]*)?",
    );
    let mut found: Vec<PiiMatch> = matches_of(scheme, "url", text)
        .filter(|m| !host(&m.value[m.value.find("//").map_or(0, |i| i + 2)..]).is_empty())
        .collect();
    for m in matches_of(bare, "url", text) {
        let overlaps = found.iter().any(|f| {
            (f.start <= m.start && m.start < f.end) || (f.start < m.end && m.end <= f.end)
        });
        let shaped = m.value.contains('/') || m.value.starts_with("www.");
        if !overlaps && shaped && host(&m.value).contains('.') {
            found.push(m);
        }
    }
    found
}

/// The host part of a URL after its `//` (what Python's `urlparse` calls
/// the netloc): up to the first `/`, `?` or `#`.
fn host(rest: &str) -> &str {
    rest.split(['/', '?', '#']).next().unwrap_or_default()
}

/// `text` with every match replaced by `replace(match)`, from the last to
/// the first (as LangChain replaces them).
fn replace_all(text: &str, matches: &[PiiMatch], replace: impl Fn(&PiiMatch) -> String) -> String {
    let mut ordered: Vec<&PiiMatch> = matches.iter().collect();
    ordered.sort_by_key(|m| std::cmp::Reverse(m.start));
    let mut out = text.to_owned();
    for m in ordered {
        if m.start <= m.end
            && m.end <= out.len()
            && out.is_char_boundary(m.start)
            && out.is_char_boundary(m.end)
        {
            out.replace_range(m.start..m.end, &replace(m));
        }
    }
    out
}

/// The text with `matches` redacted, masked or hashed (`None` for
/// [`PiiStrategy::Block`], which has no text to give).
pub fn apply_strategy(text: &str, matches: &[PiiMatch], strategy: PiiStrategy) -> Option<String> {
    if matches.is_empty() {
        return Some(text.to_owned());
    }
    Some(match strategy {
        PiiStrategy::Block => return None,
        PiiStrategy::Redact => replace_all(text, matches, |m| {
            format!("[REDACTED_{}]", m.kind.to_uppercase())
        }),
        PiiStrategy::Mask => replace_all(text, matches, mask),
        PiiStrategy::Hash => replace_all(text, matches, |m| {
            let digest = Sha256::digest(m.value.as_bytes());
            let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
            format!("<{}_hash:{hex}>", m.kind)
        }),
    })
}

/// The last `n` characters of `value`.
fn last_chars(value: &str, n: usize) -> &str {
    let skip = value.chars().count().saturating_sub(n);
    value
        .char_indices()
        .nth(skip)
        .map_or("", |(i, _)| &value[i..])
}

/// LangChain's mask of one match, by its type.
fn mask(m: &PiiMatch) -> String {
    let value = m.value.as_str();
    match m.kind.as_str() {
        "email" => match value.split('@').collect::<Vec<_>>().as_slice() {
            [user, domain] => match domain.rsplit_once('.') {
                Some((_, tld)) => format!("{user}@****.{tld}"),
                None => format!("{user}@****"),
            },
            _ => "****".to_owned(),
        },
        "credit_card" => {
            let digits: String = value.chars().filter(char::is_ascii_digit).collect();
            let last = last_chars(&digits, 4);
            match [('-', "-"), (' ', " ")]
                .iter()
                .find(|(c, _)| value.contains(*c))
            {
                Some((_, sep)) => format!("****{sep}****{sep}****{sep}{last}"),
                None => format!("************{last}"),
            }
        }
        "ip" => match value.split('.').collect::<Vec<_>>().as_slice() {
            [_, _, _, last] => format!("*.*.*.{last}"),
            _ => "****".to_owned(),
        },
        "mac_address" => {
            let sep = if value.contains(':') { ":" } else { "-" };
            format!(
                "**{sep}**{sep}**{sep}**{sep}**{sep}{}",
                last_chars(value, 2)
            )
        }
        "url" => "[MASKED_URL]".to_owned(),
        _ if value.chars().count() > 4 => format!("****{}", last_chars(value, 4)),
        _ => "****".to_owned(),
    }
}

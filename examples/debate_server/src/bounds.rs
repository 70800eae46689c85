//! The debate's input fields, bounded where they are read: a topic of at
//! most [`MAX_TOPIC_CHARS`] characters and 1 to [`MAX_ROUNDS`] rounds. A
//! client's input is read through the state's input type, so a value out
//! of bounds is refused before a run starts (the server answers 422 naming
//! the field), not turned into a stream that grows with it.

use std::fmt;
use std::ops::Deref;

use agent_state::serde::de::Error as _;
use agent_state::serde::{Deserialize, Deserializer, Serialize};

/// The longest topic taken, in characters: each argument quotes it, so
/// a longer one would make every event of the stream longer.
pub const MAX_TOPIC_CHARS: usize = 500;

/// The most rounds a debate may have (the debate workflow's schema).
pub const MAX_ROUNDS: u32 = 10;

/// Why a topic or a round count was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundsError {
    /// The topic is longer than [`MAX_TOPIC_CHARS`] characters.
    TopicTooLong(usize),
    /// The round count is 0 or over [`MAX_ROUNDS`].
    Rounds(u32),
}

impl fmt::Display for BoundsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoundsError::TopicTooLong(n) => write!(
                f,
                "a topic of {n} characters is too long: at most {MAX_TOPIC_CHARS}"
            ),
            BoundsError::Rounds(n) => write!(f, "{n} rounds: expected 1 to {MAX_ROUNDS}"),
        }
    }
}

impl std::error::Error for BoundsError {}

/// The subject of a debate: at most [`MAX_TOPIC_CHARS`] characters (empty
/// only in a state nobody gave a topic; the debaters refuse to argue it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(crate = "agent_state::serde", transparent)]
pub struct Topic(String);

impl Topic {
    /// `text`, trimmed, if it is short enough.
    pub fn new(text: &str) -> Result<Self, BoundsError> {
        let text = text.trim();
        let chars = text.chars().count();
        if chars > MAX_TOPIC_CHARS {
            return Err(BoundsError::TopicTooLong(chars));
        }
        Ok(Topic(text.to_owned()))
    }
}

impl Deref for Topic {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Topic {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Topic::new(&text).map_err(D::Error::custom)
    }
}

/// How many rounds a debate has: 1 to [`MAX_ROUNDS`], 3 unless given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(crate = "agent_state::serde", transparent)]
pub struct Rounds(u32);

impl Rounds {
    /// `n` rounds, if within bounds.
    pub fn new(n: u32) -> Result<Self, BoundsError> {
        if (1..=MAX_ROUNDS).contains(&n) {
            Ok(Rounds(n))
        } else {
            Err(BoundsError::Rounds(n))
        }
    }

    /// `n` rounds, any number: for a program that builds a state itself
    /// (a benchmark's long debate). The bound keeps clients from asking
    /// a server for endless streams; it is not a limit of the graph.
    pub fn unbounded(n: u32) -> Self {
        Rounds(n)
    }

    /// The count.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for Rounds {
    fn default() -> Self {
        Rounds(3)
    }
}

impl fmt::Display for Rounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for Rounds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Rounds::new(u32::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_hold_where_the_json_is_read() {
        let long = "x".repeat(MAX_TOPIC_CHARS + 1);
        let read = |v| agent_state::serde_json::from_value::<Topic>(v);
        assert!(read(long.clone().into()).is_err());
        assert_eq!(read(" Tea? ".into()).unwrap().to_string(), "Tea?");
        assert_eq!(Topic::new(&long), Err(BoundsError::TopicTooLong(501)));
        let rounds = |n: u32| agent_state::serde_json::from_value::<Rounds>(n.into());
        assert!(rounds(0).is_err() && rounds(MAX_ROUNDS + 1).is_err());
        assert_eq!(rounds(MAX_ROUNDS).unwrap().get(), MAX_ROUNDS);
    }
}

//! The writes a step makes to one field, kept inline while there is one.
//!
//! Almost every update writes a field once; a `Vec` per field per update
//! would cost an allocation each time. `Writes` holds zero or one write
//! inline and spills to a `Vec` only for the second.

/// Zero, one or many writes to one field, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Writes<P> {
    /// No write.
    Zero,
    /// One write, inline.
    One(P),
    /// Two or more.
    Many(Vec<P>),
}

// By hand: a derive would demand `P: Default`.
#[allow(clippy::derivable_impls)]
impl<P> Default for Writes<P> {
    fn default() -> Self {
        Self::Zero
    }
}

impl<P> Writes<P> {
    /// No writes.
    pub fn new() -> Self {
        Self::Zero
    }

    /// Adds a write at the end.
    #[inline]
    pub fn push(&mut self, write: P) {
        match self {
            Self::Zero => *self = Self::One(write),
            Self::Many(all) => all.push(write),
            Self::One(_) => {
                let Self::One(first) = std::mem::take(self) else {
                    unreachable!("matched one write")
                };
                *self = Self::Many(vec![first, write]);
            }
        }
    }

    /// How many writes.
    pub fn len(&self) -> usize {
        match self {
            Self::Zero => 0,
            Self::One(_) => 1,
            Self::Many(all) => all.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The writes as a slice.
    pub fn as_slice(&self) -> &[P] {
        match self {
            Self::Zero => &[],
            Self::One(one) => std::slice::from_ref(one),
            Self::Many(all) => all,
        }
    }

    /// The writes as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [P] {
        match self {
            Self::Zero => &mut [],
            Self::One(one) => std::slice::from_mut(one),
            Self::Many(all) => all,
        }
    }

    /// Maps every write, keeping the inline form.
    pub fn map<Q>(self, mut f: impl FnMut(P) -> Q) -> Writes<Q> {
        match self {
            Self::Zero => Writes::Zero,
            Self::One(one) => Writes::One(f(one)),
            Self::Many(all) => Writes::Many(all.into_iter().map(f).collect()),
        }
    }
}

impl<P> From<Vec<P>> for Writes<P> {
    fn from(all: Vec<P>) -> Self {
        let mut out = Self::Zero;
        for write in all {
            out.push(write);
        }
        out
    }
}

impl<P> FromIterator<P> for Writes<P> {
    fn from_iter<I: IntoIterator<Item = P>>(iter: I) -> Self {
        let mut out = Self::Zero;
        for write in iter {
            out.push(write);
        }
        out
    }
}

/// Iterator over owned writes.
#[derive(Debug)]
pub enum IntoIter<P> {
    /// Zero or one left.
    Inline(Option<P>),
    /// From the spilled `Vec`.
    Many(std::vec::IntoIter<P>),
}

impl<P> Iterator for IntoIter<P> {
    type Item = P;

    fn next(&mut self) -> Option<P> {
        match self {
            Self::Inline(one) => one.take(),
            Self::Many(all) => all.next(),
        }
    }
}

impl<P> IntoIterator for Writes<P> {
    type Item = P;
    type IntoIter = IntoIter<P>;

    fn into_iter(self) -> IntoIter<P> {
        match self {
            Self::Zero => IntoIter::Inline(None),
            Self::One(one) => IntoIter::Inline(Some(one)),
            Self::Many(all) => IntoIter::Many(all.into_iter()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_inline_for_one_and_keeps_order() {
        let mut w = Writes::new();
        assert!(w.is_empty());
        w.push(1);
        assert!(matches!(w, Writes::One(1)));
        w.push(2);
        w.push(3);
        assert_eq!(w.as_slice(), [1, 2, 3]);
        assert_eq!(w.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
    }
}

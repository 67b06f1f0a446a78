//! Series found by index: a label combination is created in its family on
//! first use and kept in a table, so counting on the hot path is an index
//! and an atomic add, without hashing labels or taking the family's lock.

use std::sync::OnceLock;

/// One lazily created series per table index.
pub struct Cells<M> {
    cells: Box<[OnceLock<M>]>,
}

impl<M> Cells<M> {
    /// A table of `len` series, none created yet.
    pub fn new(len: usize) -> Self {
        Self { cells: (0..len).map(|_| OnceLock::new()).collect() }
    }

    /// The series at `index`, created by `make` on first use. An index
    /// outside the table gets `None` (a caller's bug; nothing is counted).
    pub fn get(&self, index: usize, make: impl FnOnce() -> M) -> Option<&M> {
        self.cells.get(index).map(|cell| cell.get_or_init(make))
    }
}

/// The index of `(a, b, c)` in a table of `a_len × b_len × c_len` (only the
/// inner sizes matter).
pub fn index3(a: usize, b: usize, b_len: usize, c: usize, c_len: usize) -> usize {
    (a * b_len + b) * c_len + c
}

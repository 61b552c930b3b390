//! A stand-in for a registry crate: counts the elements that differ from expected values.

/// The number of elements `values[i]` that differ from `expected(i)`.
pub fn mismatches<T: PartialEq>(values: &[T], expected: impl Fn(usize) -> T) -> usize {
    values.iter().enumerate().filter(|&(i, v)| *v != expected(i)).count()
}

//! Compile-fail suite: each file in tests/ui is one user mistake, and its
//! .stderr snapshot is the diagnostic the user sees.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

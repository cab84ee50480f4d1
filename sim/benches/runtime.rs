//! Benchmarks of the simulator (written at the end of issue 4).

fn main() {}

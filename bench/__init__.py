"""mergekit benchmarks (not tests): see bench/README.md."""

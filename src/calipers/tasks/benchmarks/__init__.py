"""Published benchmarks read from their original files in a local data directory."""

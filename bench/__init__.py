"""Benchmarks: run with ``python -m bench.NAME``; each writes results/NAME.csv and .md."""

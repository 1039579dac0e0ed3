"""Benchmarks: `python -m bench` (or `make bench`) runs every `bench/bench_*.py`.

A benchmark module exposes `run() -> list[dict]`: one dict per measured row, with the same keys in
every row (say "case", "messages", "seconds", "messages_per_second"). The runner prints the rows as
a table and writes every module's rows, with the machine's core count, to
bench/results/<timestamp>.json.
"""

"""python -m bench [NAME ...] [--list]: run the benchmarks, print a table, write JSON."""

import argparse
import importlib
import json
import os
import pkgutil
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
PREFIX = "bench_"
# Run only when named (`python -m bench scale`): hours and tens of GiB at their default size;
# the soak, a quarter of an hour of kills on PostgreSQL and Redis.
ON_REQUEST = {"scale", "soak"}


def discover():
    """The names of the benchmark modules, without the bench_ prefix, sorted."""
    return sorted(
        info.name[len(PREFIX) :]
        for info in pkgutil.iter_modules([str(BENCH_DIR)])
        if info.name.startswith(PREFIX)
    )


def machine():
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def _cell(value):
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def table(rows):
    """Rows of dicts as a plain-text table; columns in the order they first appear."""
    if not rows:
        return "(no rows)"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [columns] + [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)) for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def run(modules, *, results_dir=RESULTS_DIR, out=sys.stdout):
    """Run each module's run(); print its rows; write one JSON file. Returns (path, failures)."""
    started = datetime.now(UTC)
    results, failures = {}, {}
    for name, module in modules.items():
        print(f"\n== {name}", file=out, flush=True)
        clock = time.perf_counter()
        try:
            rows = list(module.run())
        except Exception as exc:
            failures[name] = traceback.format_exc()
            print(failures[name], file=out)
            # A benchmark that checks what it measures (the soak) fails with its rows: they say
            # what failed, and go in the table and the JSON all the same.
            rows = getattr(exc, "rows", None)
            if rows is None:
                continue
        seconds = time.perf_counter() - clock
        results[name] = {"seconds": round(seconds, 3), "rows": rows}
        print(table(rows), file=out)
        print(f"({seconds:.1f} s)", file=out, flush=True)

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    document = {
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "machine": machine(),
        "results": results,
        "failures": failures,
    }
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"\nResults written to {path}", file=out)
    return path, failures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    args = parser.parse_args(argv)

    available = discover()
    if args.list:
        print("\n".join(available) or "no benchmarks (bench/bench_*.py)")
        return 0
    unknown = sorted(set(args.names) - set(available))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; have: {', '.join(available)}")
    names = args.names or [name for name in available if name not in ON_REQUEST]
    if not names:
        print("No benchmarks yet: add bench/bench_<name>.py with a run() -> list[dict].")
        return 0

    # Benchmarks may use the console DB and settings, as the product does, on a VAR_DIR of their
    # own (bench.support): set before Django reads its settings, or they would seed and wipe
    # `make run`'s database.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("VAR_DIR", str(BENCH_DIR.parent / "var" / "bench"))
    import django

    django.setup()
    modules = {name: importlib.import_module(f"bench.{PREFIX}{name}") for name in names}
    print(f"{len(modules)} benchmark(s) on {machine()['cpu_count']} core(s)")
    _, failures = run(modules)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""CPU per row of `bleu-spark score` on three paths, and the object store's wall time against a
local disk's, on the same files of real text.

    python scripts/bench_object_store.py --source ../shared/data/wmt22.parquet \\
        --rows 1000000,3000000,10000000 --metrics bleu --metrics bleu,chrf,chrf++,ter \\
        --alternate 3 --json /tmp/object-store.json

Inputs: `--rows` rows each, copies of `--source` (each copy's systems renamed `SYSTEM#copyK`,
as `derive_input.py --copies` names them, so every copy is groups of its own), one copy a file
(the last cut to the row count), in row groups of `--row-group-rows`; written to a local
folder and uploaded under a prefix of moto's S3 server, started on 127.0.0.1 as a process of
its own (its CPU is the store's, reported apart, not counted as the job's).

Paths, each `bleu-spark score --input ... --output ... --metrics M` as a whole process:

    local   the local folder, read by the Python workers (the default)
    s3      the same files as `s3a://bench/...`, read by the Python workers through pyarrow
    spark   the local folder with `--scan spark` (Spark's Parquet scan and SQL engine)

Measured per run by `bench.measure.run_measured`: wall time and the CPU seconds of the whole
process tree (the Python driver, the JVM, the Python workers), polled every 0.1 s. For each
path and metric set, CPU = a + b x rows is fitted by least squares over the row counts; printed:
b as CPU-µs a row and as core-hours per billion rows, a, and each point's residual. The scores
of the three paths must be equal (the script exits 1 before printing figures otherwise).

`--alternate K`: K pairs of runs local, s3, local, s3, ... at the `--alternate-rows` row count
(BLEU), the ratio of the wall times of each pair and their median.

`--with-runs FILE` (repeatable): the runs of an earlier invocation's `--json`, reported and
fitted with this one's (a metric set whose largest inputs ran apart); `--report-only`: those
alone, nothing run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench.measure import run_measured  # noqa: E402

BUCKET = "bench"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
               "AWS_DEFAULT_REGION": "us-east-1"}


def start_moto(folder: Path):
    """moto's S3 server in a process of its own; (process, endpoint)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(folder / "moto.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            if time.time() > deadline or server.poll() is not None:
                raise SystemExit("moto's server did not start")
            time.sleep(0.2)


def s3_client(endpoint: str):
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(endpoint_override=endpoint.split("://")[1], scheme="http",
                             access_key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                             secret_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"], region="us-east-1",
                             allow_bucket_creation=True)


def write_input(source, rows: int, folder: Path, row_group_rows: int) -> None:
    """`rows` rows as copies of `source`, one a file."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if folder.exists():
        return
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    system = source.schema.get_field_index("system")
    for k in range(math.ceil(rows / source.num_rows)):
        part = source.slice(0, min(source.num_rows, rows - k * source.num_rows))
        part = part.set_column(system, "system", pc.binary_join_element_wise(
            part["system"], f"copy{k}", "#"))
        pq.write_table(part, partial / f"part-{k:04d}.parquet", row_group_size=row_group_rows)
    partial.rename(folder)


def upload(fs, folder: Path, prefix: str) -> None:
    import pyarrow.fs as pafs

    pafs.copy_files(str(folder), f"{BUCKET}/{prefix}", source_filesystem=pafs.LocalFileSystem(),
                    destination_filesystem=fs)


def command(path: str, local: Path, rows: int, metrics: str, out: Path) -> list:
    given = f"s3a://{BUCKET}/rows-{rows}" if path == "s3" else str(local)
    scan = ["--scan", "spark"] if path == "spark" else []
    return [sys.executable, "-m", "bleu_spark", "score", "--input", given, "--output", str(out),
            "--metrics", metrics, "--progress-seconds", "0", *scan]


def run(path: str, local: Path, rows: int, metrics: str, work: Path, env: dict, moto) -> dict:
    import psutil

    out = work / f"out-{path}-{rows}-{metrics.replace(',', '_')}"
    shutil.rmtree(out, ignore_errors=True)
    store_before = sum(psutil.Process(moto.pid).cpu_times()[:2])
    measured = run_measured(command(path, local, rows, metrics, out), env, work / "run.log", cwd=ROOT)
    if measured["returncode"] != 0:
        raise SystemExit(f"{path} {rows} {metrics} failed: {(work / 'run.log').read_text()[-3000:]}")
    run_json = json.loads((out / "run.json").read_text())
    scores = sorted((r["system"], r["langpair"], r["metric"], r["score"])
                    for r in json.loads((out / "scores.json").read_text()))
    shutil.rmtree(out)
    return {"path": path, "rows": rows, "metrics": metrics, "wall_s": measured["wall_s"],
            "cpu_s": measured["cpu_total_s"], "cpu_by_kind_s": measured["cpu_s"],
            "store_cpu_s": round(sum(psutil.Process(moto.pid).cpu_times()[:2]) - store_before, 2),
            "other_cpu_s": measured.get("other_cpu_s"), "load_before": measured["load_before"],
            "scan": run_json["layout"].get("scan"), "run_s": run_json["timings"]["total_s"],
            "scores": scores}


def fit(points):
    """Least squares CPU = a + b x rows over (rows, cpu) points: (a, b, residuals by rows)."""
    n = len(points)
    mx = sum(r for r, _ in points) / n
    my = sum(c for _, c in points) / n
    sxx = sum((r - mx) ** 2 for r, _ in points)
    b = sum((r - mx) * (c - my) for r, c in points) / sxx if sxx else float("nan")
    a = my - b * mx
    return a, b, {r: c - (a + b * r) for r, c in points}


def report(results: list, alternation: list) -> None:
    print("\n| metrics | path | rows | wall s | CPU s (JVM / Python workers / driver) | store CPU s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        kinds = r["cpu_by_kind_s"]
        print(f"| {r['metrics']} | {r['path']} | {r['rows']:,} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} "
              f"({kinds.get('jvm', 0) + kinds.get('launcher', 0):.1f} / {kinds.get('py_worker', 0):.1f} / "
              f"{kinds.get('py_driver', 0):.1f}) | {r['store_cpu_s']:.1f} |")
    print("\n| metrics | path | b: CPU-µs a row | core-hours per billion rows | a: CPU s | residual at each row count |")
    print("|---|---|---|---|---|---|")
    for metrics in dict.fromkeys(r["metrics"] for r in results):
        for path in dict.fromkeys(r["path"] for r in results):
            points = sorted((r["rows"], r["cpu_s"]) for r in results
                            if r["metrics"] == metrics and r["path"] == path)
            if len(points) < 2:
                continue
            a, b, residuals = fit(points)
            shown = ", ".join(f"{rows:,}: {res:+.1f} s ({100 * res / cpu:+.1f}%)"
                              for (rows, cpu), res in zip(points, residuals.values()))
            print(f"| {metrics} | {path} | {b * 1e6:.2f} | {b * 1e9 / 3600:.2f} | {a:.1f} | {shown} |")
    if alternation:
        ratios = [s["wall_s"] / l["wall_s"] for l, s in alternation]
        print(f"\nobject store / local wall time, {len(ratios)} alternated pairs: "
              + ", ".join(f"{x:.3f}" for x in ratios) + f"; median {median(ratios):.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=str(ROOT.parent / "shared" / "data" / "wmt22.parquet"))
    parser.add_argument("--rows", default="1000000,3000000,10000000")
    parser.add_argument("--metrics", action="append", help="a metric set (repeat the flag for more)")
    parser.add_argument("--paths", default="local,s3,spark")
    parser.add_argument("--max-rows", action="append", default=[],
                        help="METRICS=ROWS: the largest row count that metric set runs at")
    parser.add_argument("--alternate", type=int, default=0)
    parser.add_argument("--alternate-rows", type=int, default=3_000_000)
    parser.add_argument("--row-group-rows", type=int, default=100_000)
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bleu-spark-bench-object-store"))
    parser.add_argument("--json")
    parser.add_argument("--with-runs", action="append", default=[])
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    earlier = [json.loads(Path(f).read_text()) for f in args.with_runs]
    if args.report_only:
        report([r for e in earlier for r in e["runs"]], [p for e in earlier for p in e["alternation"]])
        return 0
    import pyarrow.parquet as pq

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    row_counts = [int(r) for r in args.rows.split(",")]
    metric_sets = args.metrics or ["bleu"]
    limits = dict(item.split("=") for item in args.max_rows)
    source = pq.read_table(args.source)
    moto, endpoint = start_moto(work)
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": endpoint, "PYTHONPATH": str(ROOT)}
    results, alternation = [], []
    try:
        fs = s3_client(endpoint)
        fs.create_dir(BUCKET)
        for rows in sorted(set(row_counts + ([args.alternate_rows] if args.alternate else []))):
            write_input(source, rows, work / f"rows-{rows}", args.row_group_rows)
            upload(fs, work / f"rows-{rows}", f"rows-{rows}")
        for metrics in metric_sets:
            for rows in row_counts:
                if rows > int(limits.get(metrics, rows)):
                    continue
                done = [run(p, work / f"rows-{rows}", rows, metrics, work, env, moto)
                        for p in args.paths.split(",")]
                for r in done:
                    print(json.dumps({k: v for k, v in r.items() if k != "scores"}), flush=True)
                if any(r["scores"] != done[0]["scores"] for r in done):
                    print(f"scores differ between paths at {rows} rows, {metrics}", file=sys.stderr)
                    return 1
                results += done
        for _ in range(args.alternate):
            pair = tuple(run(p, work / f"rows-{args.alternate_rows}", args.alternate_rows, "bleu",
                             work, env, moto) for p in ("local", "s3"))
            print(json.dumps({p["path"]: p["wall_s"] for p in pair}), flush=True)
            alternation.append(pair)
    finally:
        moto.terminate()
        moto.wait(30)
    report([r for e in earlier for r in e["runs"]] + results,
           [p for e in earlier for p in e["alternation"]] + alternation)
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": results, "alternation": alternation}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

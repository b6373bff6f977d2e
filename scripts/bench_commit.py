"""The output's commit: its time and the requests it sends against the number of partitions, on a
local disk and on an S3 API (moto's server on 127.0.0.1, in this process).

    python scripts/bench_commit.py --partitions 1,10,100

A partitioned output of three tables (`stats`, `scores`, `dashboard`) of N one-row partitions is
committed into an empty folder ("first"), then the same N partitions again ("rerun": the cleanup
deletes the 3N files the rerun replaces). Timed and counted is `commit()` alone: the entry, then
the cleanup to the log. On S3 every HTTP request moto answers during it is counted, by method.
"""
from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import tempfile
import threading
import time
from collections import Counter

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bleu_spark import store  # noqa: E402

TABLES = ("stats", "scores", "dashboard")
BUCKET = "bench"


class CountingApp:
    """A WSGI application counting the requests it passes on, by HTTP method."""

    def __init__(self, app):
        self.app, self.counts, self._lock = app, Counter(), threading.Lock()

    def __call__(self, environ, start_response):
        with self._lock:
            self.counts[environ["REQUEST_METHOD"]] += 1
        return self.app(environ, start_response)


def start_s3() -> CountingApp:
    """moto's S3 server on a free port of 127.0.0.1, the AWS variables pointed at it."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    app = CountingApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", port, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    store.configure({"spark.hadoop.fs.s3a.path.style.access": "true"})
    from pyarrow import fs

    fs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                    allow_bucket_creation=True).create_dir(BUCKET)
    return app


def one_commit(uri: str, partitions: int, counter) -> tuple:
    """Seconds and requests of `commit()` of a run writing N one-row partitions per table."""
    output = store.open_output(uri, ("run_date",))
    for table in TABLES:
        for day in range(partitions):
            output.write_table(table, pa.table({"run_date": [f"day{day:04d}"], "score": [1.0]}))
    before = Counter(counter.counts) if counter else Counter()
    started = time.perf_counter()
    output.commit({"run_id": output.run_id})
    seconds = time.perf_counter() - started
    sent = (Counter(counter.counts) - before) if counter else Counter()
    return seconds, sent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1,10,100",
                        help="comma-separated numbers of partitions (default: 1,10,100)")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.partitions.split(",")]
    s3 = start_s3()
    local = tempfile.mkdtemp(prefix="bench-commit-")
    print("| partitions | local, first | local, rerun | S3, first | S3, rerun | S3 requests, first | S3 requests, rerun |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        row = [str(n)]
        requests = []
        for uri, counter in ((f"{local}/p{n}", None), (f"s3://{BUCKET}/p{n}", s3)):
            for _ in ("first", "rerun"):
                seconds, sent = one_commit(uri, n, counter)
                row.append(f"{seconds:.3f} s")
                if counter:
                    requests.append(f"{sum(sent.values())} ({', '.join(f'{m} {c}' for m, c in sorted(sent.items()))})")
        print("| " + " | ".join(row + requests) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

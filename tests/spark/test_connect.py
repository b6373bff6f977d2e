"""The job through Spark Connect: a server started from the pyspark wheel on 127.0.0.1, the
command run as its client with only SPARK_REMOTE set, and every score equal to the same command
run on classic Spark. The client starts no JVM."""
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from bleu_spark.errors import UsageError
from bleu_spark.spark import runtime
from conftest import ROOT, SAMPLE, free_port
from connect_server import clean_env, connect_server as connect_server_running



@pytest.mark.parametrize("variables,defaults,expected", [
    ({}, "", None),
    ({"SPARK_REMOTE": "sc://host:15002"}, "", {}),
    ({"SPARK_API_MODE": "connect"}, "", {"spark.master": "local[*]"}),
    ({"SPARK_API_MODE": "connect", "SPARK_REMOTE": "sc://host"}, "", {}),
    ({"SPARK_API_MODE": "classic"}, "spark.api.mode connect", None),
    ({}, "spark.remote sc://host:15002", {"spark.remote": "sc://host:15002"}),
    ({"SPARK_REMOTE": "sc://other"}, "spark.remote=sc://host", {}),
    ({}, "spark.master yarn\nspark.api.mode=connect", {"spark.api.mode": "connect", "spark.master": "yarn"}),
    ({}, "spark.master yarn", None),
])
def test_connect_is_chosen_as_pyspark_reads_it(tmp_path, monkeypatch, variables, defaults, expected):
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "spark-defaults.conf").write_text(defaults)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert runtime.connect_settings() == expected


@pytest.fixture(scope="session")
def connect_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("connect")


@pytest.fixture(scope="session")
def connect_server(connect_folder):
    with connect_server_running(connect_folder) as url:
        yield url


def _descendants(pid: int) -> list:
    """(pid, command name) of every process below `pid`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    text = stat.read()
            except OSError:
                continue
            name = text[text.index("(") + 1:text.rindex(")")]
            parent = int(text[text.rindex(")") + 2:].split()[1])
            children.setdefault(parent, []).append((int(entry), name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def run_connect(remote: str, argv: list, output) -> dict:
    """The command as a Connect client with only SPARK_REMOTE set; the names of the processes
    it started, watched while it runs."""
    env = {**clean_env(), "SPARK_REMOTE": remote, "PYTHONPATH": ROOT}
    client = subprocess.Popen([sys.executable, "-m", "bleu_spark", *argv, "--output", str(output)],
                              env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    started = set()
    while client.poll() is None:
        started.update(name for _, name in _descendants(client.pid))
        time.sleep(0.2)
    out, err = client.communicate()
    assert client.returncode == 0, err[-3000:]
    assert "java" not in started, started
    return json.loads((output / "run.json").read_text())


def run_classic(spark, monkeypatch, argv: list, output) -> dict:
    """The same command on classic Spark, in this process on the tests' shared session."""
    monkeypatch.setattr(cli, "_stop_spark", lambda session: None)
    assert cli.main([*argv, "--output", str(output)]) == 0
    return json.loads((output / "run.json").read_text())


def scores(output) -> list:
    return json.loads((output / "scores.json").read_text())


def table(output, name: str) -> list:
    rows = pq.read_table(output / name).to_pylist()
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True, default=str))


@pytest.fixture(scope="module")
def excerpt(tmp_path_factory):
    """Three language pairs of the sample (13a, ja-mecab and zh targets), for the slower runs."""
    import pyarrow.compute as pc

    table = pq.read_table(SAMPLE)
    path = tmp_path_factory.mktemp("excerpt") / "three_pairs.parquet"
    pq.write_table(table.filter(pc.is_in(table["langpair"], pa.array(["de-en", "en-ja", "en-zh"]))), path)
    return str(path)


@pytest.fixture(scope="module")
def both(connect_server, spark, tmp_path_factory):
    """Each command run both ways once, into folders named after it."""
    base = tmp_path_factory.mktemp("both")
    done = {}

    def run(name, argv):
        if name not in done:
            with pytest.MonkeyPatch.context() as monkeypatch:
                remote = run_connect(connect_server, argv, base / f"{name}-connect")
                classic = run_classic(spark, monkeypatch, argv, base / f"{name}-classic")
            done[name] = (remote, classic, base / f"{name}-connect", base / f"{name}-classic")
        return done[name]

    return run


@pytest.mark.connect
@pytest.mark.spark
def test_default_bleu_per_system_equals_classic(both):
    remote, classic, connect_out, classic_out = both("default", ["score", "--input", SAMPLE])
    assert scores(connect_out) == scores(classic_out)
    assert remote["spark"]["spark_mode"] == "connect" and classic["spark"]["spark_mode"] == "classic"
    assert remote["layout"]["scan"] == "arrow"
    assert remote["rows"] == classic["rows"]
    # counted through Connect too, carried back with each task's result
    assert remote["references_tokenized"] == classic["references_tokenized"]
    assert remote["input_bytes"] == classic["input_bytes"] == os.path.getsize(SAMPLE)
    assert remote["versions"]["java"] == "unavailable"


@pytest.mark.connect
@pytest.mark.spark
def test_spark_scan_three_metrics_and_a_shipped_model_equal_classic(both, excerpt, spm_model):
    argv = ["score", "--input", excerpt, "--scan", "spark", "--metrics", "bleu,chrf,ter",
            "--group-by", "langpair", "--tokenize", "flores200", "--spm-model", spm_model]
    remote, classic, connect_out, classic_out = both("spark-scan", argv)
    assert scores(connect_out) == scores(classic_out)
    assert remote["layout"]["scan"] == "spark"
    assert remote["references_tokenized"] is None  # no accumulators through Connect


@pytest.mark.connect
@pytest.mark.spark
def test_intervals_paired_tests_and_segments_equal_classic(both, excerpt):
    argv = ["score", "--input", excerpt, "--confidence",
            "--n-bootstrap", "100", "--paired-bs", "--baseline", "Online-B", "--segments",
            "--report"]
    _, _, connect_out, classic_out = both("resampled", argv)
    assert scores(connect_out) == scores(classic_out)
    assert json.loads((connect_out / "paired.json").read_text()) == \
        json.loads((classic_out / "paired.json").read_text())
    segments = [table(out, "segments") for out in (connect_out, classic_out)]
    assert segments[0] == segments[1] and len(segments[0]) == pq.read_metadata(excerpt).num_rows
    assert (connect_out / "report.html").is_file()


@pytest.mark.connect
@pytest.mark.spark
def test_aggregate_on_spark_of_saved_statistics_equals_classic(both):
    _, _, stats_from, _ = both("default", ["score", "--input", SAMPLE])
    argv = ["aggregate", "--stats", str(stats_from), "--engine", "spark", "--group-by", "langpair"]
    remote, classic, connect_out, classic_out = both("aggregate", argv)
    assert scores(connect_out) == scores(classic_out)
    assert remote["spark"]["spark_mode"] == "connect"


@pytest.mark.connect
@pytest.mark.spark
def test_references_table_and_quarantine_equal_classic(both, excerpt, tmp_path_factory):
    """Rows joined to a references table in Spark SQL, and a row that cannot be scored kept
    in `rejected/`."""
    given = pq.read_table(excerpt)
    folder = tmp_path_factory.mktemp("joined")
    first = {}
    for i, key in enumerate(zip(given["langpair"].to_pylist(), given["seg_id"].to_pylist())):
        first.setdefault(key, i)
    pq.write_table(given.take(pa.array(list(first.values()))).select(["langpair", "seg_id", "references"]),
                   folder / "refs.parquet")
    candidates = given.drop_columns(["references"])
    texts = candidates["candidate"].to_pylist()
    texts[3] = None  # no candidate: a reason code, not a score
    candidates = candidates.set_column(candidates.schema.get_field_index("candidate"), "candidate",
                                       pa.array(texts, pa.string()))
    pq.write_table(candidates, folder / "candidates.parquet")
    argv = ["score", "--input", str(folder / "candidates.parquet"), "--references",
            str(folder / "refs.parquet"), "--join-on", "langpair,seg_id", "--on-invalid", "quarantine"]
    remote, classic, connect_out, classic_out = both("joined", argv)
    assert scores(connect_out) == scores(classic_out)
    assert remote["rows"] == classic["rows"] and remote["rows"]["rejected"] == 1
    assert table(connect_out, "rejected") == table(classic_out, "rejected")


@pytest.mark.parametrize("submitted,expected", [
    ({"spark.remote": "sc://server:15002", "spark.master": "local[2]"}, {"spark.remote": "sc://server:15002"}),
    ({"spark.api.mode": "connect", "spark.master": "yarn"}, UsageError),
])
def test_spark_submit_started_for_connect_is_followed_or_one_line(monkeypatch, submitted, expected):
    """spark-submit's settings for a Connect run reach pyspark in PYSPARK_REMOTE_INIT_CONF_*; its
    driver JVM then runs no classic Spark, so a run without a server's address cannot go on."""
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYSPARK_REMOTE_INIT_CONF_LEN", "1")
    monkeypatch.setenv("PYSPARK_REMOTE_INIT_CONF_0", json.dumps(submitted))
    if expected is UsageError:
        with pytest.raises(UsageError, match="--remote sc://HOST:PORT"):
            runtime.connect_settings()
    else:
        assert runtime.connect_settings() == expected


def _spark_submit(argv: list, output):
    from pyspark.find_spark_home import _find_spark_home

    submit = os.path.join(_find_spark_home(), "bin", "spark-submit")
    return subprocess.run([submit, *argv, "jobs/score_bleu.py", "--input", SAMPLE, "--output", str(output)],
                          cwd=ROOT, env={**clean_env(), "PYSPARK_PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=600)


@pytest.mark.connect
@pytest.mark.e2e
def test_spark_submit_with_remote_runs_through_connect_and_connect_mode_without_one_is_one_line(
        both, connect_server, tmp_path):
    _, _, _, classic_out = both("default", ["score", "--input", SAMPLE])
    result = _spark_submit(["--remote", connect_server], tmp_path / "remote")
    assert result.returncode == 0, result.stderr[-3000:]
    assert scores(tmp_path / "remote") == scores(classic_out)
    assert json.loads((tmp_path / "remote" / "run.json").read_text())["spark"]["spark_mode"] == "connect"

    result = _spark_submit(["--master", "local[2]", "--conf", "spark.api.mode=connect"], tmp_path / "none")
    assert result.returncode == UsageError.exit_code
    # the driver's Python writes into spark-submit's stdout, the JVM's lines go to its stderr
    errors = [line for line in (result.stdout + result.stderr).splitlines() if "error" in line.lower()]
    assert errors == [line for line in errors if line.startswith("bleu-spark: error: spark-submit started "
                                                                   "for Spark Connect without a server")]
    assert len(errors) == 1 and not (tmp_path / "none").exists()


@pytest.mark.connect
@pytest.mark.e2e
def test_a_stop_signal_to_the_client_cancels_the_servers_job(connect_server, connect_folder, tmp_path):
    """A scheduler stopping the client mid-pass: the run's files are removed, the exit code is
    the signal's, and the server cancels the job the client started (a shared server is not kept
    busy by a run that is gone)."""
    rows = pq.read_table(SAMPLE)
    pq.write_table(pa.concat_tables([rows] * 8), tmp_path / "in.parquet")  # a pass of seconds
    env = {**clean_env(), "SPARK_REMOTE": connect_server, "PYTHONPATH": ROOT}
    client = subprocess.Popen([sys.executable, "-m", "bleu_spark", "score", "--input", str(tmp_path / "in.parquet"),
                               "--output", str(tmp_path / "out"), "--progress-seconds", "1"],
                              env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = connect_folder / "server.log"
    cancelled_before = log.read_text(errors="replace").count("SPARK_JOB_CANCELLED")
    for line in client.stderr:  # the pass has started, and has not ended
        if "rows scored" in line and "done:" not in line:
            break
    client.send_signal(signal.SIGTERM)
    rest = client.stderr.read()
    assert client.wait(60) == 143, rest
    assert "interrupted by SIGTERM (exit code 143); the run's files are removed" in rest
    assert not (tmp_path / "out").exists()
    deadline = time.time() + 30
    while log.read_text(errors="replace").count("SPARK_JOB_CANCELLED") == cancelled_before:
        assert time.time() < deadline, "the server did not cancel the job"
        time.sleep(0.5)


@pytest.mark.parametrize("host", ["127.0.0.1", "no-such-host.invalid"])
def test_a_connect_server_that_does_not_answer_is_one_line_not_minutes_of_retries(
        monkeypatch, tmp_path, capsys, host):
    from bleu_spark.errors import SparkUnreachableError

    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE", "PYSPARK_REMOTE_INIT_CONF_LEN"):
        monkeypatch.delenv(name, raising=False)
    port = free_port()  # nothing listens there
    monkeypatch.setenv("SPARK_REMOTE", f"sc://{host}:{port}/;token=secret")
    code = cli.main(["score", "--input", SAMPLE, "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert code == SparkUnreachableError.exit_code
    # the reason in the resolver's words, which vary with the system, for a name that does not resolve
    reason = "(Connection refused)" if host == "127.0.0.1" else "("
    assert len(errors) == 1 and errors[0].startswith(
        f"bleu-spark: error: no Spark Connect server answers at {host}:{port} {reason}")
    assert errors[0].endswith("): check SPARK_REMOTE, spark.remote or --remote")
    assert "secret" not in err and not (tmp_path / "out").exists()

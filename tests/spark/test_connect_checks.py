"""A Spark Connect session's start, checked before a run uses it: a malformed address is one
line and exit 2; a port where something else than a Connect server answers is one line and exit
17 within seconds (fake servers on 127.0.0.1 made by the test: no JVM); a server whose Python
workers cannot import bleu_spark, or import another version, is one line and exit 19 (a real
Connect server, its workers' packages switched between the runs)."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from concurrent import futures

import pytest

from bleu_spark import __version__, cli
from bleu_spark.errors import SparkUnreachableError, UsageError, WorkerPackageError
from bleu_spark.spark.runtime import connect
from conftest import ROOT, SAMPLE
from connect_server import clean_env, connect_server

SECRET = "s3cr3t-t0ken"
SERVER_TOKEN = "the-servers-t0ken"


@pytest.fixture
def client_env(monkeypatch):
    """This process as a Connect client would be, with nothing else asking for a mode; what
    the check sets (GRPC_VERBOSITY) restored after the test."""
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_API_MODE",
                 "PYSPARK_REMOTE_INIT_CONF_LEN", "GRPC_VERBOSITY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


class TookTooLong(BaseException):  # not an Exception: nothing in the job catches it
    pass


def _too_long(signum, frame):
    raise TookTooLong()


def run_cli(monkeypatch, remote: str, output, capsys, seconds: float = 30):
    """`score` of the sample with SPARK_REMOTE=remote, in this process, which must end within
    `seconds` (an alarm stops it otherwise, and again each second, as stopping a session that
    waits on its server waits too): (exit code, the error lines, the whole of stderr)."""
    monkeypatch.setenv("SPARK_REMOTE", remote)
    before = signal.signal(signal.SIGALRM, _too_long)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1)
    try:
        code = cli.main(["score", "--input", SAMPLE, "--output", str(output)])
    except TookTooLong:
        pytest.fail(f"no answer within {seconds} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if "error" in line], err


@pytest.mark.parametrize("url,says", [
    ("", "it is empty"),
    ("http://127.0.0.1:15002", "does not start with sc:// ('http://')"),
    ("sc:/h", "does not start with sc:// ('sc:/')"),
    ("localhost:15002", "does not start with sc:// ('localhost:')"),
    ("user:" + SECRET + "@h:15002", "does not start with sc:// ('user:')"),
    (" sc://h", "does not start with sc://"),
    ("sc://", "has no host"),
    ("sc://:15002", "has no host"),
    ("sc:///;token=" + SECRET, "has no host"),
    ("sc://h:abc", "port that is not a number from 1 to 65535 ('abc')"),
    ("sc://h:99999", "port that is not a number from 1 to 65535 ('99999')"),
    ("sc://h:0", "port that is not a number"),
    ("sc://h:-1", "port that is not a number"),
    ("sc://h:", "port that is not a number"),
    ("sc://h:15002:1", "port that is not a number"),
    ("sc://h x:15002", "host that is not a name or address"),
    ("sc://[::1", "host that is not a name or address"),
    ("sc://u:" + SECRET + "@h:15002", "names a user or password"),
    ("sc://h:15002;token=" + SECRET, "parameters without a slash"),
    ("sc://h:15002/x", "has a path after the host"),
    ("sc://h:15002/x;token=" + SECRET, "has a path after the host"),
    ("sc://h:15002/token=" + SECRET, "has a path after the host"),
    ("sc://h:15002/?token=" + SECRET, "'?' or '#'"),
    ("sc://h:15002/;token=" + SECRET + "#x", "'?' or '#'"),
    ("sc://h/;token", "(number 1) that is not key=value"),
    ("sc://h/;" + SECRET, "(number 1) that is not key=value"),
    ("sc://h/;token=" + SECRET + "==", "(number 1) that is not key=value"),
    ("sc://h/;use_ssl=true;", "(number 2) that is not key=value"),
    ("sc://h/;=" + SECRET, "(number 1) that is not key=value"),
    ("sc://h/;token=", "an empty value"),
    ("sc://h/;token=" + SECRET + "%0A", "printable ASCII"),
    ("sc://h/;token=a;token=" + SECRET, "gives the parameter 'token' twice"),
    ("sc://h/;Token=" + SECRET, "does not know and cannot send as a header ('Token'"),
    ("sc://h/;x-bin=" + SECRET, "does not know and cannot send as a header ('x-bin'"),
    ("sc://h/;grpc-timeout=" + SECRET, "does not know and cannot send as a header"),
    ("sc://h/;use_ssl=yes", "gives use_ssl a value that is not true or false"),
    ("sc://h/;grpc_keepalive_time_ms=-5", "not a whole number of milliseconds"),
    ("sc://h/;session_id=" + SECRET, "session_id a value that is not a UUID"),
    ("sc://h/;user_agent=" + "x" * 2049, "longer than 2048"),
])
def test_a_malformed_connect_address_is_one_line_exit_2_never_showing_a_value(
        client_env, tmp_path, capsys, url, says):
    code, errors, err = run_cli(client_env, url, tmp_path / "out", capsys)
    assert code == UsageError.exit_code == 2, err
    assert len(errors) == 1 and "Traceback" not in err
    assert errors[0].startswith("bleu-spark: error: SPARK_REMOTE is not a Spark Connect address: ")
    assert says in errors[0]
    assert SECRET not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("url,expected", [
    ("sc://h", ("h", 15002, {})),
    ("sc://h:1/", ("h", 1, {})),
    ("sc://spark-connect.example_1.org:65535", ("spark-connect.example_1.org", 65535, {})),
    ("sc://[::1]:15002/;token=a%3Db%3D;use_ssl=TRUE;x-team=mt",
     ("[::1]", 15002, {"token": "a=b=", "use_ssl": "TRUE", "x-team": "mt"})),
    ("sc://10.0.0.1/;session_id=12345678-1234-4678-9234-567812345678;grpc_keepalive_time_ms=30000",
     ("10.0.0.1", 15002, {"session_id": "12345678-1234-4678-9234-567812345678",
                          "grpc_keepalive_time_ms": "30000"})),
])
def test_a_well_formed_address_is_read_as_pyspark_reads_it(client_env, url, expected):
    from pyspark.sql.connect.client import DefaultChannelBuilder

    assert connect.address(url) == expected
    builder = DefaultChannelBuilder(url)
    assert builder.endpoint == f"{expected[0]}:{expected[1]}"
    assert {k: builder.get(k) for k in expected[2]} == expected[2]


def test_pysparks_own_local_server_is_no_address():
    assert all(connect.is_local_master(m) for m in ("local", "local[2]", "local[*]", "local[4,2]",
                                                     "local-cluster[2, 1, 1024]"))
    assert not any(connect.is_local_master(m) for m in ("localhost", "localhost:15002", "local[0]",
                                                         "local[x]", "sc://local"))


# Fake servers, each on 127.0.0.1 and a port of its own, alive while the module's tests run.

def _listening(serve) -> int:
    """A TCP server whose every connection goes to `serve(connection)`; its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def accept():
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def _silent(connection):
    time.sleep(120)  # accepts and says nothing, as a half-dead proxy would
    connection.close()


def _http(connection):
    connection.recv(65536)
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    connection.close()


def _retry_later(context):
    """UNAVAILABLE with gRPC's RetryInfo: the server asks its client to call again later."""
    from google.protobuf import any_pb2, duration_pb2
    from google.rpc import code_pb2, error_details_pb2, status_pb2
    from grpc_status import rpc_status

    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=5)))
    context.abort_with_status(rpc_status.to_status(status_pb2.Status(
        code=code_pb2.UNAVAILABLE, message="cluster starting", details=[detail])))


@pytest.fixture(scope="module")
def fake_servers():
    import grpc
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    class Connect(base_pb2_grpc.SparkConnectServiceServicer):
        """Answers the check's calls as a Connect server does, and remembers them."""
        calls = []

        def AnalyzePlan(self, request, context):
            headers = dict(context.invocation_metadata())
            self.calls.append(("AnalyzePlan", request.session_id, headers))
            if headers.get("x-test") == "retry-later":  # as a platform whose cluster starts
                _retry_later(context)
            return base_pb2.AnalyzePlanResponse(session_id=request.session_id,
                                                spark_version=base_pb2.AnalyzePlanResponse.SparkVersion(version="4.3.0"))

        def ReleaseSession(self, request, context):
            self.calls.append(("ReleaseSession", request.session_id, {}))
            return base_pb2.ReleaseSessionResponse(session_id=request.session_id)

    bare = grpc.server(futures.ThreadPoolExecutor(2))  # gRPC, without Spark Connect's service
    bare_port = bare.add_insecure_port("127.0.0.1:0")
    answering = grpc.server(futures.ThreadPoolExecutor(2))
    base_pb2_grpc.add_SparkConnectServiceServicer_to_server(Connect(), answering)
    answering_port = answering.add_insecure_port("127.0.0.1:0")
    bare.start()
    answering.start()
    yield {"silent": _listening(_silent), "closing": _listening(lambda c: c.close()),
           "http": _listening(_http), "grpc": bare_port, "connect": answering_port,
           "calls": Connect.calls}
    bare.stop(None)
    answering.stop(None)


@pytest.mark.parametrize("server,params,says", [
    ("silent", "", "nothing answered within 2 s"),
    ("silent", f"/;token={SECRET}", "nothing answered within 2 s"),
    ("closing", "", "the connection failed: "),
    ("http", "", "an HTTP server answers there, not a gRPC one"),
    ("http", "/;use_ssl=true", "Tls handshake failed"),
    ("grpc", "", "a gRPC server without Spark Connect's service answers there"),
    ("grpc", f"/;token={SECRET}", "Tls handshake failed (TSI_PROTOCOL_FAILURE): a token (in the address"),
])
def test_something_else_than_a_connect_server_is_one_line_exit_17_within_seconds(
        client_env, fake_servers, tmp_path, capsys, server, params, says):
    client_env.setattr(connect, "ANSWER_SECONDS", 2)
    port = fake_servers[server]
    code, errors, err = run_cli(client_env, f"sc://127.0.0.1:{port}{params}", tmp_path / "out", capsys)
    assert code == SparkUnreachableError.exit_code == 17, err
    assert len(errors) == 1 and "Traceback" not in err, err
    assert errors[0].startswith(f"bleu-spark: error: no Spark Connect server answers at 127.0.0.1:{port} (")
    assert says in errors[0]
    assert errors[0].endswith("): check SPARK_REMOTE, spark.remote or --remote")
    assert SECRET not in err and not (tmp_path / "out").exists()
    assert "Handshake failed" not in err  # gRPC's own log lines kept off the console


def test_a_token_from_the_environment_against_a_plaintext_server_is_exit_17(
        client_env, fake_servers, tmp_path, capsys):
    """pyspark takes a token from SPARK_CONNECT_AUTHENTICATE_TOKEN too, and with it TLS."""
    client_env.setattr(connect, "ANSWER_SECONDS", 2)
    client_env.setenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", SECRET)
    code, errors, err = run_cli(client_env, f"sc://127.0.0.1:{fake_servers['grpc']}", tmp_path / "out", capsys)
    assert code == 17 and len(errors) == 1 and "Tls handshake failed" in errors[0], err
    assert SECRET not in err


def test_a_malformed_spark_remote_of_spark_defaults_is_named_as_such(client_env, tmp_path, capsys):
    (tmp_path / "spark-defaults.conf").write_text(f"spark.remote sc://h:15002;token={SECRET}\n")
    client_env.setenv("SPARK_CONF_DIR", str(tmp_path))
    client_env.delenv("SPARK_REMOTE", raising=False)
    code = cli.main(["score", "--input", SAMPLE, "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines()[-1] == (
        "bleu-spark: error: spark.remote is not a Spark Connect address: it has parameters without "
        "a slash before them; give sc://HOST:PORT, parameters after a slash: sc://HOST:PORT/;token=...")
    assert SECRET not in err


@pytest.mark.parametrize("remote,says", [
    ("http://h:15002", "spark.remote is not a Spark Connect address: it does not start with sc:// ('http://')"),
    ("localhost:15002", "spark.remote is not a Spark Connect address: it does not start with sc:// ('localhost:')"),
    ("", "spark-submit started for Spark Connect without a server to connect to"),
])
def test_spark_submits_remote_that_is_no_address_is_said_so(client_env, remote, says):
    """spark-submit's settings for a Connect run (PYSPARK_REMOTE_INIT_CONF_*) with an address
    pyspark cannot read: that address's fault, not a missing server's."""
    import json

    from bleu_spark.spark import runtime

    client_env.setenv("PYSPARK_REMOTE_INIT_CONF_LEN", "1")
    client_env.setenv("PYSPARK_REMOTE_INIT_CONF_0", json.dumps({"spark.remote": remote,
                                                                "spark.api.mode": "connect"}))
    with pytest.raises(UsageError) as raised:
        runtime.connect_settings()
    assert str(raised.value).startswith(says)


def test_a_server_that_answers_passes_and_its_check_leaves_no_session(client_env, fake_servers):
    """The check's call is the client's (its token header), and the session the check opened
    is released; a session the address names is the run's, and is left open."""
    calls, port = fake_servers["calls"], fake_servers["connect"]
    calls.clear()
    connect.check_server(f"sc://127.0.0.1:{port}/;x-team=mt")
    (analyze, opened, headers), (release, released, _) = calls
    assert (analyze, release) == ("AnalyzePlan", "ReleaseSession") and opened == released
    assert headers["x-team"] == "mt"
    calls.clear()
    named = str(uuid.uuid4())
    connect.check_server(f"sc://127.0.0.1:{port}/;session_id={named}")
    assert [(name, session) for name, session, _ in calls] == [("AnalyzePlan", named)]


def test_a_server_that_asks_to_call_later_is_left_to_pysparks_retries(client_env, fake_servers):
    """UNAVAILABLE with RetryInfo comes from a server that is there (a cluster starting): not
    refused, while UNAVAILABLE from a port that closes at once is."""
    connect.check_server(f"sc://127.0.0.1:{fake_servers['connect']}/;x-test=retry-later")
    with pytest.raises(SparkUnreachableError, match="the connection failed"):
        connect.check_server(f"sc://127.0.0.1:{fake_servers['closing']}")


def test_the_worker_check_ships_its_function_by_value():
    """The function runs where bleu_spark cannot be imported: its pickle names no module of it."""
    from pyspark import cloudpickle

    pickled = cloudpickle.dumps(connect._by_value(connect._report_from_worker))
    assert b"bleu_spark.spark" not in pickled
    assert b"bleu_spark.spark" in cloudpickle.dumps(connect._report_from_worker)


# A real Connect server whose Python workers start each task afresh (no daemon, no reuse), so
# that what they can import is switched between runs by the file `mode` that a sitecustomize
# on their path reads as each starts: `missing` takes this checkout and its editable install
# off their path, `old` puts an older bleu_spark first on it, `broken` ends the worker as it
# starts, `same` leaves them as they are.

SITECUSTOMIZE = '''import os, sys
here = os.path.dirname(os.path.abspath(__file__))
mode = open(os.path.join(here, "mode")).read().strip()
if mode == "missing":
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "__module__", "").startswith("__editable__")]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != {root!r}]
elif mode == "old":
    sys.path.insert(0, os.path.join(here, "old"))
elif mode == "broken":  # a worker that cannot start at all
    os._exit(3)
'''


@pytest.fixture(scope="module")
def switchable_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("workers")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(root=ROOT))
    (folder / "old" / "bleu_spark").mkdir(parents=True)
    (folder / "old" / "bleu_spark" / "__init__.py").write_text('__version__ = "0.0.9"\n')
    (folder / "mode").write_text("same")
    conf = {"spark.python.use.daemon": "false", "spark.python.worker.reuse": "false",
            "spark.connect.authenticate.token": SERVER_TOKEN}
    with connect_server(tmp_path_factory.mktemp("switchable"),
                        extra_env={"PYTHONPATH": f"{folder}:{ROOT}"}, conf=conf) as url:
        port = url.rsplit(":", 1)[1]
        # pyspark sends a token to `localhost` without TLS (gRPC's local credentials)
        yield f"sc://localhost:{port}/;token={SERVER_TOKEN}", port, folder / "mode"


def _client(url: str, output):
    env = {**clean_env(), "SPARK_REMOTE": url, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", SAMPLE,
                           "--output", str(output)], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.connect
@pytest.mark.parametrize("mode,says", [
    ("missing", "cannot import bleu_spark (ModuleNotFoundError: No module named 'bleu_spark'): "
                f"install bleu-spark {__version__} where they run, as the client's"),
    ("old", f"have bleu-spark 0.0.9, this client {__version__}: install the same version on both sides"),
    ("broken", "could not run a task ("),
])
def test_server_workers_without_this_bleu_spark_are_one_line_exit_19(
        switchable_server, tmp_path, mode, says):
    url, _, switch = switchable_server
    switch.write_text(mode)
    result = _client(url, tmp_path / "out")
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert result.returncode == WorkerPackageError.exit_code == 19, result.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert errors[0].startswith("bleu-spark: error: the Spark Connect server's Python workers ")
    assert says in errors[0] and (mode == "broken" or f"workers ({sys.executable}) " in errors[0])
    assert not (tmp_path / "out").exists()


@pytest.mark.connect
def test_server_workers_with_this_bleu_spark_score_and_a_token_it_refuses_is_exit_17(
        switchable_server, tmp_path):
    """The same server with the workers' own package runs the job. Without its token, or with
    another, it refuses the client: one line, at once, the token not shown. A token to
    127.0.0.1 (not `localhost`) makes the client use TLS, which this server does not speak."""
    url, port, switch = switchable_server
    switch.write_text("same")
    result = _client(url, tmp_path / "out")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "out" / "scores.json").is_file()
    for address, says in [
            (f"sc://localhost:{port}", f"the Spark Connect server at localhost:{port} refuses this "
                                       f"client (UNAUTHENTICATED: No authentication token provided)"),
            (f"sc://localhost:{port}/;token={SECRET}", "refuses this client (UNAUTHENTICATED: Invalid"),
            (f"sc://127.0.0.1:{port}/;token={SERVER_TOKEN}", "(Tls handshake failed")]:
        result = _client(address, tmp_path / "refused")
        errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
        assert result.returncode == SparkUnreachableError.exit_code, result.stderr[-3000:]
        assert len(errors) == 1 and says in errors[0], result.stderr[-3000:]
        assert SECRET not in result.stderr and SERVER_TOKEN not in result.stderr
        assert not (tmp_path / "refused").exists()

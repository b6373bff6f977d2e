"""A Spark Connect server's address, the server and its Python workers, checked before a run
uses them, each failure one line: an address pyspark would refuse, or read otherwise than it
is written, is exit 2; a server that does not answer as Spark Connect's within seconds is exit
17 (pyspark's client retries for minutes, and waits without end on a port that accepts and
says nothing); Python workers that cannot import this version of bleu_spark are exit 19,
before any task of the run fails on it with a traceback."""
from __future__ import annotations

import os
import re
import socket
import urllib.parse
import uuid
from typing import Dict, NamedTuple, Optional

from ...errors import SparkUnreachableError, UsageError, WorkerPackageError

FORM = "sc://HOST:PORT, parameters after a slash: sc://HOST:PORT/;token=..."
DEFAULT_PORT = 15002
CONNECT_SECONDS = 10
# A server's first answer makes its session: a busy server's may take a while, a port where no
# Connect server listens never gives one.
ANSWER_SECONDS = 30
# What pyspark starts a Connect server of its own for, on that master (`SPARK_REMOTE=local[2]`).
LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9]\d*)(,\s*[1-9]\d*)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]")
HOST = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})")
BOOLEAN = re.compile(r"(?i)true|false")
POSITIVE = re.compile(r"[1-9]\d{0,9}")
# Parameters pyspark reads; any other is sent as a gRPC header, whose names are lowercase.
KNOWN = {"token": None, "user_id": None, "user_agent": None, "session_id": None,
         "use_ssl": BOOLEAN, "grpc_keepalive_enabled": BOOLEAN,
         "grpc_keepalive_without_calls": BOOLEAN, "grpc_keepalive_time_ms": POSITIVE,
         "grpc_keepalive_timeout_ms": POSITIVE}
HEADER = re.compile(r"[a-z0-9_.-]+")


class Address(NamedTuple):
    host: str   # as gRPC takes it: an IPv6 address in brackets
    port: int
    params: Dict[str, str]


def origin() -> str:
    """Where the address came from, for messages: the variable wins over spark.remote."""
    return "SPARK_REMOTE" if "SPARK_REMOTE" in os.environ else "spark.remote"


def is_local_master(url: str) -> bool:
    """`local`, `local[N]`, ...: pyspark starts a server of its own on that master."""
    return LOCAL_MASTER.fullmatch(url) is not None


def address(url: str) -> Address:
    """The parts of an `sc://` address, or a UsageError naming what is wrong (never a
    parameter's value, which may be a token)."""
    if not url.startswith("sc://"):
        shown = "is empty" if not url else f"does not start with sc:// ({_scheme(url)})"
        _malformed(shown)
    if "?" in url or "#" in url:  # pyspark's parser would drop what follows
        _malformed("holds '?' or '#' (write them %3F and %23 in a parameter's value)")
    netloc, _, rest = url[len("sc://"):].partition("/")
    if ";" in netloc:
        _malformed("has parameters without a slash before them")
    if "@" in netloc:  # pyspark ignores a user or password there
        _malformed("names a user or password before the host (give ;user_id=... or ;token=...)")
    host, port = _host_and_port(netloc)
    if rest and not rest.startswith(";"):
        _malformed("has a path after the host, which a Connect address has none of "
                   "(its parameters begin with ';')")
    return Address(host, port, _params(rest[1:]) if rest else {})


def _scheme(url: str) -> str:
    scheme = re.match(r"[^/;@:]*:?/{0,2}", url)[0]
    return f"'{scheme[:20]}'" if scheme else "nothing before the host"


def _malformed(detail: str):
    raise UsageError(f"{origin()} is not a Spark Connect address: it {detail}; give {FORM}")


def _host_and_port(netloc: str):
    if not netloc or netloc.startswith(":"):
        _malformed("has no host")
    match = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::(.*))?", netloc)
    host, port = (match[1], match[2]) if match else (netloc, None)
    if not match or not host.startswith("[") and not HOST.fullmatch(host):
        _malformed(f"has a host that is not a name or address ({host[:40]!r})")
    if port is None:
        return host, DEFAULT_PORT
    if not re.fullmatch(r"\d{1,5}", port) or not 0 < int(port) < 65536:
        _malformed(f"has a port that is not a number from 1 to 65535 ({port[:20]!r})")
    return host, int(port)


def _params(text: str) -> Dict[str, str]:
    params = {}
    for number, part in enumerate(text.split(";"), 1):
        key, equals, value = part.partition("=")
        if not key or not equals or "=" in value:
            _malformed(f"has a parameter (number {number}) that is not key=value "
                       f"(an '=' in a value is written %3D)")
        if key in params:
            _malformed(f"gives the parameter {_shown(key)} twice")
        params[key] = _value(key, urllib.parse.unquote(value))
    return params


def _value(key: str, value: str) -> str:
    if key not in KNOWN and (not HEADER.fullmatch(key) or key.endswith("-bin")
                             or key.startswith("grpc-")):
        _malformed(f"has a parameter pyspark does not know and cannot send as a header "
                   f"({_shown(key)}; it knows {', '.join(KNOWN)})")
    if not value or not _printable(value):  # a gRPC header's value
        _malformed(f"gives the parameter {_shown(key)} an empty value or one with other "
                   f"characters than printable ASCII")
    rule = KNOWN.get(key)
    if rule is not None and not rule.fullmatch(value):
        kind = "true or false" if rule is BOOLEAN else "a whole number of milliseconds"
        _malformed(f"gives {key} a value that is not {kind}")
    if key == "session_id":
        try:
            uuid.UUID(value)
        except ValueError:
            _malformed("gives session_id a value that is not a UUID")
    if key == "user_agent" and len(urllib.parse.quote(value)) > 2048:
        _malformed("gives user_agent a value longer than 2048 characters once escaped")
    return value


def _printable(text: str) -> bool:
    return all(" " <= c <= "~" for c in text)


def _shown(key: str) -> str:
    return repr(key[:40]) if _printable(key) else "a name with other characters"


def check_server(url: str) -> None:
    """The server of an `sc://` address answers a Spark Connect call within ANSWER_SECONDS of
    connecting, or the run stops with one line: nothing listens, something else listens (an
    HTTP server, a port that accepts and says nothing or closes at once), or the address asks
    for TLS (a token or use_ssl=true) from a server without it."""
    where = address(url)
    _connects(where, CONNECT_SECONDS)
    _answers(url, where, ANSWER_SECONDS)


def _unreachable(where: Address, reason: str):
    raise SparkUnreachableError(f"no Spark Connect server answers at {where.host}:{where.port} "
                                f"({reason}): check SPARK_REMOTE, spark.remote or --remote")


def _connects(where: Address, seconds: float) -> None:
    """A TCP connection first: its failure says why in the system's words (refused, a name
    that does not resolve), which gRPC's own retries would hide."""
    try:
        socket.create_connection((where.host.strip("[]"), where.port), timeout=seconds).close()
    except OSError as exc:
        _unreachable(where, exc.strerror or type(exc).__name__)


def _answers(url: str, where: Address, seconds: float) -> None:
    """One call a Spark Connect server answers at once (its Spark version), with a deadline:
    pyspark's own calls have none. Made with pyspark's channel for the address, so the TLS,
    token and headers are the client's."""
    import grpc
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    builder = DefaultChannelBuilder(url)
    channel = builder.toChannel()
    try:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        request = base_pb2.AnalyzePlanRequest(session_id=builder.session_id or str(uuid.uuid4()),
                                              client_type=builder.userAgent)
        request.user_context.user_id = builder.userId or os.getenv("SPARK_USER", os.getenv("USER", ""))
        request.spark_version.SetInParent()
        try:
            stub.AnalyzePlan(request, metadata=builder.metadata(), timeout=seconds)
        except grpc.RpcError as exc:
            _refused_credentials(where, exc, builder.token)
            reason = _refusal(exc, seconds)
            if reason:
                _unreachable(where, reason)
            return
        if builder.session_id is None:  # the check's own session, not left on the server
            _release(stub, request, builder.metadata(), seconds)
    finally:
        channel.close()


def _release(stub, request, metadata, seconds: float) -> None:
    import grpc
    from pyspark.sql.connect.proto import base_pb2

    release = base_pb2.ReleaseSessionRequest(session_id=request.session_id,
                                             user_context=request.user_context,
                                             client_type=request.client_type)
    try:
        stub.ReleaseSession(release, metadata=metadata, timeout=seconds)
    except grpc.RpcError:  # an older server without the call: the session times out there
        pass


def _refused_credentials(where: Address, exc, token: Optional[str]) -> None:
    """A Connect server that answers, and refuses the token (none, or another than its own);
    its words without the token, should it repeat it."""
    import grpc

    if exc.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        said = " ".join((exc.details() or "").split())
        said = said.replace(token, "...") if token else said
        raise SparkUnreachableError(
            f"the Spark Connect server at {where.host}:{where.port} refuses this client "
            f"({exc.code().name}: {said[:200]}): check the token of SPARK_REMOTE, spark.remote "
            f"or --remote, or SPARK_CONNECT_AUTHENTICATE_TOKEN")


def _refusal(exc, seconds: float) -> Optional[str]:
    """Why a failed call means no Spark Connect server; None where a server asks the client to
    wait (a cluster starting), which pyspark's retries are for."""
    import grpc
    from pyspark.sql.connect.client.retries import extract_retry_info

    code, details = exc.code(), " ".join((exc.details() or "").split())
    last = re.sub(r"^.*last error: (\w+: )?(ipv[46]:\S+: )?", "", details)[:200]
    if extract_retry_info(exc) is not None:
        return None
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"nothing answered within {seconds:g} s"
    if "handshake" in details.lower():
        return (f"{last.split(':')[0]}: a token (in the address or SPARK_CONNECT_AUTHENTICATE_TOKEN) "
                f"or use_ssl=true makes the client use TLS, which the server there does not speak "
                f"or with a certificate not trusted")
    if "http1" in details or "HTTP/2" in details:
        return "an HTTP server answers there, not a gRPC one"
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return "a gRPC server without Spark Connect's service answers there"
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"the connection failed: {last}"
    return f"{code.name}: {last}"


def check_workers(spark) -> None:
    """The server's Python workers import bleu_spark, of this client's version, or the run
    stops with one line before its first task: one small job, its function shipped by value
    so that it runs where bleu_spark is missing too."""
    import json

    from pyspark.sql import functions as F

    from ...version import __version__

    probe = F.udf(_by_value(_report_from_worker), "string")
    try:
        found = json.loads(spark.range(0, 1, 1, 1).select(probe()).first()[0])
    except Exception as exc:  # the worker itself failed: its Python, its pyspark
        raise WorkerPackageError(f"the Spark Connect server's Python workers could not run a "
                                 f"task ({_worker_failure(exc)})") from None
    where = f"the Spark Connect server's Python workers ({found['python']})"
    if found["error"]:
        raise WorkerPackageError(f"{where} cannot import bleu_spark ({found['error']}): install "
                                 f"bleu-spark {__version__} where they run, as the client's")
    if found["version"] != __version__:
        raise WorkerPackageError(f"{where} have bleu-spark {found['version']}, this client "
                                 f"{__version__}: install the same version on both sides")


def _report_from_worker() -> str:  # runs in a Python worker, shipped by value (`_by_value`)
    import json
    import sys

    try:
        import bleu_spark

        version, error = getattr(bleu_spark, "__version__", "of no version"), None
    except Exception as exc:  # not installed, or an install that fails as it loads
        version, error = None, f"{type(exc).__name__}: {exc}"
    return json.dumps({"version": version, "error": error, "python": sys.executable})


def _by_value(function):
    """A copy of `function` outside any module, which cloudpickle therefore ships as code, not
    as a name to import from bleu_spark in the worker."""
    import types

    return types.FunctionType(function.__code__, {"__builtins__": __builtins__,
                                                  "__name__": "worker_check_by_value"})


def _worker_failure(exc: Exception) -> str:
    """The line of a worker's failure that says what it was: pyspark's error class line, or
    the last line of the worker's traceback, else the first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"(\w+(Error|Exception): |\[[A-Z_]+\])", line)]
    return ((named or lines or [type(exc).__name__])[-1 if named else 0])[:300]

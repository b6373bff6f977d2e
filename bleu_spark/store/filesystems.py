"""Where an output's path lives: a local disk, or S3 through pyarrow's S3FileSystem.

`s3://`, `s3a://` and `s3n://` all name S3 (the last two are how Spark users spell it). The
driver's S3 client takes its endpoint, region, path style and credentials from the standard AWS
variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` or
`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL`), and, set over them, from the run's Spark settings
`spark.hadoop.fs.s3a.*` (`configure`), so a platform's spark-defaults or `--conf` reach it too.
The tasks get all of it, whichever place gave it (`settings`): their processes may have neither.
Other schemes go to pyarrow's own `FileSystem.from_uri` (hdfs://, gs://, abfs:// as far as the
installed pyarrow was built with them). A path that starts like a URI (`word:`) must be a whole one
(`check_uri`): `s3a:/bucket/x` is refused, never written as a local folder `s3a:`.
"""
from __future__ import annotations

import os
import re
from typing import Dict, Optional

import pyarrow as pa
import pyarrow.fs as pafs

from ..errors import OutputError, UsageError

S3_SCHEMES = ("s3", "s3a", "s3n")
# spark.hadoop.fs.s3a.<key> -> what it sets on pyarrow's S3FileSystem
_SPARK_S3A = {"endpoint": "endpoint", "endpoint.region": "region", "path.style.access": "path_style",
              "access.key": "access_key", "secret.key": "secret_key", "session.token": "session_token",
              "connection.ssl.enabled": "ssl"}
_configured: Dict[str, str] = {}
# A URI's scheme as RFC 3986 spells it: a path starting so is taken for a URI by Spark and Hadoop.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.S)
# Schemes whose empty authority means something: `file:///x`, `hdfs:///x` (the default namenode).
_EMPTY_AUTHORITY = ("file", "hdfs", "viewfs")


def check_uri(what: str, uri: str) -> None:
    """A path that starts like a URI (`word:`) is a whole one, `scheme://authority/path`, with the
    bucket or host its scheme needs. Else (`s3a:/b/x`, `s3:b/x`, `s3a://`, `s3:///x`) it would be
    written as a local folder named `s3a:` while reading like S3, or fail deep in a client."""
    match = _SCHEME.match(uri)
    if match is None:
        return
    scheme, rest = match[1], match[2]
    authority, _, path = rest[2:].partition("/") if rest.startswith("//") else (None, "", "")
    if scheme.lower() == "file":
        bad = authority != "" or not path
    else:
        bad = authority is None or (not authority and scheme.lower() not in _EMPTY_AUTHORITY)
    if bad:
        form = "file:///absolute/path" if scheme.lower() == "file" else f"{scheme}://bucket-or-host/path"
        raise UsageError(f"{what} {uri!r} starts like a URI but is not one: write {form}, or "
                         f"./{uri} for a local path whose first name holds ':'")


def configure(spark_settings: Dict[str, str]) -> None:
    """The run's Spark settings (spark-defaults, --conf): the `spark.hadoop.fs.s3a.*` ones are
    kept for this process's S3 client, over the AWS variables."""
    _configured.clear()
    _configured.update(s3a_settings(spark_settings))


def s3a_settings(spark_settings: Dict[str, str]) -> Dict[str, str]:
    prefix = "spark.hadoop.fs.s3a."
    return {_SPARK_S3A[k[len(prefix):]]: v for k, v in spark_settings.items()
            if k.startswith(prefix) and k[len(prefix):] in _SPARK_S3A}


# What the driver's S3 client takes from the AWS variables when the Spark settings give nothing.
_AWS_VARIABLES = {"endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
                  "region": ("AWS_REGION", "AWS_DEFAULT_REGION")}
_AWS_KEYS = {"access_key": "AWS_ACCESS_KEY_ID", "secret_key": "AWS_SECRET_ACCESS_KEY",
             "session_token": "AWS_SESSION_TOKEN"}


def settings() -> Dict[str, str]:
    """Everything this process's S3 client is built from, wherever it came from (the run's Spark
    settings over the AWS variables): handed to the tasks, whose processes may have none of
    them (a Spark Connect server's executors, a cluster's)."""
    resolved = dict(_configured)
    for key, names in _AWS_VARIABLES.items():
        found = next((os.environ[n] for n in names if os.environ.get(n)), None)
        if key not in resolved and found:
            resolved[key] = found
    # Keys go together: a session token of the variables never joins the settings' keys.
    if not (resolved.get("access_key") and resolved.get("secret_key")):
        keys = {k: os.environ.get(n) for k, n in _AWS_KEYS.items()}
        if keys["access_key"] and keys["secret_key"]:
            resolved.update({k: v for k, v in keys.items() if v})
    return resolved


def s3_options(given: Optional[Dict[str, str]] = None) -> dict:
    """Keyword arguments of pyarrow's S3FileSystem from the AWS variables and the settings."""
    given = _configured if given is None else given
    endpoint = (given.get("endpoint") or os.environ.get("AWS_ENDPOINT_URL_S3")
                or os.environ.get("AWS_ENDPOINT_URL"))
    options: dict = {}
    region = given.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        ssl = given.get("ssl", "true").lower() != "false"
        options["endpoint_override"] = host.rstrip("/")
        options["scheme"] = scheme or ("https" if ssl else "http")
    if given.get("access_key") and given.get("secret_key"):
        options.update(access_key=given["access_key"], secret_key=given["secret_key"])
        if given.get("session_token"):
            options["session_token"] = given["session_token"]
    # Hadoop's path.style.access=false is virtual-host addressing; pyarrow's default is path style.
    if given.get("path_style", "").lower() == "false":
        options["force_virtual_addressing"] = True
    return options


def is_s3(uri: str) -> bool:
    return uri.split("://", 1)[0].lower() in S3_SCHEMES if "://" in uri else False


def filesystem(uri: str, given: Optional[Dict[str, str]] = None):
    """(file system, path in it) of `uri`: a local path, `file://`, S3 or another pyarrow scheme.
    `given`: the settings of the driver that planned the run (executors have no Spark conf)."""
    check_uri("path", uri)
    if is_s3(uri):
        path = uri.split("://", 1)[1]
        try:
            return pafs.S3FileSystem(**s3_options(given)), path.rstrip("/") or path
        except (pa.ArrowInvalid, OSError) as exc:
            raise OutputError(f"output {uri}: no S3 client here ({str(exc).splitlines()[0]})") from None
    if "://" in uri and not uri.startswith("file://"):
        try:
            return pafs.FileSystem.from_uri(uri)
        except (pa.ArrowInvalid, OSError) as exc:
            raise OutputError(f"output {uri}: no file system for its scheme here "
                              f"({str(exc).splitlines()[0]})") from None
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    return pafs.LocalFileSystem(), os.path.abspath(path)


def is_local(fs) -> bool:
    return isinstance(fs, pafs.LocalFileSystem)

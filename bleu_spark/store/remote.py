"""An input on an object store, read with pyarrow's file systems: listed as Spark lists a path
(a file, a folder read whole, a glob; files Spark does not read as data left out), its Parquet
footers read in parallel, every failure one line (exit 3) within seconds.

`s3://`, `s3a://` and `s3n://` take the settings the output takes (`filesystems.py`: the AWS
variables, `spark.hadoop.fs.s3a.*`); `gs://` and `abfs://`/`abfss://` take what pyarrow's own
`FileSystem.from_uri` takes (their usual environment), where the installed pyarrow has them.
Anything else (`hdfs://`, `viewfs://`, a scheme of a Hadoop connector) is Spark's to read.
The tasks rebuild the file system from `Remote.fs_settings` (`Remote.filesystem`): their
processes may have neither the variables nor the Spark settings (a cluster's executors, a
Spark Connect server's).
"""
from __future__ import annotations

import fnmatch
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import InputNotFoundError
from .filesystems import S3_SCHEMES, check_uri, s3_options, settings

# The file systems pyarrow may have, by the schemes users write (pyarrow's own names differ).
_PYARROW_SCHEMES = {**{s: "S3FileSystem" for s in S3_SCHEMES}, "gs": "GcsFileSystem",
                    "gcs": "GcsFileSystem", "abfs": "AzureFileSystem", "abfss": "AzureFileSystem"}
FOOTER_THREADS = 32          # footers read at once: a folder of thousands is not a GET after another
# An input's client gives up in seconds: a wrong endpoint or a missing bucket is one line, not a
# retry loop (the AWS SDK's own connect timeout is 1 s; its retries are the standard three).
_CONNECT_SECONDS, _REQUEST_SECONDS, _ATTEMPTS = 3, 20, 3
# Characters a path component reads as a pattern (as for a local glob).
_MAGIC = re.compile(r"[*?\[]")


def scheme_of(uri: str) -> str:
    return uri.split("://", 1)[0].lower() if "://" in uri else ""


def spark_only(uri: str) -> Optional[str]:
    """Why a remote input is read by Spark's scan (its scheme has no pyarrow file system here);
    None when pyarrow reads it."""
    scheme = scheme_of(uri)
    if scheme in ("", "file"):
        return None
    name = _PYARROW_SCHEMES.get(scheme)
    if name is None:
        return f"a {scheme}:// input is read through Spark's file systems (pyarrow reads s3, gs, abfs)"
    if not hasattr(pafs, name):
        return f"this pyarrow was built without {name}: a {scheme}:// input is read by Spark's scan"
    return None


def is_remote(uri: str) -> bool:
    """An object-store input that pyarrow reads here."""
    return scheme_of(uri) not in ("", "file") and spark_only(uri) is None


@dataclass(frozen=True)
class Remote:
    """A remote input listed: its files (paths in its file system, `bucket/key`), their sizes,
    and the folder its Hive partition folders start in (None: no partition folders)."""
    uri: str
    scheme: str
    fs_settings: Tuple[Tuple[str, str], ...]
    files: Tuple[str, ...]
    sizes: Tuple[int, ...]
    base: Optional[str] = None

    def filesystem(self):
        return input_filesystem(self.scheme, self.fs_settings)

    def uri_of(self, path: str) -> str:
        """A file as Spark names it (`s3a://bucket/key`)."""
        return f"{self.scheme}://{path}"


@lru_cache(maxsize=8)
def input_filesystem(scheme: str, fs_settings: Tuple[Tuple[str, str], ...]):
    """One client a process for the scheme and settings (a worker reads many pieces)."""
    if scheme in S3_SCHEMES:
        return pafs.S3FileSystem(**s3_options(dict(fs_settings)), connect_timeout=_CONNECT_SECONDS,
                                 request_timeout=_REQUEST_SECONDS,
                                 retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=_ATTEMPTS))
    return pafs.FileSystem.from_uri(f"{scheme}://")[0]


def has_magic(uri: str) -> bool:
    return bool(_MAGIC.search(uri))


def fs_path(uri: str) -> str:
    return uri.split("://", 1)[1].rstrip("/")


def short(exc: BaseException) -> str:
    """A file system's error as a few words on one line (the AWS SDK's are long)."""
    text = " ".join(str(exc).split())
    found = re.search(r"AWS Error (\w+) during (\w+) operation: ([^(]*)", text)
    return (f"{found[1]}: {found[3].strip()}" if found else text)[:300]


def listed(uri: str, what: str = "input") -> Remote:
    """The data files `uri` names, as Spark lists them: itself when it exists (a file, or a
    folder read whole), else the files and folders its glob matches."""
    check_uri(what, uri)
    scheme = scheme_of(uri)
    given = tuple(sorted(settings().items())) if scheme in S3_SCHEMES else ()
    bucket = fs_path(uri).split("/", 1)[0]
    try:
        fs = input_filesystem(scheme, given)
        infos = _matches(fs, fs_path(uri))
        missing = not infos and fs.get_file_info(bucket).type == pafs.FileType.NotFound
    except (OSError, pa.ArrowException) as exc:
        raise InputNotFoundError(f"{what} {uri} cannot be listed: {short(exc)}") from None
    if missing:
        raise InputNotFoundError(f"{what} {uri}: there is no bucket {bucket} (or no right to see it)")
    files = [i for i in infos if i.type == pafs.FileType.File]
    if not files:
        raise InputNotFoundError(f"{what} path not found: {uri}" if not infos
                                 else f"{what} path holds no Parquet files: {uri}")
    return Remote(uri, scheme, given, tuple(i.path for i in files), tuple(i.size for i in files))


def _matches(fs, path: str) -> List[pafs.FileInfo]:
    itself = fs.get_file_info(path)
    if itself.type == pafs.FileType.File:
        return [itself]
    if itself.type == pafs.FileType.Directory:
        return _below(fs, path)
    if not _MAGIC.search(path):
        return []
    parts = path.split("/")
    fixed = next(i for i, p in enumerate(parts) if _MAGIC.search(p))
    root = "/".join(parts[:fixed])
    found = []
    for info in _below(fs, root, hidden_too=True):
        names = info.path.split("/")
        if len(names) < len(parts) or not all(fnmatch.fnmatchcase(n, p) for n, p in zip(names, parts)):
            continue
        matched, inside = names[len(parts) - 1], names[len(parts):]
        # A match is read as Spark reads it: a file itself, a folder whole (its hidden names left out).
        if not hidden(matched) and not any(hidden(n) for n in inside):
            found.append(info)
    return found


def _below(fs, folder: str, hidden_too: bool = False) -> List[pafs.FileInfo]:
    """The files below a folder, sorted, without those Spark does not read as data (one listing:
    an object store lists a prefix whole)."""
    infos = fs.get_file_info(pafs.FileSelector(folder, recursive=True))
    start = len(folder.rstrip("/")) + 1
    return sorted((i for i in infos if i.type == pafs.FileType.File
                   and (hidden_too or not any(hidden(n) for n in i.path[start:].split("/")))),
                  key=lambda i: i.path)


def hidden(name: str) -> bool:
    """Files and folders Spark does not read as data (its rule for file sources): `.crc`,
    `_SUCCESS`, `_temporary` (but a `_key=value` folder is a partition), copies in progress
    (`._COPYING_`), and Parquet's summary files (`_metadata`, `_common_metadata`)."""
    return ((name.startswith("_") and "=" not in name) or name.startswith(".")
            or name.endswith("._COPYING_"))


def footers(remote: Remote, what: str = "input") -> Dict[str, pq.FileMetaData]:
    """Every file's Parquet footer, read in parallel; a file that is not Parquet (or cannot be
    read) is exit 3 naming it."""
    fs = remote.filesystem()

    def footer(path):
        try:
            with fs.open_input_file(path) as handle:
                return path, pq.read_metadata(handle)
        except (OSError, pa.ArrowException) as exc:
            raise InputNotFoundError(f"{what} file {remote.uri_of(path)} is not readable Parquet: "
                                     f"{short(exc)}") from None

    with ThreadPoolExecutor(min(FOOTER_THREADS, len(remote.files)) or 1) as pool:
        return dict(pool.map(footer, remote.files))


# Spark's inference of a partition folder's type (`spark.sql.sources.partitionColumnTypeInference`),
# where it is sure: canonical integers, ISO dates, and text no reading of Spark's takes for a
# number, a date or a time. Anything else (01, 1.5, 1e3, NaN, 2026-1-1, 12:00) is undecided.
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_NUMBER_OR_TIME = re.compile(r"\s*[+-]?(NaN|Infinity|[0-9.])|.*[0-9][-:][0-9]")


def folder_type(values: Sequence[Optional[str]]) -> Optional[pa.DataType]:
    """The type Spark infers for a partition column from its folders' values (nulls aside),
    as Arrow names it; None when it may read them otherwise than these rules say."""
    import datetime

    given = [v for v in values if v is not None]
    if not given:
        return pa.string()
    if all(_INTEGER.fullmatch(v) for v in given):
        numbers = [int(v) for v in given]
        fits = lambda bits: all(-2**(bits - 1) <= n < 2**(bits - 1) for n in numbers)
        return pa.int32() if fits(32) else pa.int64() if fits(64) else None
    if all(_DATE.fullmatch(v) for v in given):
        try:
            [datetime.date.fromisoformat(v) for v in given]
        except ValueError:
            return None
        return pa.date32()
    if any(_NUMBER_OR_TIME.match(v) for v in given):
        return None
    return pa.string()

"""A class-data archive of the driver JVM (Java's CDS): the classes a run loads from Spark's
jars, saved once as the JVM lays them out in memory, so that a later JVM the console script
starts maps them instead of loading and checking thousands of classes. Measured, Spark alone
(the floor under every run) 1.2-1.8 s shorter than before the archive was made
(docs/benchmarks.md, "Tasks cut by rows, and the driver JVM's class-data archive").

Made once per Java, Spark install and JVM options, in the user's cache folder
(`BLEU_SPARK_CACHE_DIR`, else `$XDG_CACHE_HOME/bleu-spark`, else `~/.cache/bleu-spark`; the
`KEEP` used last are kept, older ones removed as a new one is made), by a
process of its own that a run which found none starts as it stops (`make_later`), so no run
waits for it: it runs a small job of its own (`bleu_spark/archive_run.py`, in a process of its
own again) in a JVM told to write the archive at exit
(`-XX:ArchiveClassesAtExit`, Java 13 and later), waits for that JVM to exit, checks a JVM starts
with the archive, and only then gives it its name. A JVM given a cut-short archive crashes as
it starts, so a run uses an archive only under its final name, which only a whole one gets.
An archive that no longer fits the JVM (another Java, other options, a Spark upgrade: all in
its name, and the JVM checks them itself) is left unused, quietly: its log lines are off.

`BLEU_SPARK_JVM_ARCHIVE=0` turns it off; options of the user's or platform's that name class
sharing (`-Xshare`, `-XX:SharedArchiveFile`, ...) are left alone, as is a JVM spark-submit starts.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

from ... import cache

SWITCH = "BLEU_SPARK_JVM_ARCHIVE"
# Options the user or platform may give that say how classes are shared: theirs to decide.
USER_SHARING = ("Xshare", "SharedArchiveFile", "ArchiveClassesAtExit", "SharedClassListFile",
                "DumpLoadedClassList", "AutoCreateSharedArchive")
QUIET = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]  # a JVM that cannot use an archive says so
STALE_LOCK_SECONDS = 600  # a maker that has not finished by then died
FAILED = ".failed"  # beside an archive that could not be made (a JVM without the option, a full disk)
RETRY_FAILED_SECONDS = 86_400  # tried again a day later: what stopped it may have passed
# Archives kept in the cache folder, those used last (each about 70 MB): a Java or Spark upgrade,
# other JVM options or another venv's pyspark each makes its own, and nothing else removes them.
KEEP = 3
# The small run's entry module, above the command line: run as a process, never imported here.
SMALL_RUN = "bleu_spark.archive_run"


def java() -> Optional[str]:
    """The java Spark's launcher runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.isfile(found) else None


def archive_path(java_options: str) -> Optional[str]:
    """Where the archive of this Java, Spark install and JVM options lives (it may not exist
    yet); None where there cannot be one."""
    from pyspark.find_spark_home import _find_spark_home

    binary = java()
    home = _find_spark_home()
    jars = os.path.join(home, "jars")
    if binary is None or not os.path.isdir(jars) or _folders_with_files_on_class_path(home):
        return None
    key = hashlib.sha256()
    for path in [binary, *sorted(os.path.join(jars, name) for name in os.listdir(jars))]:
        stat = os.stat(path)
        key.update(f"{os.path.realpath(path)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    key.update(" ".join(java_options.split()).encode())
    return os.path.join(cache.folder(), f"driver-{key.hexdigest()[:20]}.jsa")


def _folders_with_files_on_class_path(spark_home: str) -> List[str]:
    """The configuration folders Spark's launcher puts on the JVM's class path that hold files:
    Java archives no classes from a class path with such a folder (tried)."""
    folders = [os.environ.get("SPARK_CONF_DIR") or os.path.join(spark_home, "conf"),
               os.environ.get("HADOOP_CONF_DIR"), os.environ.get("YARN_CONF_DIR")]
    return [f for f in folders if f and os.path.isdir(f) and os.listdir(f)]


def jvm_options(java_options: str) -> tuple:
    """(options that map the archive into the JVM the console script starts, or none; the
    archive's path when there is none yet and this run should have it made as it stops)."""
    if os.environ.get(SWITCH) == "0" or any(name in java_options for name in USER_SHARING):
        return [], None
    try:
        path = archive_path(java_options)
    except OSError:
        return [], None
    if path is None or any(c.isspace() for c in path):  # Spark's launcher splits its options at spaces
        return [], None
    if os.path.isfile(path):
        _used(path)
        return _mapping(path, errors_here="ErrorFile" not in java_options), None
    return [], None if _failed_lately(path) else path


def _used(path: str) -> None:
    """The archive's time set to now: the pruning keeps those used last (an archive's own time
    is no part of what the JVM checks)."""
    try:
        os.utime(path)
    except OSError:  # a cache folder of another user's: it is theirs to prune
        pass


def prune(keep: str) -> None:
    """The cache folder's archives beyond the KEEP used last removed, never `keep` (just made).
    A JVM that has mapped one keeps its pages: removing it stops no run."""
    import glob

    folder = os.path.dirname(keep)
    archives = [p for p in glob.glob(os.path.join(glob.escape(folder), "driver-*.jsa")) if p != keep]

    def last_used(archive: str) -> float:
        try:
            return os.path.getmtime(archive)
        except OSError:  # removed meanwhile
            return 0.0
    for archive in sorted(archives, key=last_used, reverse=True)[KEEP - 1:]:
        try:
            os.unlink(archive)
        except OSError:  # removed meanwhile, or not this user's
            pass


def _failed_lately(path: str) -> bool:
    try:
        return time.time() - os.path.getmtime(path + FAILED) < RETRY_FAILED_SECONDS
    except OSError:  # none
        return False


def _mapping(path: str, errors_here: bool = True) -> List[str]:
    """The options that map the archive at `path`. A JVM crashing as it starts (an archive
    damaged since it was made) writes its report into the cache folder, not the user's working
    folder, unless the user's options say where."""
    errors = [f"-XX:ErrorFile={os.path.join(os.path.dirname(path), 'hs_err_pid%p.log')}"] if errors_here else []
    return [f"-XX:SharedArchiveFile={path}", *QUIET, *errors]


def set_aside() -> Optional[str]:
    """After a JVM did not start: the archive this process gave it taken out of its options and
    removed, if there was one; its path, to make it again."""
    options = os.environ.get("SPARK_SUBMIT_OPTS", "").split()
    mapped = [o for o in options if o.startswith("-XX:SharedArchiveFile=" + cache.folder())]
    if not mapped:
        return None  # none, or the user's own
    path = mapped[-1].split("=", 1)[1]
    try:
        os.unlink(path)
    except OSError:
        pass
    ours = set(_mapping(path))
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(o for o in options if o not in ours)
    return path


def make_later(path: str) -> None:
    """Starts the process that makes the archive at `path`, on its own (it outlives this one),
    unless another is making it, or the switch was turned off meanwhile (as a stop signal
    does). Nothing is said if it cannot: the run goes on without."""
    if os.environ.get(SWITCH) == "0":
        return
    lock = path + ".lock"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(lock) and time.time() - os.path.getmtime(lock) > STALE_LOCK_SECONDS:
            os.unlink(lock)
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:  # being made, or a cache folder this user cannot write
        return
    env = {**os.environ, SWITCH: "0"}
    try:
        subprocess.Popen([sys.executable, "-m", __name__, path, lock], env=env, cwd=tempfile.gettempdir(),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        os.unlink(lock)


def make(path: str) -> bool:
    """Makes the archive at `path` here and now: a small run in a JVM started as the console
    script starts it, told to write the archive as it exits; checked, then renamed into place.
    True if it was made."""
    _remove_dead_parts(path)
    part = f"{path}.{os.getpid()}.part"
    given = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join([given, f"-XX:ArchiveClassesAtExit={part}", *QUIET]).strip()
    os.environ["PYSPARK_SUBMIT_ARGS"] = on_this_machine(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    try:
        with tempfile.TemporaryDirectory(prefix="bleu-spark-archive-") as work:
            exit_code = _small_run(work)
        if exit_code == 0 and _starts_with(part):
            os.replace(part, path)
            prune(path)
            return True
        return False
    finally:
        if os.path.exists(part):
            os.unlink(part)


def on_this_machine(submit_args: str) -> str:
    """The user's spark-submit arguments for the small run, kept on this machine whatever master
    they name (spark-submit takes the last `--master`) and out of their event log: it is nobody's
    job, on any cluster or history server."""
    head = submit_args.strip()
    head = head[:-len("pyspark-shell")].strip() if head.endswith("pyspark-shell") else head
    return f"{head} --master local[1] --conf spark.eventLog.enabled=false pyspark-shell".strip()


def _remove_dead_parts(path: str) -> None:
    """The part files of makers killed before they finished (each about 70 MB, named by the
    maker's process id), removed."""
    import glob

    for part in glob.glob(glob.escape(path) + ".*.part"):
        pid = part[len(path) + 1:-len(".part")]
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            os.unlink(part)
        except (ValueError, OSError):
            pass  # not a maker's name, or a process of another user's: left alone


def _small_run(work: str) -> Optional[int]:
    """A run as a user's would be, on four rows, in a process of its own (`SMALL_RUN`, which
    starts the JVM this process's SPARK_SUBMIT_OPTS tell to write the archive, and waits while it
    exits): the JVM's exit code, None if the run did not end in time."""
    try:
        done = subprocess.run([sys.executable, "-m", SMALL_RUN, work], cwd=work,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=STALE_LOCK_SECONDS - 60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.returncode


def wait_for_jvm_exit() -> Optional[int]:
    """In the small run's process (`SMALL_RUN`), its run stopped: ends the JVM (its standard
    input closed, as when this process exits) and waits while it writes the archive: its exit
    code."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None) if gateway is not None else None
    if process is None:
        return None
    process.stdin.close()
    try:
        return process.wait(timeout=STALE_LOCK_SECONDS / 2)
    except subprocess.TimeoutExpired:
        process.kill()
        return None


def _starts_with(archive: str) -> bool:
    """Whether a JVM starts with this archive (a cut-short one crashes it)."""
    binary = java()
    if binary is None or not os.path.isfile(archive):
        return False
    # In a folder of its own: a JVM that crashes writes its report (hs_err_pid*.log) where it runs.
    with tempfile.TemporaryDirectory(prefix="bleu-spark-archive-check-") as folder:
        try:
            done = subprocess.run([binary, f"-XX:SharedArchiveFile={archive}", "-Xlog:disable", "-version"],
                                  cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0


def _behind_everything() -> None:
    """This process and its children (the JVM, its Python workers) run only on CPU nothing else
    wants (Linux's idle class; elsewhere the lowest priority): a run started meanwhile is not
    slowed."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


def main(argv: List[str]) -> int:
    path, lock = argv
    try:
        _behind_everything()
        try:
            made = make(path)
        except Exception:  # whatever it was, it would fail again the next time
            made = False
        if not made:
            open(path + FAILED, "w").close()
        return 0 if made else 1
    finally:
        if os.path.exists(lock):
            os.unlink(lock)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

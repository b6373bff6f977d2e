"""The driver JVM's class-data archive (`spark/runtime/jvm_archive.py`): used once made, made by
a process of its own when missing, one maker at a time, never used half-written, and left
alone where the user or platform says how classes are shared."""
import os
import shutil
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark.cache import ENV as CACHE_ENV
from bleu_spark.spark.runtime import jvm_archive
from bleu_spark.spark.runtime.jvm_archive import FAILED, QUIET, jvm_options, make_later


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(jvm_archive.SWITCH, raising=False)
    return tmp_path / "cache"


def test_a_run_maps_the_archive_once_made_and_has_it_made_while_missing(cache, monkeypatch):
    options, to_make = jvm_options("")
    assert options == [] and to_make and to_make.startswith(str(cache))
    assert jvm_archive.archive_path("-Xmx4g") != to_make      # other JVM options: another archive
    cache.mkdir()
    open(to_make + FAILED, "w").close()                       # could not be made here: not again
    assert jvm_options("") == ([], None)
    day_ago = time.time() - jvm_archive.RETRY_FAILED_SECONDS - 1
    os.utime(to_make + FAILED, (day_ago, day_ago))            # ... until a day later
    assert jvm_options("") == ([], to_make)
    os.unlink(to_make + FAILED)
    open(to_make, "w").close()
    crash_reports = f"-XX:ErrorFile={cache}/hs_err_pid%p.log"
    assert jvm_options("") == ([f"-XX:SharedArchiveFile={to_make}", *QUIET, crash_reports], None)
    theirs = jvm_archive.archive_path("-XX:ErrorFile=/their/crashes.log")    # the user's say on crash reports
    open(theirs, "w").close()
    assert jvm_options("-XX:ErrorFile=/their/crashes.log") == ([f"-XX:SharedArchiveFile={theirs}", *QUIET], None)
    # the user's or platform's own say on class sharing, or the switch: nothing added
    assert jvm_options("-Xshare:off") == ([], None)
    assert jvm_options("-XX:SharedArchiveFile=/their/own.jsa") == ([], None)
    monkeypatch.setenv(jvm_archive.SWITCH, "0")
    assert jvm_options("") == ([], None)
    monkeypatch.delenv(jvm_archive.SWITCH)
    monkeypatch.setenv(CACHE_ENV, str(cache / "a folder"))  # Spark's launcher would split it
    assert jvm_options("") == ([], None)


def test_none_where_a_configuration_folder_with_files_is_on_the_class_path(cache, monkeypatch, tmp_path):
    for variable in ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        monkeypatch.delenv(variable, raising=False)
    folder = tmp_path / "conf"
    folder.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(folder))
    assert jvm_options("")[1] is not None                     # an empty one is no hindrance
    (folder / "spark-defaults.conf").write_text("spark.master local[1]\n")
    assert jvm_options("") == ([], None)                      # Java would archive no class
    monkeypatch.delenv("SPARK_CONF_DIR")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(folder))
    assert jvm_options("") == ([], None)


def test_the_small_runs_arguments_name_this_machine_last():
    assert jvm_archive.on_this_machine("") == (
        "--master local[1] --conf spark.eventLog.enabled=false pyspark-shell")
    assert jvm_archive.on_this_machine("--master yarn --conf a=b pyspark-shell") == (
        "--master yarn --conf a=b --master local[1] --conf spark.eventLog.enabled=false pyspark-shell")


def test_the_part_files_of_killed_makers_are_removed(cache):
    cache.mkdir()
    path = str(cache / "driver-x.jsa")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    for name in (f"{path}.{dead}.part", f"{path}.{os.getpid()}.part", f"{path}.x.part"):
        open(name, "w").close()
    jvm_archive._remove_dead_parts(path)
    assert sorted(os.listdir(cache)) == sorted([f"driver-x.jsa.{os.getpid()}.part", "driver-x.jsa.x.part"])


def test_one_maker_at_a_time_and_none_where_the_cache_cannot_be_written(cache, monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr(jvm_archive.subprocess, "Popen", lambda argv, **kw: started.append(argv))
    path = str(cache / "driver-x.jsa")
    make_later(path)
    make_later(path)                                          # being made: not a second time
    assert len(started) == 1 and started[0][-2:] == [path, path + ".lock"]
    old = time.time() - jvm_archive.STALE_LOCK_SECONDS - 1
    os.utime(path + ".lock", (old, old))                      # its maker died long ago
    make_later(path)
    assert len(started) == 2
    (tmp_path / "a-file").write_text("")
    make_later(str(tmp_path / "a-file" / "driver-x.jsa"))     # no folder can be made there
    assert len(started) == 2


def test_a_run_told_to_stop_starts_no_maker(cache, monkeypatch):
    from bleu_spark import cli
    from bleu_spark.errors import Interrupted

    started = []
    monkeypatch.setattr(jvm_archive.subprocess, "Popen", lambda argv, **kw: started.append(argv))
    monkeypatch.setattr(cli, "_received", [])
    with pytest.raises(Interrupted):
        cli._on_stop_signal(15, None)                         # SIGTERM, as a scheduler sends it
    make_later(str(cache / "driver-x.jsa"))                   # the session's stop, after it
    assert started == [] and not os.path.exists(cache / "driver-x.jsa.lock")


@pytest.mark.e2e
@pytest.mark.classic  # the console script's own JVM
def test_a_run_has_it_made_and_the_next_jvm_maps_it_and_a_cut_short_one_is_refused(cache, tmp_path, monkeypatch):
    from bleu_spark.spark.runtime.classic import _driver_java_options_before_start

    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    env = dict(os.environ)
    path = jvm_archive.archive_path(_driver_java_options_before_start())
    assert path and not os.path.exists(path)
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"system": ["A"], "langpair": ["de-en"], "candidate": ["the cat"],
                             "references": [["the cat"]]}), data)
    run = subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", str(data),
                          "--output", str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "cds" not in run.stdout + run.stderr
    deadline = time.time() + 240                              # made in the background, on idle CPU
    while (not os.path.exists(path) or os.path.exists(path + ".lock")) and time.time() < deadline:
        time.sleep(1)
    assert os.path.exists(path) and not os.path.exists(path + ".lock")
    # no part left, no failure (the cache folder also holds the kernels line's note)
    assert sorted(n for n in os.listdir(cache) if n.startswith("driver-")) == [os.path.basename(path)]
    probe = ("from pyspark import SparkContext\n"
             "from bleu_spark.spark.runtime import classic\n"
             "spark = classic.spark_session()\n"
             "maps = open(f'/proc/{SparkContext._gateway.proc.pid}/maps').read()\n"
             f"print('mapped' if {path!r} in maps else 'not mapped')\n"
             "spark.stop()\n")
    mapped = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert mapped.stdout.strip() == "mapped", mapped.stderr
    cut = str(tmp_path / "cut.jsa")
    with open(path, "rb") as whole, open(cut, "wb") as part:
        part.write(whole.read(os.path.getsize(path) // 3))
    assert jvm_archive._starts_with(path) and not jvm_archive._starts_with(cut)
    assert not [f for f in os.listdir(".") if f.startswith("hs_err_pid")]   # its crash report not here
    # damaged in place after it was made: the run starts its JVM again without it, and says nothing
    shutil.copy(cut, path)
    again = subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--input", str(data),
                            "--output", str(tmp_path / "out")], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "error" not in again.stderr.lower() and not os.path.exists(path)
    assert not [f for f in os.listdir(tmp_path) if f.startswith("hs_err_pid")]   # in the cache folder
    deadline = time.time() + 240                              # a new one made, as that run stopped
    while (not os.path.exists(path) or os.path.exists(path + ".lock")) and time.time() < deadline:
        time.sleep(1)
    assert jvm_archive._starts_with(path)
    # a maker where the user's arguments name a cluster (here none answers): made on this machine
    os.unlink(path)
    lock = str(tmp_path / "lock")
    open(lock, "w").close()
    cluster = {**env, "PYSPARK_SUBMIT_ARGS": "--master spark://127.0.0.1:9 pyspark-shell"}
    maker = subprocess.run([sys.executable, "-m", jvm_archive.__name__, path, lock], env=cluster,
                           capture_output=True, text=True, timeout=300)
    assert maker.returncode == 0 and jvm_archive._starts_with(path), maker.stderr[-3000:]
    shutil.rmtree(cache)


def test_a_new_archive_prunes_the_cache_to_those_used_last(cache, monkeypatch):
    """Every Java or Spark upgrade, JVM option or venv makes an archive of its own (about 70 MB
    each): once one is made, only the KEEP used last stay; what else the folder holds stays."""
    cache.mkdir()
    now = time.time()
    older = [str(cache / f"driver-{age}.jsa") for age in range(5)]
    for age, path in enumerate(older):
        open(path, "w").close()
        os.utime(path, (now - 100 * (age + 1),) * 2)
    others = ["hs_err_pid1.log", "driver-9.jsa.lock", "driver-8.jsa" + FAILED]
    for name in others:
        open(cache / name, "w").close()
    monkeypatch.setattr(jvm_archive, "archive_path", lambda options: older[4])
    assert jvm_options("")[0]                                   # the oldest, used by a run now
    new = str(cache / "driver-new.jsa")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "")                 # make() sets both: put back after
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "")
    monkeypatch.setattr(jvm_archive, "_small_run",
                        lambda work: open(f"{new}.{os.getpid()}.part", "w").close() or 0)
    monkeypatch.setattr(jvm_archive, "_starts_with", lambda part: True)
    assert jvm_archive.make(new)
    assert sorted(os.listdir(cache)) == sorted(["driver-new.jsa", "driver-4.jsa", "driver-0.jsa", *others])
    assert jvm_archive.KEEP == 3

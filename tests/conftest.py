"""Shared fixtures: one SparkSession for the whole run, the bundled sample, a trained SPM model."""
import os
import random
import socket
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "wmt22_sample.parquet")
# The tests are laid out by layer, a folder each (metrics, text, stats, resampling, scoring,
# store, spark, cli, report); a test takes helpers from another's module (`from test_views import
# save`), so every folder is on the path whichever tests are collected.
TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path[1:1] = [os.path.join(TESTS, d) for d in sorted(os.listdir(TESTS))
                 if os.path.isdir(os.path.join(TESTS, d)) and not d.startswith((".", "_"))]

# The compiled loops check every index in the tests (past an array's end is an IndexError,
# not a read of other memory), cached apart from the unchecked code. Set before numba loads.
os.environ.setdefault("NUMBA_BOUNDSCHECK", "1")
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(ROOT, ".pytest_cache", "numba"))
# The driver JVM's class-data archive of the console script's runs, made by the first of them:
# the tests' own, not the user's.
os.environ.setdefault("BLEU_SPARK_CACHE_DIR", os.path.join(ROOT, ".pytest_cache", "bleu-spark"))

# The S3 tests' credentials for moto's server, also those of the tests' Spark Connect server (a
# platform's server has its own; an upload without any is stored by moto in its aws-chunked framing).
S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                  "AWS_DEFAULT_REGION": "us-east-1"}

WORDS = ("the a cat dog sat on mat is was big small storm rover Mars NASA fighting battling "
         "massive dust sandstorm of and to in it for with as at by U.S. 3.5 1,000 e-mail "
         "don't (yes) \"quoted\" &amp; &lt;tag&gt; -- ... ! ? ; : / 猫 犬 東京 北京 사람 한국어").split()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, for a server a test starts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def random_sentences(rng: random.Random, count: int):
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))) for _ in range(count)]


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory):
    """A small SentencePiece model trained on text the tests generate (no download)."""
    import sentencepiece

    folder = tmp_path_factory.mktemp("spm")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(random_sentences(random.Random(7), 3000)), encoding="utf-8")
    prefix = str(folder / "model")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=prefix, vocab_size=100, character_coverage=1.0, hard_vocab_limit=False,
        minloglevel=2)
    return prefix + ".model"


def pytest_addoption(parser):
    parser.addoption("--through-connect", action="store_true",
                     help="run every Spark test through a Spark Connect server the tests start "
                          "(SPARK_REMOTE set for the whole run); tests marked `classic` are skipped")


@pytest.fixture(scope="session", autouse=True)
def through_connect(request, tmp_path_factory):
    """With `--through-connect`: a Spark Connect server from the wheel for the whole run, and
    SPARK_REMOTE set from the first test on, so that each command the tests run, in this
    process or a child, is its client. Else None."""
    if not request.config.getoption("--through-connect"):
        yield None
        return
    from connect_server import connect_server

    with connect_server(tmp_path_factory.mktemp("connect")) as url:
        os.environ["SPARK_REMOTE"] = url
        yield url
        del os.environ["SPARK_REMOTE"]


@pytest.fixture(scope="session")
def spark(through_connect, tmp_path_factory):
    """One local[2] session for every Spark test, with few shuffle partitions and the JIT
    tier the console script starts its JVM with; its catalog's warehouse in a temp folder, not
    the working directory (the catalog tests make databases). With `--through-connect`, a
    session of the run's Spark Connect server instead."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # tests bind to loopback only
    from pyspark.sql import SparkSession

    if through_connect:
        session = SparkSession.builder.remote(through_connect).getOrCreate()
        yield session
        session.stop()
        return

    from bleu_spark.spark.runtime.classic import FIRST_TIER_JIT

    session = (SparkSession.builder.master("local[2]").appName("bleu-spark-tests")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
               .config("spark.driver.extraJavaOptions", FIRST_TIER_JIT)
               .getOrCreate())
    yield session
    session.stop()


@pytest.fixture(scope="session", autouse=True)
def archive_makers_done():
    """A console run the tests start has the driver JVM's class-data archive made by a process
    of its own, which outlives the run: the test session waits (a while at most) for it to
    finish, so that none is left running after the tests."""
    yield
    import glob
    import time

    deadline = time.time() + 300
    while glob.glob(os.path.join(os.environ["BLEU_SPARK_CACHE_DIR"], "*.lock")) and time.time() < deadline:
        time.sleep(1)


def console_session(spark):
    """The session as the console script has it: on classic Spark a SparkSession made on demand
    over the running SparkContext; through Connect the Connect session itself."""
    from bleu_spark.spark import runtime
    from bleu_spark.spark.runtime.classic import OnDemandSession

    return spark if runtime.is_connect(spark) else OnDemandSession(spark.sparkContext)


def pytest_collection_modifyitems(items):
    """Every test that takes the Spark session carries the `spark` marker, so `-m "not spark"`
    is sure to start no JVM, whether or not the test's module remembered to mark it."""
    through_connect = items and items[0].config.getoption("--through-connect")
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        # Under --through-connect, the tests that compare Connect with classic Spark themselves
        # and those that need classic Spark's own handles do not apply.
        if through_connect and (item.get_closest_marker("connect") or item.get_closest_marker("classic")):
            item.add_marker(pytest.mark.skip(reason="compares with or needs classic Spark"))

"""A Spark Connect server from the pyspark wheel on 127.0.0.1, for the tests that run the job as
its client: its Python workers import this checkout's bleu_spark (PYTHONPATH in the server's
environment, as a cluster library would be); stopped by its PID."""
import contextlib
import os
import subprocess
import sys
import time

from conftest import ROOT, S3_CREDENTIALS, free_port


def clean_env() -> dict:
    """This process's environment without what would make a client classic or remote."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("SPARK_", "PYSPARK_")) and k != "MASTER"}


@contextlib.contextmanager
def connect_server(folder, extra_env: dict = None, conf: dict = None):
    """The server's `sc://` address while it runs; its log in `folder`. `extra_env` and `conf`
    add to or replace the server's environment and Spark settings."""
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    jars = [f for f in os.listdir(os.path.join(home, "jars")) if f.startswith("spark-connect_")]
    port = free_port()
    log = folder / "server.log"
    env = {**clean_env(), "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": ROOT, **S3_CREDENTIALS}
    for name in ("NUMBA_BOUNDSCHECK", "NUMBA_CACHE_DIR"):  # the workers' kernels as the tests'
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra_env or {})
    argv = [os.path.join(home, "bin", "spark-submit"), "--master", "local[2]",
            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", f"spark.sql.warehouse.dir={folder / 'warehouse'}",
            *(arg for key, value in (conf or {}).items() for arg in ("--conf", f"{key}={value}")),
            os.path.join(home, "jars", jars[0])]
    with open(log, "wb") as out:
        server = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while "Spark Connect server started" not in log.read_text(errors="replace"):
            assert server.poll() is None and time.time() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()  # spark-submit execs the JVM: this PID is the server
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

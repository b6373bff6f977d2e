"""Tables in Spark's catalog (`--catalog DB`), as a scheduled job writes them and a BI tool reads
them: scoring runs as processes with Hive support over an embedded Derby metastore in a temp
folder, then Spark's Thrift JDBC server over the same metastore, queried with beeline (both from
the pyspark wheel), compared with what DuckDB reads from the same runs' output folder.

Derby embedded admits one process at a time: the runs end before the server starts."""
import csv
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark import cli
from bleu_spark.errors import OutputError, UsageError
from conftest import ROOT, SAMPLE, free_port

pytestmark = [pytest.mark.catalog, pytest.mark.spark]

SYSTEMS = ("Online-A", "Online-B", "Online-G")
PAIRS = ("cs-en", "de-en", "en-de")
DAYS = tuple(f"2026-01-0{d}" for d in range(1, 8))  # a week of nightly runs
DATABASE = "mt"


def pyspark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


class Metastore:
    """A Derby metastore and a warehouse in a folder, and the Spark settings that use them."""

    def __init__(self, folder):
        self.folder = str(folder)
        self.conf = {
            "spark.sql.catalogImplementation": "hive",
            "spark.sql.warehouse.dir": f"{self.folder}/warehouse",
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={self.folder}/metastore_db;create=true",
            "spark.ui.enabled": "false",
        }

    def env(self) -> dict:
        env = dict(os.environ, PYTHONPATH=ROOT, PYSPARK_PYTHON=sys.executable,
                   SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=pyspark_home())
        confs = " ".join(f"--conf {k}={v}" for k, v in self.conf.items())
        env["PYSPARK_SUBMIT_ARGS"] = f"--master local[2] {confs} pyspark-shell"
        return env

    def score(self, *args: str) -> subprocess.CompletedProcess:
        """`bleu-spark score ...` as a scheduler runs it: a process of its own."""
        return subprocess.run([sys.executable, "-m", "bleu_spark", "score", "--progress-seconds",
                               "0", *args], cwd=self.folder, env=self.env(), capture_output=True,
                              text=True, timeout=240)


class ThriftServer:
    """Spark's Thrift JDBC/ODBC server from the wheel, on loopback, over the metastore."""

    def __init__(self, metastore: Metastore):
        self.metastore = metastore
        self.port = free_port()
        home = pyspark_home()
        command = [os.path.join(home, "bin", "spark-submit"), "--class",
                   "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2", "--master", "local[1]",
                   *[a for k, v in metastore.conf.items() if k != "spark.sql.catalogImplementation"
                     for a in ("--conf", f"{k}={v}")],
                   "--hiveconf", f"hive.server2.thrift.port={self.port}",
                   "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1", "spark-internal"]
        self.log = open(os.path.join(metastore.folder, "thrift.log"), "wb")
        # spark-submit ends in `exec java`: this PID is the server's JVM.
        self.process = subprocess.Popen(command, cwd=metastore.folder, env=metastore.env(),
                                        stdout=self.log, stderr=subprocess.STDOUT)
        self._wait()

    def _wait(self, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Thrift server ended: see {self.log.name}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError("the Thrift server did not listen in time")

    def query(self, sql: str, database: str = DATABASE) -> list:
        """Rows of `sql` as a JDBC client gets them (beeline, tab-separated), every value as
        text (no value here holds a tab)."""
        path = os.path.join(self.metastore.folder, "query.sql")
        with open(path, "w", encoding="utf-8") as out:
            out.write(sql.strip().rstrip(";") + ";\n")
        done = subprocess.run(
            ["java", "-cp", os.path.join(pyspark_home(), "jars", "*"), "org.apache.hive.beeline.BeeLine",
             "-u", f"jdbc:hive2://127.0.0.1:{self.port}/{database}", "--outputformat=tsv2",
             "--silent=true", "--showHeader=true", "-f", path],
            capture_output=True, text=True, timeout=120, cwd=self.metastore.folder)
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        assert done.returncode == 0 and lines, done.stderr[-2000:]
        return list(csv.DictReader(io.StringIO("\n".join(lines)), delimiter="\t",
                                   quoting=csv.QUOTE_NONE))

    def stop(self) -> None:
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


def day_inputs(folder) -> dict:
    """The sample's rows of a few systems and pairs, split into the days by segment: a file each
    in `folder/days/`."""
    table = pq.read_table(SAMPLE)
    table = table.filter(pc.and_(pc.is_in(table["system"], pa.array(SYSTEMS)),
                                 pc.is_in(table["langpair"], pa.array(PAIRS))))
    paths = {}
    os.makedirs(os.path.join(folder, "days"), exist_ok=True)
    for number, day in enumerate(DAYS):
        rows = table.filter(pa.array(table["seg_id"].to_numpy() % len(DAYS) == number))
        rows = rows.append_column("run_date", pa.repeat(pa.scalar(day), rows.num_rows))
        paths[day] = os.path.join(folder, "days", f"{day}.parquet")
        pq.write_table(rows, paths[day])
    return paths


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The week scored with BLEU in one run, then day 1 again with BLEU and chrF, each into the
    catalog and into a partitioned folder (a run a process, as a scheduler starts them; two
    runs, not three, to keep the module's time down); then the Thrift server over the
    metastore."""
    folder = tmp_path_factory.mktemp("catalog")
    metastore = Metastore(folder)
    inputs = day_inputs(str(folder))
    out = str(folder / "out")
    run_ids = []
    for path, metrics in ((os.path.dirname(inputs[DAYS[0]]), "bleu"), (inputs[DAYS[0]], "bleu,chrf")):
        done = metastore.score("--input", path, "--output", out, "--catalog", DATABASE,
                               "--partition-by", "run_date", "--metrics", metrics)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"and catalog database {DATABASE}" in done.stdout
        record = json.load(open(f"{out}/run.json"))
        assert record["catalog"] == DATABASE
        run_ids.append(record["run_id"])
    server = ThriftServer(metastore)
    yield {"out": out, "run_ids": run_ids, "server": server}
    server.stop()


def folder_table(out: str, name: str) -> list:
    with duckdb.connect() as con:
        found = con.execute(f"SELECT * FROM read_parquet('{out}/{name}/**/*.parquet', "
                            f"hive_partitioning = true, union_by_name = true)")
        names = [d[0] for d in found.description]
        return [dict(zip(names, row)) for row in found.fetchall()]


@pytest.mark.classic  # the job's own Spark over a Derby metastore (PYSPARK_SUBMIT_ARGS)
def test_each_days_rows_are_in_the_catalog_once_and_a_rerun_replaced_its_day_only(runs):
    server, (first, rerun) = runs["server"], runs["run_ids"]
    rows = server.query("SELECT run_date, metric, run_id, COUNT(*) AS n FROM dashboard "
                        "GROUP BY run_date, metric, run_id ORDER BY run_date, metric")
    expected = {}
    for row in folder_table(runs["out"], "dashboard"):
        key = (str(row["run_date"]), row["metric"], row["run_id"])
        expected[key] = expected.get(key, 0) + 1
    assert {(r["run_date"], r["metric"], r["run_id"]): int(r["n"]) for r in rows} == expected
    # day 1 holds the rerun's rows only (BLEU and chrF), the other days the first run's BLEU rows
    assert {k[:3] for k in expected} == {(DAYS[0], "bleu", rerun), (DAYS[0], "chrf", rerun),
                                         *[(day, "bleu", first) for day in DAYS[1:]]}
    assert all(n == expected[(DAYS[0], "bleu", rerun)] for n in expected.values())


@pytest.mark.classic  # the job's own Spark over a Derby metastore (PYSPARK_SUBMIT_ARGS)
def test_the_catalogs_scores_equal_the_folders(runs):
    keys = ("run_date", "grouping", "system", "langpair", "metric")
    catalog = runs["server"].query("SELECT run_date, grouping, system, langpair, metric, score, "
                                   "signature FROM scores")
    folder = folder_table(runs["out"], "scores")
    text = lambda v: "" if v is None else str(v)  # beeline writes null as an empty field
    mine = {tuple(r[k] for k in keys): (float(r["score"]), r["signature"]) for r in catalog}
    theirs = {tuple(text(r[k]) for k in keys): (r["score"], r["signature"]) for r in folder}
    assert len(mine) == len(catalog) == len(folder) > 0
    assert mine == theirs  # Java prints a double so that it reads back bit for bit


@pytest.mark.classic  # the job's own Spark over a Derby metastore (PYSPARK_SUBMIT_ARGS)
def test_a_later_runs_metric_added_its_columns_with_comments(runs):
    described = runs["server"].query("DESCRIBE TABLE EXTENDED dashboard")
    columns = {r["col_name"]: r for r in described}
    assert "chrf_c1_hyp" in columns and "sys_len" in columns
    assert columns["chrf_c1_hyp"]["comment"].startswith("chrF:")
    assert columns["sys_len"]["comment"] == "BLEU: summed candidate tokens"
    assert "docs/dashboard.md" in columns["Comment"]["data_type"]
    partitioned = runs["server"].query("SHOW PARTITIONS dashboard")
    assert sorted(r["partition"] for r in partitioned) == [f"run_date={d}" for d in DAYS]
    # day 2 was scored before chrF's columns existed: null there
    held = runs["server"].query(f"SELECT COUNT(*) AS n FROM dashboard WHERE run_date = '{DAYS[1]}' "
                                f"AND chrf_c1_hyp IS NOT NULL")
    assert held == [{"n": "0"}]


@pytest.mark.classic  # the job's own Spark over a Derby metastore (PYSPARK_SUBMIT_ARGS)
def test_the_dashboard_sql_of_the_docs_through_jdbc_equals_duckdbs_on_the_folder(runs):
    from test_scheduled import dashboard_sql

    for metric in ("BLEU",):
        query = dashboard_sql(metric)
        through_jdbc = {r["langpair"]: float(r["bleu"]) for r in runs["server"].query(query)}
        with duckdb.connect() as con:
            con.execute(f"CREATE VIEW dashboard AS SELECT * FROM read_parquet("
                        f"'{runs['out']}/dashboard/**/*.parquet', hive_partitioning = true, union_by_name = true)")
            on_duckdb = dict(con.execute(query).fetchall())
        assert through_jdbc.keys() == on_duckdb.keys() == set(PAIRS)
        for pair, score in on_duckdb.items():
            assert through_jdbc[pair] == pytest.approx(score, rel=1e-12), pair


@pytest.fixture
def shared_session(monkeypatch):
    """`main` stops the Spark it ran on: here that is the tests' shared session, kept."""
    monkeypatch.setattr(cli, "_stop_spark", lambda spark: None)


@pytest.mark.parametrize("args, words", [
    (["--catalog", "my-db"], "--catalog must name a database"),
    ([], "--output DIR or --catalog DB is required"),
    (["--catalog", "mt", "--report"], "--report needs --output DIR"),
])
def test_catalog_options_refused_in_one_line(args, words, capsys):
    code = cli.main(["score", "--input", SAMPLE, *args])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == UsageError.exit_code and len(lines) == 1 and words in lines[0], lines


def test_a_table_not_made_by_the_job_is_refused_before_scoring(spark, tmp_path, shared_session, capsys):
    spark.sql(f"CREATE DATABASE IF NOT EXISTS foreign_db LOCATION '{tmp_path}/foreign_db'")
    spark.sql("CREATE TABLE IF NOT EXISTS foreign_db.dashboard (x INT) USING parquet")
    try:
        code = cli.main(["score", "--input", SAMPLE, "--catalog", "foreign_db", "--progress-seconds", "0"])
    finally:
        spark.sql("DROP DATABASE foreign_db CASCADE")
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == OutputError.exit_code and len(lines) == 1, lines
    assert "table foreign_db.dashboard exists and was not made by bleu-spark" in lines[0]


@pytest.fixture
def in_memory_database(spark, tmp_path):
    """A database of the shared session's own (in-memory) catalog, its tables under tmp_path."""
    names = []

    def make(name):
        spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path}/{name}.db'")
        names.append(name)
        return name

    yield make
    for name in names:
        spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def test_a_run_without_partitions_replaces_the_tables_rows_and_aggregate_reads_and_writes_tables(
        spark, tmp_path, in_memory_database):
    from bleu_spark.aggregate import AggregateOptions, run_aggregate
    from bleu_spark.spark.job import JobOptions, run_job

    inputs = day_inputs(str(tmp_path))
    database, scored = in_memory_database("whole_db"), in_memory_database("scored_db")
    out = str(tmp_path / "out")
    for day, folder in zip(DAYS, (None, out)):  # the second replaces the first's rows: no partitions
        run = run_job(spark, JobOptions(input=inputs[day], output=folder, catalog=database,
                                        progress_seconds=0)).run
        assert os.path.exists(out) == (folder is not None)  # the first run: the catalog only
    held = spark.sql(f"SELECT run_id, COUNT(*) AS n FROM {database}.dashboard GROUP BY run_id").collect()
    assert [r["run_id"] for r in held] == [run["run_id"]]
    assert held[0]["n"] == len(folder_table(out, "dashboard"))
    where = "langpair IN ('de-en', 'en-de') AND system <> 'Online-G'"
    from_table = run_aggregate(AggregateOptions(
        stats_table=f"{database}.stats", catalog=scored, group_by=("langpair",), where=where,
        engine="spark"), spark)
    from_folder = run_aggregate(AggregateOptions(stats=out, group_by=("langpair",), where=where,
                                                 engine="local"))
    scores = lambda rows: {(r["langpair"], r["metric"]): (r["score"], r["signature"]) for r in rows}
    assert scores(from_table.scores) == scores(from_folder.scores) and len(from_folder.scores) == 2
    written = spark.table(f"{scored}.scores").collect()
    assert scores(r.asDict() for r in written) == scores(from_folder.scores)


def test_aggregate_refuses_the_catalog_on_the_local_engine_in_one_line(capsys):
    code = cli.main(["aggregate", "--stats-table", "mt.stats", "--output", "x", "--engine", "local"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == UsageError.exit_code and len(lines) == 1 and "--engine spark" in lines[0], lines


def test_segments_rejected_and_paired_tables_go_to_the_catalog_too(spark, tmp_path, in_memory_database):
    from bleu_spark.resampling import Resampling
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(day_inputs(str(tmp_path))[DAYS[0]])
    table = table.cast(pa.schema([f.with_nullable(True) for f in table.schema]))
    unscorable = table.slice(0, 1).set_column(table.schema.get_field_index("candidate"), "candidate",
                                              pa.array([None], pa.string()))
    path = str(tmp_path / "with_a_bad_row.parquet")
    pq.write_table(pa.concat_tables([table, unscorable]), path)
    database, out = in_memory_database("drill_db"), str(tmp_path / "drill")
    options = JobOptions(input=path, output=out, catalog=database, partition_by=("run_date",),
                         segments=True, on_invalid="quarantine", progress_seconds=0,
                         resampling=Resampling(paired_bs=True, baseline=SYSTEMS[0], n_bootstrap=20))
    mode = "spark.sql.sources.partitionOverwriteMode"
    before = spark.conf.get(mode)
    for _ in range(2):  # the second run replaces the first's partition in every table
        run = run_job(spark, options).run
    assert spark.conf.get(mode) == before  # dynamic for the job's writes only
    assert sorted(run["catalog_tables"]) == sorted(f"{database}.{t}" for t in (
        "stats", "scores", "dashboard", "paired", "rejected", "segments"))
    for name in ("segments", "rejected", "paired", "dashboard"):
        assert spark.table(f"{database}.{name}").count() == len(folder_table(out, name)) > 0, name
    assert spark.table(f"{database}.rejected").select("reason").collect()[0]["reason"]
    with pytest.raises(OutputError, match=r"table drill_db\.\w+ is partitioned by run_date, not by nothing"):
        run_job(spark, JobOptions(input=path, catalog=database, progress_seconds=0))


# Names that end a backquoted identifier or a string early if put into SQL text as they are: each
# tries to move the table to a folder of its own (`{evil}`), or to hide the rest of the statement.
def hostile_names(evil: str) -> tuple:
    return (f"x` string) USING parquet LOCATION '{evil}' --",
            f"y string COMMENT 'z') USING parquet LOCATION '{evil}' --",
            "a.b", "c``d", "it's \\'", "e`.`f")


def test_hostile_names_reach_every_catalog_table_as_names_and_change_nothing_else(
        spark, tmp_path, in_memory_database):
    """Every table the sink writes, with data columns, partition columns and partition values
    named to break out of the SQL: the tables hold exactly those names and rows, in the
    database's folder, and nothing is made where the names point."""
    from datetime import date

    from bleu_spark.store.catalog import TABLES, CatalogSink

    evil = str(tmp_path / "evil")
    names = hostile_names(evil)
    day = "d`) USING parquet LOCATION 'elsewhere' --"  # a partition column: no '/' allowed there
    database = in_memory_database("hostile_db")
    rows = {name: pa.table({**{n: [f"{name} {n}", "'); DROP TABLE x; --"] for n in names},
                            day: ["o'clock`", None], "when": [date(2026, 1, 1), None]})
            for name in TABLES}
    for _ in range(2):  # created, then written again into the tables as they are
        sink = CatalogSink(spark, database, (day, "when"), "run").open()
        for name, table in rows.items():
            sink.write_table(name, table)
        assert sorted(sink.commit()) == sorted(f"{database}.{t}" for t in TABLES)
    for name, table in rows.items():
        held = spark.table(f"{database}.{name}")
        assert held.columns == [*names, day, "when"], name
        key = lambda r: tuple(map(str, r))
        assert sorted(map(key, held.collect())) == sorted(
            key([r[c] for c in held.columns]) for r in table.to_pylist()), name
        location = spark.sql(f"DESCRIBE TABLE EXTENDED {database}.{name}").where(
            "col_name = 'Location'").collect()[0]["data_type"]
        assert location.endswith(f"hostile_db.db/{name}"), location
    assert not os.path.exists(evil) and not os.path.exists(os.path.join(os.getcwd(), "elsewhere"))


@pytest.mark.parametrize("partition_by", [("day", "n"), ()], ids=["partitioned", "whole"])
def test_a_rerun_replaces_every_table_of_its_partitions_together(spark, in_memory_database, partition_by):
    """A rerun of partitions P writes no rejected rows, segments or paired tests there this time:
    those tables lose their rows of P (of every partition, unpartitioned), as the folder's commit
    drops them; partition Q, not rerun, keeps all its tables. Values of every partition type,
    null, and quotes among them."""
    from bleu_spark.store.catalog import CatalogSink

    database = in_memory_database(f"rerun_{len(partition_by)}_db")
    rerun, kept = [("it's`", 1), (None, None)], [("q", 2)]

    def rows(run, partitions):
        return pa.table({"run": [run] * len(partitions), "day": [d for d, _ in partitions],
                         "n": pa.array([n for _, n in partitions], pa.int32())})

    first = {"stats": rerun + kept, "scores": rerun + kept, "dashboard": rerun + kept,
             "rejected": rerun + kept, "segments": rerun, "paired": kept}
    second = {"stats": rerun, "scores": rerun, "dashboard": rerun}
    for run, tables in (("first", first), ("second", second)):
        sink = CatalogSink(spark, database, partition_by, run).open()
        for name, partitions in tables.items():
            sink.write_table(name, rows(run, partitions))
        sink.commit()
    for name, partitions in first.items():
        held = sorted((tuple(r) for r in spark.table(f"{database}.{name}").select(
            "run", "day", "n").collect()), key=repr)
        mine = [("second", *p) for p in second.get(name, [])]
        if partition_by:  # the partitions not rerun keep the first run's rows
            mine += [("first", *p) for p in partitions if p in kept]
        assert held == sorted(mine, key=repr), name


def test_aggregate_into_the_catalog_alone_and_never_over_the_other_commands_tables(
        spark, tmp_path, in_memory_database, shared_session, capsys):
    """`aggregate --catalog` without `--output` ends with its line (exit 0); neither command
    replaces the other's unpartitioned tables: one line, exit 8, the tables left as they were."""
    scored, summed = in_memory_database("scored_by_score_db"), in_memory_database("summed_db")
    out = str(tmp_path / "out")
    base = ["--progress-seconds", "0"]
    assert cli.main(["score", "--input", SAMPLE, "--output", out, "--catalog", scored, *base]) == 0
    assert cli.main(["aggregate", "--stats", out, "--catalog", summed, "--group-by", "langpair"]) == 0
    assert f"catalog database {summed}" in capsys.readouterr().out
    assert len({r["langpair"] for r in spark.table(f"{summed}.scores").collect()}) > 1
    before = {name: spark.table(f"{db}.{name}").collect() for db in (scored, summed)
              for name in ("stats", "scores")}
    for argv, held in ((["aggregate", "--stats", out, "--catalog", scored], "score"),
                       (["score", "--input", SAMPLE, "--catalog", summed], "aggregate")):
        code = cli.main([*argv, *base[:2 if argv[0] == "score" else 0]])
        err = capsys.readouterr().err.strip().splitlines()
        lines = [line for line in err if not line.startswith("bleu-spark: progress:")]
        assert code == OutputError.exit_code and len(lines) == 1, err
        assert f"holds the results of bleu-spark {held}" in lines[0], lines
    assert before == {name: spark.table(f"{db}.{name}").collect() for db in (scored, summed)
                      for name in ("stats", "scores")}


@pytest.mark.classic  # the job's own Spark over a Derby metastore (PYSPARK_SUBMIT_ARGS)
def test_a_metastore_that_cannot_be_opened_is_one_line_and_its_own_exit_code(tmp_path):
    from bleu_spark.errors import CatalogUnavailableError

    metastore = Metastore(tmp_path)
    (tmp_path / "a_file").write_text("")  # the metastore's database is to be made inside a file
    metastore.conf.update({
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={tmp_path}/a_file/metastore_db;create=true",
        "spark.hadoop.hive.hmshandler.retry.attempts": "1"})  # the test's time: one try
    done = metastore.score("--input", SAMPLE, "--catalog", DATABASE)
    lines = [line for line in done.stderr.splitlines()
             if not line.startswith("WARNING: Using incubator modules")]  # the JVM's own, at start
    assert done.returncode == CatalogUnavailableError.exit_code == 18, done.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("bleu-spark: error: Spark's catalog cannot be "
                                                   "opened"), done.stderr[-3000:]


def test_a_run_with_hostile_column_names_into_the_catalog_then_its_rerun(spark, tmp_path, in_memory_database):
    """The job's own path with such names: grouped by one, partitioned by another, an unnamed
    one in the rejected row, a carried one in the segments, paired tests; every table holds what
    the folder holds. Then the partition again without the bad row, segments or paired tests:
    their tables lose that partition's rows, as the folder's do."""
    from bleu_spark.resampling import Resampling
    from bleu_spark.spark.job import JobOptions, run_job

    evil = str(tmp_path / "evil")
    group, unnamed, carried, _, _, _ = hostile_names(evil)
    day = "d`a.y') --"
    table = pq.read_table(day_inputs(str(tmp_path))[DAYS[0]])
    table = table.cast(pa.schema([f.with_nullable(True) for f in table.schema]))
    n = table.num_rows
    table = table.append_column(group, pa.repeat(pa.scalar("v'`"), n)).append_column(
        day, table["run_date"]).append_column(unnamed, pa.array(range(n))).append_column(
        carried, pa.array([f"c{i}" for i in range(n)]))
    bad = table.slice(0, 1).set_column(table.schema.get_field_index("candidate"), "candidate",
                                       pa.array([None], pa.string()))
    paths = {"bad": str(tmp_path / "bad.parquet"), "good": str(tmp_path / "good.parquet")}
    pq.write_table(pa.concat_tables([table, bad]), paths["bad"])
    pq.write_table(table, paths["good"])
    database, out = in_memory_database("hostile_run_db"), str(tmp_path / "out")
    common = dict(output=out, catalog=database, group_by=("system", "langpair", group),
                  partition_by=(day,), on_invalid="quarantine", progress_seconds=0)
    run_job(spark, JobOptions(input=paths["bad"], segments=True, segments_columns=(carried,),
                              resampling=Resampling(paired_bs=True, baseline=SYSTEMS[0], n_bootstrap=20),
                              **common))
    for name in ("stats", "scores", "dashboard", "paired", "rejected", "segments"):
        held = spark.table(f"{database}.{name}")
        assert group in held.columns and held.columns[-1] == day, name
        assert held.count() == len(folder_table(out, name)) > 0, name
    assert spark.table(f"{database}.rejected").select(unnamed).collect()[0][0] == 0
    assert carried in spark.table(f"{database}.segments").columns
    run_job(spark, JobOptions(input=paths["good"], **common))
    for name in ("paired", "rejected", "segments"):
        assert spark.table(f"{database}.{name}").count() == 0, name
    assert spark.table(f"{database}.scores").count() == len(folder_table(out, "scores")) > 0
    assert not os.path.exists(evil)


def test_a_column_whose_type_changed_is_one_line_whatever_its_name(spark, in_memory_database):
    from bleu_spark.store.catalog import CatalogSink

    database, name = in_memory_database("retyped_db"), "two\nlines`"
    first = CatalogSink(spark, database, (), "first").open()
    first.write_table("scores", pa.table({name: ["1"]}))
    first.commit()
    second = CatalogSink(spark, database, (), "second").open()
    second.write_table("scores", pa.table({name: [1]}))
    with pytest.raises(OutputError) as refused:
        second.commit()
    assert "\n" not in str(refused.value) and '"two\\nlines`"' in str(refused.value)


def test_a_catalog_that_cannot_be_opened_for_stats_table_or_catalog_is_exit_18():
    """Whatever the first catalog call raises (py4j's, pyspark's or Connect's error), both ways
    into the catalog say it in one line with their own exit code."""
    from types import SimpleNamespace

    from bleu_spark.errors import CatalogUnavailableError
    from bleu_spark.spark.aggregate import read_stats_table
    from bleu_spark.store.catalog import CatalogSink

    def unreachable(*args):
        raise RuntimeError("Unable to instantiate SessionHiveMetaStoreClient\n\tat org.apache...")

    spark = SimpleNamespace(catalog=SimpleNamespace(databaseExists=unreachable, tableExists=unreachable))
    for attempt in (lambda: read_stats_table(spark, "mt.stats"),
                    lambda: CatalogSink(spark, "mt", (), "run").open()):
        with pytest.raises(CatalogUnavailableError) as refused:
            attempt()
        assert str(refused.value).endswith(": Unable to instantiate SessionHiveMetaStoreClient")


def test_a_partition_value_that_is_hives_null_text_is_refused_before_anything_is_written(
        spark, in_memory_database):
    """The text `__HIVE_DEFAULT_PARTITION__` as a partition value would come back from Spark's
    catalog as null, merged with the null partition (the folder escapes it; the catalog cannot):
    one line, and no table made; the same rows with another value are written."""
    from bleu_spark.errors import OutputError
    from bleu_spark.store.catalog import CatalogSink

    database = in_memory_database("null_text_db")
    for values in (["__HIVE_DEFAULT_PARTITION__", None], [None, "__HIVE_DEFAULT_PARTITION__"]):
        sink = CatalogSink(spark, database, ("day",), "run").open()
        sink.write_table("scores", pa.table({"system": ["A", "B"], "day": values}))
        with pytest.raises(OutputError, match="partition column day holds the text "
                                              "__HIVE_DEFAULT_PARTITION__"):
            sink.commit()
        assert not spark.catalog.tableExists(f"{database}.scores")
    sink = CatalogSink(spark, database, ("day",), "run").open()
    sink.write_table("scores", pa.table({"system": ["A", "B"], "day": ["d1", None]}))
    sink.commit()
    held = sorted((r["system"], r["day"]) for r in spark.table(f"{database}.scores").collect())
    assert held == [("A", "d1"), ("B", None)]


def test_segment_scores_and_checks_scored_on_the_executors_go_to_the_catalog(spark, tmp_path,
                                                                              in_memory_database):
    """The new metrics' statistic columns, and tables the executors' tasks write, in the catalog
    as in the folder."""
    from bleu_spark.spark.job import JobOptions, run_job

    table = pq.read_table(SAMPLE)
    table = table.append_column("comet", pa.array([i % 7 / 7 for i in range(table.num_rows)]))
    path = str(tmp_path / "scored.parquet")
    pq.write_table(table, path)
    database, out = in_memory_database("metrics_db"), str(tmp_path / "out")
    run_job(spark, JobOptions(input=path, output=out, catalog=database, metrics=("bleu",),
                              segment_scores=("comet:lower",), checks=("empty", "copy"),
                              groups_scored_on="executors", progress_seconds=0))
    key = lambda r: (r["langpair"], r["system"], r["metric"])
    in_catalog = {key(r): r["score"] for r in (x.asDict() for x in spark.table(f"{database}.scores").collect())}
    in_folder = {key(r): r["score"] for r in folder_table(out, "scores")}
    assert in_catalog == in_folder and {m for _, _, m in in_folder} == {"bleu", "comet", "empty", "copy"}
    stats = spark.table(f"{database}.stats").columns
    assert {"segment_score_sum", "segment_score_count", "check_flagged", "check_rows"} <= set(stats)


def test_an_incremental_run_holds_every_run_s_rows_in_the_catalog_as_in_its_folder(
        spark, tmp_path, in_memory_database):
    from bleu_spark.spark.job import JobOptions, run_job

    days = day_inputs(str(tmp_path))
    inbox, out = tmp_path / "inbox", str(tmp_path / "out")
    inbox.mkdir()
    database = in_memory_database("incremental_db")
    for day in DAYS[:3]:  # a day's file lands, a run follows; a null candidate rejected each day
        table = pq.read_table(days[day])
        table = table.cast(pa.schema([f.with_nullable(True) for f in table.schema]))
        bad = table.slice(0, 1).set_column(table.schema.get_field_index("candidate"), "candidate",
                                           pa.array([None], pa.string()))
        pq.write_table(pa.concat_tables([table, bad]), str(inbox / f"{day}.parquet"))
        run_job(spark, JobOptions(input=str(inbox), output=out, catalog=database, incremental=True,
                                  segments=True, on_invalid="quarantine", progress_seconds=0))
    for name in ("segments", "rejected", "stats", "scores", "dashboard"):
        assert spark.table(f"{database}.{name}").count() == len(folder_table(out, name)) > 0, name
    assert spark.table(f"{database}.rejected").count() == 3
    assert spark.table(f"{database}.segments").count() == sum(
        pq.read_metadata(days[d]).num_rows for d in DAYS[:3])  # one metric: a row per row
    scores = {(r["langpair"], r["system"]): r["score"] for r in folder_table(out, "scores")}
    held = {(r["langpair"], r["system"]): r["score"] for r in spark.table(f"{database}.scores").collect()}
    assert held == scores

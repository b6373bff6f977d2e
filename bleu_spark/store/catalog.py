"""The catalog sink (`--catalog DB`): a run's tables written as `DB.scores`, `DB.dashboard`,
`DB.stats`, ... into Spark's catalog, beside or instead of the output folder (`sink.Sink`), and
the catalog opened for `aggregate --stats-table`. The one module of `store/` that imports
pyspark: `sink.open_sink` imports it only when a run names a catalog.

Only Spark SQL is used, so the catalog and the table format are whatever the platform's Spark
settings make them (a Hive metastore, Glue, Unity, an Iceberg or Delta catalog): tables are
created without a format, which is then `spark.sql.sources.default`. Each run replaces exactly
the partitions it produced (dynamic partition overwrite, set for that write only), or every row
of a table without `--partition-by`; a later run's new columns are added to the table. As in the
output folder, the tables of a partition are replaced together: a table the run wrote no rows of
a partition into loses its older rows there.

Names from the data reach SQL text only as quoted identifiers (a backtick inside doubled), and
partition values only as parameters; everything else in the SQL is the job's own text.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, List, Optional, Sequence

import pyarrow as pa

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import metrics
from ..errors import CatalogUnavailableError, InputNotFoundError, OutputError
from ..shown import shown
from ..tablenames import check_database_name as check_database, check_table_name
from ..spark.names import column, columns, identifier
from .partitions import NULL_PARTITION

OWNER = "bleu_spark.table"          # the table property that marks a table as this job's
FORMAT_VERSION = "bleu_spark.format_version"
COMMAND = "bleu_spark.command"      # whose results a table holds: `score`'s or `aggregate`'s
TABLES = {
    "scores": "bleu-spark: a row per group of every grouping set and metric, its corpus score",
    "dashboard": "bleu-spark: a row per group and metric with the summed statistics of its score "
                 "(sum them, never average scores: docs/dashboard.md)",
    "stats": "bleu-spark: summed statistics per group and metric at the finest grain measured "
             "(bleu-spark aggregate --stats-table reads them)",
    "segments": "bleu-spark: a row per scored input row and metric (--segments)",
    "paired": "bleu-spark: paired tests of each system against the baseline",
    "rejected": "bleu-spark: input rows that could not be scored, with their reason",
}
COLUMNS = {
    "grouping": "the grouping set of the row: its columns sorted, without the partition columns",
    "metric": "the metric: " + ", ".join(metrics.REGISTRY),
    "score": "the corpus score of the group under the metric, 0-100",
    "n_segments": "segments scored", "n_rejected": "rows rejected, with a reason",
    "n_reference_segments": "segments in the group's reference set (null without segment keys)",
    "coverage": "n_segments / n_reference_segments",
    "signature": "sacrebleu's signature", "tokenize": "the tokenizer",
    "metric_options": "the metric's settings beyond the tokenizer, e.g. case:mixed|order:4 (BLEU)",
    "ci_low": "95% interval, low end (--confidence)", "ci_high": "95% interval, high end",
    "rank": "rank within the comparison group (--clusters)", "cluster": "significance cluster",
    "run_id": "the run that wrote the row", "run_time": "when that run started (UTC)",
    "reason": "why the row could not be scored (docs/input.md reason codes)",
}
# Set for one write only: each run replaces exactly the partitions it writes.
DYNAMIC = {"spark.sql.sources.partitionOverwriteMode": "dynamic"}
# These let a Hive-format table (where a platform creates those by default) take its partitions
# from the rows too; a platform that refuses to have them set (some managed runtimes allow only
# listed settings) has no Hive-format tables to need them.
HIVE_DYNAMIC = {"hive.exec.dynamic.partition": "true", "hive.exec.dynamic.partition.mode": "nonstrict"}


def quoted(*parts: str) -> str:
    return ".".join(identifier(p) for p in parts)


def check_open(spark: SparkSession) -> None:
    """The catalog's first use, which opens its metastore: one that cannot be opened (a Hive
    metastore's database or service out of reach) is one line, not the client's traceback."""
    try:
        spark.catalog.databaseExists("default")
    except Exception as exc:  # pyspark's and py4j's errors alike: nothing of the job's ran yet
        raise CatalogUnavailableError(f"Spark's catalog cannot be opened (its metastore is set by "
                                      f"the platform's Spark settings: docs/cluster.md): "
                                      f"{_first_line(exc)}") from None


def read_table(spark: SparkSession, name: str) -> DataFrame:
    """A table of Spark's catalog (`aggregate --stats-table DB.TABLE`), its catalog opened."""
    database, table = check_table_name(name)
    check_open(spark)
    if not spark.catalog.tableExists(f"{database}.{table}"):
        raise InputNotFoundError(f"--stats-table {name}: no such table in Spark's catalog "
                                 f"(its settings name the catalog: docs/cluster.md)")
    return spark.table(quoted(database, table))


def _first_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__


def column_comment(name: str, partition_by: Sequence[str]) -> str:
    if name in partition_by:
        return "partition column, from the input"
    if name in COLUMNS:
        return COLUMNS[name]
    return metrics.column_comment(name) if metrics.is_stat_column(name) else "from the run"


class CatalogSink:
    """A run's tables held as they are made, then written into `database` at `commit`."""

    def __init__(self, spark: SparkSession, database: str, partition_by: Sequence[str], run_id: str,
                 command: str = "score"):
        check_database(database)
        self.spark, self.database, self.command = spark, database, command
        self.partition_by, self.run_id = tuple(partition_by), run_id
        self.tables: Dict[str, object] = {}   # name -> pa.Table or DataFrame, in write order

    def open(self) -> "CatalogSink":
        """Tables of ours already there checked now, before any scoring: a foreign one, or one
        partitioned otherwise, or holding the other command's results, fails the run before it
        costs anything."""
        check_open(self.spark)
        for name in TABLES:
            if self._exists(name):
                self._check_ours(name)
        return self

    def write_table(self, name: str, table) -> None:
        """Held until the commit; a table given again in parts (scored a chunk at a time) is
        one table of all of them."""
        held = self.tables.get(name)
        if isinstance(held, pa.Table) and isinstance(table, pa.Table):
            table = pa.concat_tables([held, table], promote_options="permissive")
        self.tables[name] = table

    def write_file(self, name: str, value) -> None:
        """A catalog holds tables only: the files (scores.json, report.html) are the folder's."""

    def task_files(self, name: str) -> None:
        """The tasks never write into the catalog: their tables come as frames."""
        return None

    def written_by_tasks(self, name: str) -> List[str]:
        return []

    def commit(self, run: Optional[dict] = None, prepare=None) -> List[str]:
        """Every table written, the database created first if need be; the names written (also
        `run["catalog_tables"]`, for the console)."""
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {quoted(self.database)} "
                       f"COMMENT 'bleu-spark results'")
        made = ((name, self._frame(table)) for name, table in self.tables.items())
        frames = {name: frame for name, frame in made if frame is not None}
        held = {name: self._partitions(frame) for name, frame in frames.items()}
        self._check_partition_values(held)
        for name, frame in frames.items():
            self._write(name, frame)
        self._replace_together(frames, held)
        written = [f"{self.database}.{name}" for name in frames]
        if run is not None:
            run["catalog_tables"] = written
        return written

    def abort(self) -> None:
        """Nothing is written before the commit: nothing to undo."""
        self.tables.clear()

    def _frame(self, table) -> Optional[DataFrame]:
        """A table as a DataFrame; one given as a function (the segments the tasks wrote, read
        back) made now, None when it holds no rows."""
        table = table() if callable(table) else table
        if table is None or isinstance(table, DataFrame):
            return table
        return self.spark.createDataFrame(table)

    def _exists(self, name: str) -> bool:
        return self.spark.catalog.tableExists(f"{self.database}.{name}")  # one name: not deprecated

    def _check_ours(self, name: str) -> None:
        full = quoted(self.database, name)
        properties = {r[0]: r[1] for r in self.spark.sql(f"SHOW TBLPROPERTIES {full}").collect()}
        if properties.get(OWNER) != name:
            raise OutputError(f"table {self.database}.{name} exists and was not made by bleu-spark "
                              f"(no {OWNER} property); name another --catalog database")
        held = properties.get(COMMAND, self.command)  # tables made before the property: taken as ours
        if held != self.command:
            raise OutputError(f"table {self.database}.{name} holds the results of bleu-spark "
                              f"{held}, not of {self.command}; name another --catalog database")
        partitions = [c.name for c in self.spark.catalog.listColumns(f"{self.database}.{name}")
                      if c.isPartition]
        if partitions != list(self.partition_by):
            raise OutputError(f"table {self.database}.{name} is partitioned by "
                              f"{','.join(partitions) or 'nothing'}, not by "
                              f"{','.join(self.partition_by) or 'nothing'}; name another "
                              f"--catalog database or pass the same --partition-by")

    def _write(self, name: str, frame: DataFrame) -> None:
        if not self._exists(name):
            self._create(name, frame.schema)
        else:
            self._check_ours(name)
            self._add_columns(name, frame.schema)
            self._sql(f"ALTER TABLE {quoted(self.database, name)} SET TBLPROPERTIES "
                      f"('{COMMAND}' = '{self.command}')", name)
        target = self.spark.table(f"{self.database}.{name}").schema
        mine = {f.name: f for f in frame.schema.fields}
        selected = []
        for field in target.fields:  # by position, as the table holds them (partitions last)
            if field.name not in mine:  # a column of an earlier run's metric: null in this run
                selected.append(F.lit(None).cast(field.dataType).alias(field.name))
            elif _same_type(mine[field.name].dataType, field.dataType):
                # cast: an all-null column, or an array whose elements may be null in one only
                selected.append(column(field.name).cast(field.dataType).alias(field.name))
            else:
                raise OutputError(f"column {shown(field.name)} of {self.database}.{name} is "
                                  f"{field.dataType.simpleString()}, this run's is "
                                  f"{mine[field.name].dataType.simpleString()}; name another "
                                  f"--catalog database")
        with _settings(self.spark, DYNAMIC), _settings(self.spark, HIVE_DYNAMIC, required=False):
            frame.select(*selected).write.insertInto(f"{self.database}.{name}", overwrite=True)

    def _create(self, name: str, schema: T.StructType) -> None:
        missing = [c for c in self.partition_by if c not in schema.fieldNames()]
        if missing:
            raise OutputError(f"table {name} has no partition column {', '.join(missing)}")
        defined = ", ".join(self._column(f) for f in schema.fields)
        partitioned = (f" PARTITIONED BY ({', '.join(map(identifier, self.partition_by))})"
                       if self.partition_by else "")
        self._sql(f"CREATE TABLE IF NOT EXISTS {quoted(self.database, name)} ({defined})"
                  f"{partitioned} COMMENT {_literal(TABLES[name])} TBLPROPERTIES "
                  f"('{OWNER}' = '{name}', '{FORMAT_VERSION}' = '1', '{COMMAND}' = '{self.command}')",
                  name)

    def _column(self, field: T.StructField) -> str:
        # An all-null column has no type a table can hold: a string column until a run has values.
        kind = "string" if isinstance(field.dataType, T.NullType) else field.dataType.simpleString()
        return (f"{identifier(field.name)} {kind} "
                f"COMMENT {_literal(column_comment(field.name, self.partition_by))}")

    def _add_columns(self, name: str, schema: T.StructType) -> None:
        """A later run's new columns (another metric's statistics, intervals) added to the
        table: its rows of earlier runs hold null there."""
        held = set(self.spark.table(f"{self.database}.{name}").columns)
        new = [f for f in schema.fields if f.name not in held]
        if new:
            self._sql(f"ALTER TABLE {quoted(self.database, name)} ADD COLUMNS "
                      f"({', '.join(self._column(f) for f in new)})", name)

    def _sql(self, text: str, name: str, args: Optional[dict] = None) -> None:
        """A statement on table `name`; one the catalog refuses (a column name its format cannot
        hold, say) is one line."""
        try:
            self.spark.sql(text, args=args)
        except AnalysisException as exc:
            raise OutputError(f"the catalog refused to change table {self.database}.{name}: "
                              f"{_first_line(exc)}") from None

    def _check_partition_values(self, held: Dict[str, set]) -> None:
        """A partition value that is the text Hive names the null partition with would be read
        back as null, its rows merged with the null partition's (the folder escapes it; Spark's
        catalog cannot): one line, before anything is written."""
        for values in set().union(*held.values()):
            for column, value in zip(self.partition_by, values):
                if value == NULL_PARTITION:
                    raise OutputError(f"partition column {column} holds the text {NULL_PARTITION}, "
                                      f"which Spark's catalog reads back as null (its rows would "
                                      f"merge with the null partition's); change that value in the "
                                      f"input, or write the output folder alone")

    def _replace_together(self, frames: Dict[str, DataFrame], held: Dict[str, set]) -> None:
        """Our tables this run wrote nothing into for one of its partitions (no rejected rows
        this time, no segments) lose their older rows there, as the folder's commit drops them;
        without partitions, such a table is emptied."""
        if not self.partition_by:
            for name in TABLES:
                if name not in frames and self._exists(name):
                    full = f"{self.database}.{name}"
                    empty = self.spark.createDataFrame([], self.spark.table(full).schema)
                    empty.write.insertInto(full, overwrite=True)
            return
        produced = set().union(*held.values())
        for name in TABLES:
            stale = produced - held.get(name, set())
            if stale and self._exists(name):
                for values in sorted(stale, key=repr):
                    self._drop_partition(name, values)

    def _partitions(self, frame: DataFrame) -> set:
        if not self.partition_by:
            return set()
        return {tuple(r) for r in frame.select(*columns(self.partition_by)).distinct().collect()}

    def _drop_partition(self, name: str, values: tuple) -> None:
        """One partition's rows removed; its values go in as parameters, never as SQL text."""
        args = {f"p{i}": v for i, v in enumerate(values)}
        spec = ", ".join(f"{identifier(c)} = :p{i}" for i, c in enumerate(self.partition_by))
        full = quoted(self.database, name)
        try:
            self.spark.sql(f"ALTER TABLE {full} DROP IF EXISTS PARTITION ({spec})", args=args)
        except AnalysisException:  # a format without Hive partitions (Delta, Iceberg): deleted
            match = " AND ".join(f"{identifier(c)} <=> :p{i}" for i, c in enumerate(self.partition_by))
            self._sql(f"DELETE FROM {full} WHERE {match}", name, args)


def _same_type(mine: T.DataType, held: T.DataType) -> bool:
    """The same type as SQL names it (whether elements may be null aside), or all null."""
    return isinstance(mine, T.NullType) or mine.simpleString() == held.simpleString()


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@contextmanager
def _settings(spark: SparkSession, values: Dict[str, str], required: bool = True):
    """Session settings changed for one step, then put back as they were; `required=False`:
    one the session refuses to change is left as it is."""
    before = {}
    try:
        for key, value in values.items():
            previous = spark.conf.get(key, None)
            try:
                spark.conf.set(key, value)
            except Exception:  # pyspark's and py4j's errors alike: the platform said no
                if required:
                    raise
                continue
            before[key] = previous
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)

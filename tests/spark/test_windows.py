"""Time windows through the whole job on Spark: a run with `--time-col`/`--window` equals a plain
run whose input holds the window's start as a column (computed here with Python's datetime
arithmetic), every score and the statistics table, on both read paths (the Python workers' own
Parquet reading and Spark's scan) and with groups scored on the executors; null times are
rejected with their reason; `aggregate --where` slices by the window."""
import datetime as dt
import random
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bleu_spark import statstable
from bleu_spark.aggregate import AggregateOptions, run_aggregate
from bleu_spark.errors import IncompatibleStatisticsError, InvalidRowsError
from bleu_spark.spark.job import JobOptions, run_job
from conftest import random_sentences

pytestmark = pytest.mark.spark
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
WINDOW = "window_start"
GROUPS = ("system", "langpair", WINDOW)
METRICS = ("bleu", "chrf")
ROWS = 1500
# Each time column's type, and the window it is cut into.
KINDS = {
    "ms_kolkata": (pa.timestamp("ms", tz="Asia/Kolkata"), "15m", 900),
    "us_naive": (pa.timestamp("us"), "1h", 3600),
    "s_new_york": (pa.timestamp("s", tz="America/New_York"), "45min", 2700),
    "date": (pa.date32(), "2d", 2 * 86400),
}


def python_start(instant: dt.datetime, seconds: int) -> dt.datetime:
    length = dt.timedelta(seconds=seconds)
    return EPOCH + ((instant - EPOCH) // length) * length


def _instants(rng: random.Random):
    """Over three days around New York's change to summer time, a few in 1969."""
    start = dt.datetime(2026, 3, 7, tzinfo=UTC)
    found = [start + dt.timedelta(seconds=rng.randrange(0, 3 * 86400)) for _ in range(ROWS)]
    for i in range(0, ROWS, 50):
        found[i] = EPOCH - dt.timedelta(seconds=rng.randrange(1, 86400 * 5))
    return found


def _time_values(kind: str, instants):
    arrow_type = KINDS[kind][0]
    if pa.types.is_date(arrow_type):
        return [t.date() for t in instants], [dt.datetime.combine(t.date(), dt.time(), UTC) for t in instants]
    if arrow_type.tz is None:  # naive: the UTC wall time
        return [t.replace(tzinfo=None) for t in instants], instants
    return [t.astimezone(ZoneInfo(arrow_type.tz)) for t in instants], instants


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """For each kind: an input with its time column `t` (every 37th null in a copy of its
    own), and the plain input with `window_start` computed here instead."""
    rng = random.Random(11)
    folder = tmp_path_factory.mktemp("windows")
    candidates, references = random_sentences(rng, ROWS), random_sentences(rng, ROWS)
    base = {"system": [f"sys-{i % 3}" for i in range(ROWS)],
            "langpair": [("en-de", "de-en")[i % 2] for i in range(ROWS)],
            "seg_id": [i // 6 % 60 for i in range(ROWS)],
            "candidate": candidates,
            "references": [[r, candidates[i]] if i % 5 == 0 else [r] for i, r in enumerate(references)]}
    made = {}
    for kind, (arrow_type, spec, seconds) in KINDS.items():
        values, instants = _time_values(kind, _instants(rng))
        starts = [python_start(t, seconds) for t in instants]
        windowed, plain = folder / f"{kind}.parquet", folder / f"{kind}_plain.parquet"
        nulls, plain_nulls = folder / f"{kind}_nulls.parquet", folder / f"{kind}_nulls_plain.parquet"
        # Several row groups: a task's rows cut inside a file.
        pq.write_table(pa.table({**base, "t": pa.array(values, arrow_type)}), windowed, row_group_size=400)
        pq.write_table(pa.table({**base, WINDOW: pa.array(starts, pa.timestamp("us", tz="UTC"))}), plain)
        kept = [i % 37 != 0 for i in range(ROWS)]
        pq.write_table(pa.table({**base, "t": pa.array([v if k else None for v, k in zip(values, kept)],
                                                        arrow_type)}), nulls)
        pq.write_table(pa.table({**base, WINDOW: pa.array(starts, pa.timestamp("us", tz="UTC"))})
                       .filter(pa.array(kept)), plain_nulls)
        made[kind] = {"windowed": str(windowed), "plain": str(plain), "nulls": str(nulls),
                      "plain_nulls": str(plain_nulls), "spec": spec, "starts": starts,
                      "nulls_count": kept.count(False)}
    return made


def _windowed(path, spec, **options):
    return JobOptions(input=path, time_col="t", window=spec, metrics=METRICS, progress_seconds=0, **options)


def _plain(path, **options):
    options.setdefault("group_by", GROUPS)
    return JobOptions(input=path, metrics=METRICS, progress_seconds=0, **options)


def _instant(value):
    return value.astimezone(UTC) if isinstance(value, dt.datetime) else value


def _score_rows(scores, groups=GROUPS):
    """Each scored group's values, score and statistics, in one order (by text: null group values
    of other grouping sets do not sort among others)."""
    keys = (*groups, "grouping", "metric", "score", "n_segments", "n_rejected", "signature")
    return sorted(((tuple(_instant(r.get(k)) for k in keys), tuple(sorted(r.statistics.items())))
                   for r in scores if r["n_segments"]), key=repr)


def _stats_rows(table: pa.Table):
    """The statistics table's rows in one order, window_start compared as an instant."""
    table = table.set_column(table.schema.get_field_index(WINDOW), WINDOW,
                             table[WINDOW].cast(pa.timestamp("us", tz="UTC")))
    keys = [c for c in (*GROUPS, "metric") if c in table.column_names]
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


@pytest.fixture(scope="module")
def plain_runs(spark, corpus, tmp_path_factory):
    """Each kind's plain run, its output kept."""
    runs = {}
    for kind, made in corpus.items():
        out = tmp_path_factory.mktemp(f"plain_{kind}")
        runs[kind] = (run_job(spark, _plain(made["plain"], output=str(out))), str(out))
    return runs


@pytest.mark.parametrize("scan", ["auto", "spark"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_windows_equal_a_plain_run_of_the_window_starts_computed_apart(spark, corpus, plain_runs,
                                                                     kind, scan, tmp_path):
    made = corpus[kind]
    plain, plain_out = plain_runs[kind]
    result = run_job(spark, _windowed(made["windowed"], made["spec"], scan=scan, output=str(tmp_path)))
    assert result.run["layout"]["scan"] == ("arrow" if scan == "auto" else "spark")
    assert result.run["windows"] == {"time_col": "t", "window": made["spec"], "seconds": KINDS[kind][2]}
    assert plain.run["windows"] is None
    assert _score_rows(result.scores) == _score_rows(plain.scores)
    assert len({r[WINDOW] for r in result.scores}) == len(set(made["starts"])) > 4
    stats = statstable.read(str(tmp_path))
    assert stats.schema.field(WINDOW).type == pa.timestamp("us", tz="UTC")
    assert _stats_rows(stats) == _stats_rows(statstable.read(plain_out))
    for table in ("scores", "dashboard"):
        written = pq.read_table(str(tmp_path / table))
        assert written.schema.field(WINDOW).type == pa.timestamp("us", tz="UTC")
        assert sorted(set(written[WINDOW].to_pylist())) == sorted(set(made["starts"]))


def test_groups_scored_on_the_executors_write_the_same_tables(spark, corpus, plain_runs, tmp_path):
    made = corpus["ms_kolkata"]
    _, plain_out = plain_runs["ms_kolkata"]
    result = run_job(spark, _windowed(made["windowed"], made["spec"], groups_scored_on="executors",
                                      output=str(tmp_path), report=True))
    assert result.stats is None  # scored on the executors, not brought to the driver
    assert _stats_rows(statstable.read(str(tmp_path))) == _stats_rows(statstable.read(plain_out))
    for table in ("scores", "dashboard"):
        mine, theirs = pq.read_table(str(tmp_path / table)), pq.read_table(str(tmp_path / table).replace(str(tmp_path), plain_out))
        assert mine.schema.field(WINDOW).type == pa.timestamp("us", tz="UTC")
        kept = [*GROUPS, "grouping", "metric", "score", "n_segments"]
        order = [(c, "ascending") for c in (*GROUPS, "metric")]
        assert (mine.select(kept).sort_by(order).to_pylist()
                == theirs.select(kept).cast(mine.select(kept).schema).sort_by(order).to_pylist())
    shown = {r[WINDOW] for r in result.scores}
    assert shown <= set(made["starts"]) and all(s.tzinfo is not None for s in shown)
    first = min(made["starts"]).strftime("%Y-%m-%d %H:%M:%S+00:00")
    assert first in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize("scan", ["auto", "spark"])
def test_null_times_are_rejected_as_null_time(spark, corpus, scan, tmp_path):
    made = corpus["us_naive"]
    with pytest.raises(InvalidRowsError, match="null_time"):
        run_job(spark, _windowed(made["nulls"], made["spec"], scan=scan))
    result = run_job(spark, _windowed(made["nulls"], made["spec"], scan=scan, output=str(tmp_path),
                                      on_invalid="quarantine"))
    assert result.run["rows"]["rejected_by_reason"] == {"null_time": made["nulls_count"]}
    rejected = pq.read_table(str(tmp_path / "rejected"))
    assert rejected.num_rows == made["nulls_count"]
    assert set(rejected["reason"].to_pylist()) == {"null_time"} and rejected["t"].null_count == rejected.num_rows
    plain = run_job(spark, _plain(made["plain_nulls"]))
    assert _score_rows(result.scores) == _score_rows(plain.scores)


def test_grouping_sets_name_the_window_where_wanted(spark, corpus):
    made = corpus["s_new_york"]
    sets = (("system", WINDOW), ("langpair",))
    windowed = run_job(spark, _windowed(made["windowed"], made["spec"], grouping_sets=sets))
    plain = run_job(spark, _plain(made["plain"], group_by=None, grouping_sets=sets))
    assert _score_rows(windowed.scores) == _score_rows(plain.scores)
    assert {r["grouping"] for r in windowed.scores} == {"system,window_start", "langpair"}


@pytest.mark.parametrize("kind", ["us_naive", "date"])
def test_duplicate_segments_are_those_of_one_window(spark, corpus, kind):
    """Copies in one window are duplicates, in two windows not; a row of a null time is
    `null_time` (kept, not dropped as Spark's window() drops it)."""
    made = corpus[kind]
    windowed = run_job(spark, _windowed(made["nulls"], made["spec"], segment_key=("seg_id",),
                                        on_invalid="quarantine"))
    plain = run_job(spark, _plain(made["plain_nulls"], segment_key=("seg_id",), on_invalid="quarantine"))
    rejected = windowed.run["rows"]["rejected_by_reason"]
    assert rejected == {**plain.run["rows"]["rejected_by_reason"], "null_time": made["nulls_count"]}
    assert 0 < rejected["duplicate_segment"] < ROWS
    assert _score_rows(windowed.scores) == _score_rows(plain.scores)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_aggregate_slices_by_window_start(spark, corpus, tmp_path, engine):
    made = corpus["ms_kolkata"]
    run_job(spark, _windowed(made["windowed"], made["spec"], output=str(tmp_path / "all")))
    since = dt.datetime(2026, 3, 8, 6, 15, tzinfo=UTC)
    sliced = run_aggregate(AggregateOptions(stats=str(tmp_path / "all"), group_by=("system", "langpair"),
                                            where="window_start >= '2026-03-08 06:15:00' AND "
                                                  "window_start < '2026-03-08T12:00:00+05:30'",
                                            engine=engine, output=str(tmp_path / "agg")), spark)
    table = pq.read_table(made["plain"])
    starts = table[WINDOW].to_pylist()
    keep = [since <= s < dt.datetime(2026, 3, 8, 6, 30, tzinfo=UTC) for s in starts]
    assert 0 < sum(keep) < len(keep)
    part = str(tmp_path / "part.parquet")
    pq.write_table(table.filter(pa.array(keep)), part)
    fresh = run_job(spark, _plain(part, group_by=("system", "langpair")))
    groups = ("system", "langpair")
    drop_grouping = lambda rows: [(r[0][:2] + r[0][3:], r[1]) for r in rows]
    assert drop_grouping(_score_rows(sliced.scores, groups)) == drop_grouping(_score_rows(fresh.scores, groups))
    assert pc.sum(pa.array(keep)).as_py() == sum(r["n_segments"] for r in sliced.scores if r["metric"] == "bleu")


def test_incremental_runs_add_up_windows_and_refuse_another_length(spark, corpus, tmp_path):
    made = corpus["ms_kolkata"]
    table = pq.read_table(made["windowed"])
    folder = tmp_path / "logs"
    folder.mkdir()
    pq.write_table(table.slice(0, ROWS // 2), folder / "a.parquet")
    out = str(tmp_path / "out")
    run_job(spark, _windowed(str(folder), made["spec"], output=out, incremental=True))
    pq.write_table(table.slice(ROWS // 2), folder / "b.parquet")
    added = run_job(spark, _windowed(str(folder), made["spec"], output=out, incremental=True))
    whole = run_job(spark, _windowed(made["windowed"], made["spec"]))
    assert _score_rows(added.scores) == _score_rows(whole.scores)
    pq.write_table(table.slice(0, 10), folder / "c.parquet")
    with pytest.raises(IncompatibleStatisticsError, match="windows"):
        run_job(spark, _windowed(str(folder), "1h", output=out, incremental=True))


@pytest.mark.parametrize("scan", ["auto", "spark"])
def test_timestamps_spark_wrote_as_int96_are_read_as_instants(spark, corpus, plain_runs, scan, tmp_path):
    """Spark writes timestamps as INT96 by default (pyarrow reads those as nanoseconds)."""
    made = corpus["ms_kolkata"]
    plain, _ = plain_runs["ms_kolkata"]
    written = str(tmp_path / "spark_written")
    spark.createDataFrame(pq.read_table(made["windowed"])).write.parquet(written)
    footer = pq.read_metadata(next(str(p) for p in (tmp_path / "spark_written").glob("*.parquet"))).schema
    assert footer.column(footer.names.index("t")).physical_type == "INT96"
    result = run_job(spark, _windowed(written, made["spec"], scan=scan))
    assert result.run["layout"]["scan"] == ("arrow" if scan == "auto" else "spark")
    assert _score_rows(result.scores) == _score_rows(plain.scores)


def test_the_groups_estimate_counts_windows_not_times(spark, corpus, tmp_path):
    """Where auto decides where groups are scored, the windows are made from a sample's times."""
    from bleu_spark.spark import io
    from bleu_spark.spark.plan import plan_for
    from bleu_spark.spark.scan import arrow_scan

    made = corpus["ms_kolkata"]
    one_batch = str(tmp_path / "one_batch.parquet")
    pq.write_table(pq.read_table(made["windowed"]), one_batch)  # one row group: estimated exactly
    options = _windowed(one_batch, made["spec"])
    table = io.InputTable(spark, one_batch)
    plan = plan_for(table.schema, options)
    scan = arrow_scan(spark, table, options, plan)
    plain = pq.read_table(made["plain"]).select(list(GROUPS))
    groups = plain.group_by(list(GROUPS)).aggregate([]).num_rows
    assert scan.estimated_groups(plan.group_cols, plan.window) == groups < ROWS


def test_score_dataframe_takes_windows(spark, corpus, plain_runs):
    from bleu_spark.spark.job import score_dataframe

    made = corpus["us_naive"]
    plain, _ = plain_runs["us_naive"]
    frame = spark.read.parquet(made["windowed"])
    scores = score_dataframe(frame, time_col="t", window=made["spec"], metrics=METRICS)
    assert _score_rows(scores) == _score_rows(plain.scores)

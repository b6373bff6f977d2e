"""Time windows without a JVM: each time's window start equals Python's datetime arithmetic (the
epoch plus a whole number of windows, floor division), for every unit, zone, naive times, dates,
times before 1970 and nulls; the spec's grammar; `--where` on a timestamp column."""
import datetime as dt
import random
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from bleu_spark.errors import UsageError
from bleu_spark.predicate import arrow_kinds, bind, parse, to_arrow
from bleu_spark.time_windows import (WINDOW_START, WINDOW_TYPE, TimeWindow, check_window_grouping,
                                     window_seconds)

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
ZONES = (None, "UTC", "Asia/Kolkata", "America/New_York", "Australia/Adelaide")
UNITS = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}


def python_start(instant: dt.datetime, seconds: int) -> dt.datetime:
    """The window an aware time falls in, by datetime arithmetic alone."""
    length = dt.timedelta(seconds=seconds)
    return EPOCH + ((instant - EPOCH) // length) * length


def random_instants(rng: random.Random, n: int, unit: str):
    """Times from 1969 to 2030 at the unit's precision (microseconds at most: Python's)."""
    step = max(1, 10 ** 6 // UNITS[unit])  # microseconds per tick
    low, high = -3 * 10 ** 7 * 10 ** 6, 19 * 10 ** 8 * 10 ** 6
    return [EPOCH + dt.timedelta(microseconds=rng.randrange(low, high) // step * step) for _ in range(n)]


@pytest.mark.parametrize("spec", ["1m", "15m", "15min", "7m", "1h", "6h", "1d", "3d"])
@pytest.mark.parametrize("unit", list(UNITS))
@pytest.mark.parametrize("zone", ZONES)
def test_each_time_floors_to_the_window_python_datetime_gives(spec, unit, zone):
    rng = random.Random(f"{spec}{unit}{zone}")
    seconds = window_seconds(spec)
    instants = random_instants(rng, 300, unit)
    # Edges: a window's first instant, the instant before it, the epoch, and before it.
    edge = python_start(instants[0], seconds)
    instants[:4] = [edge, edge - dt.timedelta(seconds=1), EPOCH, EPOCH - dt.timedelta(seconds=1)]
    if zone is None:  # naive: the UTC wall time, taken as UTC
        values = [t.replace(tzinfo=None) for t in instants]
    else:
        values = [t.astimezone(ZoneInfo(zone)) for t in instants]
    values[7] = None
    times = pa.array(values, pa.timestamp(unit, tz=zone))
    starts = TimeWindow("t", seconds).starts(times)
    assert starts.type == WINDOW_TYPE
    expected = [None if v is None else python_start(t, seconds) for v, t in zip(values, instants)]
    assert starts.to_pylist() == expected


def test_nanoseconds_just_before_a_window_floor_to_the_window_before():
    first = python_start(dt.datetime(1969, 12, 31, 23, 0, tzinfo=UTC), 900)
    nanos = (first - EPOCH) // dt.timedelta(microseconds=1) * 1000
    times = pa.array([nanos - 1, nanos, nanos + 1], pa.int64()).cast(pa.timestamp("ns"))
    starts = TimeWindow("t", 900).starts(times).to_pylist()
    assert starts == [first - dt.timedelta(minutes=15), first, first]


@pytest.mark.parametrize("spec", ["15m", "1h", "1d", "2d"])
def test_a_date_is_its_midnight(spec):
    rng = random.Random(spec)
    days = [dt.date(1969, 6, 1) + dt.timedelta(days=rng.randrange(0, 25000)) for _ in range(200)]
    seconds = window_seconds(spec)
    for kind in (pa.date32(), pa.date64()):
        starts = TimeWindow("d", seconds).starts(pa.array(days + [None], kind)).to_pylist()
        midnight = [dt.datetime.combine(d, dt.time(), UTC) for d in days]
        assert starts == [python_start(m, seconds) for m in midnight] + [None]


def test_the_column_is_appended_and_null_times_are_the_rows_rejected():
    batch = pa.record_batch({"t": pa.array([0, None, 3_600_000], pa.timestamp("ms"))})
    window = TimeWindow("t", 3600)
    added = window.added(batch)
    assert added.schema.names == ["t", WINDOW_START]
    assert window.rejections(batch["t"]).to_pylist() == [None, "null_time", None]


@pytest.mark.parametrize("spec,seconds", [("1m", 60), ("15m", 900), ("15min", 900), ("90min", 5400),
                                          ("1h", 3600), ("24h", 86400), ("1d", 86400),
                                          ("1000000d", 86400 * 10 ** 6)])
def test_a_spec_is_a_whole_number_and_a_unit(spec, seconds):
    assert window_seconds(spec) == seconds


@pytest.mark.parametrize("spec", ["", "15", "m", "0m", "-5m", "1.5h", "15 m", " 15m", "15M", "1w",
                                  "15s", "1hour", "1000001d", "1h30m"])
def test_anything_else_is_one_line(spec):
    with pytest.raises(UsageError, match="is not a window"):
        window_seconds(spec)


def test_both_options_or_neither():
    assert TimeWindow.of(None, None) is None
    assert TimeWindow.of("t", "1h") == TimeWindow("t", 3600)
    with pytest.raises(UsageError, match="--window needs --time-col"):
        TimeWindow.of(None, "1h")
    with pytest.raises(UsageError, match="--time-col needs --window"):
        TimeWindow.of("t", None)


def test_named_groups_must_name_window_start_and_it_is_no_partition_key():
    check_window_grouping(None, None, ())
    check_window_grouping(("system", WINDOW_START), None, ())
    check_window_grouping(None, (("system",), ("system", WINDOW_START)), ("run_date",))
    with pytest.raises(UsageError, match="--group-by does not name"):
        check_window_grouping(("system",), None, ())
    with pytest.raises(UsageError, match="--group-by does not name"):
        check_window_grouping((), None, ())
    with pytest.raises(UsageError, match="--grouping-sets does not name"):
        check_window_grouping(None, (("system",), ("langpair",)), ())
    with pytest.raises(UsageError, match="not a partition folder key"):
        check_window_grouping(None, None, (WINDOW_START,))


def _filtered(where: str, table: pa.Table) -> list:
    bound = bind(parse(where), arrow_kinds(table.schema), table.column_names)
    return table.filter(to_arrow(bound))["n"].to_pylist()


def test_where_compares_a_timestamp_column_with_a_utc_literal():
    instants = [dt.datetime(2026, 1, 7, h, m, tzinfo=UTC) for h in (5, 6, 7) for m in (0, 30)]
    table = pa.table({WINDOW_START: pa.array(instants + [None], WINDOW_TYPE),
                      "n": list(range(len(instants) + 1))})
    expected = lambda keep: [i for i, t in enumerate(instants) if keep(t)]
    at = lambda text: dt.datetime.fromisoformat(text).replace(tzinfo=UTC)
    assert _filtered("window_start >= '2026-01-07 06:00:00'", table) == expected(lambda t: t >= at("2026-01-07 06:00"))
    assert _filtered("window_start = '2026-01-07 06:30'", table) == expected(lambda t: t == at("2026-01-07 06:30"))
    assert _filtered("window_start < '2026-01-07T07:00:00+01:00'", table) == expected(lambda t: t < at("2026-01-07 06:00"))
    assert _filtered("window_start BETWEEN '2026-01-07 05:30Z' AND '2026-01-07 06:30:00.000000'",
                     table) == expected(lambda t: at("2026-01-07 05:30") <= t <= at("2026-01-07 06:30"))
    assert _filtered("window_start IN ('2026-01-07 05:00', '2026-01-07 07:30:00')", table) == [0, 5]
    assert _filtered("window_start IS NULL", table) == [len(instants)]
    assert _filtered("window_start > '2026-01-07'", table) == expected(lambda t: t > at("2026-01-07 00:00"))


@pytest.mark.parametrize("where,message", [
    ("window_start > '07/01/2026'", "a timestamp literal is not"),
    ("window_start > '2026-01-07 25:00'", "a timestamp literal is not"),
    ("window_start > 5", "window_start is a timestamp column, compared with a number"),
])
def test_where_refuses_what_is_no_timestamp_in_one_line(where, message):
    table = pa.table({WINDOW_START: pa.array([EPOCH], WINDOW_TYPE), "n": [0]})
    with pytest.raises(UsageError, match=message):
        _filtered(where, table)

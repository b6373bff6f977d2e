"""scripts/bench.py: its identity guard (unit-tested, and run whole in smoke mode) and its corpus."""
import copy
import importlib
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "scripts", "bench.py")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, os.path.dirname(BENCH))
    return importlib.import_module("bench")


def _rows():
    return [
        {"system": "A", "langpair": "de-en", "score": 31.25, "counts": [10, 6, 3, 1],
         "totals": [12, 11, 10, 9], "sys_len": 12, "ref_len": 13, "n_segments": 2},
        {"system": "B", "langpair": "de-en", "score": 12.5, "counts": [8, 3, 1, 0],
         "totals": [12, 11, 10, 9], "sys_len": 12, "ref_len": 13, "n_segments": 2},
    ]


def test_compare_accepts_identical_results_in_any_order(bench):
    rows = _rows()
    assert bench.compare_results(rows, list(reversed(copy.deepcopy(rows)))) == []
    nudged = copy.deepcopy(rows)
    nudged[0]["score"] += 1e-12  # float noise below the 1e-9 tolerance
    assert bench.compare_results(rows, nudged) == []


@pytest.mark.parametrize("field,value", [
    ("score", 31.25 + 1e-6), ("counts", [10, 6, 3, 2]), ("totals", [12, 11, 10, 8]),
    ("sys_len", 11), ("ref_len", 14), ("n_segments", 3), ("score", float("nan")),
])
def test_compare_reports_a_tampered_field(bench, field, value):
    rows = _rows()
    tampered = copy.deepcopy(rows)
    tampered[0][field] = value
    problems = bench.compare_results(rows, tampered)
    assert len(problems) == 1 and field in problems[0] and "'A'" in problems[0]


def test_compare_reports_missing_extra_and_duplicate_groups(bench):
    rows = _rows()
    assert any("missing" in p for p in bench.compare_results(rows, rows[:1]))
    extra = rows + [dict(rows[0], system="C")]
    assert any("unexpected" in p for p in bench.compare_results(rows, extra))
    assert any("twice" in p for p in bench.compare_results(rows, rows + rows[:1]))
    del_field = copy.deepcopy(rows)
    del del_field[1]["counts"]
    assert any("counts missing" in p for p in bench.compare_results(rows, del_field))


def test_corpus_is_deterministic_and_shaped_like_the_input_schema(bench, tmp_path):
    import pyarrow.parquet as pq

    params = bench.corpus_params(300, 3, "de-en:2,cs-en:1,ru-en:1-2", "system", 5)
    assert params["segments_per_langpair"] == 34 and params["rows"] == 34 * 3 * 3
    first = pq.read_table(bench.generate_corpus(tmp_path / "a.parquet", params, log=lambda *_: None))
    again = pq.read_table(bench.generate_corpus(tmp_path / "b.parquet", params, log=lambda *_: None))
    assert first.equals(again)
    assert first.column_names == ["testset", "langpair", "system", "seg_id", "candidate", "references"]
    assert first.num_rows == params["rows"]
    rows = first.to_pylist()
    n_refs = {}
    for r in rows:
        n_refs.setdefault(r["langpair"], set()).add(len(r["references"]))
        assert all(ref for ref in r["references"])
        assert len(r["references"][0].split()) <= 70
    assert n_refs == {"de-en": {2}, "cs-en": {1}, "ru-en": {1, 2}}
    # every system has every segment of its langpair once
    keys = {(r["langpair"], r["system"], r["seg_id"]) for r in rows}
    assert len(keys) == len(rows)
    # candidates are edits of the references, not copies, and differ between systems
    assert sum(r["candidate"] == r["references"][0] for r in rows) < len(rows) / 4
    assert len({r["candidate"] for r in rows}) > 0.7 * len(rows)


def test_sacrebleu_paths_agree_on_the_corpus(bench, tmp_path):
    params = bench.corpus_params(400, 4, "de-en:2,ru-en:1-2", "segment", 9)
    path = bench.generate_corpus(tmp_path / "c.parquet", params, log=lambda *_: None)
    out = {}
    for p in ("a1", "a2"):
        bench.run_score_path(p, str(path), str(tmp_path / f"{p}.json"))
        out[p] = json.loads((tmp_path / f"{p}.json").read_text())
    assert out["a1"]["rows"] == params["rows"]
    assert len(out["a1"]["results"]) == 8
    assert bench.compare_results(out["a1"]["results"], out["a2"]["results"]) == []
    sigs = {r["langpair"]: r["signature"] for r in out["a1"]["results"]}
    assert sigs["de-en"].startswith("nrefs:2|") and sigs["ru-en"].startswith("nrefs:var|")


@pytest.mark.e2e
@pytest.mark.classic  # its paths b to d are spark-submit's classic Spark
def test_bench_smoke_runs_the_identity_guard(tmp_path):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    # b is c on one core and s times Spark alone: neither adds a result to guard
    paths = ("a1", "a2", "c", "d", "e", "g")
    result = subprocess.run([sys.executable, BENCH, "--smoke", "--paths", ",".join(paths),
                             "--workdir", str(tmp_path), "--json", str(tmp_path / "smoke.json")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "identity check: PASSED" in out
    for p in ("a2", "c", "d", "e"):
        assert f"{p} vs a1: identical" in out
    report = json.loads((tmp_path / "smoke.json").read_text())
    assert report["identity"]["passed"] is True
    assert report["identity"]["paths"] == ["a1", "a2", "c", "d", "e"]
    assert all(report["runs"][p]["returncode"] == 0 for p in paths)
    assert "g: aggregate of 100,000 statistics rows in" in out


def test_tokenizer_costs_times_two_checkouts_and_checks_their_statistics(bench):
    """This checkout against itself, loaded a second time under another name: every batch's
    statistics are compared, and every valid row is timed once per checkout."""
    from pathlib import Path

    sample = Path(ROOT) / "samples" / "wmt22_sample.parquet"
    table, identical = bench.tokenizer_costs(sample, Path(ROOT), ["en-zh", "de-en"], 700, 1, "segment")
    assert identical and [r["langpair"] for r in table] == ["en-zh", "de-en"]
    assert [r["tokenize"] for r in table] == ["zh", "13a"]
    assert [r["rows"] for r in table] == [1963, 1359]
    assert all(r["old_us_per_row"] > r["old_tokenize_us_per_row"] > 0 for r in table)


def test_metric_costs_time_chrf_and_ter_and_check_their_statistics_against_sacrebleu(bench):
    from pathlib import Path

    sample = Path(ROOT) / "samples" / "wmt22_sample.parquet"
    table = bench.metric_costs(sample, 15, 1)
    assert {r["metric"] for r in table} == {"chrf", "chrf++", "ter"}
    assert len({r["langpair"] for r in table}) == 10 and all(r["rows"] == 15 for r in table)
    assert all(r["identical"] and r["ours_us"] > 0 and r["sacrebleu_us"] > 0 for r in table)

"""`bleu-spark gate`: a slice of saved statistics against a baseline slice, per group and metric,
from the replicate sums; exit 20 on a significant drop. Statistics are measured in this process
the way the scoring tasks measure them (each metric's segment statistics, the segments' hashes of
their references, the hashed Poisson weights), from the bundled sample's real text."""
import json
import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import sacrebleu

from bleu_spark import cli, metrics, settings, statstable, store
from bleu_spark.gate import GateOptions, run_gate
from bleu_spark.hashes import reference_hashes
from bleu_spark.languages import TextSettings
from bleu_spark.resampling import Resampling, poisson_weights, replicate_sums
from bleu_spark.tokenizers import LineTokenizer
from conftest import ROOT, SAMPLE

B, SEED = 200, 12345
LABEL = Resampling(confidence=True, n_bootstrap=B, seed=SEED).label


def sample(langpair="en-de"):
    """The sample's rows of one language pair, per system: (candidates, references)."""
    table = pq.read_table(SAMPLE).filter(pc.equal(pc.field("langpair"), langpair))
    systems = {}
    for row in table.select(["system", "candidate", "references"]).to_pylist():
        candidates, references = systems.setdefault(row["system"], ([], []))
        candidates.append(row["candidate"])
        references.append(row["references"])
    return systems


def halves(n, seed):
    """Two disjoint random halves of range(n)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return sorted(order[:n // 2]), sorted(order[n // 2:])


def degraded(candidate):
    """Half the words dropped."""
    return " ".join(candidate.split()[::2])


def segment_stats(metric, candidates, references, langpair):
    """Each segment's statistics of `metric` as a run measures them, and the hashes its
    bootstrap weights are drawn from."""
    values = settings.defaults()
    measured = metrics.get(metric).from_settings(values)
    text = TextSettings.of(values, measured.lowercase_tokens)
    tokenize = text.tokenizer_for(langpair) if measured.uses_tokenizer else None
    tokenizer = LineTokenizer(tokenize, text.lowercase) if tokenize else None
    refs = pa.array(references, pa.list_(pa.string()))
    stats = measured.segment_statistics(pa.array(candidates, pa.string()), refs, tokenizer)
    return measured, tokenize, tokenizer, stats, reference_hashes(refs)


def statistics_row(metric, candidates, references, groups, label=LABEL, n_bootstrap=B):
    """One statistics row of a group and metric, with its replicate sums when `label` names a
    draw (as `score --confidence` keeps them)."""
    measured, tokenize, tokenizer, stats, hashes = segment_stats(
        metric, candidates, references, groups.get("langpair"))
    one = lambda v, t=None: pa.array([v], t)  # noqa: E731
    n_refs = [sum(r is not None for r in refs) for refs in references]
    counts = {"n_segments": one(len(candidates)), "n_rejected": one(0),
              "n_reference_segments": one(None, pa.int64()),
              "segment_fingerprint": one(int((hashes & statstable.FINGERPRINT_MASK).sum())),
              "min_refs": one(min(n_refs)), "max_refs": one(max(n_refs))}
    samples = None
    if label:
        sums = replicate_sums(stats, poisson_weights(hashes, SEED, n_bootstrap))
        samples = {statstable.REPLICATE_SUMS: pa.array([sums.reshape(-1).tolist()], pa.list_(pa.int64()))}
    return statstable.build(
        {k: one(v) for k, v in groups.items()},
        statstable.measurement_columns(1, one(tokenize, pa.string()),
                                       one(tokenizer.signature() if tokenizer else None, pa.string()),
                                       measured.measurement()["metric_options"], label, metric),
        counts, {name: one(v) for name, v in zip(measured.names, measured.combined(stats))}, samples)


def two_slices(folder, degrade=(), systems=3, metric_names=("bleu", "ter"), labels=(LABEL, LABEL)):
    """Saved statistics of `systems` en-de systems, each cut into two disjoint random halves of
    its segments: `day = 'week'` (the baseline) and `day = 'today'`, whose candidates of the
    systems in `degrade` lost half their words."""
    rows, texts = [], {}
    for index, (system, (candidates, references)) in enumerate(sorted(sample().items())[:systems]):
        for day, part, label in zip(("week", "today"), halves(len(candidates), index), labels):
            cands = [candidates[i] for i in part]
            if day == "today" and system in degrade:
                cands = [degraded(c) for c in cands]
            refs = [references[i] for i in part]
            texts[day, system] = (cands, refs)
            for metric in metric_names:
                rows.append(statistics_row(metric, cands, refs,
                                           {"day": day, "langpair": "en-de", "system": system}, label))
    return save(folder, *rows), texts


def save(folder, *rows):
    """Rows of several metrics saved as one statistics table (a metric's columns null in the
    others' rows, as a run writes them)."""
    out = store.open_output(str(folder))
    out.write_table("stats", pa.concat_tables(rows, promote_options="default"))
    out.commit({"run_id": out.run_id})
    return str(folder)


def gate_args(stats, *more):
    return ["gate", "--stats", stats, "--where", "day = 'today'", "--baseline-where", "day = 'week'",
            "--group-by", "langpair,system", *more]


def test_a_system_whose_slice_lost_half_its_words_fails_and_is_named(tmp_path, capsys):
    stats, texts = two_slices(tmp_path / "saved", degrade={"JDExploreAcademy"})
    systems = sorted({system for _, system in texts})
    assert "JDExploreAcademy" in systems
    assert cli.main(gate_args(stats, "--output", str(tmp_path / "gate"))) == 20
    out, err = capsys.readouterr()
    assert err.startswith("bleu-spark: error: gate failed: ") and err.count("\n") == 1
    assert "system=JDExploreAcademy/bleu" in err and "system=JDExploreAcademy/ter" in err
    failing = [line.split() for line in out.splitlines() if line.endswith("FAIL")]
    assert sorted((f[1], f[2]) for f in failing) == [("JDExploreAcademy", "bleu"),
                                                      ("JDExploreAcademy", "ter")]
    assert sum(line.endswith("PASS") for line in out.splitlines()) == 2 * (len(systems) - 1)
    written = pq.read_table(tmp_path / "gate" / "gate").to_pylist()
    assert sorted((r["system"], r["metric"]) for r in written if r["verdict"] == "FAIL") == \
        sorted((f[1], f[2]) for f in failing)
    with open(tmp_path / "gate" / "run.json", encoding="utf-8") as handle:
        run = json.load(handle)
    assert (run["verdict"], run["failed"], run["exit_code"]) == ("FAIL", 2, 20)


def test_a_slice_against_itself_is_resampled_independently(tmp_path):
    """Replicate r beside replicate r of the same segments would drop by exactly 0 every time
    (p = 1); beside replicate r + 1 the two are independent draws, which differ."""
    stats, _ = two_slices(tmp_path / "saved", metric_names=("bleu",))
    result = run_gate(GateOptions(stats=stats, where="day = 'today'", baseline_where="day = 'today'",
                                  group_by=("langpair", "system")))
    assert all(r["delta"] == 0 and r["verdict"] == "PASS" for r in result.rows)
    assert all(0.5 < r["p_value"] < 1 for r in result.rows)


def test_two_random_halves_of_the_same_output_pass(tmp_path, capsys):
    stats, texts = two_slices(tmp_path / "saved", systems=6, metric_names=("bleu", "chrf", "ter"))
    result = run_gate(GateOptions(stats=stats, where="day = 'today'", baseline_where="day = 'week'",
                                  group_by=("langpair", "system")))
    assert len(result.rows) == 18 and result.failed == []
    # Halves differ by chance by more than the allowed drop: the bootstrap says it is chance.
    assert any(-row["delta"] > 1.0 for row in result.rows)
    assert cli.main(gate_args(stats)) == 0
    assert capsys.readouterr().err == ""


def numpy_bleu(sums):
    """BLEU of each row of (B, 2 + 2 x 4) sums [sys_len, ref_len, correct_1..4, total_1..4],
    with sacrebleu's exp smoothing, written out here apart from the package's formula."""
    sys_len, ref_len = sums[:, 0].astype(float), sums[:, 1].astype(float)
    correct, total = sums[:, 2:6].astype(float), sums[:, 6:10].astype(float)
    precisions = np.empty_like(correct)
    smooth = np.ones(len(sums))
    for n in range(4):
        zero = correct[:, n] == 0
        smooth = np.where(zero, smooth * 2, smooth)
        precisions[:, n] = np.where(zero, 100.0 / (smooth * total[:, n]), 100.0 * correct[:, n] / total[:, n])
    brevity = np.where(sys_len < ref_len, np.exp(1 - ref_len / sys_len), 1.0)
    return brevity * np.exp(np.log(precisions).mean(axis=1))


def test_the_p_value_is_the_share_of_independent_replicate_pairs_within_the_allowed_drop(tmp_path):
    stats, texts = two_slices(tmp_path / "saved", degrade={"JDExploreAcademy"}, metric_names=("bleu",))
    result = run_gate(GateOptions(stats=stats, where="day = 'today'", baseline_where="day = 'week'",
                                  group_by=("langpair", "system"), max_drop=2.0))
    names = ["sys_len", "ref_len", *(f"correct_{n}" for n in range(1, 5)),
             *(f"total_{n}" for n in range(1, 5))]
    assert [c.name for c in metrics.get("bleu").from_settings(settings.defaults()).columns()] == names
    for row in result.rows:
        replicates = {}
        for day in ("today", "week"):
            cands, refs = texts[day, row["system"]]
            _, _, _, segments, hashes = segment_stats("bleu", cands, refs, "en-de")
            weights = poisson_weights(hashes, SEED, B).astype(np.int64)
            replicates[day] = numpy_bleu(weights.T @ segments.astype(np.int64))
            theirs = sacrebleu.corpus_bleu(cands, [list(r) for r in zip(*refs)])
            assert row["current" if day == "today" else "baseline"] == theirs.score
        drops = replicates["week"][(np.arange(B) + 1) % B] - replicates["today"]
        assert row["p_value"] == pytest.approx(np.mean(drops <= 2.0), abs=0.5 / B)
        assert row["delta"] == row["current"] - row["baseline"]
    failed = {r["system"] for r in result.failed}
    assert failed == {"JDExploreAcademy"}


def test_lower_is_better_metrics_drop_when_their_score_rises(tmp_path):
    stats, _ = two_slices(tmp_path / "saved", degrade={"JDExploreAcademy"}, metric_names=("ter",))
    result = run_gate(GateOptions(stats=stats, where="day = 'today'", baseline_where="day = 'week'",
                                  group_by=("langpair", "system")))
    worse = next(r for r in result.rows if r["system"] == "JDExploreAcademy")
    assert worse["current"] > worse["baseline"] + 1 and worse["delta"] == worse["baseline"] - worse["current"]
    assert worse["higher_is_better"] is False and worse["verdict"] == "FAIL"


def small_rows(labels=(LABEL, LABEL), groups=2):
    """Statistics rows of `groups` groups of 4 segments each in both slices (fast)."""
    candidates, references = sample()["JDExploreAcademy"]
    rows = []
    for g in range(groups):
        for day, label in zip(("week", "today"), labels):
            start = (8 * g) % 160 + (4 if day == "today" else 0)
            rows.append(statistics_row("bleu", candidates[start:start + 4], references[start:start + 4],
                                       {"day": day, "doc": f"d{g:03d}"}, label))
    return rows


def small_slices(folder, labels=(LABEL, LABEL), groups=2):
    return save(folder, *small_rows(labels, groups))


@pytest.mark.parametrize("labels, message", [
    (("", ""), "hold no replicate sums"),
    ((LABEL, ""), "--where selects hold no replicate sums"),
    ((statstable.MIXED, LABEL), "mixed draws"),
    ((LABEL, Resampling(confidence=True, n_bootstrap=B, seed=7).label), "different draws"),
])
def test_statistics_without_replicate_sums_or_of_other_draws_are_refused(tmp_path, capsys, labels, message):
    stats = small_slices(tmp_path / "saved", labels)
    assert cli.main(["gate", "--stats", stats, "--where", "day = 'today'", "--baseline-where",
                     "day = 'week'", "--group-by", "doc"]) == 11
    err = capsys.readouterr().err
    assert err.startswith("bleu-spark: error: ") and message in err and err.count("\n") == 1


def test_rows_of_two_draws_in_one_slice_are_refused(tmp_path, capsys):
    other = Resampling(confidence=True, n_bootstrap=B, seed=7).label
    stats = save(tmp_path / "saved", *small_rows(),
                 statistics_row("bleu", ["a b c"], [["a b c"]], {"day": "week", "doc": "x"}, other))
    assert cli.main(["gate", "--stats", stats, "--where", "day = 'today'", "--baseline-where",
                     "day = 'week'", "--group-by", "doc"]) == 11
    assert "replicate sums of different draws" in capsys.readouterr().err


@pytest.mark.parametrize("args, code, message", [
    (["--where", "day = 'tomorrow'"], 13, "--where selects no rows"),
    (["--baseline-where", "day = 'never'"], 13, "--baseline-where selects no rows"),
    (["--baseline-where", "nope = 1"], 2, "bad --baseline-where predicate: nope"),
    (["--baseline-where", "day = 'week' OR"], 2, "bad --baseline-where predicate"),
    (["--group-by", "day"], 13, "no group of --group-by day is in both slices"),
    (["--group-by", "system"], 4, "no group column system"),
    (["--max-drop", "-1"], 2, "--max-drop must be a number of at least 0"),
    (["--alpha", "1.5"], 2, "--alpha must be a number from 0 to 1"),
    (["--metrics", "ter"], 2, "--metrics names ter, which the slices do not hold"),
    (["--group-by", "doc,verdict"], 2, "--group-by verdict: gate's rows have a field of that name"),
])
def test_gate_user_errors_are_one_line_with_their_codes(tmp_path, capsys, args, code, message):
    stats = small_slices(tmp_path / "saved")
    given = {"--where": "day = 'today'", "--baseline-where": "day = 'week'", "--group-by": "doc"}
    given.update(zip(args[::2], args[1::2]))
    assert cli.main(["gate", "--stats", stats, *(x for kv in given.items() for x in kv)]) == code
    err = capsys.readouterr().err
    assert err.startswith("bleu-spark: error: ") and message in err and err.count("\n") == 1


def test_gate_needs_its_slices_and_groups(tmp_path, capsys):
    stats = small_slices(tmp_path / "saved")
    assert cli.main(["gate", "--stats", stats, "--where", "day = 'today'"]) == 2
    err = capsys.readouterr().err
    assert "gate needs --baseline-where PREDICATE, --group-by COLS" in err


def test_the_console_stays_bounded_and_output_holds_every_row(tmp_path, capsys):
    stats = small_slices(tmp_path / "saved", groups=70)
    out_dir = str(tmp_path / "gate")
    assert cli.main(["gate", "--stats", stats, "--where", "day = 'today'", "--baseline-where",
                     "day = 'week'", "--group-by", "doc", "--max-drop", "100", "--output", out_dir]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.endswith(("PASS", "FAIL"))]
    assert len(rows) == 60 and len(lines) <= 60 + 5
    assert any(line.startswith("... 10 more rows not shown (0 of them FAIL)") for line in lines)
    assert any(line.startswith("compared 70 groups and metrics: 0 FAIL, 70 PASS") for line in lines)
    written = pq.read_table(f"{out_dir}/gate")
    assert written.num_rows == 70 and set(written["verdict"].to_pylist()) == {"PASS"}
    with open(f"{out_dir}/run.json", encoding="utf-8") as handle:
        run = json.load(handle)
    assert (run["command"], run["verdict"], run["compared"], run["exit_code"]) == ("gate", "PASS", 70, 0)


def test_groups_in_one_slice_are_listed_and_never_fail(tmp_path, capsys):
    candidates, references = sample()["JDExploreAcademy"]
    rows = [statistics_row("bleu", candidates[:20], references[:20], {"day": "week", "doc": "shared"}),
            statistics_row("bleu", candidates[20:40], references[20:40], {"day": "today", "doc": "shared"}),
            statistics_row("bleu", [""] * 20, references[40:60], {"day": "today", "doc": "new"}),
            statistics_row("bleu", candidates[60:80], references[60:80], {"day": "week", "doc": "gone"})]
    stats = save(tmp_path / "saved", *rows)
    assert cli.main(["gate", "--stats", stats, "--where", "day = 'today'", "--baseline-where",
                     "day = 'week'", "--group-by", "doc", "--max-drop", "100"]) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    assert "1 only in --where's slice (doc=new/bleu)" in summary
    assert "1 only in --baseline-where's (doc=gone/bleu)" in summary


def test_a_group_measured_otherwise_in_the_two_slices_is_refused(tmp_path, capsys):
    candidates, references = sample()["JDExploreAcademy"]
    week = statistics_row("bleu", candidates[:20], references[:20], {"day": "week"})
    today = statistics_row("bleu", candidates[20:40], references[20:40], {"day": "today"})
    today = today.set_column(today.schema.get_field_index("tokenize"), "tokenize", pa.array(["intl"]))
    stats = save(tmp_path / "saved", week, today)
    assert cli.main(["gate", "--stats", stats, "--where", "day = 'today'", "--baseline-where",
                     "day = 'week'", "--group-by", ""]) == 11
    err = capsys.readouterr().err
    assert "measured with different settings in the two slices (tokenize: intl vs 13a" in err


def test_the_exit_codes_of_a_whole_process(tmp_path):
    stats, _ = two_slices(tmp_path / "saved", degrade={"JDExploreAcademy"}, systems=2, metric_names=("bleu",))
    run = lambda *more: subprocess.run([sys.executable, "-m", "bleu_spark", *gate_args(stats, *more)],  # noqa: E731
                                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    failed = run()
    assert failed.returncode == 20 and "system=JDExploreAcademy/bleu" in failed.stderr
    allowed = run("--max-drop", "100")
    assert allowed.returncode == 0 and allowed.stderr == ""


@pytest.mark.spark
def test_statistics_scored_on_spark_gate_as_those_measured_here(spark, tmp_path, capsys):
    """The sample's halves scored by the job with --confidence into day partitions: the gate of
    its statistics is the gate of the same halves measured in this process, row for row."""
    from bleu_spark.spark.job import JobOptions, run_job

    _, texts = two_slices(tmp_path / "here", degrade={"JDExploreAcademy"})
    here = run_gate(GateOptions(stats=str(tmp_path / "here"), where="day = 'today'",
                                baseline_where="day = 'week'", group_by=("langpair", "system")))
    scored = str(tmp_path / "scored")
    resampling = Resampling(confidence=True, n_bootstrap=B, seed=SEED)
    for day in ("week", "today"):
        rows = [{"day": day, "langpair": "en-de", "system": system, "candidate": c, "references": r}
                for (d, system), (cands, refs) in sorted(texts.items()) if d == day
                for c, r in zip(cands, refs)]
        path = str(tmp_path / f"{day}.parquet")
        pq.write_table(pa.Table.from_pylist(rows), path)
        run_job(spark, JobOptions(input=path, output=scored, partition_by=("day",),
                                  metrics=("bleu", "ter"), resampling=resampling,
                                  progress_seconds=0))
    there = run_gate(GateOptions(stats=scored, where="day = 'today'", baseline_where="day = 'week'",
                                 group_by=("langpair", "system")))
    assert there.rows == here.rows and len(there.failed) == 2
    assert cli.main(gate_args(scored)) == 20
    assert "system=JDExploreAcademy/bleu" in capsys.readouterr().err

"""What the reference-free checks flag on real systems: the four checks run through the job on
WMT22 (the bundled sample, and the full table when it is there), grouped by langpair and system.

    python scripts/check_rates.py [--input samples/wmt22_sample.parquet] [--input ../shared/data/wmt22.parquet]
                                  [--top 3] [--markdown] [--languages]

Runs `bleu-spark score --checks empty,copy,untranslated,off_target --group-by langpair,system`
as a whole process per input, then prints, from its statistics table (`stats/`: the
`check_flagged`, `check_rows` and `check_unjudged` of each group), every check's rate over all
rows, and per check the groups with the highest rates, each as the job's score (percent of the group's
rows flagged) with its counts. `--languages` adds, per language pair, the languages the rows
`off_target` flags were detected as (in this process, with the checks' own code). `--markdown`
prints the tables as docs/metrics.md shows them.
Exit 1 if a group's score is not 100 x flagged / rows of its statistics, or (with
`--languages`) a pair's rows flagged in this process are not the job's.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

CHECKS = ("empty", "copy", "untranslated", "off_target")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INPUTS = (ROOT / "samples" / "wmt22_sample.parquet", ROOT.parent / "shared" / "data" / "wmt22.parquet")


def run_checks(input_path: Path, out: Path) -> None:
    cmd = [sys.executable, "-m", "bleu_spark", "score", "--input", str(input_path), "--output", str(out),
           "--checks", ",".join(CHECKS), "--group-by", "langpair,system", "--progress-seconds", "0"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def groups(out: Path) -> list:
    """One dict per (langpair, system, check): the job's score and its statistics."""
    import pyarrow.parquet as pq

    stats = {(r["langpair"], r["system"], r["metric"]): r for r in pq.read_table(out / "stats").to_pylist()}
    found = []
    for row in json.loads((out / "scores.json").read_text(encoding="utf-8")):
        counts = stats[row["langpair"], row["system"], row["metric"]]
        found.append({"langpair": row["langpair"], "system": row["system"], "check": row["metric"],
                      "score": row["score"], "flagged": counts["check_flagged"],
                      "rows": counts["check_rows"], "unjudged": counts["check_unjudged"]})
    return found


def inconsistent(found: list) -> list:
    return [f"score {g['score']} of {g['check']} {g['langpair']} {g['system']} is not 100 x "
            f"{g['flagged']} / {g['rows']}"
            for g in found if abs(g["score"] - 100.0 * g["flagged"] / g["rows"]) > 1e-9]


def overall(found: list) -> list:
    """Per check: rows, flagged, not judged, percent of rows, percent of the judged rows."""
    lines = []
    for check in CHECKS:
        mine = [g for g in found if g["check"] == check]
        rows, flagged, unjudged = (sum(g[k] for g in mine) for k in ("rows", "flagged", "unjudged"))
        judged = rows - unjudged
        lines.append((check, rows, flagged, unjudged, 100.0 * flagged / rows,
                      100.0 * flagged / judged if judged else float("nan")))
    return lines


def highest(found: list, top: int) -> list:
    """Per check, the `top` groups with the highest rates (flagged ones only)."""
    order = lambda g: (-g["score"], g["langpair"], g["system"])
    return [g for check in CHECKS
            for g in sorted((g for g in found if g["check"] == check and g["flagged"]), key=order)[:top]]


def off_target_languages(input_path: Path, top: int) -> list:
    """Per language pair, the languages the candidates `off_target` flags were detected as (in
    this process, with the checks' own detector and rules): (langpair, flagged, [(code, n)])."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from bleu_spark import langid
    from bleu_spark.metrics.checks import OffTarget

    table = pq.read_table(input_path, columns=["langpair", "candidate"])
    out = []
    for pair in sorted(pc.unique(table["langpair"]).to_pylist()):
        rows = table.filter(pc.equal(table["langpair"], pair))
        columns = {"candidate": rows["candidate"].combine_chunks(), "langpair": rows["langpair"].combine_chunks()}
        flagged = np.flatnonzero(OffTarget().row_statistics(columns)[:, 0])
        if not len(flagged):
            continue
        languages = langid.detected(columns["candidate"], flagged).to_pylist()
        counts = Counter(languages[i] for i in flagged)
        out.append((pair, len(flagged), counts.most_common(top)))
    return out


def unlike_the_job(found: list, languages: list) -> list:
    """The pairs whose off_target rows flagged in this process are not the job's count."""
    job = Counter()
    for g in found:
        if g["check"] == "off_target":
            job[g["langpair"]] += g["flagged"]
    here = {pair: flagged for pair, flagged, _ in languages}
    return [f"off_target {pair}: {here.get(pair, 0)} rows flagged in this process, {job[pair]} by the job"
            for pair in sorted(set(job) | set(here)) if here.get(pair, 0) != job[pair]]


def show_languages(found: list, markdown: bool) -> None:
    print("\noff_target: the languages its flagged candidates were detected as, per pair")
    if markdown:
        print("\n| langpair | flagged | detected as |\n|---|---|---|")
    for pair, flagged, common in found:
        text = ", ".join(f"{code} {n}" for code, n in common)
        print(f"| {pair} | {flagged:,} | {text} |" if markdown else f"  {pair:<6} {flagged:>6,}  {text}")


def show(name: str, found: list, top: int, markdown: bool) -> None:
    print(f"\n{name}: {len({(g['langpair'], g['system']) for g in found})} (langpair, system) groups")
    if markdown:
        print("\n| check | rows | flagged | not judged | % of rows | % of judged rows |\n|---|---|---|---|---|---|")
        for check, rows, flagged, unjudged, rate, judged_rate in overall(found):
            print(f"| `{check}` | {rows:,} | {flagged:,} | {unjudged:,} | {rate:.2f} | {judged_rate:.2f} |")
        print("\n| check | langpair | system | % of rows | flagged of rows | not judged |\n|---|---|---|---|---|---|")
        for g in highest(found, top):
            print(f"| `{g['check']}` | {g['langpair']} | {g['system']} | {g['score']:.2f} | "
                  f"{g['flagged']} of {g['rows']:,} | {g['unjudged']} |")
        return
    print(f"{'check':<13} {'rows':>9} {'flagged':>8} {'not judged':>10} {'% rows':>7} {'% judged':>8}")
    for check, rows, flagged, unjudged, rate, judged_rate in overall(found):
        print(f"{check:<13} {rows:>9,} {flagged:>8,} {unjudged:>10,} {rate:>7.2f} {judged_rate:>8.2f}")
    print(f"highest rates ({top} a check):")
    for g in highest(found, top):
        print(f"  {g['check']:<13} {g['langpair']:<6} {g['system']:<24} {g['score']:>6.2f}%  "
              f"({g['flagged']} of {g['rows']:,} rows; {g['unjudged']} not judged)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", action="append", default=None,
                    help="Parquet input with langpair, system, source and candidate (repeatable; "
                         "default: the bundled sample, and ../shared/data/wmt22.parquet if present)")
    ap.add_argument("--top", type=int, default=3,
                    help="groups shown per check, the highest rates first (default 3)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--languages", action="store_true",
                    help="also the languages off_target's flagged candidates were detected as, "
                         "per pair (in this process, with the checks' detector)")
    args = ap.parse_args(argv)
    inputs = [Path(p) for p in args.input] if args.input else [p for p in DEFAULT_INPUTS if p.exists()]
    bad = []
    with tempfile.TemporaryDirectory(prefix="check-rates-") as work:
        for number, input_path in enumerate(inputs):
            out = Path(work) / f"out-{number}"
            run_checks(input_path, out)
            found = groups(out)
            bad += inconsistent(found)
            show(os.path.relpath(input_path, ROOT), found, args.top, args.markdown)
            if args.languages:
                languages = off_target_languages(input_path, 4)
                show_languages(languages, args.markdown)
                bad += unlike_the_job(found, languages)
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

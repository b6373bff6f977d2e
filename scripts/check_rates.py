"""What the reference-free checks flag on real systems: the four checks run through the job on
WMT22 (the bundled sample, and the full table when it is there), grouped by langpair and system.

    python scripts/check_rates.py [--input samples/wmt22_sample.parquet] [--input ../shared/data/wmt22.parquet]
                                  [--top 8] [--markdown]

Runs `bleu-spark score --checks empty,copy,untranslated,off_target --group-by langpair,system`
as a whole process per input, then prints, from its statistics table (`stats/`: the
`check_flagged`, `check_rows` and `check_unjudged` of each group), every check's rate over all
rows, and the groups with the highest rates, each as the job's score (percent of the group's
rows flagged) with its counts. `--markdown` prints the tables as docs/metrics.md shows them.
Exit 1 if a group's score is not 100 x flagged / rows of its statistics.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
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
    return [g for g in found if abs(g["score"] - 100.0 * g["flagged"] / g["rows"]) > 1e-9]


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
    """The groups with the highest rates, any check, flagged ones only."""
    flagged = [g for g in found if g["flagged"]]
    return sorted(flagged, key=lambda g: (-g["score"], g["check"], g["langpair"], g["system"]))[:top]


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
    print(f"highest rates ({top}):")
    for g in highest(found, top):
        print(f"  {g['check']:<13} {g['langpair']:<6} {g['system']:<24} {g['score']:>6.2f}%  "
              f"({g['flagged']} of {g['rows']:,} rows; {g['unjudged']} not judged)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", action="append", default=None,
                    help="Parquet input with langpair, system, source and candidate (repeatable; "
                         "default: the bundled sample, and ../shared/data/wmt22.parquet if present)")
    ap.add_argument("--top", type=int, default=8, help="groups shown with the highest rates (default 8)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
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
    for g in bad:
        print(f"score {g['score']} of {g['check']} {g['langpair']} {g['system']} is not "
              f"100 x {g['flagged']} / {g['rows']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""What the commands print: the scores table, the paired tests, the signatures, the warnings."""
from __future__ import annotations

from typing import Dict, List, Optional

from .shown import shown

SHOWN_ROWS = 60     # score rows printed; the rest are read from the tables
SHOWN_PAIRED = 20   # paired tests printed

# Console columns aligned to the right: numbers.
NUMERIC = ("n_segments", "n_rejected", "score")
SYSTEM = "system"  # the column systems are ranked by (`--clusters`), as in `scoring`


def format_table(scores: List[dict], group_cols) -> str:
    """A line per score row: its group, metric (as sacrebleu names it), the score, and the rest
    of sacrebleu's line where it has more (BLEU's precisions, BP, ratio and lengths)."""
    group_cols = list(dict.fromkeys(c for c in group_cols if any(r.get(c) is not None for r in scores)))
    several = len({r["grouping"] for r in scores}) > 1
    intervals = any(r.get("ci_low") is not None for r in scores)
    details = any(_details(r) for r in scores)
    ranked = any(r.get("cluster") is not None for r in scores)
    if ranked:
        scores = in_rank_order(scores, group_cols)
    headers = [*group_cols, *(["grouping"] if several else []), "metric", "tokenize", "n_segments",
               "n_rejected", *(["95% CI"] if intervals else []),
               *(["rank (range)", "cluster"] if ranked else []), "score",
               *(["details"] if details else [])]
    rows = [[*(shown(r[c]) for c in group_cols),
             *([r["grouping"] or "()"] if several else []), _metric_name(r),
             str(r["tokenize"] or "-"), str(r["n_segments"]), str(r["n_rejected"]),
             *([_interval(r)] if intervals else []), *(_rank(r) if ranked else []),
             "-" if r["score"] is None else f"{r['score']:.2f}", *([_details(r)] if details else [])]
            for r in scores]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    align = [str.rjust if h in NUMERIC else str.ljust for h in headers]
    lines = ["  ".join(a(cell, w) for cell, w, a in zip(line, widths, align)).rstrip()
             for line in [headers, *rows]]
    return "\n".join(lines)


def in_rank_order(scores: List[dict], group_cols, system_col: str = SYSTEM) -> List[dict]:
    """The rows of each comparison group (a grouping set's rows that differ in the system
    alone, per metric) together, best rank first (ties by name, unranked rows last, as they
    came), the comparisons in the order their first row came: read down, a ranking."""
    others = [c for c in group_cols if c != system_col]
    comparisons: Dict[tuple, List[dict]] = {}
    for row in scores:
        key = (row.get("grouping"), *(row.get(c) for c in others), row.get("metric"))
        comparisons.setdefault(key, []).append(row)
    return [row for rows in comparisons.values()
            for row in sorted(rows, key=lambda r: (r.get("rank") is None, r.get("rank") or 0,
                                                   shown(r.get(system_col))))]


def _metric_name(row: dict) -> str:
    """sacrebleu's name of the row's metric (`BLEU`, `chrF2`, `chrF2++`, `TER`)."""
    return getattr(row, "sacrebleu", {}).get("name") or str(row.get("metric") or "-")


def _details(row: dict) -> str:
    if row["score"] is None:
        return "(no scored rows)"
    return getattr(row, "sacrebleu", {}).get("verbose_score") or ""


def _interval(row: dict) -> str:
    if row.get("ci_low") is None:
        return "-"
    return f"{row['ci_low']:.2f}-{row['ci_high']:.2f} (μ = {row['bs_mean']:.2f} ± {row['ci_halfwidth']:.2f})"


def _rank(row: dict) -> List[str]:
    if row.get("cluster") is None:
        return ["-", "-"]
    return [f"{row['rank']} ({row['rank_low']}-{row['rank_high']})", str(row["cluster"])]


def format_paired(paired: List[dict]) -> str:
    """One line per comparison, starred below 0.05 as the report does."""
    lines = []
    for row in paired:
        where = ", ".join(f"{k}={shown(v)}" for k, v in row.items()
                          if k not in paired_fields())
        star = "*" if row["p_value"] < 0.05 else " "
        interval = (f"  [{row['delta_ci_low']:+.2f}, {row['delta_ci_high']:+.2f}]"
                    if row.get("delta_ci_low") is not None else "")
        metric = f"{row['metric']} " if row.get("metric") else ""
        lines.append(f"{row['test']:9s} {where}  {metric}{shown(row['system'])} vs {shown(row['baseline'])}: "
                     f"delta {row['delta']:+.2f}  p = {row['p_value']:.4f}{star}{interval}")
    return "\n".join(lines)


def paired_fields():
    from .scoring.tables import PAIRED_TYPES

    return {*PAIRED_TYPES, "method"}


def print_scores(result, counts: str, output: Optional[str] = None,
                 catalog: Optional[str] = None) -> None:
    """The scores table, the paired tests, a line of counts, and the signatures: at most
    SHOWN_ROWS score rows and SHOWN_PAIRED paired tests, and where the rest are, so the console
    stays readable at any number of groups (`result.run` counts them all)."""
    rows = result.scores[:SHOWN_ROWS]
    print(format_table(rows, shown_columns(rows)))
    groups = result.run.get("groups", len(result.scores))
    if groups > len(rows):
        print(more_line(len(rows), groups, "score rows", "scores", output, catalog))
    if result.paired:
        print("\n" + format_paired(result.paired[:SHOWN_PAIRED]))
        tests = result.run.get("paired_tests", len(result.paired))
        if tests > SHOWN_PAIRED:
            print(more_line(SHOWN_PAIRED, tests, "paired tests", "paired", output, catalog))
    signed = getattr(result, "signature_rows", None) or result.scores
    print(f"\n{counts}\n{format_signatures(signed)}")


def more_line(shown_count: int, total: int, what: str, table: str, output: Optional[str],
              catalog: Optional[str]) -> str:
    """One line: how many rows were shown, and how to read every one."""
    if output:
        where = (f"every one is in {output}/{table}/ (e.g. duckdb -c \"SELECT * FROM "
                 f"read_parquet('{output}/{table}/**/*.parquet', hive_partitioning = true)\")")
    elif catalog:
        where = f"every one is in {catalog}.{table} (e.g. spark-sql -e \"SELECT * FROM {catalog}.{table}\")"
    else:
        where = "write them with --output DIR to read every one"
    return f"... the first {shown_count:,} of {total:,} {what}; {where}"


def shown_columns(scores: List[dict]) -> List[str]:
    fields = set(score_fields())
    return [c for c in (scores[0] if scores else {}) if c not in fields]


def score_fields():
    from .scoring.tables import GROUPING, SCORE_TYPES

    return [GROUPING, *SCORE_TYPES]


def format_signatures(scores: List[dict]) -> str:
    """Each distinct signature on a line of its own, after the metric's name, in metric order."""
    from .metrics import order_of

    named = sorted({(order_of(r.get("metric")), _metric_name(r), r["signature"])
                    for r in scores if r["signature"]})
    width = max((len(name) for _, name, _ in named), default=0)
    return "\n".join(["signatures:", *(f"  {name.ljust(width)}  {sig}" for _, name, sig in named)])

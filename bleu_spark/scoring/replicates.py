"""What resampling adds to score rows: each group's bootstrap replicate scores (from replicate
sums, or sacrebleu's draws over its segments), then intervals, ranks and clusters from them."""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import metrics, statstable
from ..metrics import combine
from ..resampling import clusters
from ..resampling import POISSON, Resampling, bootstrap_signature, poisson_interval, sacrebleu_interval_of, sacrebleu_resample_scores, scores_of_sums, with_bootstrap_fields
from ..errors import UsageError
from ..shown import shown
from .coverage import check_same_segments
from .groups import metric_of
from .sets import GroupingSet
from .tables import INTERVAL_FIELDS, SEGMENT_ORDER

# A bootstrap over fewer segments says nothing of the corpus: with one segment, every resample
# is that segment scaled (the same score) or nothing (0), an interval of [0, score].
MIN_INTERVAL_SEGMENTS = 2


def replicate_scores(row: dict, group: dict, index: int, sums: pa.Table, segment_stats,
                      grouping_set, config: metrics.Choices, resampling: Resampling,
                      measured: Optional[metrics.Metric] = None):
    """A group's bootstrap replicate scores, (B,): from its replicate sums (poisson) or from
    sacrebleu's draws over its segments; None for a group without enough segments.
    `measured`: the group's metric, when known."""
    poisson = resampling.method == POISSON
    if not row["n_segments"] or (poisson and row["n_segments"] < MIN_INTERVAL_SEGMENTS):
        return None
    measured = measured or metric_of(group, config)
    if poisson:
        replicates = sample_matrix(sums, statstable.REPLICATE_SUMS, index, group, grouping_set,
                                    measured.width)
        return scores_of_sums(replicates, measured)
    _, scores = sacrebleu_resample_scores(
        segment_matrix(segment_stats, grouping_set, group, measured), measured,
        resampling.n_bootstrap, resampling.seed)
    return scores


def add_intervals(rows: List[dict], replicates: List, resampling: Resampling) -> None:
    for row, scores in zip(rows, replicates):
        if scores is None:
            row.update(dict.fromkeys(INTERVAL_FIELDS))
        elif resampling.method == POISSON:
            row.update(poisson_interval(row["score"], scores, resampling.seed).to_dict())
        else:
            row.update(sacrebleu_interval_of(row["score"], scores, resampling.seed).to_dict())


def sign_bootstrap(rows: List[dict], replicates: List, resampling: Resampling) -> None:
    """A row whose figures come from resamples names the draws in its signature, as sacrebleu."""
    fields = bootstrap_signature(resampling.method, resampling.n_bootstrap,
                                           resampling.seed)
    for row, scores in zip(rows, replicates):
        if scores is not None:
            row["signature"] = with_bootstrap_fields(row["signature"], fields)


def add_clusters(rows: List[dict], replicates: List, groups: List[dict],
                  grouping_set: GroupingSet, system_col: str = "system") -> None:
    """Rank ranges and clusters within each comparison group (the paired tests' groups: every
    group column but the system, per metric); none in a grouping set without systems. The
    systems of a comparison cover the same segments, as for paired tests (`coverage`);
    `groups[i]` is row i's summed statistics."""
    if system_col not in grouping_set:
        for row in rows:
            row.update(dict.fromkeys(clusters.FIELDS))
        return
    others = [c for c in grouping_set if c != system_col]
    key_of = lambda r: (*(r[c] for c in others), r["metric"])  # noqa: E731
    comparisons: Dict[tuple, dict] = {}
    for row, group in zip(rows, groups):
        comparisons.setdefault(key_of(row), {})[row[system_col]] = group
    for key, systems in comparisons.items():
        named = ", ".join(f"{c}={shown(v)}" for c, v in zip(others, key)) or "the table"
        check_same_segments(systems, f"{named} ({key[-1]})", "--clusters")
    # A segment score's direction is its own (declared per column), so it comes from the
    # row's measured metric, not from the metric's kind.
    better = {id(row): (getattr(row, "measured", None) or metric_of(group, None)).higher_is_better
              for row, group in zip(rows, groups)}
    clusters.add_clusters(
        rows, replicates, key_of=key_of,
        name_of=lambda r: r[system_col],
        higher_is_better_of=lambda r: better[id(r)])


def sample_matrix(sums: pa.Table, column: str, index: int, group: dict, grouping_set,
                   width: int) -> np.ndarray:
    """A group's replicate or trial sums as a (samples, width) matrix; a clear error when its
    rows hold none, or sums of different draws."""
    matrix = statstable.sample_matrix(sums, column, index, width)
    if matrix is None:
        where = ", ".join(f"{c}={group[c]}" for c in grouping_set) or "the whole table"
        raise UsageError(f"group {where} holds no {column.replace('_', ' ')} of one draw "
                         f"(resampling: {group[statstable.RESAMPLING] or 'none'}): score it with "
                         f"--confidence, or select rows of one draw with --where")
    return matrix


def segment_matrix(segment_stats: pa.Table, grouping_set: GroupingSet, group: dict,
                   metric: Optional[metrics.Metric] = None) -> np.ndarray:
    """The statistics of a group's segments, in segment-key order (sacrebleu's line order)."""
    metric = metric or metric_of(group, None)
    mask = pa.array([True] * segment_stats.num_rows)
    for column in [*grouping_set, "tokenize", "metric"]:
        value = group[column]
        mask = pc.and_(mask, pc.is_null(segment_stats[column]) if value is None
                       else pc.fill_null(pc.equal(segment_stats[column], value), False))
    rows = segment_stats.filter(mask).sort_by([(SEGMENT_ORDER, "ascending")])
    names = metric.names
    return np.column_stack([rows[n].to_numpy() for n in names]).astype(combine.matrix_type(metric.columns()))

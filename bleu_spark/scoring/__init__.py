"""Everything shown, from summed statistics alone: scores per grouping set, the dashboard table,
the report page. `score` and `aggregate` both call this package, so no two views can disagree.

Each statistics row names its metric; what it means (statistic columns, score, result fields,
signature) is that metric's declaration (`bleu_spark.metrics`): no metric is named here.
`config` is the run's scoring choices, handed to each row's metric as they are.
"""
from .paired import paired_rows
from .rows import ScoreRow, score_sets
from .sets import GroupingSet, check_clusters, distinct_sets, label
from .tables import RESERVED, SEGMENT_ORDER, check_group_names
from .write import Views, first_rows_report, partitioned_report, report_html, result_views

__all__ = ["GroupingSet", "RESERVED", "SEGMENT_ORDER", "ScoreRow", "check_clusters",
           "check_group_names", "distinct_sets", "label", "paired_rows", "report_html",
           "first_rows_report", "partitioned_report", "result_views", "score_sets", "Views"]

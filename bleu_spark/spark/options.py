"""`score`'s options on Spark (`JobOptions`), each checked once as the object is made: below the
steps that read them (`plan.py`, `measure.py`, `record.py`, `job.py`), so none of them imports
the module that sequences the others."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple

from .. import settings, store
from ..errors import UsageError
from ..languages import TextSettings
from ..metrics import configured, extra_metrics, parse_checks, parse_segment_scores
from ..resampling import SACREBLEU, Resampling
from ..time_windows import TimeWindow, check_window_grouping
from . import inputs

ON_INVALID = settings.option("on_invalid").choices
SCANS = settings.option("scan").choices


@dataclass(frozen=True)
class JobOptions:
    input: str
    output: Optional[str] = None
    catalog: Optional[str] = None                   # a database of Spark's catalog, for the tables
    group_by: Optional[Tuple[str, ...]] = None      # None: those of DEFAULT_GROUP_BY present
    grouping_sets: Optional[Tuple[Tuple[str, ...], ...]] = None  # several groupings, one pass
    partition_by: Tuple[str, ...] = ()              # Hive partitions of the output, e.g. run_date
    report: bool = False                            # also write DIR/report.html
    groups_scored_on: str = settings.default("groups_scored_on")  # auto, driver or executors
    candidate_col: str = settings.default("candidate_col")
    references_cols: Tuple[str, ...] = settings.field_option(  # an array, or strings
        "references_col", tuple(settings.default("references_col")))
    langpair_col: str = settings.default("langpair_col")
    references: Optional[str] = None                    # a separate references table
    join_on: Tuple[str, ...] = ()
    segment_key: Tuple[str, ...] = ()                   # inline references: what names a segment
    on_invalid: str = settings.default("on_invalid")
    colocate_references: str = settings.default("colocate_references")  # shuffle rows sharing references?
    scan: str = settings.default("scan")                # auto: Python workers read local files
    progress_seconds: float = settings.default("progress_seconds")  # 0: no progress lines
    tokenize: str = settings.default("tokenize")       # the text settings every metric reads
    spm_model: Optional[str] = settings.default("spm_model")
    resampling: Resampling = field(default_factory=Resampling)
    metrics: Optional[Tuple[str, ...]] = None           # reference metrics by registry name;
    # None: bleu, or none when segment scores or checks are asked for (`settings.reference_metrics`)
    segment_scores: Tuple[str, ...] = ()                # numeric columns, each a mean metric
    checks: Tuple[str, ...] = ()                        # reference-free checks, by name
    source_col: str = settings.default("source_col")    # read by the copy check
    metric_settings: Tuple[Tuple[str, Any], ...] = ()   # metrics' options, e.g. lowercase, chrf_beta
    segments: bool = False                              # also write DIR/segments/, a row a segment
    segments_columns: Tuple[str, ...] = ()              # input columns the segments table carries
    allow_empty_input: bool = False                     # no input row: exit 15 unless allowed
    incremental: bool = False                           # measure only files OUT has not measured
    time_col: Optional[str] = None                      # with window: its windows are a group column
    window: Optional[str] = None                        # a window's length, e.g. 15m, 1h, 1d
    warnings: Tuple[str, ...] = ()                      # about the options, for run.json
    # The metrics with their options, and how the rows' text is tokenized: made (and checked)
    # once, from the fields above.
    measured: Tuple[Any, ...] = field(init=False, compare=False, repr=False, default=())
    text: Optional[TextSettings] = field(init=False, compare=False, repr=False, default=None)
    windows: Optional[TimeWindow] = field(init=False, compare=False, repr=False, default=None)

    def __post_init__(self):
        object.__setattr__(self, "metrics", settings.reference_metrics(
            {"metrics": self.metrics, "segment_scores": self.segment_scores, "checks": self.checks}))
        columns = {"candidate_col": self.candidate_col, "source_col": self.source_col,
                   "langpair_col": self.langpair_col}
        extra = extra_metrics(parse_segment_scores(self.segment_scores), parse_checks(self.checks),
                              columns)
        measured = (*configured(self.metrics, self.choices, None), *extra)
        object.__setattr__(self, "measured", measured)
        object.__setattr__(self, "text", TextSettings(
            self.tokenize, self.spm_model,
            any(m.lowercase_tokens for m in measured if m.uses_tokenizer)))
        if (self.resampling.method == SACREBLEU and self.resampling.active
                and not (self.segment_key or self.join_on)):
            raise UsageError("--bootstrap-method sacrebleu needs --segment-key or --join-on: "
                             "the segment order sacrebleu resamples in")
        if self.on_invalid not in ON_INVALID:
            raise UsageError(f"unknown --on-invalid policy {self.on_invalid!r}; "
                             f"choose one of: {', '.join(ON_INVALID)}")
        if self.groups_scored_on not in settings.option("groups_scored_on").choices:
            raise UsageError(f"unknown --groups-scored-on {self.groups_scored_on!r}; choose one "
                             f"of: {', '.join(settings.option('groups_scored_on').choices)}")
        if self.scan not in SCANS:
            raise UsageError(f"unknown --scan {self.scan!r}; choose one of: {', '.join(SCANS)}")
        settings.check("--progress-seconds", self.progress_seconds)
        if not self.references_cols:
            raise UsageError("--references-col needs at least one column")
        settings.check_grouping(self.group_by, self.grouping_sets)
        inputs.check_reference_options(self)
        store.check_partition_names(self.partition_by)
        object.__setattr__(self, "windows", TimeWindow.of(self.time_col, self.window))
        if self.windows:
            check_window_grouping(self.group_by, self.grouping_sets, self.partition_by)
        if self.segments_columns and not self.segments:
            raise UsageError("--segments-columns is only used with --segments")
        if self.segments and not self.output:
            raise UsageError("--segments needs --output DIR: the segments table is written there")
        if self.incremental:
            self._check_incremental()
        settings.check_destination(self.output, self.catalog, self.report)

    def _check_incremental(self) -> None:
        """What an incremental run needs: a folder to keep its ledger in, and statistics that
        add up across runs with nothing held per segment on the driver."""
        if not self.output:
            raise UsageError("--incremental needs --output DIR: the files it measured are recorded there")
        refused = [flag for flag, given in (
            ("--references", self.references), ("--segment-key", self.segment_key),
            ("--scan spark", self.scan == "spark"),
            ("--colocate-references always", self.colocate_references == "always"),
            ("--groups-scored-on executors", self.groups_scored_on == "executors"),
            ("--bootstrap-method sacrebleu", self.resampling.method == SACREBLEU)) if given]
        if refused:
            raise UsageError(f"--incremental does not take {', '.join(refused)}: it measures each "
                             f"input file once, as the Python workers read it, and adds up its "
                             f"statistics to the folder's (docs/incremental.md)")

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "JobOptions":
        """A score run's options from its option values (`settings.converted`): each field the
        declared key it names, the resampling's likewise, every metric's options, and a warning
        for each of those no metric of `--metrics` reads."""
        return cls(**settings.fields_from(cls, values),
                   resampling=Resampling(**settings.fields_from(Resampling, values)),
                   metric_settings=settings.metric_choices(values),
                   warnings=tuple(settings.metrics_asked_warnings(values)))

    @property
    def needs_references(self) -> bool:
        """Whether a measured metric reads references (not segment scores and checks alone)."""
        return any(m.needs_references for m in self.measured)

    @property
    def choices(self) -> dict:
        """The run's option values every metric reads its own from (those not given take their
        declared defaults): the text settings and the metrics' options."""
        return {**dict(self.metric_settings), "tokenize": self.tokenize, "spm_model": self.spm_model}

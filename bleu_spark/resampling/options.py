"""What a run asks of resampling: the methods, sacrebleu's defaults, the `Resampling` options
object and its checks, and the signature fields that name the draws."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Optional

from .. import settings
from ..errors import BaselineNotFoundError, UsageError

SACREBLEU = "sacrebleu"
POISSON = "poisson"
METHODS = (SACREBLEU, POISSON)

# sacrebleu's defaults (`--confidence-n` / `--paired-bs-n`, `--paired-ar-n`, SACREBLEU_SEED's),
# as the options declare them.
DEFAULT_BOOTSTRAP_SAMPLES = settings.default("n_bootstrap")
DEFAULT_AR_TRIALS = settings.default("n_ar_trials")
DEFAULT_SEED = settings.default("seed")


def bootstrap_signature(method: str, n_samples: int, seed: int, kind: str = "bs") -> str:
    """The resampling fields of the signature: `bs:1000|seed:12345` as sacrebleu writes them
    (`ar:10000|seed:12345` for approximate randomization, `kind="ar"`), plus `|bsm:poisson` for
    the poisson method, which sacrebleu does not have.

    sacrebleu puts these fields right after `nrefs:` (`nrefs:1|bs:1000|seed:12345|case:mixed|...`);
    `with_bootstrap_fields` places them there.
    """
    if method not in METHODS:
        raise UsageError(f"unknown bootstrap method {method!r}; choose one of: {', '.join(METHODS)}")
    fields = f"{kind}:{n_samples}|seed:{seed}"
    return fields + "|bsm:poisson" if method == POISSON else fields


def with_bootstrap_fields(signature: str, fields: str) -> str:
    """Insert `fields` after the `nrefs:` field of a signature, where sacrebleu puts them."""
    head, sep, rest = signature.partition("|")
    return f"{head}|{fields}{sep}{rest}" if sep else f"{head}|{fields}"


@dataclass(frozen=True)
class Resampling:
    """Confidence intervals and paired tests asked for, as the job's options."""
    confidence: bool = False
    method: str = settings.field_option("bootstrap_method", settings.default("bootstrap_method"))
    n_bootstrap: int = DEFAULT_BOOTSTRAP_SAMPLES
    seed: int = DEFAULT_SEED
    paired_bs: bool = False
    paired_ar: bool = False
    baseline: Optional[str] = None
    n_ar_trials: int = DEFAULT_AR_TRIALS
    clusters: bool = False  # rank ranges and clusters per comparison group, on the bootstrap's draws

    def __post_init__(self):
        if self.method not in METHODS:
            raise UsageError(f"unknown --bootstrap-method {self.method!r}; choose one of: "
                             f"{', '.join(METHODS)}")
        for flag in ("--n-bootstrap", "--n-ar-trials", "--seed"):
            settings.check(flag, getattr(self, flag[2:].replace("-", "_")))
        if (self.paired_bs or self.paired_ar) and not self.baseline:
            raise UsageError("--paired-bs and --paired-ar need --baseline SYSTEM")
        if self.baseline and not (self.paired_bs or self.paired_ar):
            raise UsageError("--baseline is only used with --paired-bs or --paired-ar")

    def check_baseline(self, systems: Collection, shown: int = 5) -> None:
        """The baseline is one of the systems scored, else a paired test asked for gives nothing:
        one line naming it and a few that exist, before anything is written."""
        if self.baseline is None or self.baseline_of(systems) is not None:
            return
        names = sorted(map(str, systems))
        more = f", ... ({len(names)} in all)" if len(names) > shown else ""
        raise BaselineNotFoundError(f"--baseline {self.baseline!r} is in no comparison group; "
                                    f"systems scored: {', '.join(names[:shown]) or 'none'}{more}")

    def baseline_of(self, systems: Collection):
        """The system value `--baseline` names: the string itself, or, in a column of integers
        (ids), the one value written so (`--baseline 3` names 3; `03` names none)."""
        if self.baseline in systems:
            return self.baseline
        typed = [s for s in systems if s is not None and not isinstance(s, str)
                 and str(s) == self.baseline]
        return typed[0] if len(typed) == 1 else None

    @property
    def active(self) -> bool:
        return self.confidence or self.paired_bs or self.paired_ar or self.clusters

    @property
    def bootstrapped(self) -> bool:
        """Whether each group's replicate scores are needed (intervals, clusters)."""
        return self.confidence or self.clusters

    @property
    def replicates(self) -> int:
        """Bootstrap replicate sums the measurement must keep (poisson)."""
        return self.n_bootstrap if self.method == POISSON and (self.bootstrapped or self.paired_bs) else 0

    @property
    def trials(self) -> int:
        """Approximate-randomization swap sums the measurement must keep (poisson)."""
        return self.n_ar_trials if self.method == POISSON and self.paired_ar else 0

    @property
    def label(self) -> str:
        """What the statistics table records: replicate sums of different draws never add up."""
        return f"{POISSON}:{self.n_bootstrap}:{self.seed}" if self.replicates else ""

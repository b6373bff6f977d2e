"""User errors: one class per kind, each with its own process exit code.

The CLI prints `bleu-spark: error: <message>` on one line and exits with `exit_code`;
anything that is not a `BleuSparkError` is a bug and keeps its traceback.
"""


class BleuSparkError(Exception):
    exit_code = 1


class UsageError(BleuSparkError):
    """A bad option value: unknown tokenizer or smoothing method, bad weights, ..."""
    exit_code = 2


class InputNotFoundError(BleuSparkError):
    exit_code = 3


class MissingColumnError(BleuSparkError):
    exit_code = 4


class ColumnTypeError(BleuSparkError):
    exit_code = 5


class ModelFileError(BleuSparkError):
    """A SentencePiece tokenizer was asked for without a readable model file."""
    exit_code = 6


class InvalidRowsError(BleuSparkError):
    """Rows that cannot be scored were found and the policy is `fail`."""
    exit_code = 7


class OutputError(BleuSparkError):
    exit_code = 8


class ConfigFileError(BleuSparkError):
    exit_code = 9


class MixedTokenizerGroupError(BleuSparkError):
    """One group would need two tokenizers (auto tokenization without langpair in the group)."""
    exit_code = 10




class IncompatibleStatisticsError(BleuSparkError):
    """Saved statistics measured with different settings would be summed into one group."""
    exit_code = 11


class SparkJobFailedError(BleuSparkError):
    """Spark gave up on the job for a lost executor or a crashed Python worker (its retries ran
    out): nothing is written, an earlier result is kept. A task failing on a bug keeps its trace."""
    exit_code = 12


class EmptySelectionError(BleuSparkError):
    """`aggregate --where` selected no rows: an empty result would look like success."""
    exit_code = 13


class BaselineNotFoundError(BleuSparkError):
    """--baseline names a system in none of the compared groups: most likely a typo, which an
    empty set of paired tests would hide. Its own code, as it depends on the data read."""
    exit_code = 14


class EmptyInputError(BleuSparkError):
    """The input holds no row: a feed that delivered nothing would otherwise look like a
    successful run (allowed with --allow-empty-input)."""
    exit_code = 15


class ForeignFileError(BleuSparkError):
    """A commit entry or marker in the output that this job did not write as it is (another
    shape or format_version, naming a path outside the output, or a symbolic link where the job
    makes folders): nothing is read, moved or removed on its word."""
    exit_code = 16


class SparkUnreachableError(BleuSparkError):
    """The Spark Connect server the run was given does not answer at its address."""
    exit_code = 17


class CatalogUnavailableError(BleuSparkError):
    """Spark's catalog (`--catalog`, `--stats-table`) cannot be opened: its metastore's
    database or service is out of reach, found at the catalog's first use."""
    exit_code = 18


class WorkerPackageError(BleuSparkError):
    """The Python workers of a Spark Connect server cannot import bleu_spark, or import another
    version than the client's: found by one small job before the run's first task."""
    exit_code = 19


class GateFailedError(BleuSparkError):
    """`gate`: a group's score dropped by more than the allowed drop, with significance. Not a
    mistake of the user's: the verdict a scheduler fails its task on, after the table is shown
    (and written with --output)."""
    exit_code = 20


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: the run stops, removes its files and exits with
    128 + the signal number (130, 143). A BaseException, so no `except Exception` swallows it."""

    def __init__(self, signum: int):
        import signal

        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = 128 + signum

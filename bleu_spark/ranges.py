"""The range check of numeric options: their bounds are declared with them (`settings`)."""
from .settings import check, check_weights  # noqa: F401

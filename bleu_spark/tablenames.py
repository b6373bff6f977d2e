"""Names in Spark's catalog that the options give (`--catalog DB`, `--stats-table DB.TABLE`),
checked before any JVM starts."""
from __future__ import annotations

import re
from typing import Tuple

from .errors import UsageError

# Letters, digits and '_', not starting with a digit: a name every catalog takes (Hive, Glue,
# Unity, Iceberg), the same in any case, and one a dashboard's SQL needs no quotes for.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_database_name(name: str) -> None:
    if not IDENTIFIER.match(name or ""):
        raise UsageError(f"--catalog must name a database with letters, digits and '_' (not "
                         f"starting with a digit), got {name!r}")


def check_table_name(name: str) -> Tuple[str, str]:
    """`DB.TABLE` as (database, table)."""
    parts = (name or "").split(".")
    if len(parts) != 2 or not all(IDENTIFIER.match(p) for p in parts):
        raise UsageError(f"--stats-table must be DATABASE.TABLE, each of letters, digits and '_', "
                         f"got {name!r}")
    return parts[0], parts[1]

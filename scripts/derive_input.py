"""Derive a benchmark input from a WMT-style table (docs/benchmarks.md names each it uses):

    python scripts/derive_input.py ../shared/data/wmt22.parquet OUT.parquet --rows 19000
    python scripts/derive_input.py ../shared/data/wmt22.parquet OUT.parquet --rows 19000 --langpairs-ending=-en
    python scripts/derive_input.py ../shared/data/wmt22.parquet OUT.parquet --copies 5

--langpairs-ending keeps the language pairs whose name ends so (`-en`: into English); --rows
keeps that many rows evenly spaced over what is left (first and last included); --copies
repeats the table, each copy's systems renamed `SYSTEM#copyK`, so every copy is groups of its
own. Written in row groups of --row-group-rows.
"""
import argparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def derive(table: pa.Table, rows=None, langpairs_ending=None, copies: int = 1) -> pa.Table:
    if langpairs_ending:
        table = table.filter(pc.ends_with(table["langpair"], langpairs_ending))
    if rows is not None:
        if not 0 < rows <= table.num_rows:
            raise SystemExit(f"--rows must be between 1 and the {table.num_rows} rows there are")
        table = table.take(np.linspace(0, table.num_rows - 1, rows).round().astype(np.int64))
    if copies > 1:
        column = table.schema.get_field_index("system")
        table = pa.concat_tables([
            table.set_column(column, "system", pc.binary_join_element_wise(
                table["system"], pa.scalar(f"copy{k}"), "#"))
            for k in range(copies)])
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--langpairs-ending", default=None)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--row-group-rows", type=int, default=100_000)
    args = parser.parse_args()
    table = derive(pq.read_table(args.source), args.rows, args.langpairs_ending, args.copies)
    pq.write_table(table, args.target, row_group_size=args.row_group_rows)
    print(f"{table.num_rows} rows -> {args.target}")


if __name__ == "__main__":
    main()

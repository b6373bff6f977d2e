"""Rebuild samples/wmt22_sample.parquet from the full WMT22 table (see samples/README.md).

    python scripts/make_sample.py ../shared/data/wmt22.parquet samples/wmt22_sample.parquet

Keeps, for every language pair and every system, the first FIRST_SEGMENTS segments plus every
segment whose candidate or references hold an oddity of real logs (NBSP, U+3000, tabs,
zero-width spaces, empty candidates), so the sample exercises each exactness trap.
"""
import sys

import pyarrow as pa
import pyarrow.parquet as pq

FIRST_SEGMENTS = 150
ODDITIES = ("\u00a0", "\u3000", "\t", "\u200b", "\ufeff")


def odd_segments(table: pa.Table) -> set:
    keep = set()
    for row in table.select(["langpair", "seg_id", "candidate", "references"]).to_pylist():
        texts = [row["candidate"], *row["references"]]
        if row["candidate"] == "" or any(ch in text for text in texts for ch in ODDITIES):
            keep.add((row["langpair"], row["seg_id"]))
    return keep


def main(source: str, target: str) -> None:
    table = pq.read_table(source)
    odd = odd_segments(table)
    mask = [seg < FIRST_SEGMENTS or (lp, seg) in odd
            for lp, seg in zip(table["langpair"].to_pylist(), table["seg_id"].to_pylist())]
    sample = table.filter(pa.array(mask))
    sample = sample.sort_by([("langpair", "ascending"), ("system", "ascending"),
                             ("seg_id", "ascending")])
    pq.write_table(sample, target, compression="zstd")
    print(f"{sample.num_rows} rows, {len(set(zip(sample['langpair'].to_pylist(), sample['system'].to_pylist())))} "
          f"(langpair, system) groups -> {target}")


if __name__ == "__main__":
    main(*sys.argv[1:3])

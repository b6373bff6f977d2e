"""How the workers' own scan cuts an input into tasks (`spark.scan`): consecutive rows, about
equal per task whatever the row groups, each row read once; and a worker reading on through a
row group cut into several tasks' pieces decodes it once."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bleu_spark.spark import scan
from bleu_spark.spark.scan import Piece, UnreadableFile, _cut, _read


def groups(sizes_by_file):
    """Pieces of whole row groups, as `_pieces` makes them: {path: [rows of each group]}."""
    out = []
    for path, sizes in sizes_by_file.items():
        first = 0
        for g, rows in enumerate(sizes):
            out.append(Piece(path, (g,), (), first, 0, rows))
            first += rows
    return out


def rows_of(piece, sizes):
    """The (path, row in file) the piece covers."""
    first_of = [sum(sizes[piece.path][:g]) for g in range(len(sizes[piece.path]))]
    count = piece.rows if piece.rows is not None else sum(sizes[piece.path][g] for g in piece.row_groups)
    assert piece.first_row == first_of[piece.row_groups[0]] + piece.skip
    return [(piece.path, piece.first_row + i) for i in range(count)]


@pytest.mark.parametrize("sizes,tasks", [
    ({"a": [1_048_576, 44_564]}, 8),            # a file pyarrow wrote with its default row groups
    ({"a": [100_000] * 10 + [93_140]}, 8),      # more row groups than tasks, not a multiple
    ({"a": [7, 3], "b": [10, 0, 5]}, 4),        # files, an empty row group
    ({"a": [3]}, 8),                             # fewer rows than tasks
    ({"a": [20_000] * 4}, 2),                    # whole row groups: joined, nothing cut
])
def test_every_row_in_order_once_and_tasks_about_equal(sizes, tasks):
    cut = _cut([g for g in groups(sizes) if g.rows], tasks)
    covered = [row for task in cut for piece in task for row in rows_of(piece, sizes)]
    every = [(path, i) for path, s in sizes.items() for i in range(sum(s))]
    assert covered == every
    per_task = [sum(len(rows_of(p, sizes)) for p in task) for task in cut]
    assert len(cut) == min(tasks, len(every)) and max(per_task) - min(per_task) <= 1
    for task in cut:  # a piece cut inside a row group holds that row group alone
        assert all(len(p.row_groups) == 1 for p in task if p.rows is not None)
    if sizes == {"a": [20_000] * 4}:
        assert cut == ((Piece("a", (0, 1), (), 0, 0, None),), (Piece("a", (2, 3), (), 40_000, 0, None),))


@pytest.fixture
def one_row_group(tmp_path):
    path = str(tmp_path / "one.parquet")
    pq.write_table(pa.table({"i": pa.array(range(1_000), pa.int64()),
                             "text": [f"row {i}" for i in range(1_000)]}), path)
    return path


@pytest.fixture
def readers(monkeypatch):
    """The readers of row groups opened, in order; none kept open before or after."""
    opened = []
    init = scan._GroupReader.__init__

    def counting(self, *args):
        opened.append(args[2])
        init(self, *args)

    monkeypatch.setattr(scan._GroupReader, "__init__", counting)
    scan._GroupReader.drop()
    yield opened
    scan._GroupReader.drop()


def read(task, path_columns=("i", "text"), batch_rows=64, scan_id="s"):
    return [v for piece in task for b in _read(piece, list(path_columns), batch_rows, scan_id)
            for v in b.column("i").to_pylist()]


def test_a_worker_reads_on_through_a_cut_row_group_decoding_it_once(one_row_group, readers):
    cut = _cut(groups({one_row_group: [1_000]}), 7)
    assert all(p.rows is not None for task in cut for p in task)          # every piece is cut
    one_worker = [read(cut[t]) for t in (0, 2, 4, 6)]                     # a worker's tasks in order
    assert readers == [0]                                                 # one reader, read on
    assert scan._GroupReader.kept is None                    # and closed once read to the group's end
    assert [v for part in one_worker for v in part] == [
        i for t in (0, 2, 4, 6) for p in cut[t] for i in range(p.first_row, p.first_row + p.rows)]
    other = [read(cut[t]) for t in (1, 3, 5)]                             # the other worker
    assert readers == [0, 0]
    assert sorted(v for part in one_worker + other for v in part) == list(range(1_000))
    assert read(cut[3]) == other[1] and readers == [0, 0, 0]              # a retry: read again
    assert read(cut[3], scan_id="another") == other[1] and readers == [0, 0, 0, 0]  # another scan


def test_a_row_group_shorter_than_its_footer_says_is_an_unreadable_file(one_row_group, readers):
    beyond = Piece(one_row_group, (0,), (), 990, 990, 20)
    with pytest.raises(UnreadableFile, match="ended at row 1000, before row 1010"):
        read([beyond])
    assert scan._GroupReader.kept is None                                  # nothing half-read kept

"""The one comparison every oracle test makes: our result against sacrebleu's, field by field;
and sacrebleu's own metrics, by the job's metric names, for every test that asks sacrebleu."""
import math
from collections import defaultdict
from functools import partial

from sacrebleu.metrics import BLEU, CHRF, TER

from bleu_spark.oracle import reference_streams, sacrebleu_sums

# sacrebleu's metric of each of the job's metric names; options take sacrebleu's argument names.
SACREBLEU_METRICS = {"bleu": BLEU, "chrf": CHRF, "chrf++": partial(CHRF, word_order=2), "ter": TER}

TOLERANCE = 1e-9


def assert_matches_sacrebleu(ours, theirs: dict) -> None:
    ours = ours if isinstance(ours, dict) else ours.to_dict()
    assert math.isclose(ours["score"], theirs["score"], rel_tol=0, abs_tol=TOLERANCE), \
        (ours["score"], theirs["score"])
    for field in ("counts", "totals", "sys_len", "ref_len", "signature", "verbose"):
        assert ours[field] == theirs[field], (field, ours[field], theirs[field])
    assert all(math.isclose(a, b, abs_tol=TOLERANCE) for a, b in zip(ours["precisions"], theirs["precisions"]))


def sacrebleu_tokens(name, lines, lowercase=False):
    """sacrebleu's `tokenizer(line.rstrip()).split()` of each line (lowercased first if asked)."""
    from sacrebleu.metrics.bleu import BLEU

    sacrebleu_bleu = BLEU(tokenize=name, lowercase=lowercase)
    return [sacrebleu_bleu._preprocess_segment(line).split() for line in lines]


def line_tokens(name, lines, lowercase=False):
    """LineTokenizer's tokens of each line, as lists of strings."""
    import pyarrow as pa

    from bleu_spark.tokenizers import LineTokenizer

    tokens = LineTokenizer(name, lowercase)(pa.array(lines, pa.string()))
    ours = [[] for _ in lines]
    for line, token in zip(tokens.line.tolist(), tokens.vocabulary.take(tokens.ids).to_pylist()):
        ours[line].append(token)
    return ours


def assert_tokens_are_sacrebleus(name, lines, lowercase=False):
    """LineTokenizer's tokens equal sacrebleu's, line by line."""
    ours, theirs = line_tokens(name, lines, lowercase), sacrebleu_tokens(name, lines, lowercase)
    for line, mine, its in zip(lines, ours, theirs):
        assert mine == its, (line, mine, its)


def sacrebleu_metric(name, **options):
    """sacrebleu's own metric for the job's metric `name` (`chrf++` is `CHRF(word_order=2)`)."""
    return SACREBLEU_METRICS[name](**options)


def sacrebleu_corpus(name, candidates, references, **options):
    """sacrebleu's corpus score of rows with per-segment reference lists, and its signature."""
    metric = sacrebleu_metric(name, **options)
    return metric.corpus_score(list(candidates), reference_streams(references)), str(metric.get_signature())


def by_group(rows, keys=("langpair", "system")):
    """Rows (dicts) by the values of `keys`, in order of first appearance."""
    groups = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in keys)].append(row)
    return groups


def sacrebleu_by_group(rows, name, keys=("langpair", "system"), **options):
    """Per group of rows (dicts with candidate, references): sacrebleu's corpus score, its
    segment statistics summed in the form of the job's statistics table, and its signature.
    The score is `corpus_score`'s own: the same statistics through `_aggregate_and_compute`."""
    out = {}
    for key, group in by_group(rows, keys).items():
        metric = sacrebleu_metric(name, **options)
        stats = metric._extract_corpus_statistics(
            [r["candidate"] for r in group], reference_streams([r["references"] for r in group]))
        out[key] = (metric._aggregate_and_compute(stats), sacrebleu_sums(metric, stats),
                    str(metric.get_signature()))
    return out

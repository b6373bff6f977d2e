"""The one comparison every oracle test makes: our result against sacrebleu's, field by field."""
import math

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

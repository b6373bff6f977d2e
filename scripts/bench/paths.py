"""The paths the benchmark times (a1 to g): their names, titles, and which are exact."""

EXACT_PATHS = ("a1", "a2", "b", "c", "d", "e")
ALL_PATHS = ("a1", "a2", "a3", "b", "c", "d", "e", "s", "g")
JOB_PATHS = ("b", "c", "d", "e")
PATH_TITLES = {
    "a1": "sacrebleu, BLEU().corpus_score per group",
    "a2": "sacrebleu, references cached per langpair",
    "a3": "bleuscore (Rust, not exact)",
    "b": "bleu-spark local[1]",
    "c": "bleu-spark local[2]",
    "d": "bleu-spark local[2] --confidence",
    "e": "bleu-spark score, the console script (local[*])",
    "s": "Spark alone: context, a no-op Python task per core, stop",
    "g": "bleu-spark aggregate of a statistics table",
}
GROUP_KEYS = ("system", "langpair")

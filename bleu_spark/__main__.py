"""`python -m bleu_spark score ...` is the `bleu-spark` command."""
import sys

from .cli import main

sys.exit(main())

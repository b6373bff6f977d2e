"""The Spark layer: it only moves data; all BLEU knowledge lives in the core modules."""

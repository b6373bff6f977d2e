"""The Spark layer: it only moves data; what each metric is lives in `bleu_spark.metrics`."""

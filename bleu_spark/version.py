"""The package's version, on the ground floor: run.json, `--version` and the Spark Connect
workers' check read it without importing the package's public API (which reaches up into Spark)."""
__version__ = "0.1.0"

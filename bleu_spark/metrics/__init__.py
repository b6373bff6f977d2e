"""One module per metric."""

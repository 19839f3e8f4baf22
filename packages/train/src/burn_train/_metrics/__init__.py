"""Metrics (private package; the names are re-exported by ``burn_train``)."""

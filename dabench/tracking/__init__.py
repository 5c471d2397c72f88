"""MLflow tracking: the store, the run lifecycle, names and tags, the outbox (mlflow imported lazily)."""

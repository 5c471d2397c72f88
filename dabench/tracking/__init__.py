"""MLflow tracking: store resolution, the run lifecycle, names and tags, the multirun parent run.

mlflow itself is imported only when something is logged (docs/architecture.md, "Run lifecycle").
"""

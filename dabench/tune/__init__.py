"""Deployment tuning: Optuna studies over deployment settings for the best throughput
(docs/tuning.md; module map in docs/architecture.md). The Hydra glue is hydra_plugins/dabench_optuna_sweeper."""

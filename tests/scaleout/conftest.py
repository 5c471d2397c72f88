"""Fixtures of the scale-out tests: one throwaway PostgreSQL and one mlflow server for the
session (see servers.py). Tests that need them skip, saying why, where PostgreSQL or psycopg is
missing."""

import pytest

from tests.scaleout.servers import mlflow_server, postgres, why_no_postgres


@pytest.fixture(scope="session")
def stack():
    """(PostgreSQL, MlflowServer): the study store is ``pg.url('optuna')``, the tracking URI
    ``server.uri``."""
    reason = why_no_postgres()
    if reason:
        pytest.skip(reason)
    with postgres() as pg, mlflow_server(pg.url("mlflow")) as server:
        yield pg, server

"""The replication scenarios of the installed catalogue (``ndbchaos/catalogue/test_replication.py``), in the
test suite: CI runs a subset of them (NDBCHAOS_REPLICATION=subset, tests/integration/conftest.py)."""

from ndbchaos.catalogue.test_replication import *  # noqa: F401,F403

"""txn: the installed catalogue's declarations (``ndbchaos/catalogue/test_txn.py``),
collected under this checkout's test ids (``scenarios/test_txn.py::...``)."""

from ndbchaos.catalogue.test_txn import SCENARIOS, pytestmark, test_txn  # noqa: F401

"""operations: the installed catalogue's declarations (``ndbchaos/catalogue/test_operations.py``),
collected under this checkout's test ids (``scenarios/test_operations.py::...``)."""

from ndbchaos.catalogue.test_operations import SCENARIOS, pytestmark, test_operations  # noqa: F401

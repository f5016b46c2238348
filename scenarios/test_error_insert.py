"""error_insert: the installed catalogue's declarations (``ndbchaos/catalogue/test_error_insert.py``),
collected under this checkout's test ids (``scenarios/test_error_insert.py::...``)."""

from ndbchaos.catalogue.test_error_insert import SCENARIOS, pytestmark, test_error_insert  # noqa: F401

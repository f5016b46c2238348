"""client_path: the installed catalogue's declarations (``ndbchaos/catalogue/test_client_path.py``),
collected under this checkout's test ids (``scenarios/test_client_path.py::...``)."""

from ndbchaos.catalogue.test_client_path import SCENARIOS, pytestmark, test_client_path  # noqa: F401

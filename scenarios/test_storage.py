"""storage: the installed catalogue's declarations (``ndbchaos/catalogue/test_storage.py``),
collected under this checkout's test ids (``scenarios/test_storage.py::...``)."""

from ndbchaos.catalogue.test_storage import SCENARIOS, pytestmark, test_storage  # noqa: F401

"""soak: the installed catalogue's declarations (``ndbchaos/catalogue/test_soak.py``),
collected under this checkout's test ids (``scenarios/test_soak.py::...``)."""

from ndbchaos.catalogue.test_soak import SOAKS, pytestmark, test_soak  # noqa: F401

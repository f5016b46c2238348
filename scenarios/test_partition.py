"""partition: the installed catalogue's declarations (``ndbchaos/catalogue/test_partition.py``),
collected under this checkout's test ids (``scenarios/test_partition.py::...``)."""

from ndbchaos.catalogue.test_partition import SCENARIOS, pytestmark, test_partition  # noqa: F401

"""mgmnode_loss: the installed catalogue's declarations (``ndbchaos/catalogue/test_mgmnode_loss.py``),
collected under this checkout's test ids (``scenarios/test_mgmnode_loss.py::...``)."""

from ndbchaos.catalogue.test_mgmnode_loss import SCENARIOS, pytestmark, test_mgmnode_loss  # noqa: F401

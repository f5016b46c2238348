"""datanode_loss: the installed catalogue's declarations (``ndbchaos/catalogue/test_datanode_loss.py``),
collected under this checkout's test ids (``scenarios/test_datanode_loss.py::...``)."""

from ndbchaos.catalogue.test_datanode_loss import SCENARIOS, pytestmark, test_datanode_loss  # noqa: F401

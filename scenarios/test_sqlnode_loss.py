"""sqlnode_loss: the installed catalogue's declarations (``ndbchaos/catalogue/test_sqlnode_loss.py``),
collected under this checkout's test ids (``scenarios/test_sqlnode_loss.py::...``)."""

from ndbchaos.catalogue.test_sqlnode_loss import SCENARIOS, pytestmark, test_sqlnode_loss  # noqa: F401

"""nodegroup_loss: the installed catalogue's declarations (``ndbchaos/catalogue/test_nodegroup_loss.py``),
collected under this checkout's test ids (``scenarios/test_nodegroup_loss.py::...``)."""

from ndbchaos.catalogue.test_nodegroup_loss import SCENARIOS, pytestmark, test_nodegroup_loss  # noqa: F401

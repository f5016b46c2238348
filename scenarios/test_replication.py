"""replication: the installed catalogue's scenarios (``ndbchaos/catalogue/test_replication.py``), collected
under this checkout's test ids (``scenarios/test_replication.py::...``)."""

from ndbchaos.catalogue.test_replication import *  # noqa: F401,F403

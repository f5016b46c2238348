"""replication: the installed catalogue's scenarios (``ndbchaos/catalogue/test_replication_active.py``), collected
under this checkout's test ids (``scenarios/test_replication_active.py::...``)."""

from ndbchaos.catalogue.test_replication_active import *  # noqa: F401,F403

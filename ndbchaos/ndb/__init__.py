"""MySQL NDB Cluster helpers: pure parsers of the management client's output and config.ini,
ndbinfo query helpers, and the cluster log follower.

    from ndbchaos.ndb import parse_show, parse_status, parse_mgm, MgmReport, MgmNode
    from ndbchaos.ndb import parse_config_ini, read_config, NdbConfig
    from ndbchaos.ndb import ndbinfo               # nodes(cur), membership(cur), ...
    from ndbchaos.ndb.clusterlog import ClusterLogFollower
"""

from . import ndbinfo
from .config import NdbConfig, parse_config_ini, read_config
from .mgm import MgmNode, MgmReport, all_started, parse_mgm, parse_show, parse_status

__all__ = ["MgmNode", "MgmReport", "NdbConfig", "all_started", "ndbinfo", "parse_config_ini", "parse_mgm",
           "parse_show", "parse_status", "read_config"]

"""A toy engine for tests/unit/test_extension_points.py: what adding an engine takes (its
package: the Engine class, a log reader, error rules), never shipped."""

from ndbchaos.engines.base import Engine
from ndbchaos.vocabulary import TxnModels


class ToyEngine(Engine):
    name = "toy"
    table_engine = "MEMORY"

    def consistency_models(self, workload, params):
        return TxnModels(("serializable",), "the toy engine runs one transaction at a time")

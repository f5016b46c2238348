"""Transactions under failure: an anomaly checker of Elle's class (docs/transactions.md).

    from ndbchaos.txn import CheckOptions, TxnHistory, check
    verdict = check(TxnHistory.read("history.jsonl"), CheckOptions(model="list-append"))

``history`` reads and writes Jepsen/Elle histories and turns our runs into transactions (JSON
lines of the common list-append shape straight into arrays by ``scan``, as ``txn_arrays``, whose
transactions are built only when asked for);
``list_append`` and ``rw_register`` infer each model's dependencies and the anomalies visible
without a cycle (list-append on arrays in ``list_append_fast``, its pairs coded in ``pairs``;
the per-micro-op inference stays the reference); ``graph`` holds the dependency graph, ``search`` its
components and the cycle search;
``models`` the consistency models and what they forbid; ``weak`` decides read committed, read
atomic and causal consistency exactly (Biswas & Enea's axioms, by saturation); ``check`` composes
them into a verdict; ``picture`` draws a cycle.
"""

from .check import MODELS, CheckOptions, TxnVerdict, check
from .history import TxnFormatError, TxnHistory

__all__ = ["MODELS", "CheckOptions", "TxnFormatError", "TxnHistory", "TxnVerdict", "check"]

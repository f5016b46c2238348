"""Errors the framework raises on purpose.

``NdbChaosError`` and its subclasses carry a one-line message meant for a person; the CLI and the
pytest plugin print it without a traceback and exit non-zero.
"""


class NdbChaosError(Exception):
    """A failure with a clear one-line explanation."""

    exit_code = 1


class UsageError(NdbChaosError):
    """Bad input from the user (options, files, targets)."""

    exit_code = 2


class DockerUnavailable(NdbChaosError):
    """No Docker engine answers."""


class ClusterNotReady(NdbChaosError):
    """The cluster did not reach the healthy state in time."""


class BlastRadiusError(NdbChaosError):
    """A fault was pointed at something this run does not own."""


class FaultUnsupported(NdbChaosError):
    """This host or cluster cannot do this fault (e.g. the kernel has no sch_netem).

    Not a failure of the system under test: the pytest layer turns it into a skip with
    ``reason`` (``ndbchaos.faults.skip_if_unsupported``)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


class InventoryError(UsageError):
    """A bad inventory: one line, before any host is contacted or any fault injected."""

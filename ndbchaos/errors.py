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


def shown(path) -> str:
    """A path as an error line shows it: as it is, or quoted with its escapes when it holds a
    newline or another unprintable character (the line stays one line)."""
    s = str(path)
    return s if s.isprintable() else repr(s)


def read_user_text(path, label: str, kind: str, error: type[UsageError] = UsageError) -> str:
    """The text of a file a user handed a command, or ``error`` in one line: ``label`` names it
    ("gate file x.toml"), ``kind`` what it should be ("TOML"). A folder, a missing or unreadable
    file and bytes that are not UTF-8 are each said as such."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        raise error(f"{label}: a folder, not a file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise error(f"{label}: cannot read it ({e.strerror or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{label}: not a {kind} file (not UTF-8 text at byte {e.start})") from None

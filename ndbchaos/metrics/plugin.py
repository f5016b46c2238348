"""The session's metrics (``--metrics-port``, ``--pushgateway``, ``--annotations``): started when
the session is configured (a bad value, or a port in use, stops it there with one line, before
anything else starts), registered with pytest as the plugin ``NAME``, told of each scenario run by
the ``scenario_run`` fixture (``watch`` when it is made, ``done`` once it is closed), and closed
at the session's end (the endpoint stops listening).

    --metrics-port PORT   OpenMetrics (and Prometheus text) at http://127.0.0.1:PORT/metrics, on
                          127.0.0.1 only, while the session runs (ndbchaos.metrics.exposition)
    --pushgateway URL     each run's figures pushed when it ends: job ``JOB``, grouping key
                          ``project`` (the cluster's run label) and ``scenario``
    --annotations FILE    each run's phases and fault windows appended as Grafana annotations
"""

from __future__ import annotations

import errno as _errno
import logging
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, push_to_gateway, start_http_server

from ..errors import UsageError
from .annotations import AnnotationFile, annotations
from .exposition import RunCollector, scenario_name

log = logging.getLogger("ndbchaos")

#: the plugin's name in pytest's plugin manager
NAME = "ndbchaos-metrics"
#: the Pushgateway job of every push
JOB = "ndbchaos"
#: the only address the endpoint listens on
ADDRESS = "127.0.0.1"
PUSH_TIMEOUT_S = 5.0


def check_port(port) -> int:
    try:
        p = int(port)
    except (TypeError, ValueError):
        raise UsageError(f"--metrics-port {port!r}: not a port number") from None
    if not 1 <= p <= 65535:
        raise UsageError(f"--metrics-port {p}: not a port number (1-65535)")
    return p


def check_gateway(url: str) -> str:
    """An http(s) URL with a host (and a valid port, when one is given)."""
    bad = UsageError(f"--pushgateway {url!r}: not an http(s) URL of a Pushgateway (e.g. http://127.0.0.1:9091)")
    try:
        parts = urlsplit(str(url).strip())
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        raise bad from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise bad
    return str(url).strip().rstrip("/")


class MetricsPlugin:
    """The session's endpoint, Pushgateway and annotation file (each optional)."""

    def __init__(self, port: int | None = None, gateway: str | None = None, annotations_file: str | None = None):
        # everything is checked before anything starts
        self.port = None if port is None else check_port(port)
        self.gateway = None if not gateway else check_gateway(gateway)
        self.annotations = None if not annotations_file else AnnotationFile(annotations_file)
        self.collector = RunCollector()
        self.server = self.thread = None
        if self.port is not None:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(self.collector)
            try:
                self.server, self.thread = start_http_server(self.port, addr=ADDRESS, registry=registry)
            except OSError as e:
                why = "in use" if e.errno == _errno.EADDRINUSE else (e.strerror or str(e))
                raise UsageError(f"--metrics-port {self.port}: cannot listen on {ADDRESS}:{self.port} ({why})") \
                    from None

    @property
    def url(self) -> str | None:
        return None if self.port is None else f"http://{ADDRESS}:{self.port}/metrics"

    def watch(self, run) -> None:
        """``run`` is the session's current run: the endpoint shows it from now on (and until the
        next one: a scrape after it ended still reads its last figures)."""
        self.collector.watch(run)

    def done(self, run) -> list[str]:
        """``run`` is over (closed): push its figures and append its annotations; the problems,
        one line each (the run's verdict does not depend on them)."""
        problems = []
        if self.gateway:
            try:
                self.push(run)
            except Exception as e:
                problems.append(f"pushing {scenario_name(run)} to {self.gateway} failed: {e}")
        if self.annotations is not None:
            try:
                self.annotations.append(annotations(run))
            except Exception as e:
                problems.append(f"writing the annotations of {scenario_name(run)} to {self.annotations.path} "
                                f"failed: {e}")
        return problems

    def push(self, run) -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(RunCollector(run))
        push_to_gateway(self.gateway, job=JOB, registry=registry, timeout=PUSH_TIMEOUT_S,
                        grouping_key={"project": run.cluster.project, "scenario": scenario_name(run)})

    def close(self) -> None:
        """The endpoint stops listening (the session's end; called again it does nothing)."""
        server, self.server = self.server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            if self.thread is not None:
                self.thread.join(timeout=5)


def start(port=None, gateway=None, annotations_file=None) -> MetricsPlugin:
    """The session's metrics, checked and started; UsageError (one line) for a bad value."""
    return MetricsPlugin(port, gateway, annotations_file)


__all__ = ["ADDRESS", "JOB", "MetricsPlugin", "NAME", "check_gateway", "check_port", "start"]

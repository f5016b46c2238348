"""A run's figures as metrics (docs/metrics.md): an OpenMetrics endpoint while a pytest session
runs (``--metrics-port``), each run pushed to a Pushgateway when it ends (``--pushgateway``), and
its phases and fault windows as Grafana annotations (``--annotations``).

    exposition    the metric families of a run, read from it at each scrape
    annotations   a run's phases and fault windows as Grafana annotation bodies, and their file
    plugin        the session's endpoint, pushes and file (the pytest plugin ``NAME``)

The load's figures come from the runner's shared arrays (``ndbchaos.workload.figures``).
"""

from __future__ import annotations

from .plugin import JOB, NAME, MetricsPlugin, start

__all__ = ["JOB", "MetricsPlugin", "NAME", "start"]

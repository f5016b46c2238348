"""Root conftest. The fixtures and options come from the ``ndbchaos`` pytest plugin
(``ndbchaos/pytest_plugin.py``, registered through the installed package's pytest11 entry point);
``fixtures/`` holds what this repository's own scenarios share."""

pytest_plugins = ["fixtures.scenarios"]

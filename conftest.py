"""Root conftest. The fixtures and options come from the ``ndbchaos`` pytest plugin
(``fixtures/plugin.py``, registered through the package's pytest11 entry point)."""

"""Root conftest. The fixtures, options and markers come from the ``ndbchaos`` pytest plugin
(``ndbchaos/pytest_plugin.py``, registered through the installed package's pytest11 entry point);
the scenarios and the helpers they share are the installed catalogue (``ndbchaos/catalogue/``),
which ``scenarios/`` collects under this checkout's test ids."""

"""ndbchaos: chaos and availability tests for MySQL NDB Cluster (and MariaDB Galera)."""

__version__ = "0.1.0"

"""Benchmarks: this load generator against sysbench on a real SQL node (``load``, the
``ndbchaos bench`` command; ``meter`` measures CPU and statement counters), and the history
reader and checkers on a synthetic history (``checker``)."""

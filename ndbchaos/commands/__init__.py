"""Subcommands of ``ndbchaos``: one module each (``ndbchaos/commands/<name>.py``) with
``register(subparsers)``, which adds its parser and sets ``func`` (its work, returning an exit
code); each imports at module level what its work needs, some of it heavy (numpy, Docker,
testinfra). The command line imports only the module of the command it runs and lists the others
by their line here, ``HELP`` (a new command adds its line).
"""

HELP = {
    "baseline": "measure a layout's steady throughput, latency and resources with no fault",
    "bench": "measure this load generator against sysbench (and the checker's speed)",
    "check": "check a recorded history file and print the verdict as JSON",
    "events": "parse an NDB cluster/data node log or a mariadbd error log into JSON events",
    "export": "write a transactional run in Jepsen/Elle's history format",
    "fault": "apply a fault to a running cluster (and leave it), or heal all",
    "gate": "judge a finished run's results against a gate file",
    "layout": "print the config.ini (or --compose, --mycnf) of an NDB layout spec, starting nothing",
    "lab": "start or remove the inventory lab (eight ssh hosts running MySQL Cluster)",
    "report": "rebuild the Allure report of saved runs from their files alone",
    "plan": "print what a saved run did, in order (a soak's schedule as played), and its seed",
    "reap": "remove containers and networks a killed run left behind",
    "setup": "install what scenario runs need: Docker engine, Compose v2, native driver, images",
    "status": "node states and active faults of a running cluster",
    "summary": "one table of what each scenario of a run measured",
}

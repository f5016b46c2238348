"""The runtimes: what runs a cluster's nodes, behind the one handle the rest of the code types
against (``ndbchaos.handle.ClusterHandle``).

    compose/     containers this framework starts as a Compose project: the handle
                 (cluster.ComposeCluster), each data node's bounded disk (disks) and the FUSE
                 layer over it (faultfs, and faultfs_daemon, its process)
    inventory/   an existing cluster on an inventory's hosts, reached over ssh
    docker.py    the Docker adapter (docker-py, Compose v2); its node helpers (exec_in,
                 container_state, put_file, get_file) act on an inventory's host nodes too
    netns.py     the helper that acts in a node's own network namespace (iptables), for both
    factory.py   the one place a runtime is built: engines, faults and commands ask it

The package imports none of them: a caller imports the one it uses by name.
"""

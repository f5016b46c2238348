"""NDB's own faults: those only an NDB cluster has, kept with its engine.

    mgm           MgmRestart, MgmStop, SystemRestart, RollingRestart, KillDuringBackup (ndb_mgm)
    errorinsert   ErrorInsert, ErrorInsertInRestart, ErrorInsertDuringBackup (a data node's own
                  failure points, in a build with error insertion)

Each is a ``ndbchaos.faults.Fault`` (inject, verify, heal) like the generic kinds of
``ndbchaos.faults``, which name no engine. The package imports neither module: a caller imports
the one it uses by name.
"""

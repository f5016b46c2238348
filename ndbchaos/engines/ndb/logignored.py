"""The lines of NDB's logs deliberately ignored: named groups of internal progress messages,
one regex per topic, and why each group carries no fact a chaos report uses.
"""

from __future__ import annotations

import re

# -- lines deliberately ignored ----------------------------------------------------------------
# Internal progress a 9.7 data node or management server writes that carries no fact the chaos
# report uses (the facts of the same moments are events of ``logtexts``: start phases, NR Status, node
# failure, arbitration, LCP start/complete, restart GCI). One regex per topic, anchored at the
# start of the text (after the "Node N:" prefix), so a reader sees what is dropped and why; the
# event rules are tried first, so a group never hides an event. Groups are ordered by how often
# their lines occur in a real log.
_IGNORED_SPEC: list[tuple[str, str, list[str]]] = [
    ("ldm_redo", "LDM (local data manager) restore, REDO log and fragment copy progress", [
        r"LDM\(\d+\)", r"LDM instance \d+:", r"Log part: \d+ ", r"Start invalidating: Part ",
        r"Local redo log file initialization ", r"Redo(?:PageCache|OpenFileCache): ",
        r"Start reading LCP for table ", r"Restored LCP for table ",
        r"Table ID = \d+, fragment ID = \d+ have been synced to Node ", r"instace: \d+ rebuild index: ",
        r"index \d+ stats version \d+: "]),
    ("start_phases", "start phase internals of NDBCNTR/QMGR/DIH (start_phase_completed carries the facts)", [
        r"Start NDB start phase \d+", r"NDB start phase \d+ completed", r"Starting QMGR phase \d+",
        r"Phase \d+ ", r"Start phase \d+ waiting \d+s for absent subscribers", r"Grant nodes to start phase",
        r"(?:Master node|Node) \d+ have reached completion of NDB start phase", r"During cluster start/restart ",
        r"As master we will wait ", r"NDBCNTR master accepted us into cluster", r"CNTR_START_CONF: ",
        r"Asking master node to accept our start", r"Report to master node our state", r"Start node: \d+ using ",
        r"We are performing (?:initial start of cluster|an? (?:initial )?node restart)", r"Not initial start$",
        r"Node started$", r"Node group \d+\.$", r"starting$", r"DIH reported (?:normal|initial) start",
        r"Include node protocol completed", r"Starting with m_restart_seq set to ", r"Buffering maximum epochs ",
        r"findNeighbours from: "]),
    ("restart_progress", "restore and recovery steps of a starting node (StartProgress, NR copy, sysfile)", [
        r"(?:Restore Database Off-line|Bring Database On-line|Restore Database from disk|"
        r"Restore dictionary information from disk|Request permission to start our node from master|"
        r"Request copying of distribution and dictionary information from master|"
        r"Copying of dictionary information from master|Schema file initialisation|"
        r"Creating System Tables Starting|Foreign [Kk]ey enabling|"
        r"Make On-line Database recoverable by waiting for LCP) ",
        r"Starting to restore schema", r"Restore of schema complete", r"Restart recreating table with id = ",
        r"Node Start completed restore of LCP id", r"Starting REDO logging", r"All start fragments sent",
        r"Node restart (?:completed copy|starting to copy|completed copying) ",
        r"Restart complete, updated local sysfile",
        r"Local sysfile: ", r"Node: \d+ StartLog: "]),
    ("node_failure_handling", "DBTC/QMGR failure-handling steps (node_failed and node_failure_* carry the facts)", [
        r"DBTC \d+: ", r"Cleanup of node \d+ connection state triggered ", r"release_gci\("]),
    ("lcp_internals", "local checkpoint internals and the DIH state dumped at LCP/GCP master takeover", [
        r"\(\d+\)Starting local LCP\(", r"Adjusting disk write speed bounds ", r"LCPFragWatchdog : ",
        r"Participating(?:DIH|LQH) = ", r"m_LCP_COMPLETE_REP_", r"m_lastLCP_COMPLETE_REP_", r"m_LAST_LCP_FRAG_ORD = ",
        r"noOfLcpFragRepOutstanding: ", r"resending GSN_MASTER_LCPREQ", r"kk: \d+/\d+ "]),
    ("startup_config", "data node process start: angel, configuration fetch, scheduler, READ_CONFIG/START_ORD", [
        r"Angel (?:connected to|allocated nodeid:|pid: |reconnected to |reallocated nodeid: )",
        r"Child has terminated \(pid \d+\)\. Angel restarting child process", r"Normal start of data node ",
        r"Configuration fetched from ",
        r"Changing directory to ", r"SchedulerSpinTimer = ", r"AutomaticThreadConfig = ", r"ThreadConfig: ",
        r"MaxNoOfTriggers set to ", r"NDBMT: ", r"NDB Cluster -- DB node \d+", r"mysql-\S+ ndb-\S+ --$",
        r"WatchDog timer is set to ", r"Watchdog KillSwitch ", r"Number of spin loops ", r"Using StaticSpinning ",
        r"Set wakeup latency ", r"Loading blocks for data node ", r"Starting Sending and Receiving services",
        r"Starting the data node run-time environment", r"We are running with \d+ LDM workers ",
        r"First START_ORD executed ", r"Received second START_ORD ", r"Disconnect all non-MGM servers",
        r"Start excuting the start phases", r"Sending READ_CONFIG_REQ ", r"READ_CONFIG_REQ phase completed"]),
    ("memory_config", "memory configuration and allocation at start", [
        r"Memory Allocation for global memory pools ", r"numa_set_interleave_mask",
        r"(?:SharedGlobalMemory|DataMemory) set to ",
        r"(?:RedoLogBuffer|Job buffers|Send buffers|DiskPageBuffer|SchemaTransactionMemory) uses? ",
        r"(?:Reserved part of )?TransactionMemory ", r"Calculated TransactionMemory \d+ MB replaced by setting",
        r"No Undo log buffer used", r"QueryMemory can use ",
        r"Ndbd_mem_manager::init", r"Touch Memory (?:Starting|Completed)", r"Adding \d+Mb to ZONE_",
        r"pgman: page buffer entries = ", r"Allocate event buffering page chunk in SUMA"]),
    ("suma_handover", "SUMA subscription bucket handover/takeover between nodes of a node group", [
        r"Suma: ", r"SUMA bucket ", r"\d+/\d+ \(\d+/\d+\) switchover complete bucket ",
        r"prepare to (?:handover|takeover) bucket",
        r"(?:shutdown )?handover(?: takeover)?$", r"Activating bucket \d+ in SUMA", r"resend_bucket$",
        r"SUMA (?:Start resending|Resend done for) bucket ", r"Takeover for bucket \d+ is completed",
        r"ACK wo/ gcp record "]),
    ("dict", "DICT locks, schema transaction recovery and index activation", [
        r"DICT ?: ", r"(?:granting|clearing) Suma\w+ dict lock ", r"refing dict lock to \d+",
        r"Found pending trans \(\d+\) - committing",
        r"commit create \d+$"]),
    ("threads", "thread creation and block-to-thread layout at start", [
        r"Started thread, index = ", r"thr: \d+ tid: \d+ "]),
    ("transporter", "transporter connection setup details", [
        r"TR : Ignored connection attempt ", r"Completed setting up multiple transporters "]),
    ("mgmd_config", "management server configuration service and its peer connections", [
        r"Cluster configuration has multiple Management nodes", r"Got initial configuration from ",
        r"Loaded config from ",
        r"Id: \d+, Command port: ", r"Not requiring TLS", r"Starting initial configuration change",
        r"Configuration \d+ commited", r"Config change completed", r"Node \d+ connected$"]),
    ("node_id_allocation", "node id allocation steps (node_id_allocated/node_id_rejected carry the facts)", [
        r"Alloc node id (?:for node )?\d+ succeeded"]),
    ("api_info", "information an API node (mysqld) reports about itself", [
        r"mysqld --server-id="]),
    ("watchdog_detail", "CPU times the watchdog prints next to an oversleep or stuck-thread warning", [
        r"Watchdog: User time: "]),
    ("shutdown_steps",
     "process shutdown steps (shutdown_completed, forced_shutdown, mgmd_shutdown_completed carry the facts)", [
        r"Angel shutting down", r"Shutdown initiated$", r"Shutdown completed - exiting", r"Shutting down server",
        r"The data node run-time environment has been stopped", r"Error handler shutting down system",
        r"[A-Z]+ \(Line: \d+\) 0x[0-9a-fA-F]+$", r"Restarting system$", r"/\S+/storage/ndb/src/\S+\.cpp$"]),
    ("error_insert", "NDB_TAMPER: a block taking an error-insert code (the errorinsert fault reads them)", [
        r"NDB_TAMPER : block "]),
    ("stack_trace", "stack trace a data node prints when it handles a signal", [
        r"For help with below stacktrace consult:", r"https://dev\.mysql\.com/doc/refman/[^ ]*using-stack-trace",
        r"Also note that stack_bottom ", r"Base address/slide: ", r"With use of addr2line",
        r"stacktrace with the base address",
        r"For tools that have options for slide", r"llvm-symbolizer ", r"atos -s ", r"stack_bottom = ",
        r"#\d+ +0x[0-9a-fA-F]+ "]),
    ("container_console", "container entrypoint banners and the management server's console-only output", [
        r"\[Entrypoint\] ", r"WARNING: --ndb-connectstring is ignored ", r"==(?:INITIAL|CONFIRMED)==$",
        r"MySQL Cluster Management Server \S+ \S+$", r"\*\*\* Received SIG[A-Z0-9]+\. Performing stop\. \*\*\*$"]),
    ("error_log_header", "the header of a data node error log file", [
        r"Current byte-offset of file-pointer is: \d+"]),
]

#: (group name, compiled regex) of the lines deliberately ignored; ``GROUP_DESCRIPTIONS`` says why
IGNORED: list[tuple[str, re.Pattern]] = [(name, re.compile("^(?:" + "|".join(subs) + ")"))
                                         for name, _, subs in _IGNORED_SPEC]
GROUP_DESCRIPTIONS: dict[str, str] = {name: why for name, why, _ in _IGNORED_SPEC}
# all groups in one regex: one C-level match per line, the group name from ``lastgroup``
_IGNORED_ANY = re.compile("^(?:" + "|".join(f"(?P<{name}>{rx.pattern[1:]})" for name, rx in IGNORED) + ")")


def match_ignored(msg: str) -> str | None:
    """The ignored group of one text (after the ``Node N:`` prefix), or None."""
    m = _IGNORED_ANY.match(msg)
    return m.lastgroup if m else None


"""Hosts of an inventory reached through testinfra, and the node handle the rest of the framework
drives: ``HostNode`` offers what a docker-py Container offers the engine and the faults (state,
kill with any signal, pause and unpause, start, stop, logs, exec), done on a host by signalling the
node's own processes and running its configured commands.

Processes are found by the node's command-line pattern (``pgrep -f``) or pid file. The pattern is
sent base64-encoded, so the shell that runs the search never matches itself. A node may have more
than one process: an ``ndbmtd``/``ndbd`` you start is an angel that forks the data node proper
and waits on it (../shared/ndb/README.md). The *node proper* is a matched process whose parent is
also matched, else the matched process itself:

* SIGKILL goes to every process of the node (angel and data node), as a container kill does: the
  node is gone until it is started again, whatever the angel's StopOnError says;
* every other signal, a freeze (SIGSTOP) and its thaw go to the node proper only (a signal to the
  angel alone does not reach the data node);
* the node is ``exited`` when no process matches, ``paused`` when the node proper is stopped (T).
"""

from __future__ import annotations

import base64
import os
import shlex
import signal as _signal
import subprocess
import threading
import time
from dataclasses import dataclass

from ...errors import NdbChaosError
from .guard import arm_script, disarm_script
from .spec import HostSpec, NodeSpec

#: ssh options every connection gets: no prompt can hang a run, a dead link ends within 15 s
SSH_DEFAULTS = ["-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                "-o", "LogLevel=ERROR"]


#: how long a node's detached start script gets to show up on its host before "no process and no
#: script" means its start command ended without starting the node
START_GRACE_S = 3.0


class HostUnreachable(NdbChaosError):
    """ssh could not run a command on the host (exit 255)."""


def control_dir() -> str:
    """Where ssh keeps its shared connections (a short path: a socket path has ~100 bytes)."""
    d = f"/tmp/ndbchaos-ssh-{os.getuid()}"
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


class Remote:
    """One host of the inventory: commands through testinfra, each bounded in time on the host."""

    def __init__(self, spec: HostSpec, ssh: dict | None = None):
        import testinfra
        self.spec = spec
        ssh = ssh or {}
        kw: dict = {}
        if spec.scheme in ("ssh", "paramiko"):
            kw["timeout"] = int(ssh.get("connect_timeout") or 10)
            if ssh.get("identity_file"):
                kw["ssh_identity_file"] = ssh["identity_file"]
            if ssh.get("config"):
                kw["ssh_config"] = ssh["config"]
        if spec.scheme == "ssh":
            # testinfra %-formats its ssh command line: %% reaches ssh as %C (a hash of the target)
            kw["controlpath"] = os.path.join(control_dir(), "%%C")
            kw["controlpersist"] = 300
            kw["ssh_extra_args"] = " ".join(shlex.quote(a) for a in SSH_DEFAULTS + list(ssh.get("options") or []))
        self.host = testinfra.get_host(spec.url, **kw)
        # testinfra waits for its ssh (or docker, ...) command without a limit: a connection that
        # hangs would hang the run. Every command is bounded here too (see _run_local).
        self._bound = threading.local()
        self.host.backend.run_local = self._run_local
        self._ips: list[str] | None = None
        self._lock = threading.Lock()

    def _run_local(self, command: str, *args: str):
        """testinfra's local step (the ssh command line, its arguments quoted in), with a bound:
        past it the command's whole process group is killed and the host counts as not answering."""
        backend = self.host.backend
        cmd = backend.encode(backend.quote(command, *args))
        bound = getattr(self._bound, "seconds", None) or 60.0
        p = subprocess.Popen(cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = p.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, _signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()
            raise HostUnreachable(f"host {self.name} ({self.spec.url}) did not answer within {bound:.0f} s") from None
        return backend.result(p.returncode, cmd, out, err)

    @property
    def name(self) -> str:
        return self.spec.name

    def run(self, script: str, timeout: float = 30, env: dict | None = None) -> tuple[int, str]:
        """Run a POSIX shell script on the host: (exit code, stdout and stderr together).
        ``timeout`` bounds it on the host (coreutils ``timeout``; 124 when it ran out). Raises
        HostUnreachable when ssh itself failed."""
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in (env or {}).items())
        cmd = f"timeout -k 2 {max(1, int(timeout))} sh -c {shlex.quote(exports + script)} 2>&1"
        # locally: the host's own bound, the connection (connect timeout, a dead link found by
        # ServerAlive* within 15 s) and a margin
        self._bound.seconds = max(1, int(timeout)) + 2 + 30
        try:
            r = self.host.run(cmd)
        except HostUnreachable:
            raise
        except RuntimeError as e:  # testinfra's ssh backend: ssh exited 255
            out = getattr(e.args[0], "stderr", "") if e.args else ""
            raise HostUnreachable(f"host {self.name} ({self.spec.url}) unreachable: "
                                  f"{(out or str(e)).strip().splitlines()[-1:] or ['ssh failed']}"[:300]) from None
        except Exception as e:  # docker:// of a missing container, ansible errors, ...
            raise HostUnreachable(f"host {self.name} ({self.spec.url}): {type(e).__name__}: {e}"[:300]) from None
        return r.rc, (r.stdout or "") + (r.stderr or "")

    def ips(self) -> list[str]:
        """The host's IPv4 addresses but loopback (what its peers' packets come from)."""
        with self._lock:
            if self._ips is None:
                code, out = self.run("hostname -I 2>/dev/null || ip -4 -o addr show | awk '{print $4}' | cut -d/ -f1",
                                     timeout=10)
                ips = [w for w in out.split() if w.count(".") == 3 and not w.startswith("127.")]
                if code != 0 or not ips:
                    raise NdbChaosError(f"host {self.name}: cannot tell its addresses: {out.strip()[-200:]}")
                self._ips = sorted(set(ips))
            return list(self._ips)


@dataclass
class Proc:
    pid: int
    ppid: int
    stat: str
    started: str


def parse_ps(out: str) -> list[Proc]:
    """Lines ``pid ppid stat lstart...`` (ps -o pid=,ppid=,stat=,lstart=)."""
    procs = []
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            procs.append(Proc(int(parts[0]), int(parts[1]), parts[2], parts[3].strip() if len(parts) > 3 else ""))
    return procs


def proper(procs: list[Proc]) -> list[Proc]:
    """The node proper: matched processes whose parent is matched too (a data node under its
    angel), else every matched process. Zombies are not processes any more."""
    live = [p for p in procs if not p.stat.startswith("Z")]
    pids = {p.pid for p in live}
    children = [p for p in live if p.ppid in pids]
    return children or live


def state_of(procs: list[Proc]) -> str:
    node = proper(procs)
    if not node:
        return "exited"
    if all(p.stat.startswith("T") for p in node):
        return "paused"
    return "running"


def signal_name(sig) -> str:
    """KILL, STOP, TERM, ... from 'SIGKILL', 'KILL', 9 or signal.SIGKILL."""
    if isinstance(sig, int):
        return _signal.Signals(sig).name[3:]
    s = str(sig).upper()
    s = s[3:] if s.startswith("SIG") else s
    if s.isdigit():
        return _signal.Signals(int(s)).name[3:]
    if "SIG" + s not in _signal.Signals.__members__:
        raise NdbChaosError(f"unknown signal {sig!r}")
    return s


@dataclass
class ExecResult:
    exit_code: int
    output: bytes


class HostNode:
    """A node of the inventory as the framework drives it (the container-handle surface)."""

    def __init__(self, remote: Remote, spec: NodeSpec, env: dict[str, str], project: str, labels: dict,
                 guard_s: int = 300):
        self.remote = remote
        self.guard_s = guard_s
        self.spec = spec
        self.env = env
        self.project = project
        self.name = spec.name
        self.id = f"{remote.name}/{spec.name}"
        self.labels = labels
        self.status = "unknown"
        self.attrs: dict = {"State": {}}
        self.procs: list[Proc] = []
        #: processes the node had when it was found running and healthy (an angel and its data
        #: node: 2); fewer means the node proper has stopped
        self.baseline_processes = 0

    # -- finding the processes ------------------------------------------------------------------
    def _find(self) -> str:
        """Shell that sets $pids to the node's processes (space separated)."""
        if self.spec.process:
            b64 = base64.b64encode(self.spec.process.encode()).decode()
            return (f'pat=$(printf %s {b64} | base64 -d); '
                    'pids=$(pgrep -f -- "$pat" | tr "\\n" " "); ')
        f = shlex.quote(self.spec.pidfile or "")
        return (f'p=$(cat {f} 2>/dev/null | tr -dc 0-9); pids=""; '
                'if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then pids="$p $(pgrep -P "$p" | tr "\\n" " ")"; fi; ')

    #: the processes found, described; found again (10 times at most, 50 ms apart) when every one
    #: of them ended between the search and ps: a daemon that forks and lets its parent exit (an
    #: ndbmtd angel starting) would otherwise read as no process at all for that instant
    _PS = ('n=0; while :; do {find}out=""; '
           '[ -n "$pids" ] && out=$(ps -o pid=,ppid=,stat=,lstart= -p "$(echo $pids | tr " " ",")"); '
           '{{ [ -z "$pids" ] || [ -n "$out" ] || [ $n -ge 10 ]; }} && break; n=$((n+1)); sleep 0.05; done; '
           '[ -n "$out" ] && printf "%s\\n" "$out"')

    def _scan(self) -> tuple[list[Proc], bool]:
        """The node's processes, and whether its start script still runs (a shell running the
        script; the path goes base64-encoded, so the search does not find itself)."""
        b64 = base64.b64encode(f"sh {self.start_script}".encode()).decode()
        starting = f'; s=$(printf %s {b64} | base64 -d); pgrep -f -- "$s" >/dev/null && echo STARTING; exit 0'
        code, out = self.remote.run(self._PS.format(find=self._find()) + starting, timeout=15, env=self.env)
        if code != 0:
            raise NdbChaosError(f"{self.name}: cannot list its processes on {self.remote.name}: {out.strip()[-200:]}")
        return parse_ps(out), any(ln.strip() == "STARTING" for ln in out.splitlines())

    def processes(self) -> list[Proc]:
        return self._scan()[0]

    def reload(self) -> None:
        self.procs, starting = self._scan()
        self.status = state_of(self.procs)
        if self.status == "exited" and starting:
            self.status = "created"  # its start command runs but the node's process is not there yet
        node = proper(self.procs)
        self.attrs = {"State": {"Status": self.status, "Running": self.status == "running",
                                "Pid": node[0].pid if node else 0,
                                "StartedAt": node[0].started if node else ""}}

    def process_count(self) -> int:
        return len([p for p in self.processes() if not p.stat.startswith("Z")])

    # -- signals ---------------------------------------------------------------------------------
    def _signal(self, sig: str, everyone: bool) -> int:
        """Send ``sig`` in one remote script (found and signalled at the same moment); the number
        of processes signalled."""
        pick = "" if everyone else (
            # the node proper: processes whose parent is one of the matched ones
            'kids=""; for p in $pids; do pp=$(ps -o ppid= -p $p | tr -d " "); '
            'case " $pids " in *" $pp "*) kids="$kids $p";; esac; done; [ -n "$kids" ] && pids=$kids; ')
        script = self._find() + pick + f'[ -n "$pids" ] || exit 3; kill -s {sig} $pids; echo $pids | wc -w'
        code, out = self.remote.run(script, timeout=15, env=self.env)
        if code == 3:
            raise NdbChaosError(f"{self.name}: no process of it runs on {self.remote.name} (nothing to signal)")
        if code != 0:
            raise NdbChaosError(f"{self.name}: kill -s {sig} failed on {self.remote.name}: {out.strip()[-200:]}")
        return int(out.strip().split()[-1]) if out.strip() else 0

    def kill(self, signal="SIGKILL") -> None:
        sig = signal_name(signal)
        self._signal(sig, everyone=sig == "KILL")

    @property
    def guard_key(self) -> str:
        return f"thaw-{self.project}-{self.name}"

    def pause(self) -> None:
        """SIGSTOP to the node proper, with a guard on the host that thaws it after ``guard_s``
        should the controller never come back to do it."""
        self._signal("STOP", everyone=False)
        undo = self._find() + '[ -n "$pids" ] && kill -s CONT $pids'
        code, out = self.remote.run(arm_script(self.guard_key, undo, self.guard_s), timeout=15)
        if code != 0 or "guard " not in out:
            self._signal("CONT", everyone=True)
            raise NdbChaosError(f"{self.name}: could not arm its thaw guard on {self.remote.name}; "
                                f"thawed again: {out.strip()[-200:]}")

    def unpause(self) -> None:
        self.remote.run(disarm_script(self.guard_key), timeout=15)
        self._signal("CONT", everyone=True)

    # -- start and stop --------------------------------------------------------------------------
    @property
    def start_log(self) -> str:
        return f"/tmp/{self.project}-{self.name}.start.log"

    @property
    def start_script(self) -> str:
        return f"/tmp/{self.project}-{self.name}.start.sh"

    def start(self, wait_s: float = 20) -> None:
        """Start the node again through its configured command (detached from the ssh session,
        its output in ``start_log``) or its systemd unit, and wait (``wait_s`` at most) for its
        process. A node that runs, or whose start command still runs, is left alone."""
        self.reload()
        if self.status != "exited":
            return
        if self.spec.systemd:
            script = f"systemctl start {shlex.quote(self.spec.systemd)}"
        else:
            # The command goes into a script file: a shell whose own command line held it would
            # match the node's process pattern and count as the node.
            # The script removes itself once the command has returned (a daemon) or ended.
            b64 = base64.b64encode(((self.spec.start or "") + '\nrm -f "$0"\n').encode()).decode()
            f, log = shlex.quote(self.start_script), shlex.quote(self.start_log)
            script = (f"printf %s {b64} | base64 -d > {f} && cd / && "
                      f"setsid nohup sh {f} </dev/null >{log} 2>&1 &")
        code, out = self.remote.run(script, timeout=60, env=self.env)
        if code != 0:
            raise NdbChaosError(f"{self.name}: starting it on {self.remote.name} failed: {out.strip()[-200:]}")
        self._await_process(wait_s)

    def _await_process(self, wait_s: float) -> None:
        """Return once the node's process is there (what ``docker start`` promises), or once its
        start command has ended without one (an error, with the start log's last line), or after
        ``wait_s`` with the start command still running (a first start that initializes data
        first: the caller's own wait for readiness goes on from there)."""
        t0 = time.monotonic()
        while True:
            self.reload()
            if self.status in ("running", "paused"):
                return
            # The detached script may not run yet when ssh returns: no process of the node and no
            # script is "ended" only once it has had time to start.
            if self.status == "exited" and not self.spec.systemd and time.monotonic() - t0 >= START_GRACE_S:
                tail = self.logs(tail=5).decode("utf-8", "replace").strip().splitlines()
                raise NdbChaosError(f"{self.name}: its start command ended on {self.remote.name} and no process "
                                    f"of it runs: {(tail or ['(no output)'])[-1][-200:]}")
            if time.monotonic() - t0 >= max(wait_s, START_GRACE_S):
                return
            time.sleep(0.2)

    def stop(self, timeout: int = 10) -> None:
        """The configured stop command or systemd unit; else SIGTERM to the node's first process,
        SIGKILL to all of them after ``timeout`` s (what ``docker stop`` does to a container)."""
        if self.spec.stop or self.spec.systemd:
            script = self.spec.stop or f"systemctl stop {shlex.quote(self.spec.systemd or '')}"
            code, out = self.remote.run(script, timeout=timeout + 30, env=self.env)
            if code != 0:
                raise NdbChaosError(f"{self.name}: its stop command failed on {self.remote.name}: {out.strip()[-200:]}")
            return
        t = max(1, int(timeout)) * 10
        script = (self._find() + '[ -n "$pids" ] || exit 0; '
                  'roots=""; for p in $pids; do pp=$(ps -o ppid= -p $p | tr -d " "); '
                  'case " $pids " in *" $pp "*) ;; *) roots="$roots $p";; esac; done; '
                  f'kill -s TERM $roots 2>/dev/null; i=0; while [ $i -lt {t} ]; do '
                  'alive=""; for p in $pids; do kill -0 $p 2>/dev/null && alive="$alive $p"; done; '
                  '[ -z "$alive" ] && exit 0; sleep 0.1; i=$((i+1)); done; kill -s KILL $pids 2>/dev/null; exit 0')
        code, out = self.remote.run(script, timeout=timeout + 15, env=self.env)
        if code != 0:
            raise NdbChaosError(f"{self.name}: stopping it on {self.remote.name} failed: {out.strip()[-200:]}")

    # -- files and commands ------------------------------------------------------------------------
    def logs(self, since: float | None = None, tail: int | None = None, stdout: bool = True,
             stderr: bool = True) -> bytes:
        """The node's log files (and its start log), each its last ``tail`` lines, or its last
        4 MB when asked for a period (``since``: the caller keeps the lines from then on by their
        own time stamps)."""
        files = list(self.spec.logs) + [self.start_log]
        cut = f"tail -n {int(tail)}" if tail else "tail -c 4000000"
        script = "; ".join(f"[ -r {shlex.quote(f)} ] && {cut} {shlex.quote(f)}" for f in files) + "; exit 0"
        code, out = self.remote.run(script, timeout=30, env=self.env)
        return out.encode("utf-8", "replace")

    def exec_run(self, cmd, user: str = "", demux: bool = False, **_) -> ExecResult:
        """Run a command (argv list or shell string) on the node's host with the node's
        environment; output is stdout and stderr together."""
        script = cmd if isinstance(cmd, str) else shlex.join(cmd)
        if user:
            script = f"su -s /bin/sh {shlex.quote(user)} -c {shlex.quote(script)}"
        code, out = self.remote.run(script, timeout=600, env=self.env)
        return ExecResult(code, out.encode("utf-8", "replace"))

"""Run untrusted Python (model-written code plus its tests) in a limited child process.

Each run gets:
- a fresh empty temporary directory as its working directory, HOME and TMPDIR, removed afterwards;
- a minimal environment (PATH, LANG, HOME, TMPDIR: nothing inherited, so no secrets);
- `python -I` (isolated mode: no user site, no PYTHON* variables, script dir not on sys.path);
- its own session and process group (start_new_session), killed as a whole when it ends, on
  timeout or not, so children it left behind die with it;
- resource limits set by a preamble before the program's first line, hard and soft, so the
  program cannot raise them: RLIMIT_CPU, RLIMIT_AS (memory), RLIMIT_FSIZE (largest file),
  RLIMIT_NOFILE and RLIMIT_NPROC;
- a wall-clock timeout;
- no network, by the strongest mechanism `isolation()` finds working on this machine:
  "netns:unshare" (the util-linux `unshare --user --map-root-user --net` wrapper: a new, empty
  network namespace), "netns:ctypes" (the preamble calls unshare(2) itself), or, when neither
  works, "socket-guard" (the preamble disables Python's socket module: weak, ctypes could
  bypass it).
- when we run as root: a uid of its own (per run, from a range no account uses). Root ignores
  RLIMIT_NPROC and may write anywhere; the per-run uid makes the process limit real (a fork bomb
  stops at `nproc`), makes files outside the sandbox directory unwritable unless they are world
  writable (/tmp, /dev/shm stay writable: RLIMIT_FSIZE bounds each file), and lets us kill every
  process of that uid afterwards, including ones that left the process group with setsid().
  Without root the program runs as our own user: it can write wherever we can (bounded only by
  RLIMIT_FSIZE), and escaped processes are only caught by the CPU limit.

The module is safe to call from several threads at once: nothing runs in the forked child before
exec (no preexec_fn); uid and group are switched by subprocess itself.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_PREAMBLE = """\
import resource as _r
{unshare}
for _k, _v in {limits!r}:
    _r.setrlimit(getattr(_r, _k), (_v, _v))
{guard}
del _r, _k, _v
"""

_UNSHARE_CTYPES = """\
import ctypes as _c, os as _o
if _c.CDLL(None, use_errno=True).unshare(0x10000000 | 0x40000000) != 0:  # NEWUSER | NEWNET
    _o._exit(97)
del _c, _o
"""

_SOCKET_GUARD = """\
import socket as _s, sys as _y
def _no_network(*_a, **_k):
    raise OSError("network is disabled in the sandbox")
for _n in ("socket", "SocketType", "create_connection", "create_server", "socketpair", "fromfd"):
    setattr(_s, _n, _no_network)
_s._socket = None
_y.modules["_socket"] = None
del _s, _y, _n, _no_network
"""

# Per-run uids when we are root: far above any account's uid.
_UID_BASE = 3_000_000
_uid_counter = itertools.count()
_uid_lock = threading.Lock()


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 10.0
    cpu_s: int = 10
    memory_bytes: int = 1 << 30
    file_bytes: int = 16 << 20
    open_files: int = 64
    nproc: int = 32  # processes of the sandbox's own uid (as root), or above our current count

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.cpu_s <= 0:
            raise ValueError("sandbox timeout_s and cpu_s must be > 0")


@dataclass(frozen=True)
class Isolation:
    """What the sandbox can use on this machine (decided once by probing)."""

    network: str  # "netns:unshare", "netns:ctypes" or "socket-guard"
    own_uid: bool  # True when runs get a uid of their own (we are root)
    python: str  # the interpreter the sandbox runs

    def describe(self) -> str:
        uid = "own uid per run" if self.own_uid else "same uid as caller"
        return f"{self.network}, {uid}, {self.python}"


@dataclass(frozen=True)
class SandboxResult:
    passed: bool  # exit code 0 within the time limit
    returncode: int | None
    timed_out: bool
    duration_s: float
    stdout: str  # the last 2,000 characters
    stderr: str


@functools.cache
def isolation() -> Isolation:
    """Probe which network isolation works here: run a child each way and check that its network
    namespace differs from ours."""
    # NOTE: a per-run uid can only exec an interpreter that others may reach: ours often lives
    # under /root (mode 700); then the system python3 runs the code (tests need only stdlib).
    python = next((p for p in (sys.executable, "/usr/bin/python3") if _world_executable(p)), None)
    own_uid = os.geteuid() == 0 and python is not None
    python = python if own_uid else sys.executable
    ours = os.readlink("/proc/self/ns/net") if os.path.exists("/proc/self/ns/net") else None
    probe = "import os\nprint(os.readlink('/proc/self/ns/net'))\n"
    if ours is not None:
        for network in ("netns:unshare", "netns:ctypes"):
            if network == "netns:unshare" and shutil.which("unshare") is None:
                continue
            result = _run(probe, SandboxLimits(timeout_s=20), Isolation(network, own_uid, python))
            if result.passed and result.stdout.strip() not in ("", ours):
                return Isolation(network, own_uid, python)
    return Isolation("socket-guard", own_uid, python)


def run_python(source: str, limits: SandboxLimits | None = None) -> SandboxResult:
    """Run `source` as a script in the sandbox and report how it ended."""
    return _run(source, limits or SandboxLimits(), isolation())


def _run(source: str, limits: SandboxLimits, iso: Isolation) -> SandboxResult:
    uid = _next_uid() if iso.own_uid else None
    nproc = limits.nproc if uid is not None else _count_processes(os.geteuid()) + limits.nproc
    rlimits = [
        ("RLIMIT_CPU", limits.cpu_s),
        ("RLIMIT_AS", limits.memory_bytes),
        ("RLIMIT_FSIZE", limits.file_bytes),
        ("RLIMIT_NOFILE", limits.open_files),
        ("RLIMIT_NPROC", nproc),
    ]
    preamble = _PREAMBLE.format(
        unshare=_UNSHARE_CTYPES if iso.network == "netns:ctypes" else "",
        limits=rlimits,
        guard=_SOCKET_GUARD if iso.network == "socket-guard" else "",
    )
    workdir = Path(tempfile.mkdtemp(prefix="specpilot-sandbox-"))
    try:
        script = workdir / "main.py"
        script.write_text(preamble + source)
        if uid is not None:
            os.chown(workdir, uid, uid)
        cmd = [iso.python, "-I", str(script)]
        if iso.network == "netns:unshare":
            cmd = ["unshare", "--user", "--map-root-user", "--net", "--", *cmd]
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(workdir),
            "TMPDIR": str(workdir),
        }
        # NOTE: output goes to files, not pipes: a process that escaped the group could hold a
        # pipe open and make us wait for it; we only wait for the main process.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(
                cmd,
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                user=uid,
                group=uid,
                extra_groups=[] if uid is not None else None,
            )
            timed_out = False
            try:
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(proc.pid)
            proc.wait()
            duration = time.perf_counter() - start
            if uid is not None:
                _kill_uid(uid)
            stdout, stderr = _tail(out), _tail(err)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    code = None if timed_out else proc.returncode
    return SandboxResult(
        passed=code == 0,
        returncode=code,
        timed_out=timed_out,
        duration_s=duration,
        stdout=stdout,
        stderr=stderr,
    )


def _tail(file: IO[bytes], size: int = 2000) -> str:
    file.seek(0, os.SEEK_END)
    file.seek(max(0, file.tell() - 4 * size))
    return file.read().decode("utf-8", "replace")[-size:]


def _world_executable(path: str) -> bool:
    """True if a user with no rights of its own can run `path` (every directory searchable)."""
    real = Path(os.path.realpath(path))
    if not real.is_file():
        return False
    need = stat.S_IXOTH
    for part in [real, *real.parents]:
        mode = part.stat().st_mode
        if mode & need != need:
            return False
        need = stat.S_IXOTH  # directories: search
    return real.stat().st_mode & stat.S_IROTH != 0


def _next_uid() -> int:
    with _uid_lock:
        return _UID_BASE + (os.getpid() % 10_000) * 1_000 + next(_uid_counter) % 1_000


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _pids_of(uid: int, live_only: bool = False) -> list[int]:
    """Processes of `uid`; live_only leaves out zombies (killed, waiting for a parent, often
    init, to reap them: they run nothing and hold nothing but their process table slot)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if live_only and fields.get("State", "").split()[:1] == ["Z"]:
            continue
        uid_field = fields.get("Uid", "").split()
        if uid_field and int(uid_field[0]) == uid:
            pids.append(int(entry.name))
    return pids


def _count_processes(uid: int) -> int:
    return len(_pids_of(uid))


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid` until none is alive (a fork bomb can still be forking)."""
    for _ in range(100):
        pids = _pids_of(uid, live_only=True)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)

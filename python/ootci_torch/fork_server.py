"""pytest plugin that turns one pytest process into a fork server for one upstream test file.

`ootci run` (run.isolation: fork) loads it with OOTCI_FORK_SERVER_FD naming one end of a socket
pair. The process imports torch, the backend and the test module and collects once, then,
instead of running the tests, answers requests on that socket, one at a time:

    request (one JSON line):  {"env": {"OOTCI_RUN_EVENTS": ..., ...}, "log": PATH}
    replies (JSON lines):     {"ready": N} once, when collection is over (N items)
                              {"pid": P}  a child now runs the session, output in PATH
                              {"exit": P, "status": S}  its raw wait status

Each child is forked after collection, one ahead of its request (a spare that waits on a pipe,
forked while the previous child runs, so that a request costs a write rather than a fork). It
sets the request's environment (the events file and the OOTCI_RUN_ONLY/_ONLY_BASES/_SKIP lists
of run_reporter.py), narrows the collected items as a fresh `pytest FILE` would, and runs them
with pytest's own loop, so results, events and exit status are those of a spawned process. A
crash, a hang or a rerun costs a fork, not an interpreter start plus torch plus collection. A
child leaves with os._exit once pytest is done (its exit status, its files flushed): tearing
torch down again would cost 0.6 s, and atexit handlers that a test registered do not run. The
server exits at EOF.

torch's OpenMP pool does not survive a fork (libgomp: a child hangs in its first parallel
region if the parent ever started the pool), so the server runs with one thread and each child
gets back the thread count it would have had.

Without OOTCI_FORK_SERVER_FD the plugin does nothing. With it, its state lives on a ForkServer
object registered as a plugin at configure, as pytest's own plugins keep theirs.
"""
import ctypes
import faulthandler
import gc
import json
import os
import signal
import sys

import pytest


def _reply(fd, message):
    os.write(fd, (json.dumps(message) + "\n").encode())


def _children():
    """This process's live children, as "pid (command)", read from /proc (the stat file's fields
    follow the command's closing parenthesis; the command may hold any character)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            state, ppid = stat[stat.rindex(b")") + 2:].split()[:2]
            if int(ppid) != me or state == b"Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").strip().decode(errors="replace")
        except (OSError, ValueError):
            continue  # it ended while we looked
        found.append(f"{entry} ({command[:100]})")
    return found


def _redirect_output(config, log_path):
    """Points stdout and stderr (and pytest's capture and faulthandler) at this child's log.
    Returns faulthandler's file, which must stay open."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    # pytest's faulthandler writes to a copy of the stderr it started with: the server's log.
    fault_file = os.fdopen(os.dup(2), "w")
    faulthandler.enable(file=fault_file)
    if capman is not None and capman.is_globally_capturing():
        capman.start_global_capturing()
        capman.suspend_global_capture()
    return fault_file


def _spare(requests, server_pid):
    """Forks a child ahead of its request, so that a request costs a write, not a fork, and the
    fork overlaps the previous child's run. Returns (pid, the pipe that will carry the request)
    in the server and (0, the request) in the child."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(read_end)
        return pid, write_end
    try:
        os.close(write_end)
        requests.close()
        os.setpgid(0, 0)  # ootci kills the child's whole group on a stall or a timeout
        # Dies with the server, as a spawned pytest dies with ootci.
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != server_pid:  # the server died before prctl took effect
            os._exit(125)
        with os.fdopen(read_end, "rb") as pipe:
            line = pipe.readline()
        if not line:  # the server is done: no request will come
            os._exit(0)
        return 0, json.loads(line)
    except BaseException:
        import traceback
        traceback.print_exc()
        os._exit(3)


def _serve(fd, requests):
    """The server's loop: each request goes to the spare child, and a new spare is forked while
    that child runs. Returns None in the server at EOF, and the request in a child."""
    server_pid = os.getpid()
    spare = _spare(requests, server_pid)
    if not spare[0]:
        return spare[1]
    for line in iter(requests.readline, b""):
        for tries in range(2):
            pid, pipe = spare
            try:
                os.write(pipe, line)
                break
            except OSError:  # it died waiting, before reading anything: fork another
                os.waitpid(pid, 0)
                if tries:
                    return None  # ootci sees no child and runs the file spawned
                spare = _spare(requests, server_pid)
                if not spare[0]:
                    return spare[1]
            finally:
                os.close(pipe)
        _reply(fd, {"pid": pid})
        spare = _spare(requests, server_pid)
        if not spare[0]:
            return spare[1]
        _, status = os.waitpid(pid, 0)
        _reply(fd, {"exit": pid, "status": status})
    os.close(spare[1])  # the spare reads EOF and leaves
    os.waitpid(spare[0], 0)
    return None


def pytest_configure(config):
    fd = os.environ.get("OOTCI_FORK_SERVER_FD")
    if fd:
        config.pluginmanager.register(ForkServer(int(fd)), "ootci-fork-server")


class ForkServer:
    """The fork server's plugin: collects once, serves forks, and in each child lets pytest's own
    loop run the tests the request asks for."""

    def __init__(self, fd):
        import torch
        self.fd = fd
        self.threads = torch.get_num_threads()  # the torch thread count a child gets back
        torch.set_num_threads(1)
        self.collect_errors = []  # collection errors, for each child's events file
        self.fault_file = None    # faulthandler's file in a child (kept open)
        self.in_child = False
        from ootci_torch import op_observer, recording_config
        if recording_config.enabled() and recording_config.recorder_kind() == "observer":
            op_observer.available()  # loaded once here, not in every child

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append(str(report.longrepr))

    def _child(self, session, request):
        self.in_child = True
        self.fault_file = _redirect_output(session.config, request["log"])
        os.environ.update(request.get("env") or {})
        import torch
        torch.set_num_threads(self.threads)
        from ootci_torch import run_reporter
        reporter = run_reporter.reporter(session.config)
        reporter.start()
        for message in self.collect_errors:
            reporter.collect_error(message)
        reporter.narrow(session.config, session.items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        """Serves forks until EOF; a child returns None here so pytest's own loop runs its
        tests."""
        requests = os.fdopen(self.fd, "rb", buffering=0)
        from ootci_torch import run_reporter
        run_reporter.remember_ids(session.items)  # once here, not in every child
        # What exists now is shared by every child: the collector must not walk it in a child,
        # which would write to (and so copy) every page that holds an object.
        gc.collect()
        gc.freeze()
        ready = {"ready": len(session.items)}
        started = _children()
        if started:
            # A device daemon started at import or collection (a process the backend talks to
            # over pipes) would be shared by every child, each leaving its requests and memory
            # behind in it: the runner spawns this file's attempts instead.
            ready["fork_unsafe"] = (
                f"the backend started {len(started)} process(es) while the file was collected, "
                f"which forked children would share: {'; '.join(started[:3])}")
        _reply(self.fd, ready)
        request = _serve(self.fd, requests)
        if request is None:
            return True
        try:
            self._child(session, request)
        except BaseException:
            import traceback
            traceback.print_exc()
            os._exit(3)
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        """A child ends here, with pytest's exit status, without tearing the interpreter down:
        torch's teardown takes about 0.6 s, and the server's copy of it is still alive. (The
        reporter ends it the same way when it has an events file; this covers one without.)"""
        if self.in_child:
            from ootci_torch import run_reporter
            status = run_reporter.reporter(config).exit_status
            run_reporter.end_process(0 if status is None else status)

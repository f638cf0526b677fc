"""pyfork.py - Python processes forked from one that has imported torch.

  pyfork.py serve SOCKET MODULE...
      imports each MODULE once, then, for each client of SOCKET, forks a
      child that runs the client's Python command line in the client's
      folder, environment, stdin, stdout and stderr, and answers the
      child's exit status.
  pyfork.py run SOCKET PYTHON ARG...
      runs `PYTHON ARG...` in such a child, and exits as it did; runs
      PYTHON itself when there is no server, when ARG is not `-c CODE`,
      `- (stdin)` or a script, or when the PYTHON* variables differ from
      the server's (they shape the interpreter before any code runs).

A test's Python that imports chute.stream imports torch (2.4 s of CPU
here); a fork of a process that has costs 25 ms.  Run with -I -S as a
client: nothing but the standard library's built-in modules.
"""

import array
import json
import os
import socket
import struct
import sys

HEADER = struct.Struct("<I")


def python_env(env):
    return sorted((k, v) for k, v in env.items() if k.startswith("PYTHON"))


def send_msg(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    data = HEADER.pack(len(data)) + data
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                               array.array("i", fds))])
    else:
        sock.sendall(data)


def recv_msg(sock, want_fds=0):
    fds = array.array("i")
    buf = b""
    while len(buf) < HEADER.size:
        part, anc, _, _ = sock.recvmsg(
            4096, socket.CMSG_LEN(want_fds * fds.itemsize) if want_fds else 0)
        if not part:
            raise EOFError
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        want_fds = 0
        buf += part
    size, = HEADER.unpack_from(buf)
    buf = buf[HEADER.size:]
    while len(buf) < size:
        part = sock.recv(size - len(buf))
        if not part:
            raise EOFError
        buf += part
    return json.loads(buf.decode()), list(fds)


# ------------------------------------------------------------------ #
# Client

def client(path, argv):
    python, args = argv[0], argv[1:]
    forkable = args and (args[0] in ("-c", "-") and (args[0] == "-" or len(args) > 1)
                         or not args[0].startswith("-"))
    sock = None
    if forkable:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            send_msg(sock, {"python": python, "args": args, "cwd": os.getcwd(),
                            "env": dict(os.environ)}, [0, 1, 2])
            (answer, _) = recv_msg(sock)
        except (OSError, EOFError):
            answer = None
        sock.close()
        if answer is not None and answer[0] == "exit":
            sys.exit(answer[1])
        if answer is not None and answer[0] == "signal":
            import signal
            signal.signal(answer[1], signal.SIG_DFL)
            os.kill(os.getpid(), answer[1])
            sys.exit(128 + answer[1])
        # "no": this command line is not the server's to run
    os.execv(python, [python] + args)


# ------------------------------------------------------------------ #
# Server

def child(conn, listener, req, fds):
    """In the forked child: become the client's Python, run its code, and
    exit as the interpreter does (non-daemon threads, atexit, flushing,
    status), less the teardown of every module: with torch in memory that
    copies the whole heap (1.8 s of CPU), and no test looks at it."""
    import atexit
    import runpy
    import signal
    import threading
    import traceback
    import types
    listener.close()
    conn.close()
    os.setpgid(0, 0)
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    args = req["args"]
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    status = 0
    try:
        if args[0] == "-c":
            sys.argv = ["-c"] + args[2:]
            sys.path[0] = ""
            exec(compile(args[1], "<string>", "exec"), main.__dict__)
        elif args[0] == "-":
            sys.argv = ["-"] + args[1:]
            sys.path[0] = ""
            exec(compile(sys.stdin.read(), "<stdin>", "exec"), main.__dict__)
        else:
            sys.argv = list(args)
            sys.path[0] = os.path.dirname(os.path.realpath(args[0]))
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code & 0xff
        else:
            print(e.code, file=sys.stderr)
            status = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        status = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        status = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            status = status or 120
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status)


def serve(path, modules):
    import importlib
    import select
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    for m in modules:
        importlib.import_module(m)
    # what the children do not touch is never copied
    import gc
    gc.collect()
    gc.freeze()
    mine = python_env(os.environ)
    # clients run side by side (a test may start one in the background
    # and talk to it from another): each child's pidfd and connection
    active = {}  # pidfd -> (pid, conn)
    while True:
        watch = [listener] + list(active)
        watch += [conn for _, conn in active.values() if conn is not None]
        ready, _, _ = select.select(watch, [], [])
        for r in ready:
            if r is listener:
                start(listener, active, mine)
            elif isinstance(r, int):
                # a child ended: its status to its client
                pid, conn = active.pop(r)
                os.close(r)
                _, status = os.waitpid(pid, 0)
                if conn is None:
                    continue
                try:
                    if os.WIFSIGNALED(status):
                        send_msg(conn, ("signal", os.WTERMSIG(status)))
                    else:
                        send_msg(conn, ("exit", os.WEXITSTATUS(status)))
                except OSError:
                    pass
                conn.close()
            else:
                # a client sends nothing after its request: it is gone
                # (killed by timeout), and so is its child
                for pidfd, (pid, conn) in list(active.items()):
                    if conn is r:
                        for kill in (os.kill, os.killpg):
                            try:
                                kill(pid, 9)
                            except OSError:
                                pass
                        conn.close()
                        active[pidfd] = (pid, None)


def start(listener, active, mine):
    """Accepts a client, and forks its child (or answers "no")."""
    conn, _ = listener.accept()
    try:
        req, fds = recv_msg(conn, 3)
    except (OSError, EOFError, ValueError):
        conn.close()
        return
    if (len(fds) != 3 or os.path.realpath(req["python"]) != os.path.realpath(sys.executable)
            or python_env(req["env"]) != mine):
        for fd in fds:
            os.close(fd)
        send_msg(conn, ("no",))
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            for pidfd, (_, other) in active.items():
                os.close(pidfd)
                if other is not None:
                    other.close()
            child(conn, listener, req, fds)
        except BaseException:
            import traceback
            traceback.print_exc()
        os._exit(1)
    for fd in fds:
        os.close(fd)
    active[os.pidfd_open(pid)] = (pid, conn)

if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "run":
        client(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)

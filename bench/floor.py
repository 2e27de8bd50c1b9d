"""The floor of a check's protocol exchange: the bytes plancheck sent, replayed by a client that
does no work but send them and wait for the answers.

plancheck's overhead beyond the server's time is its own CPU plus the waits of its sequential
round trips. Replaying the exact bytes of a run (captured with strace) over the same kind of
connection, with the same round trips (each send waits for as many ReadyForQuery as it holds
Sync and Query messages), measures the second part alone: what the same exchange costs on this
machine with a client whose work is nothing (bench/replay.c, compiled with `cc`; this module's
Python loop where there is no C compiler, whose own CPU is then part of the floor). plancheck cannot be faster than that with the same
round trips; the difference between the two is plancheck's own share.
"""

import codecs
import os
import re
import shutil
import socket
import struct
import subprocess
import time

PROTOCOL_3 = 196608
TERMINATE = b"X\0\0\0\4"
# strace -f writes the process id ahead of each call when it traces more than one process.
SENDTO = re.compile(r'^(?:\d+\s+)?sendto\((\d+), "(.*)", \d+, ')


def capture(cmd, out):
    """Runs `cmd` under strace, writing every `sendto` to `out`; the connections' streams of
    sends, in the order each connection started, each without its startup message. None when
    strace is not installed or saw no connection."""
    if shutil.which("strace") is None:
        return None
    subprocess.run(["strace", "-f", "-s", "4000000", "-e", "trace=sendto", "-o", out] + cmd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    streams, current = [], {}
    with open(out, errors="surrogateescape") as f:
        for line in f:
            m = SENDTO.match(line)
            if not m:
                continue
            fd = m.group(1)
            data = codecs.escape_decode(m.group(2).encode(errors="surrogateescape"))[0]
            if len(data) >= 8 and struct.unpack("!I", data[4:8])[0] == PROTOCOL_3 \
                    and data[0] == 0:
                current[fd] = []
                streams.append(current[fd])
                continue
            if fd in current and data != TERMINATE:
                current[fd].append(data)
    return [s for s in streams if s] or None


def answers_awaited(data):
    """ReadyForQuery messages the server sends for `data`: one per Sync and per simple Query."""
    at, count = 0, 0
    while at < len(data):
        kind = data[at:at + 1]
        length = struct.unpack("!I", data[at + 1:at + 5])[0]
        if kind in (b"S", b"Q"):
            count += 1
        at += 1 + length
    return count


def replay(socket_path, user, database, streams, application):
    """Replays each stream on a connection of its own, one after another: the wall seconds of
    the sends and answers (connecting not counted), and the replaying client's own CPU seconds
    in that time (the floor is that much lower still)."""
    total, cpu = 0.0, 0.0
    for stream in streams:
        plan = [(data, answers_awaited(data)) for data in stream]
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(socket_path)
        params = (f"user\0{user}\0database\0{database}\0application_name\0{application}\0\0"
                  .encode())
        conn.sendall(struct.pack("!II", 8 + len(params), PROTOCOL_3) + params)
        pending = bytearray()

        def await_ready(count):
            nonlocal pending
            seen = 0
            while True:
                while len(pending) >= 5:
                    length = struct.unpack("!I", pending[1:5])[0]
                    if len(pending) < 1 + length:
                        break
                    kind = pending[0:1]
                    del pending[:1 + length]
                    if kind == b"Z":
                        seen += 1
                        if seen == count:
                            return
                chunk = conn.recv(1 << 16)
                if not chunk:
                    raise RuntimeError("replay: the server closed the connection")
                pending += chunk

        await_ready(1)
        start, start_cpu = time.perf_counter(), time.process_time()
        for data, count in plan:
            conn.sendall(data)
            if count:
                await_ready(count)
        total += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        conn.sendall(TERMINATE)
        conn.close()
    return total, cpu


def replay_c(socket_path, user, database, streams, application, tmp):
    """The same replay by bench/replay.c, compiled with `cc` (a client whose own work is a few
    system calls a round trip); None where there is no C compiler."""
    compiler = shutil.which("cc")
    if compiler is None:
        return None
    binary = os.path.join(tmp, "replay")
    if not os.path.exists(binary):
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay.c")
        subprocess.run([compiler, "-O2", "-o", binary, source], check=True)
    plan = os.path.join(tmp, "replay.plan")
    with open(plan, "wb") as f:
        for stream in streams:
            f.write(struct.pack("!I", len(stream)))
            for data in stream:
                f.write(struct.pack("!II", len(data), answers_awaited(data)))
                f.write(data)
    out = subprocess.run([binary, socket_path, user, database, application, plan],
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def socket_file(host, port):
    return os.path.join(host, f".s.PGSQL.{port}")

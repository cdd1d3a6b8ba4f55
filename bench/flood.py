#!/usr/bin/env python3
"""Hostile load against `linkperf serve` on loopback, while a legitimate client runs latency tests.

Usage: bench/flood.py BINARY ATTACK [SECONDS]

ATTACK is one of:
  silent-rate   100 new silent connections per second, each held open
  silent-burst  1000 silent connections at once, held open
  hello-hold    64 connections that send a control preamble and hello, then nothing
  echo-bomb     one session asking for 64 echo connections of 16 MiB, each sending a 16 MiB message header
  echo-fill     the same, each connection then sending a whole 16 MiB message (so the echo buffers fill)
  many-tests    one session sending 2000 throughput test requests

It prints, as JSON: how many of the legitimate client's runs succeeded and how long they took (median and
longest), the responder's peak thread count and peak RSS, and its log lines. Everything stays on 127.0.0.1.
"""

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

PORT = 6200 + os.getpid() % 500


def preamble(role, token=0):
    return b"LKPF" + struct.pack(">HBBI", 1, role, 0, token)


def frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def read_frame(sock):
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (length,) = struct.unpack(">I", header)
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body)


HELLO = {"type": "hello", "software": "flood", "nonce": "00112233445566778899aabbccddeeff",
         "host": {"hostname": "flood", "kernel": "", "cpu_model": "", "cpus": 0}}


def control_session():
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    sock.sendall(preamble(1) + frame(HELLO))
    read_frame(sock)
    return sock


def attack(kind, held, stop):
    if kind == "silent-rate":
        while not stop.is_set():
            for _ in range(10):
                try:
                    held.append(socket.create_connection(("127.0.0.1", PORT), timeout=2))
                except OSError:
                    pass
            time.sleep(0.1)
    elif kind == "silent-burst":
        for _ in range(1000):
            try:
                held.append(socket.create_connection(("127.0.0.1", PORT), timeout=2))
            except OSError:
                pass
    elif kind == "hello-hold":
        for _ in range(64):
            try:
                sock = socket.create_connection(("127.0.0.1", PORT), timeout=2)
                sock.sendall(preamble(1) + frame(HELLO))
                held.append(sock)
            except OSError:
                pass
    elif kind in ("echo-bomb", "echo-fill"):
        sock = control_session()
        held.append(sock)
        sock.sendall(frame({"type": "test_request", "test": "latency", "proto": "tcp",
                            "max_message_bytes": 16 << 20, "connections": 64, "wait": "block",
                            "planned_duration_s": 60.0}))
        token = read_frame(sock).get("token")
        for _ in range(64):
            try:
                data = socket.create_connection(("127.0.0.1", PORT), timeout=2)
                data.sendall(preamble(2, token or 0) + struct.pack(">I", 16 << 20) + b"x" * 65536)
                held.append(data)
                if kind == "echo-fill":
                    threading.Thread(target=fill, args=(data,), daemon=True).start()
            except OSError:
                pass
    elif kind == "many-tests":
        sock = control_session()
        held.append(sock)
        request = {"type": "test_request", "test": "throughput", "proto": "tcp", "connections": 1,
                   "write_bytes": 1000, "duration_s": 60.0, "interval_s": 1.0, "buffer_bytes": None,
                   "congestion": None, "discard": False, "rate_bps": None, "gso": False, "batch": 1,
                   "alternating": False, "datagrams": None}
        for _ in range(2000):
            sock.sendall(frame(request))
            if read_frame(sock) is None:
                break


def fill(sock):
    """Sends the rest of a 16 MiB message and reads its echo, so the responder's buffer is all touched."""
    try:
        sock.settimeout(30)
        sock.sendall(b"x" * ((16 << 20) - 65536))
        left = 16 << 20
        while left > 0:
            chunk = sock.recv(min(left, 1 << 20))
            if not chunk:
                return
            left -= len(chunk)
    except OSError:
        pass


def sample(pid, peak):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Threads:"):
                    peak["threads"] = max(peak["threads"], int(line.split()[1]))
                if line.startswith("VmRSS:"):
                    peak["rss_kb"] = max(peak["rss_kb"], int(line.split()[1]))
    except OSError:
        pass


def main():
    binary, kind = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    log = open(f"/tmp/flood-{PORT}.log", "w+")
    server = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1", "-p", str(PORT)], stderr=log)
    time.sleep(0.5)
    peak = {"threads": 0, "rss_kb": 0}
    held, stop = [], threading.Event()
    attacker = threading.Thread(target=attack, args=(kind, held, stop), daemon=True)
    attacker.start()
    runs = []
    started = time.time()
    while time.time() - started < seconds:
        sample(server.pid, peak)
        t0 = time.time()
        try:
            result = subprocess.run([binary, "latency", "127.0.0.1", "-p", str(PORT), "-n", "20", "--no-store"],
                                    capture_output=True, timeout=15)
            ok = result.returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
        runs.append({"ok": ok, "s": round(time.time() - t0, 3)})
        sample(server.pid, peak)
    stop.set()
    for _ in range(10):
        sample(server.pid, peak)
        time.sleep(0.1)
    server.kill()
    server.wait()
    log.seek(0)
    lines = log.readlines()
    print(json.dumps({"binary": binary, "attack": kind, "served": sum(r["ok"] for r in runs), "runs": len(runs),
                      "median_run_s": sorted(r["s"] for r in runs)[len(runs) // 2],
                      "max_run_s": max(r["s"] for r in runs), "peak": peak,
                      "held": len(held), "log_lines": len(lines), "log_bytes": sum(len(l) for l in lines)}))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""apiflood HOST:PORT [--slow N] [--idle N] [--src ADDR] [--interval S]
[--stats FILE]: hostile clients of an HTTP server, all from one address
(127.0.0.1 by default: every local client of a loopback API shares it).

- slow: each connection sends a request line and one header, then one
  more header byte every --interval seconds (1 s), never ending its head:
  a slowloris.
- idle: each connection is opened and sends nothing.

Both kinds reconnect as soon as the server closes them, so they hold as
many connections as the server lets them, for as long as they run. One
process, one epoll loop: thousands of connections cost it little CPU.
Prints "ready" once every connection was tried once; with --stats, writes
its counts there (JSON) every second. Ends on SIGTERM or SIGINT.

Used by simctl api-flood (the bed fault), tests/integration/51-api-limits
and tests/bench (the slow-client section)."""
import argparse
import errno
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time

HEAD = b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


class Flood:
    def __init__(self, a):
        host, port = a.target.rsplit(":", 1)
        self.addr = (host, int(port))
        self.src = a.src
        self.interval = a.interval
        self.sel = selectors.DefaultSelector()
        self.want = {"slow": a.slow, "idle": a.idle}
        self.open = {"slow": 0, "idle": 0}        # connected now
        self.pending = {"slow": 0, "idle": 0}     # connecting
        self.slow = {}                            # socket -> next send time
        self.stats = {"connects": 0, "refused": 0, "closed_by_server": 0,
                      "bytes_sent": 0}
        self.stop = False
        self.refused_at = 0.0

    def connect(self, kind):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((self.src, 0))
            rc = s.connect_ex(self.addr)
        except OSError:
            rc = -1
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            self.refused()
            return False
        self.pending[kind] += 1
        self.sel.register(s, selectors.EVENT_WRITE, ("connecting", kind))
        return True

    def connected(self, s, kind):
        self.pending[kind] -= 1
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
            self.sel.unregister(s)
            s.close()
            self.refused()
            return
        self.stats["connects"] += 1
        self.open[kind] += 1
        self.sel.modify(s, selectors.EVENT_READ, ("open", kind))
        if kind == "slow":
            self.send(s, HEAD)
            self.slow[s] = time.monotonic() + self.interval

    def refused(self):
        """No server (yet): try again in a while, not in a busy loop."""
        self.stats["refused"] += 1
        self.refused_at = time.monotonic()

    def send(self, s, data):
        try:
            self.stats["bytes_sent"] += s.send(data)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            pass  # the read side sees the close

    def closed(self, s, kind):
        self.sel.unregister(s)
        s.close()
        self.open[kind] -= 1
        self.slow.pop(s, None)
        self.stats["closed_by_server"] += 1

    def top_up(self):
        if time.monotonic() - self.refused_at < 0.1:
            return
        for kind, n in self.want.items():
            while self.open[kind] + self.pending[kind] < n:
                if not self.connect(kind):
                    return

    def trickle(self, now):
        for s, due in list(self.slow.items()):
            if due <= now:
                self.send(s, b"a")
                self.slow[s] = now + self.interval

    def write_stats(self, path):
        doc = dict(self.stats, slow_open=self.open["slow"], idle_open=self.open["idle"],
                   time=time.time())
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)

    def run(self, stats_path):
        self.top_up()
        ready = False
        t_ready = time.monotonic() + 20
        next_stats = 0.0
        while not self.stop:
            now = time.monotonic()
            if not ready and (sum(self.pending.values()) == 0 or now > t_ready):
                print("ready", flush=True)
                ready = True
            for key, ev in self.sel.select(timeout=0.05):
                state, kind = key.data
                s = key.fileobj
                if state == "connecting":
                    self.connected(s, kind)
                    continue
                try:
                    data = s.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.closed(s, kind)
                # an answer (a 4xx to a slow head) is read and dropped;
                # the server closes after it
            now = time.monotonic()
            self.trickle(now)
            self.top_up()
            if stats_path and now >= next_stats:
                self.write_stats(stats_path)
                next_stats = now + 1.0


def main():
    p = argparse.ArgumentParser(prog="apiflood")
    p.add_argument("target", help="HOST:PORT")
    p.add_argument("--slow", type=int, default=0)
    p.add_argument("--idle", type=int, default=0)
    p.add_argument("--src", default="127.0.0.1")
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--stats")
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.slow + a.idle + 64
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    f = Flood(a)

    def end(*_):
        f.stop = True
    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGINT, end)
    f.run(a.stats)
    if a.stats:
        f.write_stats(a.stats)
    sys.exit(0)


if __name__ == "__main__":
    main()

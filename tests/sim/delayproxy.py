#!/usr/bin/python3
"""delayproxy MS LISTEN_HOST:PORT=TARGET_HOST:PORT ...: a TCP proxy that
holds every chunk it reads for MS milliseconds before passing it on, in
both directions, in order: a long link for the bed (simctl delay).

This kernel has no netem qdisc (tc's tbf and htb shape rate, they add no
fixed delay), so the delay is made in user space, in the path of the
connections tandemd makes: SSH to each node and HTTP to vLLM. A peer that
closes is closed on the other side after the same delay; a peer that goes
silent (link down) leaves the other side silent too, as a long cable
would."""
import asyncio
import collections
import sys
import time


def note(*words):
    """Why a connection ended, on stderr ($SIM_DIR/delayproxy.log): a test
    that sees a node close or fall silent through the proxy can tell the
    proxy's doing from the node's."""
    sys.stderr.write("%.3f %s\n" % (time.time(), " ".join(str(w) for w in words)))
    sys.stderr.flush()


async def pump(reader, writer, delay, name):
    """Reads chunks as they come and writes each one `delay` seconds after
    it arrived: a reader and a writer, so that a slow write never holds the
    timestamps of later chunks back."""
    loop = asyncio.get_running_loop()
    queue = collections.deque()
    ready = asyncio.Event()

    async def writer_task():
        while True:
            while not queue:
                ready.clear()
                await ready.wait()
            due, data = queue.popleft()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                break
            writer.write(data)
            await writer.drain()
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            writer.close()

    task = asyncio.ensure_future(writer_task())
    try:
        while True:
            try:
                data = await reader.read(65536)
            except OSError as e:
                note(name, "read:", e)
                data = b""
            if not data:
                note(name, "end of input, passed on after the delay")
            queue.append((loop.time() + delay, data or None))
            ready.set()
            if not data:
                break
        await task
    except (OSError, ConnectionError) as e:
        note(name, "write:", e)
        writer.close()
    finally:
        task.cancel()


def handler(target, delay):
    host, port = target

    async def on_client(cr, cw):
        try:
            ur, uw = await asyncio.open_connection(host, port)
        except OSError as e:
            note("connect %s:%d:" % target, e)
            cw.close()
            return
        peer = "%s:%d" % cw.get_extra_info("peername")[:2]
        ends = await asyncio.gather(pump(cr, uw, delay, peer + " -> %s:%d" % target),
                                    pump(ur, cw, delay, "%s:%d -> " % target + peer),
                                    return_exceptions=True)
        for e in ends:
            if isinstance(e, BaseException):
                note(peer, "pump failed:", repr(e))
        for w in (cw, uw):
            w.close()
    return on_client


def addr(s):
    h, _, p = s.rpartition(":")
    return h, int(p)


async def main():
    delay = float(sys.argv[1]) / 1000
    servers = []
    for pair in sys.argv[2:]:
        listen, _, target = pair.partition("=")
        lh, lp = addr(listen)
        servers.append(await asyncio.start_server(handler(addr(target), delay), lh, lp,
                                                  reuse_address=True))
    # Ready: the caller waits for this line before pointing anything here.
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main())

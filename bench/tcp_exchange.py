#!/usr/bin/python3
"""The all-reduce's half over a plain TCP socket pair: both ends send BYTES at once and receive
the other's, ITERS times; prints the median. What Open MPI's TCP transport is compared with on
the emulated hosts' veth (docs/benchmarks.md), shaped or not. Run the server in hostB first:
  scripts/two-hosts.sh run DIR hostB bench/tcp_exchange.py serve 10.213.0.2
  scripts/two-hosts.sh run DIR hostA bench/tcp_exchange.py connect 10.213.0.2
Only ever between the test's own namespaces (or 127.0.0.1).
"""
import socket
import statistics
import sys
import threading
import time

BYTES = 243860   # half of the model's gradient (121,930 floats)
ITERS = 50
PORT = 5998


def exchange(conn):
    out = threading.Thread(target=conn.sendall, args=(b"x" * BYTES,))
    out.start()
    got = 0
    while got < BYTES:
        chunk = conn.recv(BYTES - got)
        if not chunk:
            raise SystemExit("the other end closed the connection")
        got += len(chunk)
    out.join()


def main():
    mode, address = sys.argv[1], sys.argv[2]
    if mode == "serve":
        server = socket.create_server((address, PORT), reuse_port=False)
        server.settimeout(30)
        conn, _ = server.accept()
    else:
        conn = socket.create_connection((address, PORT), timeout=30)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(ITERS):
        start = time.perf_counter()
        exchange(conn)
        times.append(time.perf_counter() - start)
    conn.close()
    if mode != "serve":
        print("%d bytes each way at once, median of %d: %.3f ms" % (BYTES, ITERS, statistics.median(times) * 1e3))


if __name__ == "__main__":
    main()

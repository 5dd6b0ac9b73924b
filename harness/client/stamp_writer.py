"""The stamp probe's writer: a process of its own that sends its clock to the client.

Run by harness.client.stamp_probe as `python -I -S stamp_writer.py FD MEAN_INTERVAL_S SEED` with FD
one end of an AF_UNIX datagram socketpair. At Poisson instants (exponential gaps: arrivals that
see the client's time average, as a chunk arriving at a random instant would) it writes one
8-byte datagram holding `time.perf_counter()` read just before the write. The client stamps the
datagram as it stamps a chunk; the difference is the delay a chunk arriving then would carry.
When the client has stopped reading and the socket is full, stamps wait here in order and go
as soon as it reads again, as a server's writes wait behind a full socket: their delay counts.

Standard library only, no harness imports: it starts in ~10 ms with -I -S and holds no GIL the
client needs. It ends when the client closes its end (the write fails) or on SIGTERM.
"""

import collections
import os
import random
import signal
import struct
import sys
import time

_MAX_WAITING = 1 << 20  # ~8 MB: a client that stopped reading for over half an hour


def main() -> None:
    fd, mean_s, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client's Ctrl-C is the client's to handle
    rng = random.Random(seed)
    pack, clock, write, sleep = struct.Struct("d").pack, time.perf_counter, os.write, time.sleep
    waiting: collections.deque[float] = collections.deque(maxlen=_MAX_WAITING)
    while True:
        sleep(rng.expovariate(1.0 / mean_s))
        waiting.append(clock())
        try:
            while waiting:
                write(fd, pack(waiting[0]))
                waiting.popleft()
        except BlockingIOError:  # the client is not reading: the stamps wait, in order
            continue
        except OSError:  # the client closed its end
            return


if __name__ == "__main__":
    main()

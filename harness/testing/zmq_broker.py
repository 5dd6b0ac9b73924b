"""A ZMQ XSUB/XPUB forwarder for Dynamo's event plane in broker mode, bound to given addresses.

Why: in direct mode (no broker) every Dynamo event publisher binds its ZMQ PUB socket to
tcp://0.0.0.0:0, hard-coded in dynamo-runtime (lib/runtime/src/transports/event_plane/mod.rs;
DYN_EVENT_PLANE_HOST changes only the address it advertises), so a worker listens on every
interface. With DYN_ZMQ_BROKER_URL="xsub=tcp://H:P1 , xpub=tcp://H:P2" set on the frontend and
the workers, publishers and subscribers connect to a broker instead and bind nothing. Upstream's
broker is a Rust binary the PyPI wheels do not ship; this is the same forwarder (zmq.proxy).

Run with the Dynamo venv (it has pyzmq):
  .venv-dynamo/bin/python harness/testing/zmq_broker.py tcp://127.0.0.1:P1 tcp://127.0.0.1:P2
"""

from __future__ import annotations

import contextlib
import signal
import sys

import zmq


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not all(a.startswith("tcp://") for a in argv):
        print("usage: zmq_broker.py tcp://HOST:XSUB_PORT tcp://HOST:XPUB_PORT", file=sys.stderr)
        return 2
    # SIGTERM ends the process at once; zmq.proxy blocks and holds no state worth flushing.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ctx = zmq.Context()
    xsub = ctx.socket(zmq.XSUB)
    xsub.bind(argv[0])
    xpub = ctx.socket(zmq.XPUB)
    xpub.bind(argv[1])
    print(f"zmq_broker: xsub {argv[0]} xpub {argv[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        zmq.proxy(xsub, xpub)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""moto's server on loopback, as the tests' emulators start it: one place
for how (quiet, 127.0.0.1, the port asked for or any)."""

import logging

from moto.server import ThreadedMotoServer


def start(port: int) -> int:
    """Starts moto's server on 127.0.0.1:`port` (0: any); the port it took."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server.get_host_and_port()[1]

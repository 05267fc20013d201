"""moto's server on loopback, every service it emulates on one port: S3
(which keeps object versions, as s3s-fs does not) and KMS, among others.
Starts it on --port (0 for any), prints `listening on <port>`, and serves
until it is killed."""

import argparse
import threading

from moto_loopback import start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    port = start(args.port)
    print(f"listening on {port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()

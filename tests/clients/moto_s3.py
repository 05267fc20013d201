"""S3 on loopback as moto emulates it, which keeps object versions (s3s-fs
keeps none): starts moto's server on --port (0 for any), prints
`listening on <port>`, and serves until it is killed."""

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

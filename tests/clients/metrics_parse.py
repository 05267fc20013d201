"""Reads a Prometheus text exposition on stdin with the Prometheus client's
own parser (PyPI `prometheus-client`) and prints each sample as a JSON line:
`{"family", "type", "name", "labels", "value"}`. A text the parser refuses
exits non-zero with its error."""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    for family in text_string_to_metric_families(sys.stdin.read()):
        for sample in family.samples:
            print(json.dumps({
                "family": family.name,
                "type": family.type,
                "name": sample.name,
                "labels": sample.labels,
                "value": sample.value,
            }))


if __name__ == "__main__":
    main()

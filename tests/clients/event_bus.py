"""EventBridge on loopback, as moto emulates it, with a team's consumer.

Starts moto's server (on --port, 0 for any), creates the bus --bus, an SQS queue and a rule on the
bus that sends every event whose source is `sluice` to the queue (what a
team would route), prints `listening on <port>`, then reads the queue and
logs each message to --log as one JSON line, in the webhook receiver's shape
(`event_log.py`: `{"phase": "end", "id", "type", "file_id", "owner", ...}`, the id being
`detail.id`), with the envelope's `source`, `detail-type` and `time` beside.
A message whose detail-type is not its detail's type is logged as
`{"phase": "bad"}`.
"""

import argparse
import json

import boto3

from event_log import appender, delivered
from moto_loopback import start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bus", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()

    port = start(args.port)
    reach = dict(
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="sluice-test",
        aws_secret_access_key="sluice-test",
    )
    events = boto3.client("events", **reach)
    sqs = boto3.client("sqs", **reach)
    events.create_event_bus(Name=args.bus)
    queue = sqs.create_queue(QueueName=f"{args.bus}-seen")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(
        QueueUrl=queue, AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    events.put_rule(
        Name="every-file-event",
        EventBusName=args.bus,
        EventPattern=json.dumps({"source": ["sluice"]}),
    )
    events.put_targets(
        Rule="every-file-event",
        EventBusName=args.bus,
        Targets=[{"Id": "seen", "Arn": queue_arn}],
    )
    print(f"listening on {port}", flush=True)

    log = appender(args.log)

    while True:
        got = sqs.receive_message(
            QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1
        )
        for message in got.get("Messages", []):
            envelope = json.loads(message["Body"])
            detail = envelope["detail"]
            if envelope["detail-type"] != detail["type"]:
                log({"phase": "bad", "error": f"detail-type {envelope['detail-type']} of a {detail['type']}"})
            else:
                log(delivered(
                    detail["id"],
                    detail,
                    source=envelope["source"],
                    detail_type=envelope["detail-type"],
                    time=envelope["time"],
                ))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])


if __name__ == "__main__":
    main()

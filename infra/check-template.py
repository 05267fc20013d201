"""What the SAM translator makes of template.yaml, checked offline (run by
`make template`, in the aws-sam-cli venv):

- the API has POST /mcp exactly once: the explicit route with the response
  mapping, not also a SAM-generated one (two would fail the deploy);
- that integration sets WWW-Authenticate from the 401/403 body's
  `www_authenticate`, which API Gateway would otherwise rename;
- API Gateway may invoke the mcp function on that route;
- with CreateCognitoUserPool=true the functions' auth variables point at
  the pool, and nothing depends on itself;
- the outputs (McpUrl, ClaudeMcpAdd) name the right URL in every
  configuration: the API's own, PublicUrl, a custom domain;
- operations: every function logs to a group with retention, the stage is
  throttled, alarms exist (with AlarmEmail) for API 5xx, each function's
  errors and throttles, the table's throttles, each function's internal
  errors and the resolver's unreachable ledger (sluice's own EMF metric,
  sluice_refusals_total), and the bucket, table and
  secret carry deletion and replacement policies;
- the events function exists with WebhookUrl or EventBusName, and only it
  may put events, only on the bus EventBusName names; its batches are small
  and bisected on error, and the webhook secret is in Secrets Manager, not
  a plaintext variable;
- receipts: the stack's KMS key (ECC_NIST_P256, SIGN_VERIFY, retained), or
  ReceiptKeyArn's; only the mcp, issuer and events functions may Sign with
  it and read public keys (the retired ones' too, but for events); no other
  function has KMS;
- traces: the mcp, issuer and resolver functions (the ones that export) send
  them where TracesEndpoint says, each named, with TracesCollectorLayer's
  layer when it is given; nothing when both are empty;
- each function's role grants, on the bucket or its files, the S3 actions of
  every S3 operation its routes reach (S3_OPERATIONS, FUNCTION_OPERATIONS),
  and every operation the S3 backend calls has its actions listed here.
Exits non-zero naming what is wrong.
"""

import json
import sys

import yaml
from samtranslator.translator.transform import transform


class Loader(yaml.SafeLoader):
    pass


def _intrinsic(tag):
    def construct(loader, node):
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if tag == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
        return {("Ref" if tag == "Ref" else f"Fn::{tag}"): value}

    return construct


for tag in ["Ref", "Sub", "GetAtt", "If", "Not", "Equals", "Select", "Join", "Split", "And", "Or"]:
    Loader.add_constructor(f"!{tag}", _intrinsic(tag))


class Policies:
    """The managed policies the template names, without asking IAM."""

    def load(self):
        return {
            "AWSLambdaBasicExecutionRole": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
            "AWSLambdaDynamoDBExecutionRole": "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole",
        }


def fail(message):
    print(f"template check failed: {message}", file=sys.stderr)
    sys.exit(1)


def template_conditions():
    with open("template.yaml") as f:
        return yaml.load(f, Loader=Loader)["Conditions"]


def template_parameters():
    with open("template.yaml") as f:
        return yaml.load(f, Loader=Loader)["Parameters"]


def translated(parameters):
    with open("template.yaml") as f:
        template = yaml.load(f, Loader=Loader)
    # As `sam package` leaves it: code in S3.
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://packaged/code.zip"
    return transform(template, parameters, Policies())["Resources"]


def check(parameters):
    resources = translated(parameters)
    routes = []
    for name, r in resources.items():
        if r["Type"] == "AWS::ApiGatewayV2::Api":
            for path, methods in r["Properties"].get("Body", {}).get("paths", {}).items():
                routes += [f"{m.upper()} {path}" for m in methods if m != "parameters"]
        if r["Type"] == "AWS::ApiGatewayV2::Route":
            routes.append(r["Properties"]["RouteKey"])
    if routes.count("POST /mcp") != 1:
        fail(f"POST /mcp must be routed exactly once, found {routes.count('POST /mcp')} in {sorted(routes)}")
    mapping = resources["McpIntegration"]["Properties"]["ResponseParameters"]
    for status in ("401", "403"):
        wanted = {"Destination": "overwrite:header.WWW-Authenticate", "Source": "$response.body.www_authenticate"}
        if wanted not in mapping.get(status, {}).get("ResponseParameters", []):
            fail(f"the mcp integration does not restore WWW-Authenticate on {status}: {mapping}")
    permission = resources["McpInvokePermission"]["Properties"]
    if permission["Principal"] != "apigateway.amazonaws.com":
        fail(f"API Gateway may not invoke the mcp function: {permission}")
    return resources


def evaluate(value, params, conditions, template):
    """An output's value under `params`: Ref, Sub, Join and If; resources
    and attributes stay as `<Name>` (only what the outputs use)."""
    if isinstance(value, list):
        return [evaluate(v, params, conditions, template) for v in value]
    if not isinstance(value, dict):
        return value
    (fn, arg), = value.items()
    known = {"AWS::Region": "us-east-1", "AWS::URLSuffix": "amazonaws.com"}
    if fn == "Ref":
        if arg in params:
            return params[arg]
        if arg in template["Parameters"]:
            return str(template["Parameters"][arg].get("Default", ""))
        return known.get(arg, f"<{arg}>")
    if fn == "Fn::Sub":
        import re
        return re.sub(r"\$\{([^}]+)\}", lambda m: evaluate({"Ref": m.group(1)}, params, conditions, template), arg)
    if fn == "Fn::Join":
        return arg[0].join(evaluate(arg[1], params, conditions, template))
    if fn == "Fn::If":
        branch = arg[1] if condition(arg[0], params, template) else arg[2]
        return evaluate(branch, params, conditions, template)
    if fn == "Fn::GetAtt":
        return f"<{'.'.join(arg)}>"
    if fn == "Fn::Split":
        return evaluate(arg[1], params, conditions, template).split(arg[0])
    raise ValueError(f"cannot evaluate {fn}")


def condition(name, params, template):
    def ev(c):
        (fn, arg), = c.items()
        if fn == "Fn::Not":
            return not ev(arg[0])
        if fn == "Fn::Equals":
            a, b = (evaluate(x, params, {}, template) if isinstance(x, dict) else x for x in arg)
            return str(a) == str(b)
        if fn == "Condition":
            return condition(arg, params, template)
        raise ValueError(f"cannot evaluate condition {fn}")
    return ev(template["Conditions"][name])


def outputs(params):
    with open("template.yaml") as f:
        template = yaml.load(f, Loader=Loader)
    return {k: evaluate(v["Value"], params, {}, template) for k, v in template["Outputs"].items()
            if "Condition" not in v or condition(v["Condition"], params, template)}


def check_outputs():
    api = "https://<HttpApi>.execute-api.us-east-1.amazonaws.com"
    for params, base in [
        ({}, api),
        ({"PublicUrl": "https://proxy.example.com"}, "https://proxy.example.com"),
        ({"DomainName": "files.example.com", "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/x"},
         "https://files.example.com"),
    ]:
        out = outputs(params)
        if out["McpUrl"] != f"{base}/mcp":
            fail(f"McpUrl with {params}: {out['McpUrl']}, expected {base}/mcp")
        if out["ClaudeMcpAdd"] != f"claude mcp add --transport http sluice {base}/mcp":
            fail(f"ClaudeMcpAdd with {params}: {out['ClaudeMcpAdd']}")
        if ("RegionalDomainName" in out) != ("DomainName" in params):
            fail(f"RegionalDomainName output with {params}: {out}")
    out = outputs({"CreateCognitoUserPool": "true"})
    if "--client-id <ClaudeAppClient>" not in out["ClaudeMcpAdd"]:
        fail(f"ClaudeMcpAdd with Cognito: {out['ClaudeMcpAdd']}")


def check_operations(resources):
    for fn in ("McpFunction", "IssuerFunction", "ResolverFunction", "EventsFunction", "ImporterFunction"):
        props = resources[fn]["Properties"]
        group = props.get("LoggingConfig", {}).get("LogGroup", {}).get("Ref")
        if not group or "RetentionInDays" not in resources[group]["Properties"]:
            fail(f"{fn} logs to no group with retention: {props.get('LoggingConfig')}")
        if fn not in ("EventsFunction", "ImporterFunction") and "ReservedConcurrentExecutions" not in props:
            fail(f"{fn} has no (optional) reserved concurrency")
    # The importer: started by the mcp and issuer functions alone, as one
    # asynchronous invocation an import, never retried; the whole of
    # Lambda's time; its bytes to the bucket's files/ only.
    invokers = sorted(
        name for name, r in resources.items()
        if r["Type"] == "AWS::IAM::Role" and "lambda:InvokeFunction" in json.dumps(r["Properties"].get("Policies", []))
    )
    if invokers != ["IssuerFunctionRole", "McpFunctionRole"]:
        fail(f"lambda:InvokeFunction granted to {invokers}")
    for role in invokers:
        grant = json.dumps(resources[role]["Properties"]["Policies"])
        if '"lambda:InvokeFunction", "Resource": {"Fn::GetAtt": ["ImporterFunction", "Arn"]}' not in grant:
            fail(f"{role} may invoke more than the importer: {grant}")
        fn = role.removesuffix("Role")
        env = resources[fn]["Properties"]["Environment"]["Variables"]
        if env.get("SLUICE_IMPORTER_FUNCTION") != {"Ref": "ImporterFunction"}:
            fail(f"{fn} is not told the importer function: {env}")
    importer = resources["ImporterFunction"]["Properties"]
    # Imports are fetched from servers anyone names: the importer's
    # concurrency is always bounded (a parameter with a non-zero default),
    # so slow imports never take the account's concurrency.
    reserved = importer.get("ReservedConcurrentExecutions")
    if reserved != {"Ref": "ImporterConcurrency"} and not (isinstance(reserved, int) and reserved >= 1):
        fail(f"the importer's concurrency is not bounded: {reserved}")
    bound = template_parameters().get("ImporterConcurrency", {})
    if not isinstance(bound.get("Default"), int) or bound["Default"] < 1 or bound.get("MinValue", 0) < 1:
        fail(f"ImporterConcurrency may be 0 or unset: {bound}")
    if importer.get("Timeout") != 900:
        fail(f"the importer does not have Lambda's whole 15 minutes: {importer.get('Timeout')}")
    retries = [r for n, r in resources.items() if r["Type"] == "AWS::Lambda::EventInvokeConfig"]
    if not any(r["Properties"].get("MaximumRetryAttempts") == 0 for r in retries):
        fail("the importer's asynchronous invocations are retried (an import would run twice)")
    s3 = [
        st for p in resources["ImporterFunctionRole"]["Properties"]["Policies"]
        for st in p.get("PolicyDocument", {}).get("Statement", [])
        if any(a.startswith("s3:") for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"]))
    ]
    for st in s3:
        resource = json.dumps(st.get("Resource"))
        if "/files/*" not in resource and resource != json.dumps({"Fn::GetAtt": ["Bucket", "Arn"]}):
            fail(f"the importer's S3 grant reaches beyond files/: {st}")
    # The events function: the table's stream, file items only, a failed
    # delivery retried from its own record, what is given up kept.
    mapping = resources["EventsFunctionChanges"]["Properties"]
    if mapping["EventSourceArn"] != {"Fn::GetAtt": ["SpentTokens", "StreamArn"]}:
        fail(f"the events function does not read the table's stream: {mapping}")
    if mapping.get("FunctionResponseTypes") != ["ReportBatchItemFailures"]:
        fail("the events function's failures are not reported per record")
    filters = json.dumps(mapping.get("FilterCriteria"))
    if "file#" not in filters or '\\"ev\\"' not in filters or "OnFailure" not in mapping.get("DestinationConfig", {}):
        fail(f"the events function takes more than file items, or drops what it gives up: {mapping}")
    if mapping.get("BisectBatchOnFunctionError") is not True or mapping.get("BatchSize", 100) > 25:
        fail(f"the events function's batches are not small and bisected on error: {mapping}")
    env = resources["EventsFunction"]["Properties"]["Environment"]["Variables"]
    if "SLUICE_WEBHOOK_SECRET" in env or "SLUICE_WEBHOOK_SECRET_ID" not in env:
        fail(f"the webhook secret is a plaintext variable of the events function, or not named: {sorted(env)}")
    if resources["WebhookSecretStore"].get("Condition") != "HasWebhooks":
        fail("the webhook secret's store exists only with WebhookUrl")
    for name in ("EventsFunction", "EventsGivenUp", "EventsLogs", "EventsFunctionChanges", "EventsFunctionRole"):
        if resources[name].get("Condition") != "HasEvents":
            fail(f"{name} exists only with WebhookUrl or EventBusName")
    conditions = json.dumps(template_conditions())
    if '"HasEvents": {"Fn::Or": [{"Condition": "HasWebhooks"}, {"Condition": "HasEventBus"}]}' not in conditions:
        fail(f"HasEvents is not WebhookUrl or EventBusName: {conditions}")
    # The bus: the events function may put events on the one bus named,
    # with EventBusName only; no other function may put events anywhere.
    puts = {
        name: json.dumps(r["Properties"].get("Policies", []))
        for name, r in resources.items()
        if r["Type"] == "AWS::IAM::Role" and "events:PutEvents" in json.dumps(r["Properties"].get("Policies", []))
    }
    if list(puts) != ["EventsFunctionRole"]:
        fail(f"events:PutEvents granted to {list(puts)}")
    bus = next(p for p in resources["EventsFunctionRole"]["Properties"]["Policies"] if "events:PutEvents" in json.dumps(p))
    if (
        bus.get("Fn::If", [None])[0] != "HasEventBus"
        or ':event-bus/${eventBusName}"' not in json.dumps(bus)
        or '{"eventBusName": {"Ref": "EventBusName"}}' not in json.dumps(bus)
    ):
        fail(f"the events function's PutEvents is not limited to EventBusName's bus: {bus}")
    stages = [r for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    settings = [s["Properties"].get("DefaultRouteSettings", {}) for s in stages]
    if not any("ThrottlingRateLimit" in s and "ThrottlingBurstLimit" in s for s in settings):
        fail(f"the API stage is not throttled: {settings}")
    alarms = [n for n, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    # One metric an alarm, or (metric math) several, each in a MetricStat.
    metrics = sorted({
        m
        for a in alarms
        for m in [resources[a]["Properties"].get("MetricName")]
        + [q["MetricStat"]["Metric"]["MetricName"] for q in resources[a]["Properties"].get("Metrics", []) if "MetricStat" in q]
        if m
    })
    expected = [
        "5xx", "Errors", "ReadThrottleEvents", "Throttles", "WriteThrottleEvents",
        "sluice_refusals_total", "sluice_scans_total",
    ]
    if metrics != expected or len(alarms) != 14:
        fail(f"alarms: {alarms} on {metrics}")
    if any(resources[a].get("Condition") != "HasAlarms" for a in alarms + ["AlarmTopic"] if a != "MalwareFoundAlarm"):
        fail("alarms exist only with AlarmEmail")
    # The malware alarm: only with AlarmEmail and GuardDuty's scans both.
    with open("template.yaml") as f:
        template = yaml.load(f, Loader=Loader)
    if template["Conditions"][resources["MalwareFoundAlarm"]["Condition"]] != {
        "Fn::And": [{"Condition": "HasAlarms"}, {"Condition": "ScansWithGuardDuty"}]
    }:
        fail("the malware alarm exists only with AlarmEmail and MalwareScan=guardduty")
    for name in ("Bucket", "SpentTokens", "MasterSecret"):
        r = resources[name]
        if "DeletionPolicy" not in r or "UpdateReplacePolicy" not in r:
            fail(f"{name} has no DeletionPolicy / UpdateReplacePolicy")
    for name in ("ApiDomain", "ApiDomainMapping"):
        if resources[name].get("Condition") != "HasCustomDomain":
            fail(f"{name} exists only with DomainName")


# The IAM actions each S3 operation of the SDK needs (a presigned request
# is signed with the function's role, so presigning one needs its action
# as much as sending it).
S3_OPERATIONS = {
    "head_object": ["s3:GetObject"],
    "get_object": ["s3:GetObject"],
    "put_object": ["s3:PutObject"],
    "copy_object": ["s3:GetObject", "s3:PutObject"],
    "delete_object": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
    "create_multipart_upload": ["s3:PutObject"],
    "upload_part": ["s3:PutObject"],
    "complete_multipart_upload": ["s3:PutObject"],
    "abort_multipart_upload": ["s3:AbortMultipartUpload"],
    "list_parts": ["s3:ListMultipartUploadParts"],
    "list_object_versions": ["s3:ListBucketVersions"],
    # GuardDuty's scan-status tag (backends/aws/src/guardduty.rs).
    "get_object_tagging": ["s3:GetObjectTagging"],
}

# The S3 operations each function's routes reach.
FUNCTION_OPERATIONS = {
    # request_upload and request_uploads (a PUT or an upload in parts
    # presigned, the upload begun), a batch's stored copies, the status of
    # a file (HEAD) and its progress in parts (ListParts), read_small_file
    # and actions (GET), delete_file (abort, delete).
    "McpFunction": [
        "head_object", "get_object", "put_object", "copy_object", "delete_object",
        "create_multipart_upload", "upload_part", "abort_multipart_upload", "list_parts",
        "list_object_versions", "get_object_tagging",
    ],
    # POST /uploads, the upload link and its parts (presigned, listed,
    # completed and proven, aborted), DELETE /files/{file}.
    "IssuerFunction": [
        "head_object", "get_object", "put_object", "copy_object", "delete_object",
        "create_multipart_upload", "upload_part", "complete_multipart_upload",
        "abort_multipart_upload", "list_parts", "list_object_versions", "get_object_tagging",
    ],
    # A download link: the object found (HEAD) and a GET presigned.
    "ResolverFunction": ["head_object", "get_object", "get_object_tagging"],
    # An import: the object found (HEAD), put in one or in parts, and
    # deleted with its versions (its parts aborted) when it is rejected.
    "ImporterFunction": [
        "head_object", "get_object", "put_object", "delete_object", "list_object_versions",
        "create_multipart_upload", "upload_part", "complete_multipart_upload",
        "abort_multipart_upload", "list_parts", "get_object_tagging",
    ],
}


def check_s3_grants(resources):
    import pathlib
    import re

    called = set()
    for path in [*pathlib.Path("backends/aws/src/s3").glob("*.rs"), pathlib.Path("backends/aws/src/guardduty.rs")]:
        text = path.read_text()
        called |= set(re.findall(r"\.client(?:\(\))?\s*\.\s*([a-z_]+)\(\)", text))
    unknown = sorted(called - set(S3_OPERATIONS))
    if unknown:
        fail(f"the S3 backend calls {unknown}: add their IAM actions to S3_OPERATIONS")
    for fn, operations in FUNCTION_OPERATIONS.items():
        role = resources[f"{fn}Role"]["Properties"]
        granted = set()
        for policy in role.get("Policies", []):
            for statement in policy.get("PolicyDocument", {}).get("Statement", []):
                resource = json.dumps(statement.get("Resource"))
                on_bucket = "/files/*" in resource or resource == json.dumps({"Fn::GetAtt": ["Bucket", "Arn"]})
                if statement.get("Effect") != "Allow" or not on_bucket:
                    continue
                actions = statement.get("Action")
                granted |= set([actions] if isinstance(actions, str) else actions)
        needed = {a for op in operations for a in S3_OPERATIONS[op]}
        missing = sorted(needed - granted)
        if missing:
            fail(f"{fn}'s role lacks {missing} on the bucket or its files, which its routes need")


def check_malware_scan():
    """MalwareScan=guardduty: the plan on the bucket's files/ alone, tagging,
    with a role only GuardDuty's malware protection may take, whose grants
    stay on this bucket; every function told to read the tag. Off: neither
    the plan nor its role."""
    with open("template.yaml") as f:
        template = yaml.load(f, Loader=Loader)
    on = check({"MalwareScan": "guardduty"})
    for name in ("MalwareProtectionPlan", "MalwareProtectionRole"):
        made = on[name].get("Condition")
        if not made or condition(made, {}, template):
            fail(f"MalwareScan=off still creates {name}")
        if not condition(made, {"MalwareScan": "guardduty"}, template):
            fail(f"MalwareScan=guardduty creates no {name}")
    plan = on["MalwareProtectionPlan"]["Properties"]
    bucket = plan["ProtectedResource"]["S3Bucket"]
    if bucket != {"BucketName": {"Ref": "Bucket"}, "ObjectPrefixes": ["files/"]}:
        fail(f"the plan does not protect the bucket's files/ alone: {bucket}")
    if plan.get("Actions") != {"Tagging": {"Status": "ENABLED"}}:
        fail(f"the plan does not tag what it scanned (the functions read the tag): {plan.get('Actions')}")
    role = on["MalwareProtectionRole"]["Properties"]
    principals = [st["Principal"] for st in role["AssumeRolePolicyDocument"]["Statement"]]
    if principals != [{"Service": "malware-protection-plan.guardduty.amazonaws.com"}]:
        fail(f"the malware protection role may be taken by others: {principals}")
    for policy in role["Policies"]:
        for st in policy["PolicyDocument"]["Statement"]:
            resource = json.dumps(st["Resource"])
            if "Bucket" not in resource and "AmazonGuardDutyMalwareProtectionS3" not in resource:
                fail(f"the malware protection role reaches beyond the bucket and its rule: {st}")
    for fn in ("McpFunction", "IssuerFunction", "ResolverFunction", "ImporterFunction", "EventsFunction"):
        env = on[fn]["Properties"]["Environment"]["Variables"]
        if evaluate(env.get("SLUICE_SCAN"), {"MalwareScan": "guardduty"}, {}, template) != "guardduty":
            fail(f"{fn} is not told to read GuardDuty's tags: {env.get('SLUICE_SCAN')}")


def check_receipt_keys():
    """Receipts: the stack's own KMS key (ECC_NIST_P256, SIGN_VERIFY, kept
    when the stack or the key goes), or the one ReceiptKeyArn names; only
    the mcp, issuer and events functions are told of it and may use it, to
    Sign and to read its public key, on that key alone; retired keys only
    show their public key (to the two that serve the JWKS); no other
    function has any KMS action."""
    with open("template.yaml") as f:
        template = yaml.load(f, Loader=Loader)
    mine = "<ReceiptKey.Arn>"
    given = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555"
    old = "arn:aws:kms:us-east-1:123456789012:key/00000000-2222-3333-4444-555555555555"
    bus = {"EventBusName": "sluice-events"}
    for params, key, retired in (
        ({}, mine, []),
        (bus, mine, []),
        ({**bus, "ReceiptKeyArn": given, "RetiredReceiptKeys": old}, given, [old]),
    ):
        resources = check(params)
        made = resources.get("ReceiptKey")
        if made is not None and not condition(made["Condition"], params, template):
            made = None
        if (made is not None) != (key == mine):
            fail(f"with {params} the stack's receipt key is {'made' if made else 'not made'}")
        if made is not None:
            props = made["Properties"]
            if (props.get("KeySpec"), props.get("KeyUsage")) != ("ECC_NIST_P256", "SIGN_VERIFY"):
                fail(f"the receipt key is not an ES256 signing key: {props}")
            if made.get("DeletionPolicy") != "Retain" or made.get("UpdateReplacePolicy") != "Retain":
                fail("the receipt key is not kept when the stack or the key goes: what it signed could not be verified")
        if params and "EventsFunction" not in resources:
            fail(f"with {params} there is no events function to check")
        for fn in ("McpFunction", "IssuerFunction", "ResolverFunction", "ImporterFunction", "EventsFunction"):
            if fn not in resources:
                continue
            signs = fn in ("McpFunction", "IssuerFunction", "EventsFunction")
            env = resources[fn]["Properties"].get("Environment", {}).get("Variables", {})
            told = evaluate(env.get("SLUICE_RECEIPT_KMS_KEY", ""), params, {}, template)
            if signs and told != key:
                fail(f"{fn} is not told the receipt key {key}: {told}")
            if not signs and told:
                fail(f"{fn} is told the receipt key, but never signs")
            granted = []
            for policy in resources[f"{fn}Role"]["Properties"].get("Policies", []):
                for st in policy.get("PolicyDocument", {}).get("Statement", []):
                    if "Fn::If" in st:
                        name, then, otherwise = st["Fn::If"]
                        st = then if condition(name, params, template) else otherwise
                    if st == {"Ref": "AWS::NoValue"}:
                        continue
                    actions = st.get("Action")
                    actions = [actions] if isinstance(actions, str) else actions or []
                    kms = [a for a in actions if a.lower().startswith("kms:")]
                    if kms:
                        res = evaluate(st["Resource"], params, {}, template)
                        granted.append((sorted(kms), res if isinstance(res, list) else [res]))
            want = [(["kms:GetPublicKey", "kms:Sign"], [key])] if signs else []
            # The events function signs and serves no JWKS: no retired key.
            if signs and retired and fn != "EventsFunction":
                want.append((["kms:GetPublicKey"], retired))
            if granted != want:
                fail(f"{fn}'s KMS grants with {params} are {granted}, not {want}")


def check_traces():
    """Traces: TracesEndpoint is the mcp, issuer and resolver functions'
    OTLP endpoint, each function its own service name; TracesCollectorLayer
    is their layer; both empty, nothing (the endpoint empty, no layer)."""
    with open("template.yaml") as f:
        template = yaml.load(f, Loader=Loader)
    layer = "arn:aws:lambda:us-east-1:123456789012:layer:otel-collector-arm64:7"
    for params, endpoint, layers in (
        ({}, "", []),
        ({"TracesEndpoint": "http://localhost:4318", "TracesCollectorLayer": layer},
         "http://localhost:4318", [layer]),
    ):
        resources = check(params)
        for fn, service in (("McpFunction", "sluice-mcp"), ("IssuerFunction", "sluice-issuer"),
                            ("ResolverFunction", "sluice-resolver")):
            props = resources[fn]["Properties"]
            env = props.get("Environment", {}).get("Variables", {})
            told = evaluate(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "<unset>"), params, {}, template)
            if told != endpoint:
                fail(f"with {params} {fn} sends traces to {told!r}, not {endpoint!r}")
            if env.get("OTEL_SERVICE_NAME") != service:
                fail(f"{fn}'s spans are not named {service}: {env.get('OTEL_SERVICE_NAME')}")
            given = evaluate(props.get("Layers", []), params, {}, template)
            given = [] if given == "<AWS::NoValue>" else given
            if given != layers:
                fail(f"with {params} {fn}'s layers are {given}, not {layers}")


check_operations(check({}))
check_traces()
check_receipt_keys()
check_s3_grants(check({}))
check_malware_scan()
check_outputs()
cognito = check({"CreateCognitoUserPool": "true"})
for name in ("UserPool", "UserPoolDomain", "SluiceResourceServer", "ClaudeAppClient"):
    if name not in cognito:
        fail(f"CreateCognitoUserPool=true creates no {name}")
env = cognito["McpFunction"]["Properties"]["Environment"]["Variables"]
if "SLUICE_AUTH_CLIENT_IDS" not in json.dumps(env):
    fail("the functions are not given the Cognito app client id")
print(
    "template check: POST /mcp routed once with the WWW-Authenticate mapping; Cognito resources wired; "
    "outputs right with the API URL, PublicUrl and a custom domain; logs, throttling, alarms and policies in place; "
    "the events function on the table's stream, with WebhookUrl or EventBusName, putting only on that bus; "
    "each function granted the S3 actions its routes need; "
    "the importer invoked by the mcp and issuer functions alone, never retried, its bytes to files/ only; "
    "MalwareScan=guardduty: the plan tagging files/ with its own role, every function reading the tag; "
    "the receipt key in KMS, kept, used by the mcp, issuer and events functions alone to sign and read public keys; "
    "traces sent by the mcp, issuer and resolver functions to TracesEndpoint, with TracesCollectorLayer's layer"
)

"""What the SAM translator makes of template.yaml, checked offline (run by
`make template`, in the aws-sam-cli venv):

- the API has POST /mcp exactly once: the explicit route with the response
  mapping, not also a SAM-generated one (two would fail the deploy);
- that integration sets WWW-Authenticate from the 401/403 body's
  `www_authenticate`, which API Gateway would otherwise rename;
- API Gateway may invoke the mcp function on that route;
- with CreateCognitoUserPool=true the functions' auth variables point at
  the pool, and nothing depends on itself.
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
        return {"AWSLambdaBasicExecutionRole": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"}


def fail(message):
    print(f"template check failed: {message}", file=sys.stderr)
    sys.exit(1)


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


check({})
cognito = check({"CreateCognitoUserPool": "true"})
for name in ("UserPool", "UserPoolDomain", "SluiceResourceServer", "ClaudeAppClient"):
    if name not in cognito:
        fail(f"CreateCognitoUserPool=true creates no {name}")
env = cognito["McpFunction"]["Properties"]["Environment"]["Variables"]
if "SLUICE_AUTH_CLIENT_IDS" not in json.dumps(env):
    fail("the functions are not given the Cognito app client id")
print("template check: POST /mcp routed once with the WWW-Authenticate mapping; Cognito resources wired")

#!/usr/bin/env python3
"""Each flow's path through the service, counted from its source, for the
table in docs/ARCHITECTURE.md ("The service's components"): `make hops`, or
`python3 docs/flow-hops.py [TREE...]` for checkouts to compare (default: this
one).

From a flow's entry point, each service function is expanded once, depth
first, in source order (calls on `self`, on one of its components, on
`Self::`, and free functions of the service). Accessors (`store()`,
`records()`, `transfers()`, …) are reads of what a component holds, not
steps, and are left out. Reported: the functions reached, the files they
are in, the hops (calls that cross into another file), how often the path
comes back to a file it had left, and the components it touches (a tree
from before the components counts one type, `Sluice`). A static count: it
follows every branch, taken or not.
"""

import glob
import os
import re
import sys

ACCESSORS = {
    "fmt", "new", "drop", "from", "clone", "store", "records", "ledger", "keys",
    "transfers", "store_arc", "issuer_base", "resolver_base", "issuer_url",
    "limits", "pending_caps", "arrivals", "waits", "actions", "configured",
    "mcp_url", "base_url",
}
FLOWS = {
    "issue an upload": "issue_upload",
    "a part's target (`POST …/parts/{n}`)": "part_target",
    "redeem a download link": "redeem_link",
    "run an action with a File field": "execute_action",
}
COMPONENTS = {
    "base.rs": "Base", "verify.rs": "Base", "proof.rs": "Base",
    "limits.rs": "Limits", "files": "Files", "uploads": "Uploads",
    "downloads": "Downloads", "pages": "Pages", "batches": "Batches",
    "actions.rs": "Actions",
}
CALL = re.compile(
    r"(?:\bself\s*\.\s*(?:[a-z_]+\s*\.\s*)?|\bSelf::|(?<![\w.:])(?:super::\w+::)?)(\w+)\("
)


def body_end(s, i):
    depth = 0
    while True:
        c = s[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        elif c == '"':
            i += 1
            while s[i] != '"':
                i += 2 if s[i] == "\\" else 1
        elif s.startswith("//", i):
            i = s.index("\n", i)
        i += 1


def functions(tree):
    root = os.path.join(tree, "shared/src/service")
    fns = {}
    for path in sorted(glob.glob(root + "/**/*.rs", recursive=True)):
        rel = os.path.relpath(path, root)
        s = open(path).read()
        s = s[: s.find("#[cfg(test)]")] if "#[cfg(test)]" in s else s
        for m in re.finditer(
            r"^\s*(?:pub(?:\([a-z: ]+\))? )?(?:async )?fn (\w+)\s*(?:<[^>]*>)?\(", s, re.M
        ):
            if m.group(1) in ACCESSORS:
                continue
            start = s.index("{", m.end())
            fns.setdefault(m.group(1), (rel, s[start : body_end(s, start) + 1]))
    return fns


def walk(tree, entry):
    fns = functions(tree)
    seen, path = set(), []

    def visit(name):
        rel, body = fns[name]
        path.append(rel)
        if name in seen:
            return
        seen.add(name)
        for m in CALL.finditer(body):
            if m.group(1) in fns and m.group(1) != name:
                visit(m.group(1))
                path.append(rel)

    visit(entry)
    steps = [p for i, p in enumerate(path) if i == 0 or path[i - 1] != p]
    hops = sum(1 for a, b in zip(steps, steps[1:]) if a != b) // 2
    comps = {COMPONENTS.get(p.split("/")[0], "Sluice") for p in set(path)}
    if "Sluice" in comps or not os.path.isdir(os.path.join(tree, "shared/src/service/uploads")):
        comps = {"Sluice"}
    return len(seen), len(set(path)), hops, len(steps) - len(set(steps)), sorted(comps)


def main():
    trees = sys.argv[1:] or ["."]
    print("| flow | tree | functions | files | hops | returns | components |")
    print("|---|---|---|---|---|---|---|")
    for label, entry in FLOWS.items():
        for tree in trees:
            n, files, hops, returns, comps = walk(tree, entry)
            print(f"| {label} | {tree} | {n} | {files} | {hops} | {returns} | {', '.join(comps)} |")


if __name__ == "__main__":
    main()

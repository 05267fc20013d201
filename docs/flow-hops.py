#!/usr/bin/env python3
"""Each flow's path through the service, counted from its source, for the
table in docs/ARCHITECTURE.md ("The service's components"): `make hops`, or
`python3 docs/flow-hops.py [TREE...]` for checkouts to compare (default: this
one, printed as the table the document holds between its `hops` markers; a
test, `tests/tests/readme.rs`, holds the document to this output).

From a flow's entry point, each service function is expanded once, depth
first, in source order: calls on `self`, on a component or part it holds
(`self.files.stored(…)`, `self.calls.limits.check_rate(…)`: a call through
fields is a call into the component the last field names, as a reader
follows it), on `Self::` or a type (`Intake::of(…)`), through an accessor of one (`self.files.gate().arrived(…)`:
the component the accessor names), and free functions of the service. A name defined
in several files is the one in the component the call goes through, else
the one in the calling file, else the first. Accessors (`store()`,
`records()`, `transfers()`, …) are reads of what a component holds, not
steps, and are left out; a call through the store, the records or the
ledger (`self.base.store().purge(…)`) leaves the service and is not
followed. Reported: the functions reached, the files they
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
    "mcp_url", "base_url", "gate", "custody", "links", "reporter", "access",
}
FLOWS = {
    "issue an upload": "issue_upload",
    "a part's target (`POST …/parts/{n}`)": "part_target",
    "redeem a download link": "redeem_link",
    "run an action with a File field": "execute_action",
}
COMPONENTS = {
    "base.rs": "Base", "verify.rs": "Base", "proof.rs": "Proofs", "intake.rs": "Intake",
    "limits.rs": "Limits", "limits": "Limits", "files": "Files",
    "uploads": "Uploads", "downloads": "Downloads", "pages": "Pages",
    "batches": "Batches", "imports": "Imports", "actions": "Actions",
    "links.rs": "Links", "reporter.rs": "Reporter", "actions.rs": "Actions",
    "gate": "Gate", "custody.rs": "Custody",
}
# What the service calls below it: a call through one of these
# (`self.base.store().purge(…)`) leaves the service.
BACKENDS = {"store", "records", "ledger", "store_arc", "part_store", "transfers"}
# A field a component holds, as the folder (or file) of the component it is.
FIELDS = {
    "base": "base.rs", "files": "files", "uploads": "uploads",
    "downloads": "downloads", "limits": "limits", "pages": "pages",
    "batches": "batches", "imports": "imports", "gate": "gate",
    "custody": "custody.rs",
    "links": "links.rs", "reporter": "custody.rs", "proofs": "proof.rs",
}
# The type an `impl` block is of: `impl Gate {`, `impl Trait for Type {`.
IMPL = re.compile(r"^impl(?:<[^>]*>)?\s+(?:[\w:<>']+\s+for\s+)?(\w+)", re.M)
CALL = re.compile(
    r"(?:(\bself\s*\.\s*)((?:[a-z_]+(?:\(\))?\s*\.\s*)*)|(\bSelf::|\b[A-Z]\w*::)|(?<![\w.:])(?:super::\w+::)?)(\w+)\("
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
            r"^(\s*)(?:pub(?:\([a-z: ]+\))? )?(?:async )?fn (\w+)\s*(?:<[^>]*>)?\(", s, re.M
        ):
            if m.group(2) in ACCESSORS:
                continue
            start = s.index("{", m.end())
            # A method (in an `impl`, indented, of the type it names) or a
            # free function.
            method = m.group(1).strip("\n") != ""
            impls = IMPL.findall(s, 0, m.start()) if method else []
            fns.setdefault(m.group(2), []).append(
                (rel, s[start : body_end(s, start) + 1], method, impls[-1] if impls else None)
            )
    return fns


def resolve(fns, name, fields, caller, method, on=None):
    """The definition a call of `name` reaches: through `fields` (the
    fields the call goes through, last one first), from `caller`'s file;
    a method for a call on `self` or a type (`on`: of that type's impl),
    else a free function."""
    found = [
        (rel, body)
        for rel, body, m, owner in fns.get(name, [])
        if m == method and on in (None, owner)
    ]
    for field in reversed([f.strip().rstrip("()") for f in fields.split(".") if f.strip()]):
        if field in FIELDS:
            place = FIELDS[field]
            for rel, body in found:
                if rel == place or rel.startswith(place + "/"):
                    return rel, body
            break
    for rel, body in found:
        if rel == caller:
            return rel, body
    return found[0]


def walk(tree, entry):
    fns = functions(tree)
    seen, path = set(), []

    def visit(name, fields="", caller=None, method=True, on=None):
        rel, body = resolve(fns, name, fields, caller, method, on)
        path.append(rel)
        if (rel, name) in seen:
            return
        seen.add((rel, name))
        for m in CALL.finditer(body):
            called, through = m.group(4), m.group(2) or ""
            if BACKENDS & {f.strip().rstrip("()") for f in through.split(".")}:
                continue  # a call on the store, the records or the ledger
            # A bare call (`take(…)`) reaches a free function alone; a call
            # on `self`, `Self::` or a type (`Intake::of(…)`) a method alone.
            method = bool(m.group(1) or m.group(3))
            # `Intake::of(…)` reaches `of` in `impl Intake` alone.
            on = m.group(3)[:-2] if m.group(3) and m.group(3) != "Self::" else None
            if not any(d[2] == method and on in (None, d[3]) for d in fns.get(called, [])):
                continue
            if (called, through) != (name, ""):
                visit(called, through, rel, method, on)
                path.append(rel)

    visit(entry)
    steps = [p for i, p in enumerate(path) if i == 0 or path[i - 1] != p]
    hops = sum(1 for a, b in zip(steps, steps[1:]) if a != b) // 2
    comps = {COMPONENTS.get(p.split("/")[0], "Sluice") for p in set(path)}
    if "Sluice" in comps or not os.path.isdir(os.path.join(tree, "shared/src/service/uploads")):
        comps = {"Sluice"}
    return len(seen), len(set(path)), hops, len(steps) - len(set(steps)), sorted(comps)


def main():
    trees = sys.argv[1:]
    if not trees:
        # This tree, as docs/ARCHITECTURE.md holds it.
        print("| flow | functions | files | hops | returns | components |")
        print("|---|---|---|---|---|---|")
        for label, entry in FLOWS.items():
            n, files, hops, returns, comps = walk(".", entry)
            print(f"| {label} | {n} | {files} | {hops} | {returns} | {', '.join(comps)} |")
        return
    print("| flow | tree | functions | files | hops | returns | components |")
    print("|---|---|---|---|---|---|---|")
    for label, entry in FLOWS.items():
        for tree in trees:
            n, files, hops, returns, comps = walk(tree, entry)
            print(f"| {label} | {tree} | {n} | {files} | {hops} | {returns} | {', '.join(comps)} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Validate one `mfs ... --format json` document against its JSON schema.

  json-validate.py SCHEMA_DIR [EXPECTED]   the document on stdin

The schema is SCHEMA_DIR/<array>.json, <array> being the document's one key
besides "__header" (Documentation/json-output.md); EXPECTED, when given,
is the array name the document must have. Prints each violation as
"<array>: <path>: <message>" and exits 1 when there is one, 2 when the
input is not a JSON document of that shape.
"""
import json
import os
import sys

import jsonschema


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    try:
        doc = json.load(sys.stdin)
    except json.JSONDecodeError as e:
        print("not JSON: %s" % e)
        return 2
    names = [k for k in doc if k != "__header"] if isinstance(doc, dict) else []
    if len(names) != 1:
        print("expected one array besides __header, found %r" % names)
        return 2
    name = names[0]
    if len(sys.argv) == 3 and name != sys.argv[2]:
        print("expected array %s, found %s" % (sys.argv[2], name))
        return 2
    path = os.path.join(sys.argv[1], name + ".json")
    try:
        with open(path) as f:
            schema = json.load(f)
    except OSError as e:
        print("%s: no schema: %s" % (name, e))
        return 2
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errors:
        where = "/".join(str(p) for p in e.absolute_path) or "(document)"
        print("%s: %s: %s" % (name, where, e.message))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

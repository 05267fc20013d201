"""Verifies a sluice receipt with joserfc, an independent JOSE library, from
the JWKS alone: prints {"kid": ..., "claims": {...}} and exits 0, or prints
why it does not verify and exits 1.

    python verify_receipt.py JWKS_FILE RECEIPT
"""

import json
import sys

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet


def main() -> int:
    with open(sys.argv[1]) as f:
        keys = KeySet.import_key_set(json.load(f))
    receipt = sys.argv[2]
    try:
        obj = jws.deserialize_compact(receipt, keys, algorithms=["ES256"])
    except (JoseError, ValueError) as e:
        print(f"does not verify: {type(e).__name__}: {e}")
        return 1
    print(json.dumps({"kid": obj.protected.get("kid"), "claims": json.loads(obj.payload)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

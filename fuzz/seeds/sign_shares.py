#!/usr/bin/env python3
"""Writes seeds/shares.json: a share store signed with the fuzz targets' share-key (bytes 0..31),
the way backend/src/access/shares/store.rs signs records, and prints the active link's secret.
The http_auth target loads it as its server's store; state_files starts from it."""
import base64, hashlib, hmac, json, os

KEY = bytes(range(32))
RECORDS = [
    dict(id="fuzzseedfuzzseedfuzz00", label=None, show_users=False,
         created_ms=1_700_000_000_000, expires_ms=4_102_444_800_000, host=None),
    dict(id="fuzzseedfuzzseedfuzz01", label="team", show_users=True,
         created_ms=1_700_000_000_000, expires_ms=1_700_000_060_000, host="gpu1:7575"),
]

def mac(domain, data):
    return hmac.new(KEY, domain + data, hashlib.sha256).digest()

shares = []
for r in RECORDS:
    # The signed part: fixed field order, `label` always present, `host` only when set.
    signed = {"v": 1, "id": r["id"], "label": r["label"], "show_users": r["show_users"],
              "created_ms": r["created_ms"], "expires_ms": r["expires_ms"]}
    if r["host"] is not None:
        signed["host"] = r["host"]
    body = json.dumps(signed, separators=(",", ":")).encode()
    rec = {k: v for k, v in r.items() if v is not None}
    rec["sig"] = mac(b"vramio share record\0", body).hex()
    shares.append(rec)

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shares.json")
with open(out, "w") as f:
    json.dump({"version": 1, "shares": shares}, f, indent=2)
    f.write("\n")
secret = base64.urlsafe_b64encode(mac(b"vramio share secret\0", RECORDS[0]["id"].encode()))
print(secret.rstrip(b"=").decode())

"""A negotiate hook for the benchmarks: every call is allowed, as fast as plain Python answers (standard library)."""
import json
import sys

for line in sys.stdin:
    sys.stdout.write('{"id": %s, "valid": true}\n' % json.dumps(json.loads(line)["id"]))
    sys.stdout.flush()

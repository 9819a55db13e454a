#!/usr/bin/env python3
"""Benchmark (not a test): what a private_key_jwt client assertion costs, signed with Python integers.

Medians of N runs each: loading a key file (a P-256 one checks its public key: one scalar multiplication),
an ES256 and an RS256 (2048-bit) signature, a whole client assertion.  One assertion is made per token
request (at most a few an hour per server), so the target is only that none costs more than a few
milliseconds on a laptop: far below the token request's own round trip.

    python tests/bench/bench_jose.py [--runs N]
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
import ocx_proxy as op  # noqa: E402

KEYS = os.path.join(ROOT, "tests", "fixtures", "keys")
TARGET_MS = 20.0


def median_ms(action, runs):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    ec = op.read_signing_key(os.path.join(KEYS, "ec_p256_pkcs8.pem"))
    rsa = op.read_signing_key(os.path.join(KEYS, "rsa2048_pkcs8.pem"))
    rows = [
        ("load a P-256 key file (PKCS #8, public key checked)",
         lambda: op.read_signing_key(os.path.join(KEYS, "ec_p256_pkcs8.pem"))),
        ("load an RSA 2048 key file (PKCS #8)", lambda: op.read_signing_key(os.path.join(KEYS, "rsa2048_pkcs8.pem"))),
        ("ES256 signature (P-256, hedged RFC 6979 nonce)", lambda: ec.sign(b"x" * 200)),
        ("RS256 signature (2048 bits, blinded, checked)", lambda: rsa.sign(b"x" * 200)),
        ("client assertion, ES256", lambda: op.client_assertion(ec, "ci-bot", "https://as.example.com")),
        ("client assertion, RS256", lambda: op.client_assertion(rsa, "ci-bot", "https://as.example.com")),
    ]
    print("JOSE (Python %s, %d runs each; target: each under %g ms)" % (sys.version.split()[0], runs, TARGET_MS))
    missed = 0
    for label, action in rows:
        ms = median_ms(action, runs)
        missed += ms > TARGET_MS
        print("  %-55s %8.2f ms%s" % (label, ms, "  (over target)" if ms > TARGET_MS else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

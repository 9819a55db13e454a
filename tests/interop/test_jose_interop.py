"""Our ES256 and RS256 signatures and client assertions, checked by libraries others wrote.

The `cryptography` package (OpenSSL inside) makes fresh keys at every run, in each form ocx_proxy.py reads (PKCS #8,
SEC 1 and PKCS #1; PEM and DER); ocx_proxy.py loads them and signs, and `cryptography` verifies the signatures.
PyJWT decodes our private_key_jwt client assertions as an authorization server would (signature, aud, exp, iat).
Both come with the pinned `mcp` SDK (it requires pyjwt[crypto]), so the tier installs nothing more for this.
ocx_proxy.py itself never imports either.
"""
import importlib.util
import os
import time

import jwt
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from helpers import INTEROP_PROXY as PROXY

spec = importlib.util.spec_from_file_location("ocx_proxy_under_test", PROXY)
op = importlib.util.module_from_spec(spec)
spec.loader.exec_module(op)

PEM, DER = serialization.Encoding.PEM, serialization.Encoding.DER
PKCS8, OPENSSL = serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL
NONE = serialization.NoEncryption()
MESSAGES = [b"", b"a", b"ocx-proxy" * 100, os.urandom(64), os.urandom(1000)]
FORMS = [(PEM, PKCS8), (DER, PKCS8), (PEM, OPENSSL), (DER, OPENSSL)]   # OPENSSL: SEC 1 for EC, PKCS #1 for RSA


def serialized(key, encoding, form):
    return key.private_bytes(encoding, form, NONE)


def verify_ec(public, message, signature):
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    public.verify(der, message, ec.ECDSA(hashes.SHA256()))


@pytest.mark.parametrize("encoding, form", FORMS)
def test_es256_from_every_form_verifies_with_cryptography(encoding, form):
    for _ in range(3):
        key = ec.generate_private_key(ec.SECP256R1())
        ours = op.load_private_key(serialized(key, encoding, form))
        assert ours.alg == "ES256" and ours.d == key.private_numbers().private_value
        for message in MESSAGES:
            signature = ours.sign(message)
            verify_ec(key.public_key(), message, signature)
            with pytest.raises(InvalidSignature):
                verify_ec(key.public_key(), message + b"!", signature)


@pytest.mark.parametrize("bits", [2048, 3072, 4096])
@pytest.mark.parametrize("encoding, form", FORMS)
def test_rs256_from_every_form_is_byte_for_byte_cryptographys(bits, encoding, form):
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    ours = op.load_private_key(serialized(key, encoding, form))
    assert ours.alg == "RS256" and ours.n == key.public_key().public_numbers().n
    for message in MESSAGES:
        signature = ours.sign(message)
        assert signature == key.sign(message, padding.PKCS1v15(), hashes.SHA256())   # PKCS #1 v1.5 is deterministic
        key.public_key().verify(signature, message, padding.PKCS1v15(), hashes.SHA256())


@pytest.mark.parametrize("make", [lambda: ec.generate_private_key(ec.SECP256R1()),
                                  lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)])
def test_pyjwt_accepts_our_client_assertions_as_an_authorization_server_would(make):
    key = make()
    ours = op.load_private_key(serialized(key, PEM, PKCS8))
    assertion = op.client_assertion(ours, "ci-bot", "https://as.example.com/")
    claims = jwt.decode(assertion, key.public_key(), algorithms=[ours.alg], audience="https://as.example.com/",
                        issuer="ci-bot", options={"require": ["exp", "iat", "jti", "sub"]})
    assert claims["sub"] == "ci-bot" and 0 < claims["exp"] - time.time() <= op.JWT_ASSERTION_LIFETIME
    assert jwt.get_unverified_header(assertion) == {"alg": ours.alg, "typ": "JWT"}
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(assertion, key.public_key(), algorithms=[ours.alg], audience="https://other.example.com/")


@pytest.mark.parametrize("key, why", [
    (lambda: serialized(ec.generate_private_key(ec.SECP384R1()), PEM, PKCS8), "P-384"),
    (lambda: serialized(ec.generate_private_key(ec.SECP256K1()), PEM, OPENSSL), "a curve other than P-256"),
    (lambda: serialized(ed25519.Ed25519PrivateKey.generate(), PEM, PKCS8), "Ed25519"),
    (lambda: serialized(rsa.generate_private_key(public_exponent=65537, key_size=1024), PEM, PKCS8), "1024-bit"),
    (lambda: ec.generate_private_key(ec.SECP256R1()).private_bytes(
        PEM, PKCS8, serialization.BestAvailableEncryption(b"passphrase")), "encrypted"),
])
def test_keys_that_cannot_sign_es256_or_rs256_are_refused(key, why):
    with pytest.raises(op.KeyRefused, match=why):
        op.load_private_key(key())

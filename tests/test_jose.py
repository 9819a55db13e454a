"""The JOSE section: private keys read from PEM/DER, ES256 and RS256 signatures, JWT client assertions.

Golden vectors, none computed by the code under test:
- RFC 6979 A.2.5 (P-256, SHA-256, messages "sample" and "test"): the public key of x and the deterministic
  signatures (our signer with no hedging bytes is RFC 6979's).
- RFC 7515 A.2 (RS256: the key as a JWK and the signature, which PKCS #1 v1.5 makes deterministic) and A.3 (ES256:
  the key, and a signature made by the RFC's authors, checked by tests/fixtures/jose_check.py).
- tests/fixtures/keys/, made with OpenSSL 3.0 and never edited:
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec_p256_pkcs8.pem
    openssl ec -in ec_p256_pkcs8.pem -out ec_p256_sec1.pem
    openssl pkcs8 -topk8 -nocrypt -in ec_p256_pkcs8.pem -outform DER -out ec_p256_pkcs8.der
    openssl ec -in ec_p256_pkcs8.pem -outform DER -out ec_p256_sec1.der
    openssl pkey -in ec_p256_pkcs8.pem -pubout -out ec_p256_public.pem
    openssl pkey -in ec_p256_pkcs8.pem -aes256 -passout pass:secret -out ec_p256_encrypted.pem
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa2048_pkcs8.pem
    openssl rsa -in rsa2048_pkcs8.pem -traditional -out rsa2048_pkcs1.pem
    openssl rsa -in rsa2048_pkcs8.pem -traditional -aes128 -passout pass:secret -out rsa_legacy_encrypted.pem
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out ec_p384.pem
    openssl genpkey -algorithm ED25519 -out ed25519.pem
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out rsa1024.pem
  with the numbers `openssl ec -text`, `openssl rsa -modulus` printed for them (EC_*, RSA_N below), and two
  signatures of OPENSSL_MESSAGE: `openssl dgst -sha256 -sign rsa2048_pkcs8.pem` (RS256 is deterministic: ours
  must be the same bytes) and `openssl dgst -sha256 -sign ec_p256_pkcs8.pem` (ECDSA is not: it must verify).
The interop tier (tests/interop/test_jose_interop.py) verifies our signatures with the `cryptography` package
and PyJWT, on keys that package makes at every run.
"""
import base64
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import FIXTURES, assert_one_line_error, run_proxy

import ocx_proxy as op

sys.path.insert(0, FIXTURES)
import jose_check  # noqa: E402  (tests/fixtures: the independent verifier)

KEYS = os.path.join(FIXTURES, "keys")
SLOW_OK = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# RFC 6979 A.2.5
RFC6979_X = 0xC9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721
RFC6979_U = (0x60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6,
             0x7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299)
RFC6979_SIGNATURES = {
    b"sample": ("EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716",
                "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"),
    b"test": ("F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367",
              "019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083"),
}
# RFC 7515 A.2 and A.3: the JWS Signing Input both sign, the RSA key (JWK members), the P-256 key, the signatures.
RFC7515_INPUT = (b"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNv"
                 b"bS9pc19yb290Ijp0cnVlfQ")
RFC7515_ES256_INPUT = (b"eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxl"
                       b"LmNvbS9pc19yb290Ijp0cnVlfQ")
RFC7515_RSA = dict(
    n="ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCg"
      "NMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg6"
      "65xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWy"
      "uXpoQ",
    e="AQAB",
    d="Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97IjlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-p"
      "WJ1O0BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2Qv"
      "Xt4ehNYTCBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLhBOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuO"
      "opznQ",
    p="4BzEEOtIpmVdVEZNCqS7baC4crd0pqnRH_5IB3jw3bcxGn6QLvnEtfdUdiYrqBdss1l58BQ3KhooKeQTa9AB0Hw_Py5PJdTJNPY8cQn7ouZ2KKDc"
      "mnPGBY5t7yLc1QlQ5xHdwW1VhvKn-nXqhJTBgIPgtldC-KDV5z-y2XDwGUc",
    q="uQPEfgmVtjL0Uyyx88GZFF1fOunH3-7cepKmtH4pxhtCoHqpWmT8YAmZxaewHgHAjLYsp1ZSe7zFYHj7C6ul7TjeLQeZD_YwD66t62wDmpe_HlB-"
      "TnBA-njbglfIsRLtXlnDzQkv5dTltRJ11BKBBypeeF6689rjcJIDEz9RWdc",
    dp="BwKfV3Akq5_MFZDFZCnW-wzl-CCo83WoZvnLQwCTeDv8uzluRSnm71I3QCLdhrqE2e9YkxvuxdBfpT_PI7Yz-FOKnu1R6HsJeDCjn12Sk3vmAkt"
       "V2zb34MCdy7cpdTh_YVr7tss2u6vneTwrA86rZtu5Mbr1C1XsmvkxHQAdYo0",
    dq="h_96-mK1R_7glhsum81dZxjTnYynPbZpHziZjeeHcXYsXaaMwkOlODsWa7I9xXDoRwbKgB719rrmI2oKr6N3Do9U0ajaHF-NKJnwgjMd2w9cjz3_"
       "-kyNlxAr2v4IKhGNpmM5iIgOS1VZnOZ68m6_pbLBSp3nssTdlqvd0tIiTHU",
    qi="IYd7DHOhrWvxkwPQsRM2tOgrjbcrfvtQJipd-DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd_QJQ3ydy5cY7YIBi87w93IKLEdfnbJto"
       "OPLUW0ITrJReOgo1cq9SbsxYawBgfp_gh6A5603k2-ZQwVK0JKSHuLFkuQ3U")
RFC7515_RS256 = ("cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJd"
                 "bF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN93"
                 "83LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhW"
                 "kWywlVmtVrBp0igcN_IoypGlUPQGe77Rw")
RFC7515_EC = dict(x="f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y="x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
                  d="jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI")
RFC7515_ES256 = "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"

# OpenSSL's numbers for tests/fixtures/keys (see the module docstring).
EC_D = int("a5ebf0bc309b140f168c0376c4020c80db3ce57a3231068126d5f3eb691a36d9", 16)
EC_PUBLIC = (int("3a35309ae2151b18b6045d8225f8f3c2b08e59ec2f57c669341288cc7590236f", 16),
             int("aea68b65a8bd8d77c44dd47ae3162779335e74a7c56e952a8102d2d2910faa7d", 16))
RSA_N = int("ED634CB0845CEEBB7AECA02ACCA81C2BED8E4257D86A96591F539A94405B122CD5BCC93EE9EA4BA7428E5E50ADBCAFB97CE5E4C473"
            "606BC5CCDE30A0E27CFDBA98DFA3D1410D85BA87DAA813A5843DE0C8FE7E8417DE364695A0759F59E4C993769D1791CAE2054D8A80B"
            "F0260F2B6DE142A2DBBD46DC709DAA6E0A1DD65C6F0D7D45B169487041099E0C0B72FA73186C13EB38CE714AE7686E92FD55D2559578"
            "C24A2292216A0A4F4945E25339708981B8266951F6DF629C0BAC9045E32D5997BA61B9458C1FB82368AA77008ADFFF742D608988C551"
            "99B1E4E6253DFF285133D83E4497D1A8B3F8DD2EA166847DDB60A62CBF4086538740DE8408312B0DEAF", 16)
OPENSSL_MESSAGE = b"ocx-proxy golden message"
OPENSSL_RS256 = ("xAOMbDz0cTLFL+0B/Ebiv+Pr5rVTfCfXGMdmM2OZYL7Cq3O008HIOy6st6L+Q+BBU4KbS8GxQo2PboQ5oR2vkhtiJq8nQveEILwdhxa+"
                 "p9y9EleToKIdEDkTjuk8FrwxYDED3pItpxHxTW4ZaC1FkjHD0L3MXYwhpH7PAtQ/hV9BIIQTfIKX1dwiWN2Pu7dMYb8tvaF0rJmkqG3W"
                 "gOnK97zPJExnTJFfLgkwf2pSM9Ms6TlcXUuRC2LafMNlhvfBJS6CyFH2r5qL3C5o+uAwhuvibz6BN8lz/KsPoKOX+0tYTUjBBaOlq5ac"
                 "CPQSUshTvF2SYA9HmLg+gF2FPEm7Fw==")
OPENSSL_ES256_DER = "MEUCID4A99BvzLZIEvIxeyk8i1QcLL2mJfcfOzleaELBn1IUAiEAjAjYRya2eVllEZRbJz0XwFiFGS7Z1JTfx9xDrLKAcVI="


def jwk_int(text):
    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")


def key_file(name):
    return os.path.join(KEYS, name)


def read_key(name):
    return op.read_signing_key(key_file(name))


# -- golden vectors ---------------------------------------------------------------------------------------------

def test_rfc6979_public_key_and_deterministic_signatures():
    assert op.p256_multiply(RFC6979_X) == RFC6979_U
    key = op.EcKey(RFC6979_X)
    for message, (r, s) in RFC6979_SIGNATURES.items():
        assert key.sign(message, extra=b"").hex() == (r + s).lower()


def test_rfc7515_rs256_example_is_reproduced_byte_for_byte():
    key = op.RsaKey(*(jwk_int(RFC7515_RSA[name]) for name in ("n", "e", "d", "p", "q", "dp", "dq", "qi")))
    assert op.b64url(key.sign(RFC7515_INPUT)) == RFC7515_RS256


def test_rfc7515_es256_example_verifies_and_so_do_our_signatures_with_its_key():
    public = (jwk_int(RFC7515_EC["x"]), jwk_int(RFC7515_EC["y"]))
    assert jose_check.verify_es256(public, RFC7515_ES256_INPUT, jose_check.unb64(RFC7515_ES256))
    key = op.EcKey(jwk_int(RFC7515_EC["d"]))
    assert op.p256_multiply(key.d) == public
    signature = key.sign(RFC7515_ES256_INPUT)
    assert jose_check.verify_es256(public, RFC7515_ES256_INPUT, signature)
    assert not jose_check.verify_es256(public, RFC7515_ES256_INPUT + b"x", signature)


def test_openssl_signatures_check_the_verifier_and_our_rs256_is_openssls():
    assert jose_check.verify_es256(EC_PUBLIC, OPENSSL_MESSAGE,
                                   jose_check.der_signature_to_raw(base64.b64decode(OPENSSL_ES256_DER)))
    expected = base64.b64decode(OPENSSL_RS256)
    assert jose_check.verify_rs256((RSA_N, 65537), OPENSSL_MESSAGE, expected)
    for name in ("rsa2048_pkcs8.pem", "rsa2048_pkcs1.pem"):
        assert read_key(name).sign(OPENSSL_MESSAGE) == expected


# -- reading keys -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ec_p256_pkcs8.pem", "ec_p256_sec1.pem", "ec_p256_pkcs8.der", "ec_p256_sec1.der"])
def test_p256_keys_in_every_form_are_openssls_key(name):
    key = read_key(name)
    assert (key.alg, key.d) == ("ES256", EC_D)
    assert jose_check.verify_es256(EC_PUBLIC, b"m", key.sign(b"m"))


@pytest.mark.parametrize("name", ["rsa2048_pkcs8.pem", "rsa2048_pkcs1.pem"])
def test_rsa_keys_in_both_forms_are_openssls_key(name):
    key = read_key(name)
    assert (key.alg, key.n, key.e, key.size) == ("RS256", RSA_N, 65537, 256)


def test_a_pem_file_with_other_blocks_first_gives_its_private_key():
    with open(key_file("ec_p256_public.pem"), "rb") as f:
        public = f.read()
    with open(key_file("ec_p256_sec1.pem"), "rb") as f:
        private = f.read()
    assert op.load_private_key(b"comment line\n" + public + private).d == EC_D


@pytest.mark.parametrize("name, why", [
    ("ec_p256_encrypted.pem", "an encrypted private key"),
    ("rsa_legacy_encrypted.pem", "an encrypted private key"),
    ("ec_p384.pem", "an EC key on P-384: ES256 signs with P-256 keys only"),
    ("ed25519.pem", "an Ed25519 key: only RSA (RS256) and P-256 (ES256)"),
    ("rsa1024.pem", "a 1024-bit RSA key: RS256 needs 2048 bits or more"),
    ("ec_p256_public.pem", "no private key in it (it holds: PUBLIC KEY)"),
])
def test_keys_that_cannot_sign_are_refused_with_the_reason(name, why):
    with pytest.raises(ValueError) as info:
        read_key(name)
    assert why in str(info.value) and key_file(name) in str(info.value)


def damaged(name, change):
    with open(key_file(name), "rb") as f:
        return change(f.read())


@pytest.mark.parametrize("data, why", [
    (b"", "not a private key in PEM or DER"),
    (b"hello world\n", "not a private key in PEM or DER"),
    (damaged("ec_p256_sec1.pem", lambda d: d.split(b"-----END")[0]), "a PEM block without its END line"),
    (damaged("ec_p256_sec1.pem", lambda d: d.replace(b"MHcCAQEE", b"MHcC!QEE")), "base64 of its EC PRIVATE KEY"),
    (damaged("ec_p256_pkcs8.der", lambda d: d[:-1]), "not a private key in PEM or DER"),
    (damaged("ec_p256_pkcs8.der", lambda d: d[:40] + bytes([d[40] ^ 1]) + d[41:]), "not its private key's"),
    (damaged("ec_p256_pkcs8.der", lambda d: d[:1] + b"\x81\x77" + d[2:]), "not a private key in PEM or DER"),
])
def test_damaged_files_are_refused_and_the_refusal_quotes_nothing_of_them(data, why):
    with pytest.raises(ValueError) as info:
        op.load_private_key(data)
    message = str(info.value)
    assert why in message
    for line in data.splitlines():
        if len(line) > 12:
            assert line.decode("latin-1") not in message


def test_a_public_key_that_does_not_match_the_private_one_is_refused():
    with open(key_file("ec_p256_pkcs8.der"), "rb") as f:
        der = bytearray(f.read())
    der[-1] ^= 1   # the last byte of the public point
    with pytest.raises(ValueError, match="not its private key's"):
        op.load_private_key(bytes(der))


def test_an_rsa_key_whose_parts_disagree_is_refused():
    parts = [jwk_int(RFC7515_RSA[name]) for name in ("n", "e", "d", "p", "q", "dp", "dq", "qi")]
    parts[5] += 2   # dp
    with pytest.raises(ValueError, match="parts do not agree"):
        op.RsaKey(*parts)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_a_key_or_a_value_error(data):
    try:
        op.load_private_key(data)
    except ValueError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 120), st.integers(0, 255))
def test_any_byte_of_a_der_key_changed_gives_the_key_or_a_value_error(position, value):
    with open(key_file("ec_p256_pkcs8.der"), "rb") as f:
        der = bytearray(f.read())
    der[position] = value
    try:
        op.load_private_key(bytes(der))
    except ValueError:
        pass


# -- key files --------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "symlink") or op.IS_WINDOWS, reason="symbolic links need privileges on Windows")
def test_a_key_file_that_is_a_symbolic_link_is_refused(tmp_path):
    link = tmp_path / "key.pem"
    os.symlink(key_file("ec_p256_pkcs8.pem"), str(link))
    with pytest.raises(ValueError, match="is a symbolic link; give the file itself"):
        op.read_signing_key(str(link))


def test_a_key_file_too_large_a_directory_or_missing_is_refused(tmp_path):
    big = tmp_path / "big.pem"
    big.write_bytes(b"-" * (op.JOSE_MAX_FILE_BYTES + 1))
    with pytest.raises(ValueError, match="larger than 65536 bytes"):
        op.read_signing_key(str(big))
    with pytest.raises(ValueError, match="not a regular file|cannot read"):
        op.read_signing_key(str(tmp_path))
    with pytest.raises(ValueError, match="cannot read key file"):
        op.read_signing_key(str(tmp_path / "missing.pem"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "key.pem"
    os.mkfifo(str(fifo))
    with pytest.raises(ValueError, match="not a regular file"):
        op.read_signing_key(str(fifo))


def bad_key_file(tmp_path, kind):
    """A key file the relay must refuse, and what the refusal says."""
    path = tmp_path / "key.pem"
    if kind == "damaged":
        path.write_bytes(b"-----BEGIN PRIVATE KEY-----\nnot base64 at all!\n-----END PRIVATE KEY-----\n")
        return path, "key file %s: the base64 of its PRIVATE KEY block is damaged" % path
    if kind == "link":
        os.symlink(key_file("ec_p256_pkcs8.pem"), str(path))
        return path, "key file %s is a symbolic link; give the file itself" % path
    if kind == "large":
        with open(key_file("ec_p256_pkcs8.pem"), "rb") as f:
            path.write_bytes(f.read() * 400)
        return path, "key file %s is larger than 65536 bytes" % path
    # POSIX opens a directory and finds it is no file; Windows refuses to open it
    return tmp_path, "key file %s is not a regular file" % tmp_path if not op.IS_WINDOWS else "cannot read key file"


@pytest.mark.parametrize("flag", ["--oauth-client-key", "--oauth-idp-client-key"])
@pytest.mark.parametrize("kind", ["damaged", "large", "directory", pytest.param("link", marks=pytest.mark.skipif(
    op.IS_WINDOWS or not hasattr(os, "symlink"), reason="symbolic links need privileges on Windows"))])
def test_the_relay_refuses_a_bad_key_file_at_start_with_one_line_and_status_2(tmp_path, flag, kind):
    path, why = bad_key_file(tmp_path, kind)
    client = ["--oauth-client-credentials", "--oauth-client-id", "ci"]
    if flag == "--oauth-idp-client-key":
        client = ["--oauth-client-id", "ci", "--oauth-idp-issuer", "https://idp.example", "--oauth-idp-client-id", "x"]
    result = run_proxy("streamable-http", "--url", "http://127.0.0.1:9/mcp", *client, flag, str(path))
    text = assert_one_line_error(result, 2)
    assert "%s: %s" % (flag, why) in text, text
    assert "not base64" not in text and "BEGIN" not in text


# -- signatures and assertions ----------------------------------------------------------------------------------

@SLOW_OK
@given(st.integers(1, op.P256_N - 1), st.binary(max_size=200))
def test_es256_signatures_verify_and_only_for_their_message(d, message):
    key = op.EcKey(d)
    public = op.p256_multiply(d)
    assert public == jose_check.multiply(d, jose_check.G)
    signature = key.sign(message)
    assert jose_check.verify_es256(public, message, signature)
    assert not jose_check.verify_es256(public, message + b"\0", signature)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, op.P256_N - 1), st.binary(max_size=50))
def test_es256_hedged_nonces_differ_and_unhedged_ones_repeat(d, message):
    key = op.EcKey(d)
    assert key.sign(message) != key.sign(message)
    assert key.sign(message, extra=b"") == key.sign(message, extra=b"")


def test_the_ladder_at_the_edges_of_the_scalar_range():
    minus_g = (op.P256_G[0], op.P256_P - op.P256_G[1])
    assert op.p256_multiply(op.P256_N - 1) == minus_g
    assert op.p256_multiply(op.P256_N) is None
    assert op.p256_multiply(1) == op.P256_G
    assert op.p256_multiply(2) == jose_check.add(jose_check.G, jose_check.G)


@SLOW_OK
@given(st.binary(max_size=300))
def test_rs256_signatures_verify(message):
    key = read_key("rsa2048_pkcs8.pem")
    assert jose_check.verify_rs256((RSA_N, 65537), message, key.sign(message))


@pytest.mark.parametrize("name, public", [("ec_p256_sec1.pem", EC_PUBLIC), ("rsa2048_pkcs1.pem", (RSA_N, 65537))])
def test_a_client_assertion_is_short_lived_unique_and_signed(name, public):
    key = read_key(name)
    header, claims = jose_check.verify_jwt(op.client_assertion(key, "ci-bot", "https://as.example/", now=1000),
                                           public)
    assert header == {"typ": "JWT", "alg": key.alg}
    jti = claims.pop("jti")
    assert len(jti) >= 32
    assert claims == {"iss": "ci-bot", "sub": "ci-bot", "aud": "https://as.example/", "iat": 1000,
                      "exp": 1000 + op.JWT_ASSERTION_LIFETIME}
    assert op.JWT_ASSERTION_LIFETIME <= 300
    jtis = {op.jwt_claims(op.client_assertion(key, "ci-bot", "a"))["jti"] for _ in range(50)}
    assert len(jtis) == 50


@pytest.mark.parametrize("token", [None, "", "a.b", "a.b.c.d", "x.%%%.y", "x.bnVsbA.y", "x.WzFd.y", "x.e30.y.z"])
def test_jwt_claims_of_what_is_no_jwt_is_none(token):
    assert op.jwt_claims(token) is None


def test_jwt_claims_reads_the_payload():
    assert op.jwt_claims("x." + op.b64url(b'{"exp": 5, "aud": "c"}') + ".y") == {"exp": 5, "aud": "c"}


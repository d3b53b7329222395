"""Test certificates for the TLS listeners, made with `cryptography` (no
openssl command, no pytest dependency).

`make_tls(dir)` writes, as PEM files in `dir`:

    ca.pem                  the test CA (self-signed; the truststore of both sides)
    broker.pem              the broker's keystore: its PKCS#8 private key
                            ("-----BEGIN PRIVATE KEY-----", unencrypted) followed
                            by its certificate (SAN IP 127.0.0.1 and DNS localhost,
                            serverAuth, signed by the CA)
    broker-key.pem          the same key alone, and
    broker-cert.pem         the same certificate alone (for the inline settings
                            ssl.keystore.key / ssl.keystore.certificate.chain)
    client-key.pem          a client's key and
    client-cert.pem         its certificate (CN=client, O=strata-test, clientAuth,
                            signed by the CA)
    expired-client-key.pem  a second client's key and
    expired-client-cert.pem its certificate, same subject, signed by the CA,
                            whose validity ended a day ago
    rogue-client-key.pem    a third client's key and
    rogue-client-cert.pem   its certificate, same subject, signed by a CA
                            nobody trusts

All keys are EC P-256 (fast to make), all signatures ECDSA with SHA-256.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class TlsFiles:
    dir: Path
    ca: Path
    broker: Path            # key + certificate, one file (ssl.keystore.location)
    broker_key: Path
    broker_cert: Path
    client_key: Path
    client_cert: Path
    expired_key: Path
    expired_cert: Path
    rogue_key: Path
    rogue_cert: Path

    @property
    def broker_key_pem(self) -> str:
        return self.broker_key.read_text()

    @property
    def broker_cert_pem(self) -> str:
        return self.broker_cert.read_text()


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(cn: str, org: str = "strata-test") -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str, now: dt.datetime):
    key = _key()
    name = _name(cn)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(ski, critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def _leaf(ca_key, ca_cert: x509.Certificate, subject: x509.Name, eku, not_before: dt.datetime,
          not_after: dt.datetime, san: list | None = None):
    key = _key()
    b = (x509.CertificateBuilder()
         .subject_name(subject).issuer_name(ca_cert.subject)
         .public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(not_before)
         .not_valid_after(not_after)
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                      key_encipherment=False, data_encipherment=False,
                                      key_agreement=False, key_cert_sign=False, crl_sign=False,
                                      encipher_only=False, decipher_only=False), critical=True)
         .add_extension(x509.ExtendedKeyUsage([eku]), critical=False)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
         .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                        critical=False))
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return key, b.sign(ca_key, hashes.SHA256())


def make_tls(directory: str | Path) -> TlsFiles:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)
    valid = (now - dt.timedelta(hours=1), now + dt.timedelta(days=30))

    ca_key, ca_cert = _ca("strata-test-ca", now)
    broker_key, broker_cert = _leaf(
        ca_key, ca_cert, _name("localhost"), ExtendedKeyUsageOID.SERVER_AUTH, *valid,
        san=[x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    client_key, client_cert = _leaf(ca_key, ca_cert, _name("client"), ExtendedKeyUsageOID.CLIENT_AUTH, *valid)
    expired_key, expired_cert = _leaf(ca_key, ca_cert, _name("client"), ExtendedKeyUsageOID.CLIENT_AUTH,
                                      now - dt.timedelta(days=30), now - dt.timedelta(days=1))
    rogue_ca_key, rogue_ca_cert = _ca("strata-test-ca", now)   # same name, another key
    rogue_key, rogue_cert = _leaf(rogue_ca_key, rogue_ca_cert, _name("client"),
                                  ExtendedKeyUsageOID.CLIENT_AUTH, *valid)

    files = TlsFiles(
        dir=d, ca=d / "ca.pem", broker=d / "broker.pem",
        broker_key=d / "broker-key.pem", broker_cert=d / "broker-cert.pem",
        client_key=d / "client-key.pem", client_cert=d / "client-cert.pem",
        expired_key=d / "expired-client-key.pem", expired_cert=d / "expired-client-cert.pem",
        rogue_key=d / "rogue-client-key.pem", rogue_cert=d / "rogue-client-cert.pem")
    files.ca.write_bytes(_cert_pem(ca_cert))
    files.broker.write_bytes(_key_pem(broker_key) + _cert_pem(broker_cert))
    files.broker_key.write_bytes(_key_pem(broker_key))
    files.broker_cert.write_bytes(_cert_pem(broker_cert))
    for key_path, cert_path, key, cert in (
            (files.client_key, files.client_cert, client_key, client_cert),
            (files.expired_key, files.expired_cert, expired_key, expired_cert),
            (files.rogue_key, files.rogue_cert, rogue_key, rogue_cert)):
        key_path.write_bytes(_key_pem(key))
        cert_path.write_bytes(_cert_pem(cert))
    for p in (files.broker, files.broker_key, files.client_key, files.expired_key, files.rogue_key):
        p.chmod(0o600)
    return files

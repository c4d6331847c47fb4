#!/usr/bin/env python3
"""A real SMTP server (aiosmtpd) for the mail tests.

usage: smtp_server.py PORT MAILDIR [--tls] [--auth USER:PASSWORD]

Stores every accepted message as a file in MAILDIR. With --tls it offers
STARTTLS with a fresh self-signed certificate and requires it; with --auth it
requires AUTH PLAIN/LOGIN with those credentials. Prints "ready" once
listening.
"""
import argparse, asyncio, datetime, os, signal, ssl, sys, tempfile, uuid

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Store:
    def __init__(self, directory):
        self.directory = directory

    async def handle_DATA(self, server, session, envelope):
        name = os.path.join(self.directory, uuid.uuid4().hex + ".eml")
        with open(name + ".tmp", "wb") as handle:
            handle.write(b"X-Envelope-To: " + ",".join(envelope.rcpt_tos).encode() + b"\r\n")
            handle.write(envelope.original_content)
        os.rename(name + ".tmp", name)
        return "250 Message accepted"


def self_signed_context():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    folder = tempfile.mkdtemp()
    cert_path, key_path = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    with open(cert_path, "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("maildir")
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--auth")
    args = parser.parse_args()
    os.makedirs(args.maildir, exist_ok=True)
    options = {}
    if args.tls:
        options.update(tls_context=self_signed_context(), require_starttls=True)
    if args.auth:
        user, password = args.auth.split(":", 1)

        def authenticator(server, session, envelope, mechanism, data):
            ok = isinstance(data, LoginPassword) and data.login.decode() == user and data.password.decode() == password
            # handled=False: let the server answer 535 itself on failure.
            return AuthResult(success=ok, handled=False)

        options.update(authenticator=authenticator, auth_required=True, auth_require_tls=args.tls)
    controller = Controller(Store(args.maildir), hostname="127.0.0.1", port=args.port, **options)
    controller.start()
    # The parent may pass SIGTERM down ignored or blocked; stop on it explicitly.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print("ready", flush=True)
    try:
        asyncio.new_event_loop().run_forever()
    finally:
        controller.stop()


if __name__ == "__main__":
    sys.exit(main())

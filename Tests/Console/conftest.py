"""The real `vroomx` binary (demo carrier, SQLite) with a real SMTP server
(aiosmtpd) receiving its sign-in codes, and Debian's Chromium driven by
Playwright. Screenshots of each page go to VROOMX_SCREENSHOTS (default
.build/console-screenshots)."""
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from email import message_from_bytes
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("VROOMX_BINARY", ROOT / ".build" / "debug" / "vroomx"))
SHOTS = Path(os.environ.get("VROOMX_SCREENSHOTS", ROOT / ".build" / "console-screenshots"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mailbox:
    """Every message the server sends, by recipient."""

    def __init__(self):
        self.messages = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        message = message_from_bytes(envelope.content)
        body = message.get_payload(decode=True) if not message.is_multipart() else message.get_payload(0).get_payload(decode=True)
        with self.lock:
            for recipient in envelope.rcpt_tos:
                self.messages.append((recipient.lower(), body.decode("utf-8", "replace")))
        return "250 OK"

    def count(self, email):
        """Sign-in codes mailed to an address so far."""
        return len(self.codes(email))

    def codes(self, email):
        with self.lock:
            bodies = [body for to, body in self.messages if to == email.lower()]
        return [found.group(1) for found in (re.search(r"sign-in code is (\d{6})", body) for body in bodies) if found]

    def code(self, email, after=0, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            codes = self.codes(email)
            if len(codes) > after:
                return codes[-1]
            time.sleep(0.05)
        raise AssertionError(f"no sign-in code for {email}")

    def message(self, email, containing, timeout=10):
        """The newest message to an address whose text contains the words."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                found = [body for to, body in self.messages if to == email.lower() and containing in body]
            if found:
                return found[-1]
            time.sleep(0.05)
        raise AssertionError(f"no message to {email} containing {containing!r}")


class Server:
    def __init__(self, port, mailbox, data):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.mailbox = mailbox
        self.data = data
        self.tokens = {}

    def api(self, method, path, body=None, token=None, headers=None, raw=None):
        request = urllib.request.Request(self.base + path, method=method,
                                         data=raw if raw is not None else (json.dumps(body).encode() if body is not None else None))
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", "Bearer " + token)
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, (json.loads(text) if text else None)

    def api_sign_in(self, email):
        """A session through the API, as an app signs in (once per email:
        codes are rate-limited per email)."""
        if email in self.tokens:
            return self.tokens[email]
        before = self.mailbox.count(email)
        status, _ = self.api("POST", "/v1/auth/otp", {"email": email})
        # Codes are rate-limited (per email and per client): late in the suite, wait the limit out.
        for _ in range(4):
            if status != 429:
                break
            time.sleep(20)
            status, _ = self.api("POST", "/v1/auth/otp", {"email": email})
        assert status == 202, status
        code = self.mailbox.code(email, after=before)
        status, session = self.api("POST", "/v1/auth/verify", {"email": email, "code": code})
        assert status == 200, session
        self.tokens[email] = session["access_token"]
        return session["access_token"]


@pytest.fixture(scope="session")
def server():
    yield from running_server()


def running_server():
    """A `vroomx serve --demo` of its own (its own database, so its own
    sign-in limits) with an SMTP server receiving its mail."""
    mailbox = Mailbox()
    smtp = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    data = Path(tempfile.mkdtemp(prefix="vroomx-console-"))
    port = free_port()
    environment = dict(os.environ, VROOMX_DATA_DIR=str(data), VROOMX_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}",
                       VROOMX_MAIL_FROM="dispatch@vroomx.test", VROOMX_LOG_LEVEL="info")
    log = open(data / "server.log", "w")
    process = subprocess.Popen([str(BINARY), "serve", "--demo", "--port", str(port)], env=environment, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            break
        except Exception:
            if process.poll() is not None:
                raise AssertionError((data / "server.log").read_text())
            time.sleep(0.2)
    yield Server(port, mailbox, data)
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    smtp.stop()
    log.close()
    # Every key a page's template asked for was one the page has (a typo renders blank otherwise).
    unknown = [line for line in (data / "server.log").read_text().splitlines() if "template asks for an unknown key" in line]
    assert not unknown, "\n".join(unknown)


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def dispatcher_state(server, browser, tmp_path_factory):
    """One sign-in for the run (codes are rate-limited per email); each
    test's page starts from its cookies."""
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, server)
    path = tmp_path_factory.mktemp("state") / "dispatcher.json"
    context.storage_state(path=str(path))
    context.close()
    return str(path)


@pytest.fixture
def page(browser, dispatcher_state):
    context = browser.new_context(viewport={"width": 1280, "height": 860}, storage_state=dispatcher_state)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def anonymous_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    yield page
    context.close()


DISPATCHER = "dispatch@demo-carrier.example"
DRIVER = "alex@demo-carrier.example"


def sign_in(page, server, email=DISPATCHER, expect_board=True):
    page.goto(server.base + "/sign-in")
    before = server.mailbox.count(email)
    page.fill("#email", email)
    page.click("button[type=submit]")
    page.wait_for_selector("#code")
    page.fill("#code", server.mailbox.code(email, after=before))
    page.click("button[type=submit]")
    if expect_board:
        page.wait_for_url("**/board")


def wait_until(page, expression, timeout=15):
    """Waits until a script expression is true. Not `page.wait_for_function`: polling compiles the
    predicate in the page, which the console's Content-Security-Policy (no 'unsafe-eval') refuses."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"not true within {timeout} s: {expression}"
        time.sleep(0.1)


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

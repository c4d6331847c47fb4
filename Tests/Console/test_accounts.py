"""A person who works for two carriers has an account at each and chooses
one at sign-in; neither carrier learns of the other."""
import os
import subprocess

import pytest

from conftest import BINARY, running_server, shot, sign_in

OWNER = "owner@two-carriers.example"


@pytest.fixture(scope="module")
def server():
    """A server of its own: the shared one's sign-in codes per client
    address (10 in 15 minutes) are spent by the other tests."""
    yield from running_server()


def create_carrier(server, name, email):
    environment = dict(os.environ, VROOMX_DATA_DIR=str(server.data))
    result = subprocess.run([str(BINARY), "tenant", "create", "--name", name, "--dispatcher-email", email],
                            env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_dispatcher_of_two_carriers_chooses_one_at_sign_in(anonymous_page, server):
    create_carrier(server, "Northline Haulers", OWNER)
    create_carrier(server, "Southgate Auto Transport", OWNER)
    page = anonymous_page
    sign_in(page, server, email=OWNER, expect_board=False)

    page.wait_for_selector("form.carriers")
    assert "Choose a carrier" in page.inner_text("h1")
    names = page.locator("form.carriers button").all_inner_texts()
    assert names == ["Northline Haulers", "Southgate Auto Transport"]
    shot(page, "sign-in-choose-carrier")

    page.click("form.carriers button:has-text('Southgate Auto Transport')")
    page.wait_for_url("**/board")
    assert "Southgate Auto Transport" in page.content()
    assert "Northline Haulers" not in page.content()

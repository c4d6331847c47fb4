"""The trips list of a carrier with more open trips than a page holds."""
import pytest
from playwright.sync_api import expect

from conftest import running_server, shot, sign_in
from test_accounts import create_carrier


@pytest.fixture(scope="module")
def server():
    """A server of its own: the shared one's sign-in codes per client
    address (10 in 15 minutes) are spent by the other tests."""
    yield from running_server()


def test_open_trips_are_paged_and_each_pager_keeps_the_other_lists_page(anonymous_page, server):
    create_carrier(server, "Long Haul Fleet", "desk@longhaul.example")
    page = anonymous_page
    sign_in(page, server, email="desk@longhaul.example")
    # The New trip form, posted 55 times with the session's CSRF token (a code a sign-in: no second sign-in for the API).
    page.goto(server.base + "/trips/new")
    csrf = page.locator("input[name=_csrf]").first.get_attribute("value")
    for index in range(55):
        created = page.request.post(server.base + "/trips", form={
            "_csrf": csrf, "number": f"LH-{index:03d}", "driver_id": "", "origin": "Joliet, IL", "destination": "Gary, IN",
            "start_date": f"2026-12-{index % 28 + 1:02d}", "end_date": "", "revenue": "900", "driver_pay": "", "miles": "40"},
            max_redirects=0)
        assert created.status == 303, created.text()
    page.goto(server.base + "/trips")
    pager = page.locator("nav[aria-label='Open trips pages']")
    expect(pager).to_contain_text("1–50 of 55")
    expect(page.locator("#open-trips tbody tr")).to_have_count(50)
    # Soonest start first: the two trips starting on the 1st lead.
    expect(page.locator("#open-trips tbody tr").first).to_contain_text("LH-000")
    shot(page, "trips-open-paged")
    pager.locator("a[rel=next]").click()
    page.wait_for_url("**/trips?open_page=2")
    expect(page.locator("#open-trips tbody tr")).to_have_count(5)
    expect(page.locator("nav[aria-label='Open trips pages']")).to_contain_text("51–55 of 55")

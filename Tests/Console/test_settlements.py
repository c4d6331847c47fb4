"""Paying a driver from the office: Alex's week with the finished run
T-1001, an advance entered by dispatch, approved (the statement mailed to
Alex), marked paid; the driver's Earnings show the same figures."""
import csv
import datetime
import io

from playwright.sync_api import expect

from conftest import DRIVER, shot


def test_a_week_is_approved_mailed_and_paid(page, server):
    token = server.api_sign_in(DRIVER)
    # T-1001 was completed when the demo was made: its pay is this week's.
    week = datetime.date.today().isoformat()

    page.goto(server.base + "/pay")
    row = page.locator("#settlements tbody tr", has_text="Alex Rivera")
    expect(row).to_have_count(1)
    expect(row.locator(".badge")).to_have_text("Open")
    # Every driver is listed, also one with nothing this week, to reach their page.
    expect(page.locator("#settlements tbody tr", has_text="Jordan")).to_have_count(1)
    shot(page, "pay-week")
    row.locator("a").click()
    expect(page.locator("#lines")).to_contain_text("T-1001")
    pay_before = page.locator("#net").inner_text()

    # A $150 advance given on the road comes off the week.
    page.select_option("#kind", "advance")
    page.fill("#description", "Cash advance, Mobile AL")
    page.fill("#amount", "150")
    page.fill("#item_date", week)
    page.click("#entries button:has-text('Add')")
    expect(page.locator(".notice")).to_contain_text("Added")
    expect(page.locator("#lines")).to_contain_text("Cash advance, Mobile AL")
    expect(page.locator("#entries tbody tr", has_text="Cash advance, Mobile AL")).to_have_count(1)
    dollars = lambda text: float(text.replace("$", "").replace(",", "").replace("−", "-"))
    assert round(dollars(page.locator("#net").inner_text()), 2) == round(dollars(pay_before) - 150, 2)
    # A bad amount is refused beside its field, nothing saved.
    page.fill("#amount", "-5")
    page.click("#entries button:has-text('Add')")
    expect(page.locator("#amount + .field-error, #amount ~ .field-error")).to_have_count(1)

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Approve')")
    expect(page.locator(".notice")).to_contain_text("Approved.")
    expect(page.locator("h1 .badge")).to_have_text("Approved")
    mail = server.mailbox.message(DRIVER, "Your settlement for", timeout=30)
    assert "Net pay:" in mail, mail

    page.fill("#reference", "CHK 3051")
    page.click("button:has-text('Mark paid')")
    expect(page.locator(".notice")).to_have_text("Marked paid.")
    expect(page.locator("h1 .badge")).to_have_text("Paid")
    expect(page.locator(".page-head")).to_contain_text("CHK 3051")
    shot(page, "pay-driver-paid")
    net = page.locator("#net").inner_text()

    status, earnings = server.api("GET", "/v1/earnings", token=token)
    assert status == 200, earnings
    paid = next(s for s in earnings["settlements"] + [earnings["current"]] if s.get("paid_reference") == "CHK 3051")
    assert abs(paid["net_cents"] / 100 - dollars(net)) < 0.001, (paid, net)
    # The bookkeeper's file: a deduction is a plain negative number a spreadsheet adds up.
    rows = list(csv.reader(io.StringIO(page.request.get(server.base + f"/pay.csv?date={week}").text())))
    advance = next(row for row in rows if row[5] == "Cash advance, Mobile AL")
    assert advance[6] == "-150.00", advance
    statement = page.request.get(server.base + page.locator("a:has-text('Statement PDF')").get_attribute("href"))
    assert statement.status == 200 and statement.body().startswith(b"%PDF")


def test_the_overview_and_a_drivers_week_name_its_state_alike(page, server):
    for driver in ["Sam Chen", "Jordan Blake"]:
        page.goto(server.base + "/pay")
        row = page.locator("#settlements tbody tr", has_text=driver)
        state = row.locator(".badge").inner_text()
        assert state in ("Nothing yet", "Open", "Approved", "Paid"), state
        row.locator("a").click()
        expect(page.locator("h1 .badge")).to_have_text(state)

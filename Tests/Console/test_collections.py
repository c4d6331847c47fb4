"""Money the driver collected, seen from the office: Alex collects cash on
pickup (COP) of O-5003 with a photo of the receipt through the driver API;
the order's draft invoice shows it paid on collection, pending deposit, the
photo opens, and dispatch marks it deposited. An expense's receipt photo
opens from the trip page."""
import datetime
import uuid

from playwright.sync_api import expect

from conftest import DRIVER, shot
from test_console import photo


def driver_order(server, token, number):
    status, orders = server.api("GET", "/v1/orders?limit=200", token=token)
    assert status == 200, orders
    return next(order for order in orders["items"] if order["number"] == number)


def test_cash_collected_at_pickup_shows_on_the_draft_and_is_deposited(page, server):
    token = server.api_sign_in(DRIVER)
    order = driver_order(server, token, "O-5003")
    payment = str(uuid.uuid4())
    body = {"id": payment, "order_id": order["id"], "amount_cents": 95000, "method": "cash", "reference": "R-881"}
    status, collected = server.api("POST", "/v1/collections", body, token=token)
    assert status == 201, collected
    # Sent again (the answer was lost): still one payment.
    assert server.api("POST", "/v1/collections", body, token=token)[0] == 201
    receipt = photo("CASH RECEIPT R-881 $950.00")
    status, with_photo = server.api("POST", f"/v1/collections/{payment}/photos", token=token, raw=receipt,
                                    headers={"Content-Type": "image/jpeg"})
    assert status == 201 and len(with_photo["photos"]) == 1, with_photo
    # A PDF is not a photo of a receipt.
    status, refused = server.api("POST", f"/v1/collections/{payment}/photos", token=token, raw=b"%PDF-1.7\n" + b"x" * 2000,
                                 headers={"Content-Type": "application/pdf"})
    assert status == 415 and refused["error"]["code"] == "unsupported_media_type", refused

    # The office sees what drivers hold, not banked yet, without opening each invoice.
    page.goto(server.base + "/receivables")
    held = page.locator("#held tbody tr", has_text="O-5003")
    expect(held).to_have_count(1)
    expect(held).to_contain_text("Alex Rivera")
    expect(held).to_contain_text("$950.00")
    expect(page.locator("#held h2")).to_contain_text("Held by drivers")
    shot(page, "receivables-held")

    page.goto(server.base + "/invoices")
    page.click(".tabs a:has-text('Drafts')")
    page.locator("#invoices tbody tr", has_text="O-5003").locator("a").first.click()
    payments = page.locator("#payments tbody tr")
    expect(payments).to_have_count(1)
    expect(payments).to_contain_text("Collected by Alex Rivera")
    expect(payments).to_contain_text("$950.00")
    expect(payments.locator(".badge")).to_have_text("Pending deposit")
    expect(page.locator("#payments")).to_contain_text("Money the driver collected is on this draft; other payments")
    # Collected at pickup: the draft waits for the delivery before it is sent.
    expect(page.locator("#undelivered")).to_contain_text("Not delivered yet: O-5003 (picked up)")
    # Not delivered: nothing offers to send it yet.
    expect(page.locator("button:has-text('Mark sent')")).to_have_count(0)
    shot(page, "invoice-collected")
    link = payments.locator("a[aria-label='Photo']")
    opened = page.request.get(server.base + link.get_attribute("href"))
    assert opened.status == 200 and opened.headers["content-type"] == "image/jpeg" and opened.body() == receipt

    payments.locator("button:has-text('Mark deposited')").click()
    expect(page.locator(".notice")).to_have_text("Marked deposited.")
    expect(payments.locator(".badge")).to_contain_text("Deposited")
    expect(payments.locator("button:has-text('Mark deposited')")).to_have_count(0)
    shot(page, "invoice-deposited")
    page.goto(server.base + "/receivables")
    expect(page.locator("#held")).to_have_count(0)


def test_an_expense_receipt_opens_from_the_trip_page(page, server, tmp_path):
    token = server.api_sign_in(DRIVER)
    status, trips = server.api("GET", "/v1/trips?limit=200", token=token)
    trip = next(trip for trip in trips["items"] if trip["number"] == "T-1002")
    expense = str(uuid.uuid4())
    status, created = server.api("POST", "/v1/expenses", {"id": expense, "trip_id": trip["id"], "category": "tolls", "amount_cents": 1275,
                                                          "date": datetime.date.today().isoformat(), "notes": "Florida Turnpike"}, token=token)
    assert status == 201, created
    receipt = photo("SUNPASS TOLL $12.75")
    status, stored = server.api("POST", f"/v1/expenses/{expense}/receipts", token=token, raw=receipt, headers={"Content-Type": "image/jpeg"})
    assert status == 201 and len(stored["receipts"]) == 1, stored

    page.goto(server.base + f"/trips/{trip['id']}")
    row = page.locator("#trip-expenses tbody tr", has_text="Florida Turnpike")
    link = row.locator("a:has-text('Receipt')")
    expect(link).to_have_count(1)
    opened = page.request.get(server.base + link.get_attribute("href"))
    assert opened.status == 200 and opened.body() == receipt
    # An expense without one says so.
    expect(page.locator("#trip-expenses tbody tr", has_text="Pilot")).to_contain_text("no receipt")

    # The office adds the second page the driver emailed, beside the expense, and removes it again.
    second = tmp_path / "page2.jpg"
    second.write_bytes(photo("SUNPASS PAGE 2"))
    with page.expect_navigation():
        row.locator("input[type=file]").set_input_files(str(second))
    row = page.locator("#trip-expenses tbody tr", has_text="Florida Turnpike")
    expect(row.locator("a:has-text('Receipt 2')")).to_have_count(1)
    shot(page, "trip-expense-receipt")
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("button[aria-label='Remove Receipt 2']").click()
    row = page.locator("#trip-expenses tbody tr", has_text="Florida Turnpike")
    expect(row.locator("a:has-text('Receipt')")).to_have_count(1)
    status, listed = server.api("GET", f"/v1/trips/{trip['id']}/expenses", token=token)
    mine = next(item for item in listed["items"] if item["id"] == expense)
    assert len(mine["receipts"]) == 1, mine

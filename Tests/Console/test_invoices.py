"""Getting paid in the console: the invoice list with what is owed, a draft
edited with charges and sent by email, a payment recorded once however often
the form is posted, receivables aging, the QuickBooks export read by Python's
csv module, a customer's statement, and the order page naming its invoice."""
import csv
import datetime
import io
import re

from playwright.sync_api import expect

from conftest import shot


def test_a_draft_is_charged_sent_and_paid_once(page, server):
    page.goto(server.base + "/invoices")
    expect(page.locator("#owed")).to_contain_text("owed on 1 invoice")
    page.click(".tabs a:has-text('Drafts')")
    row = page.locator("#invoices tbody tr", has_text="O-5002")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Midwest Auto Brokers")
    shot(page, "invoices-drafts")
    row.locator("a").first.click()
    expect(page.locator("h1")).to_contain_text("Draft invoice")
    page.click("a:has-text('Edit draft')")

    # A charge with an amount that is not one: refused beside it, everything typed kept.
    page.select_option("#c0_kind", "detention")
    page.fill("#c0_description", "2 h waiting at delivery")
    page.fill("#c0_amount", "75")
    page.select_option("#c1_kind", "fuel_surcharge")
    page.fill("#c1_amount", "twelve")
    page.click("button:has-text('Save draft')")
    expect(page.locator("#c1_amount + .field-error")).to_contain_text("amount")
    expect(page.locator("#c0_description")).to_have_value("2 h waiting at delivery")
    shot(page, "invoice-form-errors")
    page.fill("#c1_amount", "48.50")
    page.click("button:has-text('Save draft')")
    expect(page.locator(".notice")).to_have_text("Saved.")
    lines = page.locator("#invoice-lines tbody tr")
    expect(lines).to_have_count(3)
    expect(page.locator("#invoice-lines")).to_contain_text("2 h waiting at delivery")
    total = page.locator("#invoice-total").inner_text()

    # Sent by email: it takes the next number and goes to the customer's billing address.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Send to billing@midwestauto.example')")
    expect(page.locator(".notice")).to_contain_text("on its way to billing@midwestauto.example")
    expect(page.locator("h1")).to_contain_text("Invoice INV-1002")
    server.mailbox.message("billing@midwestauto.example", "INV-1002", timeout=30)
    page.reload()
    expect(page.locator("#invoice-emails")).to_contain_text("Sent")
    shot(page, "invoice-sent")

    # A payment that is not an amount is refused beside the field.
    page.fill("#amount", "12,50")
    page.click("button:has-text('Record payment')")
    expect(page.locator("#amount + .field-error")).to_contain_text("dot for cents")
    # The whole balance by check, posted twice (a double click): recorded once.
    page.fill("#amount", total.replace("$", "").replace(",", ""))
    page.select_option("#method", "check")
    page.fill("#reference", "55120")
    form = page.locator("form[action$='/payments']")
    fields = {name: form.locator(f"[name={name}]").input_value() for name in ["_csrf", "payment_id", "amount", "method", "reference", "received_on"]}
    url = server.base + form.get_attribute("action")
    for _ in range(2):
        answer = page.request.post(url, form=fields, max_redirects=0)
        assert answer.status == 303, answer.status
    page.goto(url.rsplit("/payments", 1)[0])
    expect(page.locator("#payments tbody tr")).to_have_count(1)
    expect(page.locator("h1 .badge")).to_have_text("Paid")
    expect(page.locator("#invoice-balance")).to_have_text("$0.00")
    shot(page, "invoice-paid")

    # A void needs its reason; a paid invoice offers no void at all.
    expect(page.locator("button:has-text('Void invoice')")).to_have_count(0)


def test_receivables_statement_export_and_the_order_page(page, server):
    page.goto(server.base + "/receivables")
    aging = page.locator("#aging tbody tr", has_text="Midwest Auto Brokers")
    expect(aging).to_have_count(1)
    expect(aging).to_contain_text("$1,700.00")  # INV-1001: $3,200.00 less a $1,500.00 check
    shot(page, "receivables")

    # The QuickBooks file, as the bookkeeper's spreadsheet reads it: from 90 days back (the default period is this
    # month, which on its first days holds none of the demo's invoices).
    page.fill("#export-invoices #from", (datetime.date.today() - datetime.timedelta(days=90)).isoformat())
    with page.expect_download() as download:
        page.click("#export-invoices button:has-text('Invoices CSV')")
    rows = list(csv.reader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    assert rows[0][:5] == ["InvoiceNo", "Customer", "InvoiceDate", "DueDate", "Terms"], rows[0]
    numbers = {row[0] for row in rows[1:]}
    assert "INV-1001" in numbers, rows
    assert all(re.fullmatch(r"-?\d+\.\d\d", row[10]) for row in rows[1:]), rows

    page.goto(server.base + "/receivables")
    aging.locator("a:has-text('Statement')").click()
    expect(page.locator("#statement")).to_contain_text("INV-1001")
    expect(page.locator("#statement")).to_contain_text("$1,700.00")
    shot(page, "customer-statement")

    page.goto(server.base + "/invoices?status=partly_paid")
    page.click("#invoices a:has-text('INV-1001')")
    page.click("p.muted a:has-text('O-5001')")
    expect(page.locator("#order-invoice")).to_have_text("Invoice INV-1001 · Partly paid")
    page.click("#order-invoice")
    expect(page.locator("#payments")).to_contain_text("20417")
    # Voiding with payments recorded is not offered; removing the payment is, and then the void asks for its reason.
    expect(page.locator("button:has-text('Void invoice')")).to_have_count(0)


def test_two_loads_of_a_customer_on_one_invoice(page, server):
    # Two auction loads on Sam's trip, booked and delivered from the console (the driver has no app).
    for number, price in [("LK-1", "410"), ("LK-2", "390")]:
        page.goto(server.base + "/orders/new")
        page.fill("#number", number)
        page.fill("#v0_price", price)
        page.fill("#customer", "Lakeshore Auto Auction")
        page.fill("#pickup_address", "Matteson, IL")
        page.fill("#delivery_address", "Gary, IN")
        page.select_option("#trip_id", page.locator("#trip_id option", has_text="T-2001").get_attribute("value"))
        page.click("button:has-text('Create order')")
        expect(page.locator("h1")).to_contain_text(f"Order {number}")
        for button in ["Mark picked up", "Mark delivered"]:
            page.once("dialog", lambda dialog: dialog.accept())
            page.click(f"button:has-text('{button}')")
            expect(page.locator(".notice")).to_contain_text("Marked")

    page.goto(server.base + "/invoices?status=draft")
    page.click("#invoices tr:has-text('LK-1') a")
    page.click("a:has-text('Edit draft')")
    other = page.locator("#invoice-orders tr", has_text="LK-2")
    expect(other).to_contain_text("moves here")
    other.locator("input[type=checkbox]").check()
    shot(page, "invoice-merge")
    page.click("button:has-text('Save draft')")
    expect(page.locator("#invoice-total")).to_have_text("$800.00")
    expect(page.locator("#invoice-lines")).to_contain_text("LK-2")
    # The second load's own draft is gone; a signed delivery is missing for both (dispatch delivered them).
    expect(page.locator("#unsigned-delivery")).to_contain_text("LK-1, LK-2")
    page.goto(server.base + "/invoices?status=draft")
    expect(page.locator("#invoices tr", has_text="LK-2")).to_have_count(1)
    expect(page.locator("#invoices tr", has_text="LK-1, LK-2")).to_have_count(1)

    # Thrown away, the draft frees both loads, listed as ready to invoice.
    page.click("#invoices tr:has-text('LK-1') a")
    page.fill("#reason", "")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Discard draft')")
    expect(page.locator("#reason + .field-error")).to_contain_text("Say why")
    page.fill("#reason", "Billed through the auction's portal")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Discard draft')")
    expect(page.locator(".notice")).to_contain_text("Draft discarded")
    expect(page.locator("#ready-to-invoice")).to_contain_text("LK-1")
    expect(page.locator("#ready-to-invoice")).to_contain_text("LK-2")


def test_dispatch_marks_a_load_delivered_and_its_invoice_is_prepared(page, server):
    # O-6001 rides Sam's trip (assigned): the driver has no app, dispatch does the paperwork.
    page.goto(server.base + "/board?status=assigned&q=O-6001")
    page.click("a:has-text('O-6001')")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Mark picked up')")
    expect(page.locator(".notice")).to_have_text("Marked picked up.")
    expect(page.locator("#order-status")).to_have_text("Picked up")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Mark delivered')")
    expect(page.locator(".notice")).to_contain_text("A draft invoice for the customer is ready")
    expect(page.locator("#order-invoice")).to_have_text("Draft invoice")
    shot(page, "order-marked-delivered")
    page.click("#order-invoice")
    expect(page.locator("#invoice-lines")).to_contain_text("O-6001")

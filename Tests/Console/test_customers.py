"""Customers in the console: the list and its search, a customer's page with
their orders and revenue, a customer added from the order form without
leaving it, the CSV import and its template file."""
import re
import urllib.request

from playwright.sync_api import expect

import pytest

from conftest import running_server, shot, sign_in, wait_until


def test_a_customer_is_added_edited_and_found(page, server, browser, dispatcher_state):
    page.goto(server.base + "/customers/new")
    page.fill("#name", "Great Lakes Auto Auction")
    page.select_option("#kind", "auction")
    page.fill("#email", "not an email")
    page.click("button:has-text('Add customer')")
    expect(page.locator("#email + .field-error")).to_contain_text("valid email")
    expect(page.locator("#name")).to_have_value("Great Lakes Auto Auction")
    shot(page, "customer-form-errors")
    page.fill("#email", "titles@greatlakes.example")
    page.fill("#billing_contact", "Morgan Lee")
    page.fill("#phone", "616-555-0142")
    page.fill("#payment_terms", "Net 30")
    page.click("button:has-text('Add customer')")
    expect(page.locator("h1")).to_have_text("Great Lakes Auto Auction")
    expect(page.locator(".notice")).to_contain_text("added")
    expect(page.locator(".facts").first).to_contain_text("Morgan Lee")

    # The same name again, in other capitals, is refused next to the field.
    page.goto(server.base + "/customers/new")
    page.fill("#name", "great lakes auto AUCTION")
    page.click("button:has-text('Add customer')")
    expect(page.locator("#name + .field-error")).to_contain_text("already exists")

    page.goto(server.base + "/customers?q=616-555")
    rows = page.locator("#customers tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Great Lakes Auto Auction")
    page.goto(server.base + "/customers?q=nobody-like-this")
    expect(page.locator(".empty")).to_contain_text("No customer matches")

    page.goto(server.base + "/customers?q=great")
    page.click("#customers a:has-text('Great Lakes')")
    page.click("a:has-text('Edit')")
    page.fill("#notes", "Titles mailed two days after sale.")
    page.click("button:has-text('Save changes')")
    expect(page.locator(".notice")).to_have_text("Saved.")
    expect(page.locator(".notes")).to_contain_text("Titles mailed")

    # Two dispatchers edit at once: the second save keeps the first, and shows what the second typed.
    edit_url = page.url.split("?")[0] + "/edit"
    other = browser.new_context(storage_state=dispatcher_state).new_page()
    page.goto(edit_url)
    other.goto(edit_url)
    other.fill("#phone", "616-555-0199")
    other.click("button:has-text('Save changes')")
    expect(other.locator(".notice")).to_have_text("Saved.")
    page.fill("#billing_contact", "Jamie Cruz")
    page.click("button:has-text('Save changes')")
    expect(page.locator(".form-error").first).to_contain_text("Someone else changed this customer")
    expect(page.locator("#billing_contact ~ .field-error")).to_contain_text("you typed “Jamie Cruz”")
    expect(page.locator("#phone")).to_have_value("616-555-0199")
    shot(page, "customer-edit-conflict")
    other.context.close()


def test_an_order_form_adds_its_customer_without_leaving_and_the_customer_page_shows_the_order(page, server):
    page.goto(server.base + "/orders/new")
    page.fill("#number", "CU-1001")
    page.fill("#v0_price", "1,250")
    page.fill("#customer", "Prairie State Motors")
    page.fill("#external_load_id", "CD-55012")
    page.fill("#pickup_address", "1 Auction Way, Matteson, IL")
    page.fill("#delivery_address", "500 Lake St, Milwaukee, WI")
    page.click("button:has-text('Create order')")
    # An unknown name is a question next to the field, with everything typed kept.
    expect(page.locator(".field-error").first).to_contain_text("no customer named Prairie State Motors")
    expect(page.locator("#external_load_id")).to_have_value("CD-55012")
    expect(page.locator("details.new-customer")).to_have_attribute("open", "")
    shot(page, "order-form-new-customer")
    page.check("input[name=new_customer]")
    page.select_option("#new_customer_kind", "dealer")
    page.fill("#new_customer_email", "not-an-email")
    page.click("button:has-text('Create order')")
    # A mistake in the new customer's details keeps what was chosen for them.
    expect(page.locator("#new_customer_email + .field-error")).to_contain_text("valid email")
    expect(page.locator("#new_customer_kind")).to_have_value("dealer")
    expect(page.locator("input[name=new_customer]")).to_be_checked()
    page.fill("#new_customer_email", "orders@prairiestate.example")
    page.click("button:has-text('Create order')")
    expect(page.locator("h1")).to_contain_text("Order CU-1001")
    facts = page.locator("dl.facts", has_text="Customer")
    expect(facts).to_contain_text("Prairie State Motors")
    expect(facts).to_contain_text("CD-55012")

    # The board shows whose load it is; its search finds the load board's reference.
    page.goto(server.base + "/board?status=new&q=CD-55012")
    expect(page.locator("tr[data-href]")).to_have_count(1)
    expect(page.locator("tr[data-href]").first).to_contain_text("Prairie State Motors")
    # And the customer's name finds their orders.
    page.goto(server.base + "/board?status=new&q=prairie+state")
    expect(page.locator("tr[data-href]")).to_have_count(1)

    page.goto(server.base + "/customers?q=prairie")
    page.click("#customers a:has-text('Prairie State Motors')")
    expect(page.locator("h1")).to_have_text("Prairie State Motors")
    expect(page.locator("h1 + *, .crumbs")).to_contain_text("Dealer")
    expect(page.locator("#open-orders")).to_contain_text("CU-1001")
    expect(page.locator("#customer-standing")).to_contain_text("1 · $1,250.00 to earn")
    shot(page, "customer")

    # A second order from the customer's page is theirs from the start, on their terms.
    page.click("a:has-text('New order')")
    expect(page.locator("#customer")).to_have_value("Prairie State Motors")
    # Naming a customer on a new order fills in their terms.
    page.goto(server.base + "/orders/new")
    page.fill("#customer", "midwest auto brokers")
    page.press("#customer", "Tab")
    expect(page.locator("#payment_terms")).to_have_value("Net 30")


def test_customer_import_names_bad_lines_then_imports_and_offers_a_template(page, server):
    page.goto(server.base + "/customers/import")
    page.fill("#csv", "name,kind,email\nCopart Wheeling,auction,not-mail\nAdesa Indianapolis,warehouse,\n")
    page.click("button:has-text('Import')")
    problems = page.locator(".form-error tbody tr")
    expect(problems).to_have_count(2)
    expect(problems.nth(0)).to_contain_text("email")
    expect(problems.nth(1)).to_contain_text("kind")
    shot(page, "customer-import-errors")
    page.fill("#csv", "name,kind,email,payment_terms\nCopart Wheeling,auction,titles@copart.example,COD\nAdesa Indianapolis,auction,,Quick pay\n")
    page.click("button:has-text('Import')")
    page.wait_for_url(re.compile(r"/customers\?created=2"))
    expect(page.locator(".notice")).to_contain_text("Imported: 2 new, 0 updated.")
    expect(page.locator("#customers")).to_contain_text("Copart Wheeling")
    shot(page, "customers")

    # The template is a CSV with every column the import reads.
    page.goto(server.base + "/customers/import")
    with page.expect_download() as download:
        page.click("a:has-text('Download a template file')")
    text = open(download.value.path()).read()
    assert text.splitlines()[0] == "name,kind,billing_contact,email,phone,address,payment_terms,notes"
    page.goto(server.base + "/orders/import")
    with page.expect_download() as download:
        page.click("a:has-text('Download a template file')")
    lines = open(download.value.path()).read().splitlines()
    assert "external_load_id" in lines[0] and "customer" in lines[0]
    # The template's example line imports as it is.
    page.fill("#csv", "\n".join(lines))
    page.click("button:has-text('Import')")
    page.wait_for_url(re.compile(r"/board\?status=new"))
    page.goto(server.base + "/board?status=new&q=LB-00000")
    expect(page.locator("tr[data-href]")).to_have_count(1)


@pytest.fixture
def own_server():
    """A server of its own: the sign-ins this test needs are not spent by the rest of the suite."""
    yield from running_server()


def test_a_tracking_link_follows_the_order_live_and_other_tokens_show_nothing(browser, anonymous_page, own_server):
    server = own_server
    page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
    sign_in(page, server)
    from conftest import DRIVER
    import uuid
    from test_console import pick_up
    # An assigned demo order: Jordan's trip to Los Angeles (no other test signs Jordan in: codes go once a minute).
    page.goto(server.base + "/board?status=assigned&q=O-7001")
    page.click("tr[data-href] a:has-text('O-7001')")
    order_url = page.url
    page.click("button:has-text('Make a tracking link')")
    expect(page.locator(".notice")).to_contain_text("Tracking link made")
    link = page.locator("#tracking-url").input_value()
    assert "/track/" in link, link
    shot(page, "order-tracking-link")

    customer = anonymous_page
    customer.goto(link)
    expect(customer.locator("h1")).to_contain_text("Order O-7001")
    expect(customer.locator("#track-status")).to_have_text("Scheduled for pickup")
    expect(customer.locator("body")).not_to_contain_text("Jordan Blake")
    shot(customer, "tracking-page")

    # The driver picks the car up; the open page follows without a reload.
    customer.evaluate("window.__sameDocument = true")
    token = server.api_sign_in("jordan@demo-carrier.example")
    status, orders = server.api("GET", "/v1/orders?limit=100", token=token)
    order = next(o for o in orders["items"] if o["number"] == "O-7001")
    pick_up(server, token, order["id"])
    expect(customer.locator("#track-status")).to_have_text("Picked up", timeout=30_000)
    assert customer.evaluate("window.__sameDocument") is True
    expect(customer.locator(".steps li.done")).to_have_count(2)
    shot(customer, "tracking-picked-up")

    # The customer (Midwest Auto Brokers) got the pickup's bill of lading; the order's history says so.
    mail = server.mailbox.message("billing@midwestauto.example", "picked up", timeout=30)
    assert "O-7001" in mail and "/track/" in mail, mail
    page.goto(order_url)
    expect(page.locator(".timeline")).to_contain_text("Bill of lading (pickup) emailed to billing@midwestauto.example")
    # The open tracking page shows the condition at pickup, with its photos.
    expect(customer.locator(".condition h2")).to_have_text("Condition at pickup", timeout=30_000)
    wait_until(customer, "Array.from(document.querySelectorAll('.condition img')).every(i => i.complete && i.naturalWidth > 0)")
    shot(customer, "tracking-condition")
    # Asked again, it goes again.
    before = len([1 for to, body in server.mailbox.messages if to == "billing@midwestauto.example"])
    page.click("button:has-text('Email the pickup bill of lading to the customer again')")
    expect(page.locator(".notice")).to_contain_text("on its way to the customer again")
    deadline = __import__("time").time() + 30
    while len([1 for to, body in server.mailbox.messages if to == "billing@midwestauto.example"]) == before:
        assert __import__("time").time() < deadline, "no second mail"
        __import__("time").sleep(0.2)

    # Another order's id with this signature, a guess, and (after revoking) the link itself show nothing.
    token_part = link.rsplit("/", 1)[1]
    for other in [uuid.uuid4().hex + token_part[32:], "0" * 54, token_part[:-1]]:
        customer.goto(server.base + "/track/" + other)
        expect(customer.locator("h1")).to_have_text("Tracking link")
        expect(customer.locator("main")).to_contain_text("not valid or has expired")
        expect(customer.locator("body")).not_to_contain_text("O-7001")
    page.goto(order_url)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Revoke')")
    expect(page.locator(".notice")).to_contain_text("revoked")
    customer.goto(link)
    expect(customer.locator("main")).to_contain_text("not valid or has expired")
    shot(customer, "tracking-gone")


def test_settings_name_the_carrier_on_its_bill_of_lading_pdf(page, server, tmp_path):
    import subprocess
    page.goto(server.base + "/settings")
    page.fill("#legal_name", "Demo Auto Transport LLC")
    page.fill("#mc_number", "MC 12A")
    page.click("button:has-text('Save settings')")
    expect(page.locator("#mc_number + .field-error")).to_contain_text("digits")
    expect(page.locator("#legal_name")).to_have_value("Demo Auto Transport LLC")
    page.fill("#mc_number", "mc-123456")
    page.fill("#dot_number", "3456789")
    page.fill("#phone", "555-0100")
    page.fill("#bol_terms", "Vehicles are carried at the owner's risk for items left inside.")
    page.click("button:has-text('Save settings')")
    expect(page.locator(".notice")).to_contain_text("Saved")
    expect(page.locator("#mc_number")).to_have_value("MC-123456")
    shot(page, "settings")

    # A delivered demo order: its printed view and its PDF name the carrier as set.
    page.goto(server.base + "/board?status=delivered&q=O-5001")
    page.click("tr[data-href] a:has-text('O-5001')")
    order = page.url.rsplit("/", 1)[1].split("?")[0]
    page.goto(server.base + f"/orders/{order}/bill-of-lading")
    expect(page.locator(".doc-head")).to_contain_text("Demo Auto Transport LLC")
    expect(page.locator(".doc-head")).to_contain_text("MC 123456 · USDOT 3456789")
    expect(page.locator(".doc-terms")).to_contain_text("owner's risk")
    response = page.request.get(server.base + f"/orders/{order}/bill-of-lading.pdf")
    assert response.status == 200 and response.headers["content-type"] == "application/pdf"
    pdf = tmp_path / "bol.pdf"
    pdf.write_bytes(response.body())
    text = " ".join(subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split())
    for expected in ["Demo Auto Transport LLC", "MC 123456", "USDOT 3456789", "Order O-5001", "Midwest Auto Brokers", "4T1B11HK4MU123456",
                     "owner's risk"]:
        assert expected in text, (expected, text)

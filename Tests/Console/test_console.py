"""The dispatch console in a real browser against the real server."""
import base64
import datetime
import io
import re
import subprocess
import urllib.request
import uuid

from PIL import Image, ImageDraw
from playwright.sync_api import expect

from conftest import BINARY, DRIVER, shot, sign_in, wait_until


def photo(label):
    """A real JPEG (the server checks what a file is, not what it says)."""
    image = Image.new("RGB", (320, 240), (90, 120, 160))
    draw = ImageDraw.Draw(image)
    draw.rectangle([40, 120, 280, 190], fill=(200, 200, 210))
    draw.text((50, 40), label, fill=(255, 255, 255))
    out = io.BytesIO()
    image.save(out, format="JPEG")
    return out.getvalue()


def create_carrier(server, name, dispatcher):
    """Another carrier, made with the admin command on the server's database."""
    created = subprocess.run([str(BINARY), "tenant", "create", "--name", name, "--dispatcher-email", dispatcher],
                             env={"VROOMX_DATA_DIR": str(server.data), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert created.returncode == 0, created.stdout + created.stderr


def create_trip(page, server, number, driver="Alex Rivera", start="2026-11-22", end="2026-11-24", miles="310"):
    page.goto(server.base + "/trips/new")
    page.fill("#number", number)
    page.select_option("#driver_id", label=driver)
    page.fill("#origin", "Savannah, GA")
    page.fill("#destination", "Orlando, FL")
    page.fill("#start_date", start)
    page.fill("#end_date", end)
    page.fill("#revenue", "2400")
    page.fill("#miles", miles)
    page.click("button:has-text('Create trip')")
    page.wait_for_url(re.compile(r"/trips/[0-9a-f-]{36}\?added=1$"))
    expect(page.locator(".notice")).to_have_text(f"Trip {number} created.")
    return page.url.rsplit("/", 1)[1].split("?")[0]


def create_order(page, server, number, trip_label=None, vin="1HGCM82633A004352"):
    page.goto(server.base + "/orders/new")
    page.fill("#number", number)
    page.fill("#v0_price", "1,150.00")
    page.fill("#v0_vin", vin)
    page.fill("#v0_year", "2021")
    page.fill("#v0_make", "Honda")
    page.fill("#v0_model", "Accord")
    page.fill("#pickup_name", "Port of Savannah")
    page.fill("#pickup_address", "1 Harbor Rd, Savannah, GA 31401")
    page.fill("#pickup_window_start", "2026-11-22")
    page.fill("#delivery_name", "Sunshine Honda")
    page.fill("#delivery_address", "900 Colonial Dr, Orlando, FL 32803")
    if trip_label:
        page.select_option("#trip_id", label=trip_label)
    page.click("button:has-text('Create order')")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}\?added=1$"))
    expect(page.locator(".notice")).to_have_text(f"Order {number} created.")
    return page.url.rsplit("/", 1)[1].split("?")[0]


def test_board_shows_the_demo_carrier_by_status(page, server):
    page.goto(server.base + "/")
    page.wait_for_url("**/board")
    expect(page.locator(".tabs a")).to_have_count(5)
    expect(page.locator(".who .carrier")).to_have_text("Demo Auto Transport")
    shot(page, "board")
    # Search by city narrows the list; an unknown word says so.
    page.goto(server.base + "/board?status=assigned")
    page.fill("#q", "zzzz-no-such")
    page.press("#q", "Enter")
    expect(page.locator(".empty")).to_contain_text("No Assigned orders match")
    shot(page, "board-empty-search")
    # The tab's icon, named by the page and asked for by browsers at the usual place.
    for path in [page.locator("link[rel=icon]").get_attribute("href"), "/favicon.ico"]:
        icon = page.request.get(server.base + path)
        assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml", path
        assert icon.body().startswith(b"<svg")


def pick_up(server, token, order, **fields):
    """A driver's pickup through the API: the inspection (no one there to sign), six photos, complete."""
    inspection = str(uuid.uuid4())
    status, body = server.api("PUT", f"/v1/inspections/{inspection}",
                              {"order_id": order, "kind": "pickup", "odometer": 41250, "customer_unavailable": True, **fields}, token=token)
    assert status in (200, 201), body
    for slot in ["front", "rear", "left_side", "right_side", "odometer", "vin_plate"]:
        status, body = server.api("PUT", f"/v1/inspections/{inspection}/media/{slot}", token=token, raw=photo(slot),
                                  headers={"Content-Type": "image/jpeg"})
        assert status in (200, 201), (slot, body)
    status, body = server.api("POST", f"/v1/inspections/{inspection}/complete", {}, token=token)
    assert status == 200, body


def test_create_trip_and_order_then_the_driver_picks_up_while_the_board_is_open(page, server):
    trip = create_trip(page, server, "T-9701")
    shot(page, "trip")
    order = create_order(page, server, "O-9701", trip_label="T-9701 · Savannah, GA → Orlando, FL")
    expect(page.locator("h1")).to_contain_text("Order O-9701")
    expect(page.locator("#order-status")).to_have_text("Assigned")
    page.goto(server.base + f"/trips/{trip}")
    expect(page.locator("#trip-orders")).to_contain_text("O-9701")

    page.goto(server.base + "/board?status=assigned&q=O-9701")
    expect(page.locator("tr[data-href]")).to_have_count(1)
    picked_before = int(page.locator(".tabs a", has_text="Picked up").locator(".count").inner_text())
    page.evaluate("window.__sameDocument = true")

    # The driver picks the car up through the API: inspection, six photos, complete.
    pick_up(server, server.api_sign_in(DRIVER), order, notes="Light scratch on rear bumper",
            damages=[{"location": "rear_bumper", "type": "scratch", "severity": "minor", "note": "5 cm"}])

    # The open board moves without a reload.
    expect(page.locator("tr[data-href]")).to_have_count(0, timeout=10_000)
    expect(page.locator(".tabs a", has_text="Picked up").locator(".count")).to_have_text(str(picked_before + 1))
    assert page.evaluate("window.__sameDocument") is True

    page.goto(server.base + f"/orders/{order}")
    expect(page.locator("#order-status")).to_have_text("Picked up")
    # The status history names who moved the order.
    expect(page.locator(".timeline")).to_contain_text("Assigned · by dispatch@demo-carrier.example")
    expect(page.locator(".timeline")).to_contain_text("Picked up · by Alex Rivera (driver)")
    expect(page.locator(".photos img")).to_have_count(6)
    wait_until(page, "Array.from(document.querySelectorAll('.photos img')).every(i => i.complete && i.naturalWidth > 0)")
    expect(page.locator(".damages")).to_contain_text("Rear bumper: scratch, minor")
    shot(page, "order")
    page.goto(server.base + f"/orders/{order}/bill-of-lading")
    expect(page.locator("h1")).to_have_text("Bill of lading")
    page.emulate_media(media="print")
    shot(page, "bill-of-lading")


def test_bad_order_input_is_shown_next_to_the_field_and_nothing_is_saved(page, server):
    page.goto(server.base + "/orders/new")
    page.fill("#number", "O-BAD-1")
    page.fill("#v0_price", "twelve")
    page.fill("#pickup_address", "1 Harbor Rd, Savannah, GA")
    page.click("button:has-text('Create order')")
    expect(page.locator("#v0_price + .field-error")).to_contain_text("Enter an amount in dollars")
    expect(page.locator("#number")).to_have_value("O-BAD-1")
    page.fill("#v0_price", "500")
    page.fill("#v0_vin", "TOO-SHORT")
    page.click("button:has-text('Create order')")
    expect(page.locator(".field-error").first).to_be_visible()
    shot(page, "order-form-errors")
    page.goto(server.base + "/board?status=new&q=O-BAD-1")
    expect(page.locator(".empty")).to_be_visible()


def test_csv_import_lists_bad_lines_and_writes_nothing_then_imports_a_good_file(page, server):
    bad = ("number,pickup_address,delivery_address,revenue,vin,pickup_from\n"
           "O-9501,1 Harbor Rd Savannah GA,9 Main St Orlando FL,900,,2026-11-23\n"
           "O-9502,,9 Main St Orlando FL,900,,\n"
           "O-9503,1 Harbor Rd Savannah GA,9 Main St Orlando FL,lots,,\n"
           "O-9501,1 Harbor Rd Savannah GA,9 Main St Orlando FL,900,,2026-13-01\n")
    page.goto(server.base + "/orders/import")
    page.fill("#csv", bad)
    page.click("button:has-text('Import')")
    problems = page.locator(".form-error tbody tr")
    expect(problems).to_have_count(3)
    expect(page.locator(".form-error")).to_contain_text("Nothing was imported: 3 problems.")
    expect(problems.nth(0)).to_contain_text("3")
    expect(problems.nth(0)).to_contain_text("pickup_address")
    expect(problems.nth(1)).to_contain_text("revenue")
    shot(page, "import-errors")
    page.goto(server.base + "/board?status=new&q=O-9501")
    expect(page.locator(".empty")).to_be_visible()

    page.goto(server.base + "/orders/import")
    page.fill("#csv", "number,pickup_address,delivery_address,revenue\nO-9601,\"1 Harbor Rd, Savannah, GA\",\"9 Main St, Orlando, FL\",\"1,200\"\n"
                      "O-9602,2 Dock St Brunswick GA,5 Bay Rd Tampa FL,800.50\n")
    page.click("button:has-text('Import')")
    page.wait_for_url(re.compile(r"/board\?status=new"))
    page.goto(server.base + "/board?status=new&q=O-96")
    expect(page.locator("tr[data-href]")).to_have_count(2)


def test_message_to_a_driver_shows_when_it_is_read(page, server):
    page.goto(server.base + "/messages")
    page.select_option("#driver_id", label="Alex Rivera")
    page.fill("#title", "Gate code changed")
    page.fill("#body", "The Savannah lot gate code is now 4471.")
    page.check("#urgent")
    page.click("button:has-text('Send')")
    page.wait_for_url("**/messages?sent=1")
    expect(page.locator(".notice")).to_have_text("Sent to 1 driver.")
    row = page.locator("#sent tbody tr", has_text="Gate code changed")
    expect(row).to_contain_text("Not yet")
    token = server.api_sign_in(DRIVER)
    status, listing = server.api("GET", "/v1/notifications", token=token)
    assert status == 200
    message = next(item for item in listing["items"] if item["title"] == "Gate code changed")
    status, _ = server.api("POST", f"/v1/notifications/{message['id']}/read", {}, token=token)
    assert status == 200
    expect(page.locator("#sent tbody tr", has_text="Gate code changed")).to_contain_text("✓", timeout=10_000)
    shot(page, "messages")


def test_a_driver_writes_and_dispatch_answers_in_the_conversation(page, server):
    page.goto(server.base + "/trips")
    token = server.api_sign_in(DRIVER)
    status, orders = server.api("GET", "/v1/orders", token=token)
    assert status == 200
    order = next(item for item in orders["items"] if item["status"] in ("assigned", "picked_up"))
    message_id = str(uuid.uuid4())
    status, sent = server.api("POST", "/v1/messages", {"id": message_id, "body": "Gate is locked, waiting for the yard manager.",
                                                        "order_id": order["id"]}, token=token)
    assert status == 201, sent
    # On whatever page dispatch is: the count beside Messages, and the message announced with a link to it.
    expect(page.locator("#unread-messages")).to_have_text(re.compile(r"^[1-9]"), timeout=10_000)
    toast = page.locator("#message-toast")
    expect(toast).to_be_visible(timeout=10_000)
    expect(toast).to_contain_text("New message from Alex Rivera: Gate is locked")
    shot(page, "message-announced")
    toast.locator("a").click()
    page.wait_for_url(re.compile(r"/messages/[0-9a-f-]{36}$"))
    line = page.locator(".line.from-driver", has_text="Gate is locked")
    expect(line).to_contain_text("Order " + order["number"])
    # Opened: read, and the count goes.
    expect(page.locator("#unread-messages")).to_be_hidden(timeout=10_000)
    status, mine = server.api("GET", "/v1/sync?since=0&limit=1000", token=token)
    read = [c["row"] for c in mine["changes"] if c["entity"] == "message" and c["row"]["id"] == message_id]
    assert read and read[-1]["read_by_dispatch_at"], read
    # The reply stays on the order's thread; an urgent one is answered Got it.
    expect(page.locator("#about option:checked")).to_have_text("Order " + order["number"])
    page.fill("#body", "Wait 20 minutes, then call me.")
    page.click("button:has-text('Send')")
    expect(page.locator(".line.from-dispatch", has_text="Wait 20 minutes")).to_contain_text("Not read yet")
    page.fill("#body", "Leave now: the yard closes at 5.")
    page.check("#urgent")
    page.click("button:has-text('Send')")
    urgent = page.locator(".line.from-dispatch", has_text="Leave now")
    expect(urgent).to_contain_text("Urgent")
    status, listing = server.api("GET", "/v1/notifications", token=token)
    pushed = next(item for item in listing["items"] if item["body"] == "Leave now: the yard closes at 5.")
    assert pushed["data"]["order_id"] is None or pushed["data"]["order_id"] == order["id"]
    status, _ = server.api("POST", f"/v1/notifications/{pushed['id']}/acknowledge", {}, token=token)
    assert status == 200
    expect(page.locator(".line.from-dispatch", has_text="Leave now")).to_contain_text("Got it", timeout=10_000)
    # The order's page tells its story with the messages about it.
    page.goto(server.base + "/orders/" + order["id"])
    expect(page.locator("main")).to_contain_text("Alex Rivera wrote: “Gate is locked, waiting for the yard manager.”")
    expect(page.locator("main")).to_contain_text("Dispatch wrote to Alex Rivera: “Wait 20 minutes, then call me.”")
    # The inbox lists the conversation.
    page.goto(server.base + "/messages")
    expect(page.locator("#inbox tbody tr", has_text="Alex Rivera")).to_contain_text("You: Leave now")
    page.goto(server.base + "/messages/" + pushed["driver_id"])
    shot(page, "conversation")
    # An empty reply is refused next to the field.
    page.fill("#body", "   ")
    page.click("button:has-text('Send')")
    expect(page.locator("#body + .field-error, .field-error").first).to_be_visible()


def test_drivers_invite_and_pay_pages(page, server):
    page.goto(server.base + "/drivers/new")
    page.fill("#name", "Casey Morgan-Villanueva de la Fuente")
    page.fill("#email", "casey@demo-carrier.example")
    page.fill("#phone", "+1 912 555 0144")
    page.select_option("#pay_type", "per_mile")
    page.fill("#pay_rate", "0.65")
    page.click("button:has-text('Invite')")
    page.wait_for_url(re.compile(r"/drivers\?invited="))
    expect(page.locator(".notice")).to_contain_text("An invitation is on its way to casey@demo-carrier.example")
    expect(page.locator("table")).to_contain_text("$0.65 per mile")
    # The invitation reached the mail server: who added them, and the address to sign in with.
    invitation = server.mailbox.message("casey@demo-carrier.example", "added you as a driver")
    assert "Demo Auto Transport added you as a driver on VroomX" in invitation
    assert "sign in with this email address: casey@demo-carrier.example" in invitation
    shot(page, "drivers")
    page.goto(server.base + "/drivers/new")
    page.fill("#name", "Again")
    page.fill("#email", "casey@demo-carrier.example")
    page.fill("#pay_rate", "25")
    page.click("button:has-text('Invite')")
    expect(page.locator(".field-error")).to_be_visible()
    page.goto(server.base + "/pay?date=2026-11-22")
    expect(page.locator(".page-head")).to_contain_text("Week of Nov 16 – 22, 2026")
    shot(page, "pay")
    response = page.request.get(server.base + "/pay.csv?date=2026-11-22")
    assert response.status == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert response.text().startswith("driver,week_start,status,kind,")
    # The first and last weeks of the calendar the server keeps: pages, not a crash.
    for day in ["1900-01-01", "1900-01-07", "2999-12-31"]:
        answer = page.request.get(server.base + f"/pay?date={day}")
        assert answer.status == 200, (day, answer.status)
        # No link leads past the calendar's ends (such a date is refused).
        for link in re.findall(r'href="(/pay\?date=[0-9-]+)"', answer.text()):
            assert re.search(r"date=(19\d\d|2\d\d\d)-", link), (day, link)
    # A date that is no date is refused, not taken as this week.
    assert page.request.get(server.base + "/pay?date=2026-13-45").status == 422
    assert page.request.get(server.base + "/healthz").status == 200
    page.goto(server.base + "/trips")
    shot(page, "trips")


def test_keyboard_moves_through_the_board(page, server):
    page.goto(server.base + "/board?status=assigned")
    page.keyboard.press("/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    first = page.locator("tr[data-href]").first
    expect(first).to_be_focused()
    target = first.get_attribute("data-href")
    page.keyboard.press("Enter")
    page.wait_for_url("**" + target)
    page.keyboard.press("Alt+ArrowLeft")
    page.goto(server.base + "/board")
    page.keyboard.press("2")
    page.wait_for_url("**status=assigned")


def test_forms_without_the_session_token_are_refused(page, server):
    response = page.request.post(server.base + "/orders", form={
        "_csrf": "forged", "number": "O-CSRF-1", "v0_price": "100", "pickup_address": "a", "delivery_address": "b"})
    assert response.status == 403
    assert "expired or did not come from this page" in response.text()
    page.goto(server.base + "/board?status=new&q=O-CSRF-1")
    expect(page.locator(".empty")).to_be_visible()


def test_a_driver_is_refused_politely(anonymous_page, server):
    sign_in(anonymous_page, server, email="sam@demo-carrier.example", expect_board=False)
    expect(anonymous_page.locator(".field-error")).to_contain_text("The dispatch console is for dispatchers")
    shot(anonymous_page, "sign-in-driver-refused")
    anonymous_page.goto(server.base + "/board")
    anonymous_page.wait_for_url(re.compile(r"/sign-in"))
    shot(anonymous_page, "sign-in")


def test_another_carriers_order_is_not_found(page, server):
    create_carrier(server, "Other Haulers", "boss@other.example")
    token = server.api_sign_in("boss@other.example")
    status, order = server.api("POST", "/v1/dispatch/orders", {
        "number": "X-1", "vehicle": {"make": "Ford", "model": "F-150", "vin": "", "color": ""},
        "pickup": {"name": "", "address": "1 A St, Reno, NV", "contact_name": "", "contact_phone": ""},
        "delivery": {"name": "", "address": "2 B St, Boise, ID", "contact_name": "", "contact_phone": ""}, "revenue_cents": 1000}, token=token)
    assert status == 201, order
    response = page.goto(server.base + f"/orders/{order['id']}")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("Not found")
    assert "X-1" not in page.content()


def test_sign_out_ends_the_session_and_its_cookie(browser, server):
    create_carrier(server, "Night Shift Carriers", "night@third.example")
    context = browser.new_context()
    page = context.new_page()
    # A page asked for before signing in is where sign-in leads back to, with its query (codes are limited per
    # client address, so this sign-in is the one the test needs anyway).
    page.goto(server.base + "/board?status=delivered&q=Kia+Soul")
    page.wait_for_selector("#email")
    before = server.mailbox.count("night@third.example")
    page.fill("#email", "night@third.example")
    page.click("button[type=submit]")
    page.wait_for_selector("#code")
    page.fill("#code", server.mailbox.code("night@third.example", after=before))
    page.click("button[type=submit]")
    page.wait_for_url(server.base + "/board?status=delivered&q=Kia+Soul")
    expect(page.locator("input[name=q]")).to_have_value("Kia Soul")
    page.goto(server.base + "/board")
    expect(page.locator(".who .carrier")).to_have_text("Night Shift Carriers")
    expect(page.locator(".empty")).to_be_visible()
    cookie = next(c for c in context.cookies() if c["name"] == "vroomx_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    page.click("button:has-text('Sign out')")
    page.wait_for_url(re.compile(r"/sign-in"))
    # The old cookie, sent again, opens nothing: the session is revoked on the server.
    context.add_cookies([cookie])
    page.goto(server.base + "/board")
    page.wait_for_url(re.compile(r"/sign-in"))
    context.close()


def test_asking_for_a_code_again_within_the_minute_keeps_the_code_box(browser, server):
    create_carrier(server, "Twice Asked Hauling", "twice@fourth.example")
    context = browser.new_context()
    page = context.new_page()
    before = server.mailbox.count("twice@fourth.example")
    for _ in range(2):
        page.goto(server.base + "/sign-in")
        page.fill("#email", "twice@fourth.example")
        page.click("button[type=submit]")
        page.wait_for_selector("#code")
    # The second request is refused (one code a minute), but the first code is still at hand and works.
    expect(page.locator(".notice")).to_contain_text("less than a minute ago: enter the newest one")
    expect(page.locator(".notice")).to_contain_text(re.compile(r"a new one can be sent in \d+ s"))
    # The code step offers a new code; within the minute its button waits, counting down.
    resend = page.locator("button:has-text('Send a new code')")
    expect(resend).to_be_disabled()
    expect(resend).to_contain_text(re.compile(r"\(in \d+ s\)"))
    # Sent anyway (a page without its script), the server says when.
    page.locator("form.resend").evaluate("form => form.submit()")
    expect(page.locator(".notice")).to_contain_text("a new one can be sent in")
    assert server.mailbox.count("twice@fourth.example") == before + 1
    shot(page, "sign-in-asked-twice")
    # A wrong code keeps the countdown: the button still waits.
    code = server.mailbox.code("twice@fourth.example", after=before)
    page.fill("#code", "000000" if code != "000000" else "111111")
    page.click("form[action='/sign-in/code'] button[type=submit]")
    expect(page.locator("#code ~ .field-error")).to_be_visible()
    expect(resend).to_be_disabled()
    expect(resend).to_contain_text(re.compile(r"\(in \d+ s\)"))
    page.fill("#code", code)
    page.click("button[type=submit]")
    page.wait_for_url("**/board")
    expect(page.locator(".who .carrier")).to_have_text("Twice Asked Hauling")
    context.close()


def test_sign_in_never_redirects_off_site_and_reads_no_large_bodies(anonymous_page, server):
    page = anonymous_page
    create_carrier(server, "Redirect Test Lines", "lead@fourth.example")
    # A tab the browser would strip turns "/\t/evil.example" into "//evil.example".
    page.goto(server.base + "/sign-in?next=/%09/evil.example/login")
    before = server.mailbox.count("lead@fourth.example")
    page.fill("#email", "lead@fourth.example")
    page.click("button[type=submit]")
    page.wait_for_selector("#code")
    assert page.locator("form[action='/sign-in/code'] input[name=next]").get_attribute("value") == "/\t/evil.example/login"
    page.fill("#code", server.mailbox.code("lead@fourth.example", after=before))
    page.click("button[type=submit]")
    page.wait_for_url(server.base + "/board")
    # Before a session exists the server reads no more than a sign-in form.
    response = page.request.post(server.base + "/sign-in", form={"email": "x@example.com", "pad": "x" * 20_000},
                                 headers={"Origin": server.base})
    assert response.status == 413


def stale(page):
    """The page no longer follows live updates (as when its connection is cut): it keeps offering what was true when
    it was drawn, for a test of what the server says to an action that has gone stale meanwhile."""
    page.evaluate("document.querySelectorAll('[data-live]').forEach((region) => region.removeAttribute('data-live'))")


def test_a_trip_finds_an_order_to_add_by_search_and_adds_it(page, server):
    trip = create_trip(page, server, "T-9811")
    order = create_order(page, server, "O-9811")
    page.goto(server.base + f"/trips/{trip}")
    page.fill("#add_q", "O-9811")
    page.click("form[role=search] button:has-text('Search')")
    expect(page.locator("#add-note")).to_have_text("1 order waiting for a trip matches “O-9811”.")
    expect(page.locator("#add_q")).to_have_value("O-9811")
    expect(page.locator("#order_id option")).to_have_count(2)
    # The one order found is chosen already: Add to trip adds it.
    expect(page.locator("#order_id")).to_have_value(order)
    shot(page, "trip-add-search")
    page.click("button:has-text('Add to trip')")
    expect(page.locator("#trip-orders table")).to_contain_text("O-9811")
    expect(page.locator(".notice")).to_have_text("Order O-9811 added to this trip.")
    # Back to the same search, which now finds nothing: it says so, and Clear leaves it.
    expect(page.locator("#add_q")).to_have_value("O-9811")
    expect(page.locator("#add-note")).to_have_text("No order waiting for a trip matches “O-9811”.")
    expect(page.locator("#order_id")).to_have_count(0)
    page.click("form[role=search] a:has-text('Clear')")
    expect(page.locator("#add_q")).to_have_value("")

    # An order another trip took meanwhile stays there: the add is refused and names that trip.
    other = create_trip(page, server, "T-9812")
    taken = create_order(page, server, "O-9812")
    page.goto(server.base + f"/trips/{trip}?add_q=O-9812")
    expect(page.locator("#order_id")).to_have_value(taken)
    stale(page)
    elsewhere = page.context.new_page()
    elsewhere.goto(server.base + f"/trips/{other}?add_q=O-9812")
    elsewhere.click("button:has-text('Add to trip')")
    expect(elsewhere.locator(".notice")).to_have_text("Order O-9812 added to this trip.")
    elsewhere.close()
    page.click("button:has-text('Add to trip')")
    expect(page.locator("#trip-orders .field-error")).to_have_text(
        "Order O-9812 is on trip T-9812 now. To move it here, take it off that trip first.")
    page.goto(server.base + f"/trips/{other}")
    expect(page.locator("#trip-orders table")).to_contain_text("O-9812")

    # A trip cancelled meanwhile takes no order, and says why.
    late = create_trip(page, server, "T-9813")
    create_order(page, server, "O-9813")
    page.goto(server.base + f"/trips/{late}?add_q=O-9813")
    stale(page)
    elsewhere = page.context.new_page()
    elsewhere.goto(server.base + f"/trips/{late}")
    elsewhere.once("dialog", lambda dialog: dialog.accept())
    elsewhere.click("button:has-text('Cancel trip')")
    expect(elsewhere.locator("h1 .badge")).to_have_text("Cancelled")
    elsewhere.close()
    page.click("button:has-text('Add to trip')")
    expect(page.locator("#trip-orders .field-error")).to_have_text(
        "Trip T-9813 is cancelled; orders go on planned trips or trips under way.")


def test_a_trip_without_miles_says_so_rather_than_zero(page, server):
    create_trip(page, server, "T-NOMILES", miles="")
    miles = page.locator("dt:has-text('Miles') + dd")
    expect(miles).to_have_text("—")
    shot(page, "trip-without-miles")
    page.goto(server.base + "/trips")
    row = page.locator("tr", has=page.locator("a", has_text="T-NOMILES"))
    expect(row.locator("td.num").nth(1)).to_have_text("—")


def test_a_decimal_comma_is_refused_not_read_as_a_hundred_times_more(page, server):
    page.goto(server.base + "/orders/new")
    page.fill("#number", "O-9801")
    page.fill("#v0_price", "1250,50")
    page.fill("#pickup_address", "1 Harbor Rd, Savannah, GA")
    page.fill("#delivery_address", "9 Main St, Orlando, FL")
    page.click("button:has-text('Create order')")
    expect(page.locator("#v0_price + .field-error")).to_contain_text("Use a dot for cents")
    page.fill("#v0_price", "1,250.50")
    page.click("button:has-text('Create order')")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}(\?(added|saved)=1)?$"))
    expect(page.locator("dd", has_text="$1,250.50")).to_be_visible()


def test_a_driver_who_left_is_deactivated_and_can_come_back(page, server):
    page.goto(server.base + "/drivers/new")
    page.fill("#name", "Riley Quinn-Okafor")
    page.fill("#email", "riley.quinn@demo-carrier.example")
    page.fill("#pay_rate", "25")
    page.click("button:has-text('Invite')")
    page.wait_for_url(re.compile(r"/drivers\?invited="))
    row = page.locator("tr", has_text="Riley Quinn-Okafor")
    expect(row).to_contain_text("Never")
    # The driver uses the app: dispatch sees when.
    token = server.api_sign_in("riley.quinn@demo-carrier.example")
    status, _ = server.api("GET", "/v1/me", token=token)
    assert status == 200
    page.reload()
    expect(page.locator("tr", has_text="Riley Quinn-Okafor").locator("time")).to_have_count(1)

    # A driver with open trips cannot be deactivated until the work moves: the page says so instead of offering it.
    alex = page.locator("tr", has_text="Alex Rivera")
    expect(alex.locator("button:has-text('Deactivate')")).to_have_count(0)
    expect(alex).to_contain_text("Deactivate after their trips are handed over")
    # A form sent anyway (a page open from before the trip) is refused with the reason.
    page.evaluate("""id => { const f = document.createElement('form'); f.method = 'post'; f.action = `/drivers/${id}/deactivate`;
        const t = document.createElement('input'); t.type = 'hidden'; t.name = '_csrf'; t.value = document.querySelector('input[name=_csrf]').value;
        f.append(t); document.body.append(f); f.submit(); }""", alex.locator("a[href$='/edit']").get_attribute("href").split("/")[2])
    expect(page.locator(".form-error")).to_contain_text("still has open work")

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("tr", has_text="Riley Quinn-Okafor").locator("button:has-text('Deactivate')").click()
    page.wait_for_url(re.compile(r"/drivers\?changed="))
    expect(page.locator(".notice")).to_contain_text("Riley Quinn-Okafor is deactivated")
    expect(page.locator("h2", has_text="Deactivated")).to_be_visible()
    expect(page.locator(".muted-row", has_text="Riley Quinn-Okafor")).to_be_visible()
    shot(page, "drivers-deactivated")
    # No new work goes to them: the trip form does not offer them.
    page.goto(server.base + "/trips/new")
    expect(page.locator("#driver_id option", has_text="Riley Quinn-Okafor")).to_have_count(0)

    page.goto(server.base + "/drivers")
    page.locator(".muted-row", has_text="Riley Quinn-Okafor").locator("button:has-text('Reactivate')").click()
    expect(page.locator(".notice")).to_contain_text("Riley Quinn-Okafor is active again")
    expect(page.locator(".muted-row", has_text="Riley Quinn-Okafor")).to_have_count(0)


def test_search_with_spaces_and_an_edit_conflict_that_keeps_both_sides(page, server, browser, dispatcher_state):
    order = create_order(page, server, "O-9911")
    # A search of several words, as the browser's form sends it (spaces as '+').
    page.goto(server.base + "/board?status=new")
    page.fill("input[name=q]", "Sunshine Honda O-9911")
    page.keyboard.press("Enter")
    expect(page.locator("tr[data-href]")).to_have_count(1)
    expect(page.locator("input[name=q]")).to_have_value("Sunshine Honda O-9911")

    # Two dispatchers open the same order; the first saves a colour, the second a new model.
    other = browser.new_context(storage_state=dispatcher_state).new_page()
    page.goto(server.base + f"/orders/{order}/edit")
    other.goto(server.base + f"/orders/{order}/edit")
    page.fill("#v0_color", "Red")
    page.click("button:has-text('Save')")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}(\?(added|saved)=1)?$"))
    other.fill("#v0_model", "Civic")
    other.click("button:has-text('Save')")
    notice = other.locator("p.form-error")
    expect(notice).to_contain_text("Someone else changed this order")
    expect(notice).to_contain_text("your changes to Vehicle 1 model are marked below")
    expect(notice).not_to_contain_text("Color")  # the first dispatcher's change is not offered as this one's to redo
    expect(other.locator("#v0_model + .field-error, #v0_model ~ .field-error")).to_contain_text("Not saved: you typed “Civic”.")
    # The form now holds the saved order: saving again keeps the first dispatcher's colour.
    expect(other.locator("#v0_color")).to_have_value("Red")
    other.fill("#v0_model", "Civic")
    other.click("button:has-text('Save')")
    other.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}(\?(added|saved)=1)?$"))
    expect(other.locator("main")).to_contain_text("Civic")
    expect(other.locator("main")).to_contain_text("Red")
    expect(other.locator(".timeline")).to_contain_text("by dispatch@demo-carrier.example")
    other.context.close()


def test_fleet_page_flags_papers_and_shows_fuel_economy(page, server):
    page.goto(server.base + "/fleet")
    expect(page.locator("h1")).to_have_text("Fleet")
    row = page.locator("tr[data-unit='T-12']")
    expect(row).to_contain_text("Alex Rivera")
    expect(row).to_contain_text("413,250 mi")
    expect(row).to_contain_text("mpg")
    due = page.locator(".warn-panel")
    expect(due).to_contain_text("T-12")
    expect(due.locator(".paper-due")).to_contain_text("due")
    expect(due.locator(".paper-expired")).to_contain_text("expired")
    expect(page.locator("tr[data-unit='T-20']")).to_contain_text("Unassigned")
    expect(page.locator("tr[data-unit='T-20'] .badge")).to_have_text("in shop")
    shot(page, "fleet")


def test_map_shows_drivers_tracks_and_fences_and_an_order_marks_its_arrival(page, server):
    import datetime
    page.goto(server.base + "/map")
    expect(page.locator("h1")).to_have_text("Map")
    expect(page.locator("svg .driver")).to_contain_text("Alex Rivera")
    expect(page.locator("svg .track title").first).to_have_text("Trip T-1002")
    expect(page.locator("svg .fence.pickup text", has_text="O-5004")).to_have_count(1)
    row = page.locator("tbody tr", has_text="Alex Rivera")
    # The next stop is the one the driver's app names, the one due first on the road: O-5004's pickup window
    # opened yesterday, while O-5003 (on the truck) is due in Miami in two days.
    expect(row).to_contain_text("pickup of O-5004")
    expect(row.locator("td").nth(5)).to_have_text(re.compile(r"^[\d,.]+ mi$"))  # miles, as trips are measured
    expect(row.locator("td").nth(6).locator("time")).to_have_count(1)  # a computed ETA
    shot(page, "map")

    # Alex parks three minutes in the Savannah yard: the order says when the truck arrived.
    token = server.api_sign_in(DRIVER)
    status, orders = server.api("GET", "/v1/orders", token=token)
    assert status == 200
    order = next(o for o in orders["items"] if o["number"] == "O-5004")
    yard = order["pickup"]["location"]
    now = datetime.datetime.now(datetime.timezone.utc)
    fixes = [{"latitude": yard["latitude"] + 0.0003, "longitude": yard["longitude"], "accuracy_meters": 6,
              "recorded_at": (now - datetime.timedelta(seconds=240 - 20 * i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")} for i in range(10)]
    status, result = server.api("POST", "/v1/locations", {"fixes": fixes}, token=token)
    assert status == 200 and result["arrivals"][0]["stop"] == "pickup", result
    page.goto(server.base + f"/orders/{order['id']}")
    expect(page.locator(".arrived")).to_contain_text("Arrived")
    expect(page.locator("body")).to_contain_text("Map point 32.08090, -81.09120")

    # The dispatcher moves the delivery's map point: a wrong one is refused next to the field.
    page.goto(server.base + f"/orders/{order['id']}/edit")
    page.fill("#delivery_point", "north of here")
    page.click("text=Save changes")
    expect(page.locator("#delivery_point + .field-error, #delivery_point ~ .field-error")).to_contain_text("latitude, longitude")
    page.fill("#delivery_point", "28.4810, -81.3470")
    page.fill("#delivery_radius", "1000")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("Map point 28.48100, -81.34700 · fence 1000 ft")
    status, saved = server.api("GET", f"/v1/orders/{order['id']}", token=token)
    assert status == 200 and saved["delivery"]["geofence_radius_meters"] == 305  # the API keeps metres
    # 491 ft is 150 m, shown to the nearest 5 ft; saved again as shown, it stays 150 m (490 ft would be 149).
    page.goto(server.base + f"/orders/{order['id']}/edit")
    expect(page.locator("#delivery_radius")).to_have_value("1000")
    page.fill("#delivery_radius", "491")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("fence 490 ft")
    page.goto(server.base + f"/orders/{order['id']}/edit")
    page.fill("#v0_color", "Pearl")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("Pearl")
    status, saved = server.api("GET", f"/v1/orders/{order['id']}", token=token)
    assert saved["delivery"]["geofence_radius_meters"] == 150 and saved["vehicle"]["color"] == "Pearl", saved["delivery"]
    # A new delivery address with the point left as it was: the old address's point (and its fence) goes with it.
    page.goto(server.base + f"/orders/{order['id']}/edit")
    page.fill("#delivery_address", "1 Bay St, Tampa, FL 33602")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("1 Bay St, Tampa, FL 33602")
    expect(page.locator("body")).not_to_contain_text("Map point 28.48100")
    expect(page.locator("body")).to_contain_text("Map point 32.08090, -81.09120")
    # Without a geocoder nothing finds the new address's point: the page says the stop lost it.
    expect(page.locator(".notice")).to_have_text(
        "Saved. The delivery's map point went with the old address: add the new one's on Edit to watch for arrival there.")


def test_the_map_reads_like_a_map_without_a_tile_server(page, server):
    import math
    import urllib.parse
    page.goto(server.base + "/map")
    base = page.locator("svg image.base-map")
    expect(base).to_have_count(1)
    href = base.get_attribute("href")
    answer = page.request.get(server.base + href)
    assert answer.status == 200 and answer.headers["content-type"].startswith("image/svg+xml"), answer.status
    assert "private" in answer.headers["cache-control"]
    # The largest cities in view are named, beside their dots.
    expect(page.locator("svg .city text").first).to_be_visible()
    expect(page.locator("figcaption")).to_contain_text("Base map: U.S. Census Bureau, Natural Earth")
    # Water is water and land is land where they are: with the shapes on top hidden, the Atlantic off
    # Georgia is the water colour and inland Georgia the land colour, at the pixels the projection puts them.
    wait_until(page, "(() => { const i = new Image(); i.src = document.querySelector('image.base-map').getAttribute('href');"
                     " return i.decode().then(() => true, () => false); })()")
    shot(page, "map-base")
    page.evaluate("document.querySelectorAll('.map .track, .map .fence, .map .driver, .map .city').forEach((e) => { e.style.display = 'none'; })")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(href).query))
    left, top, scale = float(query["left"]), float(query["top"]), float(query["scale"])
    svg = page.locator("figure.map svg")
    box = svg.bounding_box()
    picture = Image.open(io.BytesIO(svg.screenshot())).convert("RGB")
    ratio = picture.width / 960

    def pixel(latitude, longitude):
        x = (math.radians(longitude) - left) * scale
        y = (-math.log(math.tan(math.pi / 4 + math.radians(latitude) / 2)) - top) * scale
        assert 0 <= x <= 960 and 0 <= y <= 540, f"{latitude}, {longitude} is off the map ({x:.0f}, {y:.0f})"
        return picture.getpixel((int(x * ratio), int(y * ratio)))

    def near(colour, expected):
        return all(abs(a - b) <= 14 for a, b in zip(colour, expected))

    assert near(pixel(30.9, -79.6), (0xdf, 0xe9, 0xf2)), pixel(30.9, -79.6)  # the Atlantic, east of Brunswick
    assert near(pixel(32.4, -83.2), (0xf8, 0xf6, 0xf0)), pixel(32.4, -83.2)  # Georgia, between Macon and Dublin
    assert box["width"] > 0
    # A view no map would show is refused with the usual error.
    for bad in ["left=1&top=1&scale=abc", "left=nan&top=1&scale=900", "left=1&top=1&scale=1e300", "top=1&scale=900"]:
        refused = page.request.get(server.base + "/map/base.svg?" + bad)
        assert refused.status == 400, (bad, refused.status)


def test_saving_an_order_keeps_its_exact_map_point_and_the_arrival_made_there(page, server):
    import datetime
    # A map point pasted finer than the form shows it (7 decimals), and the driver arrives there.
    driver = server.api_sign_in(DRIVER)
    status, orders = server.api("GET", "/v1/orders", token=driver)
    order = next(o for o in orders["items"] if o["number"] == "O-5005")
    page.goto(server.base + f"/orders/{order['id']}/edit")
    page.fill("#pickup_point", "30.3321987, -81.6556543")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("Map point 30.33220, -81.65565")
    point = {"latitude": 30.3321987, "longitude": -81.6556543}
    now = datetime.datetime.now(datetime.timezone.utc)
    fixes = [{"latitude": point["latitude"] + 0.0002, "longitude": point["longitude"], "accuracy_meters": 5,
              "recorded_at": (now - datetime.timedelta(seconds=900 - 20 * i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")} for i in range(10)]
    status, result = server.api("POST", "/v1/locations", {"fixes": fixes}, token=driver)  # earlier than other tests' fixes
    assert status == 200 and [a["stop"] for a in result["arrivals"]] == ["pickup"], result

    # Another field edited in the console: the point stays as it was entered, and the arrival made there stays.
    page.goto(server.base + f"/orders/{order['id']}/edit")
    expect(page.locator("#pickup_point")).to_have_value("30.33220, -81.65565")
    page.fill("#v0_color", "Graphite")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("Graphite")
    expect(page.locator(".arrived")).to_contain_text("Arrived")
    status, orders = server.api("GET", "/v1/orders", token=driver)
    saved = next(o for o in orders["items"] if o["number"] == "O-5005")
    assert saved["pickup"]["location"] == point and saved["arrived_at_pickup"], saved


def test_an_order_vin_with_a_wrong_check_digit_is_kept_only_when_confirmed(page, server):
    page.goto(server.base + "/orders/new")
    page.fill("#number", "VIN-CHECK-1")
    page.fill("#v0_make", "Honda")
    page.fill("#v0_vin", "1HGCM82633A004353")  # …352 is right: a typo in the last digit
    page.fill("#pickup_address", "Savannah, GA")
    page.fill("#delivery_address", "Orlando, FL")
    page.fill("#v0_price", "900")
    page.click("text=Create order")
    field = page.locator("#v0_vin ~ .field-error")
    expect(field).to_contain_text("check digit")
    expect(page.locator("input[name=accept_vin_warning]")).to_have_count(1)
    shot(page, "order-vin-warning")
    page.check("input[name=accept_vin_warning]")
    page.click("text=Create order")
    expect(page.locator("h1")).to_contain_text("VIN-CHECK-1")
    expect(page.locator("body")).to_contain_text("1HGCM82633A004353")


def test_fleet_csv_import_names_bad_lines_and_then_adds_the_units(page, server):
    page.goto(server.base + "/fleet")
    page.click("text=Import CSV")
    expect(page.locator("h1")).to_have_text("Import trucks and trailers")
    page.fill("#csv", "unit_number,kind,make,year,vin\nT-50,truck,Kenworth,2021,1XKYD49X8MJ441234\nTR-51,boat,,,\n")
    page.click("button:has-text('Import')")
    problems = page.locator(".form-error")
    expect(problems).to_contain_text("Nothing was imported")
    expect(problems.locator("tr", has_text="kind")).to_contain_text("3")
    shot(page, "fleet-import-problems")
    page.fill("#csv", "unit_number,kind,make,year,notes\nT-50,truck,Kenworth,2021,\nTR-51,trailer,Cottrell,2019,\nT-12,truck,Peterbilt,2019,New tires Nov 2026\n")
    page.click("button:has-text('Import')")
    expect(page.locator(".notice")).to_contain_text("Imported: 2 new, 1 updated.")
    expect(page.locator("tr[data-unit='T-50']")).to_contain_text("Kenworth")
    expect(page.locator("tr[data-unit='TR-51']")).to_contain_text("Cottrell")


def test_a_unit_page_adds_edits_assigns_and_keeps_papers_and_photos(page, server, tmp_path):
    page.goto(server.base + "/fleet")
    page.click("text=Add trailer")
    expect(page.locator("h1")).to_have_text("New trailer")
    page.fill("#unit_number", "TR-60")
    page.fill("#year", "1850")
    page.fill("#capacity_cars", "9")
    page.select_option("#trailer_type", "open")
    page.click("button:has-text('Add trailer')")
    expect(page.locator("#year + .field-error, .field:has(#year) .field-error")).to_contain_text("1900")
    expect(page.locator("#unit_number")).to_have_value("TR-60")  # what was typed stays
    page.fill("#year", "2020")
    page.click("button:has-text('Add trailer')")
    expect(page.locator("h1")).to_contain_text("TR-60")
    expect(page.locator("#capacity_cars")).to_have_value("9")

    # Details edit with the form's version.
    page.fill("#make", "Cottrell")
    page.fill("#model", "CX-09LS")
    page.click("button:has-text('Save details')")
    expect(page.locator(".notice")).to_have_text("Saved.")
    expect(page.locator(".page-head")).to_contain_text("2020 Cottrell CX-09LS")

    # Someone else saves meanwhile: this form's save is refused and says so.
    page.fill("#notes", "Ramp 3 sticks")
    other = page.context.new_page()  # another tab (or another dispatcher) saves first
    other.goto(page.url)
    other.fill("#make", "Cottrell Inc")
    other.click("button:has-text('Save details')")
    expect(other.locator(".notice")).to_have_text("Saved.")
    other.close()
    page.click("button:has-text('Save details')")
    expect(page.locator(".form-error")).to_contain_text("Someone else changed this unit")
    expect(page.locator("#make")).to_have_value("Cottrell Inc")

    # Given to a driver.
    page.select_option("#driver_id", label="Alex Rivera")
    page.click("#driver button:has-text('Assign')")
    expect(page.locator("#driver_id option:checked")).to_have_text("Alex Rivera")

    # A paper, checked before it is kept.
    page.select_option("#paper_kind", "registration")
    page.fill("#paper_number", "TX-REG-60")
    page.fill("#paper_expires", "2027-01-15")
    page.click("button:has-text('Add paper')")
    expect(page.locator("#papers tr[data-paper='Registration']")).to_contain_text("TX-REG-60")

    # Photos: a JPEG is kept; a PDF is refused with the server's reason.
    jpeg = tmp_path / "ramp.jpg"
    jpeg.write_bytes(photo("TR-60 ramp"))
    pdf = tmp_path / "title.pdf"
    pdf.write_bytes(b"%PDF-1.7\n%" + bytes(2_000))
    page.set_input_files("#photo-files", str(pdf))
    page.click("#photos button:has-text('Upload')")
    expect(page.locator("[data-upload-error]")).to_contain_text("title.pdf")
    expect(page.locator("[data-upload-error]")).to_contain_text("photo")
    page.set_input_files("#photo-files", str(jpeg))
    page.click("#photos button:has-text('Upload')")
    expect(page.locator("#photos figure")).to_have_count(1)
    image = page.locator("#photos figure img")
    expect(image).to_have_attribute("alt", re.compile("Photo of TR-60"))
    answer = page.request.get(server.base + image.get_attribute("src"))
    assert answer.status == 200 and answer.body() == jpeg.read_bytes()
    shot(page, "unit")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#photos button:has-text('Delete')")
    expect(page.locator("#photos figure")).to_have_count(0)

    # A paper added by mistake is removed from the same page.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#papers button[aria-label='Remove Registration']")
    expect(page.locator("#papers tr[data-paper='Registration']")).to_have_count(0)
    expect(page.locator("#papers")).to_contain_text("No papers yet")

    # Alex photographs his new trailer from the road: the open page shows it without a reload.
    unit_id = page.url.split("/fleet/")[1].split("?")[0].split("#")[0]
    status, unit = server.api("POST", f"/v1/equipment/{unit_id}/photos", token=server.api_sign_in(DRIVER), raw=photo("from the road"),
                              headers={"Content-Type": "image/jpeg"})
    assert status == 201 and len(unit["photos"]) == 1, (status, unit)
    expect(page.locator("#photos figure")).to_have_count(1)
    expect(page.locator("#photos figcaption")).to_contain_text("Alex Rivera")
    page.goto(server.base + "/fleet")
    expect(page.locator("tr[data-unit='TR-60']")).to_contain_text("Alex Rivera")


def test_a_trip_is_edited_started_completed_and_another_cancelled(page, server, browser, dispatcher_state):
    trip = create_trip(page, server, "T-EDIT-1")
    shot(page, "trip-planned")
    page.click("a:has-text('Edit trip')")
    expect(page.locator("#number")).to_have_value("T-EDIT-1")
    expect(page.locator("#revenue")).to_have_value("2400.00")
    page.fill("#number", "T-EDIT-2")
    page.fill("#destination", "Tampa, FL")
    page.fill("#miles", "")  # left empty: the saved mileage stays
    shot(page, "trip-edit")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(server.base + f"/trips/{trip}?saved=1")
    expect(page.locator("h1")).to_contain_text("Trip T-EDIT-2")
    expect(page.locator("main")).to_contain_text("Savannah, GA → Tampa, FL")
    expect(page.locator("main")).to_contain_text("310")

    # Another dispatcher had the form open from before that save: theirs is refused and shows both sides.
    other = browser.new_context(storage_state=dispatcher_state).new_page()
    other.goto(server.base + f"/trips/{trip}/edit")
    page.goto(server.base + f"/trips/{trip}/edit")
    page.fill("#miles", "333")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(server.base + f"/trips/{trip}?saved=1")
    other.fill("#origin", "Macon, GA")
    other.click("button:has-text('Save changes')")
    notice = other.locator("p.form-error")
    expect(notice).to_contain_text("Someone else changed this trip")
    expect(notice).to_contain_text("your changes to From are marked below")
    expect(notice).not_to_contain_text("Miles")  # the other dispatcher's change is not offered as theirs to redo
    expect(other.locator("#origin")).to_have_value("Savannah, GA")
    expect(other.locator("#origin + .field-error")).to_have_text("Not saved: you typed “Macon, GA”.")
    expect(other.locator("#miles")).to_have_value("333")
    expect(other.locator("#miles + .field-error")).to_have_count(0)
    shot(other, "trip-edit-conflict")
    # Made again on the fresh form, the change saves and keeps the other dispatcher's miles.
    other.fill("#origin", "Macon, GA")
    other.fill("#destination", "")  # left empty: the saved destination stays
    other.click("button:has-text('Save changes')")
    other.wait_for_url(server.base + f"/trips/{trip}?saved=1")
    expect(other.locator("main")).to_contain_text("Macon, GA → Tampa, FL")
    expect(other.locator("main")).to_contain_text("333")
    other.context.close()

    # A trip whose number another has is refused next to the number.
    create_trip(page, server, "T-EDIT-3")
    page.click("a:has-text('Edit trip')")
    page.fill("#number", "T-EDIT-2")
    page.click("button:has-text('Save changes')")
    expect(page.locator(".field-error")).to_contain_text("already exists")
    expect(page.locator("#number")).to_have_value("T-EDIT-2")
    # Miles as the API takes them (a long cross-country run and more).
    page.fill("#number", "T-EDIT-3")
    page.fill("#miles", "250000")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(re.compile(r"/trips/[0-9a-f-]{36}(\?(added|saved)=1)?$"))
    expect(page.locator("main")).to_contain_text("250,000")

    # Status: started, then completed (no vehicles are waiting); the other one cancelled after a confirmation.
    page.goto(server.base + f"/trips/{trip}")
    page.click("button:has-text('Start trip')")
    expect(page.locator("h1 .badge")).to_have_text("In progress")
    expect(page.locator(".notice")).to_have_text("Trip T-EDIT-2 started.")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Mark completed')")
    expect(page.locator("h1 .badge")).to_have_text("Completed")
    expect(page.locator(".notice")).to_have_text("Trip T-EDIT-2 marked completed.")
    expect(page.locator("a:has-text('Edit trip')")).to_have_count(0)
    # Its figures are settled: the edit form is not served, even by address.
    response = page.goto(server.base + f"/trips/{trip}/edit")
    assert response.status == 409
    expect(page.locator("main")).to_contain_text("only planned trips and trips under way are edited")
    page.goto(server.base + "/trips")
    page.click("text=T-EDIT-3")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Cancel trip')")
    expect(page.locator("h1 .badge")).to_have_text("Cancelled")
    expect(page.locator(".notice")).to_have_text("Trip T-EDIT-3 cancelled. The driver is told.")
    expect(page.locator("#trip-money")).to_contain_text("— (cancelled)")
    # A cancelled trip takes no more orders: the page offers none.
    expect(page.locator("a:has-text('New order on this trip')")).to_have_count(0)
    expect(page.locator("button:has-text('Add to trip')")).to_have_count(0)
    shot(page, "trip-cancelled")


def test_no_page_scrolls_sideways_on_a_phone(browser, dispatcher_state, server):
    """Wide lists scroll inside their own box; the page itself stays as wide as the phone."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, storage_state=dispatcher_state)
    page = context.new_page()
    page.goto(server.base + "/trips")
    trip = page.locator("tbody tr a").first.get_attribute("href")
    page.goto(server.base + "/board")
    order = page.locator("tr[data-href]").first.get_attribute("data-href")
    for path in ["/board", "/trips", trip, "/drivers", "/fleet", "/map", "/messages", "/pay", order, "/orders/new", "/trips/new"]:
        page.goto(server.base + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
        # The frame leaves the phone's screen to the page: two short rows, the sections in one that scrolls.
        assert page.locator("header.top").bounding_box()["height"] <= 90, path
        expect(page.locator("header.top")).to_contain_text("Sign out")
    # The current section is in view even when the row of sections scrolls (Pay is past the edge).
    page.goto(server.base + "/pay")
    current = page.locator(".main-nav a[aria-current=page]").bounding_box()
    assert current["x"] >= 0 and current["x"] + current["width"] <= 390, current
    shot(page, "phone-new-trip")
    page.goto(server.base + trip)
    shot(page, "phone-trip")
    context.close()


def test_trip_numbers_ignore_capitals_and_an_import_finds_the_trip_either_way(page, server):
    upper = create_trip(page, server, "CI-Z")
    # "ci-z" would read as the same trip to the driver: refused next to the number, nothing made.
    page.goto(server.base + "/trips/new")
    page.fill("#number", "ci-z")
    page.fill("#origin", "Savannah, GA")
    page.fill("#destination", "Orlando, FL")
    page.fill("#revenue", "2400")
    page.fill("#miles", "310")
    page.click("button:has-text('Create trip')")
    expect(page.locator("#number ~ .field-error")).to_contain_text("Trip CI-Z already has this number (numbers ignore capital letters).")
    page.goto(server.base + "/trips")
    expect(page.locator("tbody tr a", has_text=re.compile(r"^CI-Z$"))).to_have_count(1)
    expect(page.locator("tbody tr a", has_text=re.compile(r"^ci-z$"))).to_have_count(0)
    # An import naming the trip in other capitals finds it (several lookalikes saved before the rule are
    # refused instead: TripNumbersTests).
    header = "number,pickup_address,delivery_address,revenue,trip\n"
    page.goto(server.base + "/orders/import")
    page.fill("#csv", header + "O-CI-1,1 Harbor Rd Savannah GA,9 Main St Orlando FL,900,ci-z\n"
                               "O-CI-2,1 Harbor Rd Savannah GA,9 Main St Orlando FL,900,\n")
    page.click("button:has-text('Import')")
    # One went to the trip's driver, one waits for one: the board opens on New and says where each went.
    page.wait_for_url(re.compile(r"/board\?status=new"))
    expect(page.locator(".notice")).to_have_text("Imported 2 orders: 1 on the New tab, 1 on Assigned.")
    page.goto(server.base + f"/trips/{upper}")
    expect(page.locator("main")).to_contain_text("O-CI-1")


def test_an_address_that_is_no_page_opens_a_page_not_json(page, anonymous_page, server):
    # A refused form is answered at the address it posted to; opened again from the address bar, that address shows a page.
    page.goto(server.base + "/orders/new")
    page.fill("#number", "O-404-1")
    page.fill("#v0_price", "twelve")
    page.click("button:has-text('Create order')")
    expect(page.locator("#v0_price + .field-error")).to_be_visible()
    assert page.url == server.base + "/orders"
    page.goto(page.url)
    assert page.url == server.base + "/board"
    # A trip's actions open the trip; a unit's and a driver's open theirs.
    trip = create_trip(page, server, "T-404-1")
    for action in ["status", "assign", "orders", "orders/some-order/remove"]:
        page.goto(server.base + f"/trips/{trip}/{action}")
        assert page.url == server.base + f"/trips/{trip}", action
    page.goto(server.base + "/drivers/some-driver/deactivate")
    assert page.url == server.base + "/drivers"

    # An address that never was a page: the console's own page, in its frame, with the way back.
    response = page.goto(server.base + "/trips/" + trip + "/nothing-here")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("Page not found")
    expect(page.locator("main")).to_contain_text(f"There is no page at /trips/{trip}/nothing-here")
    expect(page.locator("nav.main-nav")).to_be_visible()
    shot(page, "not-found")
    page.click("a:has-text('Back to the board')")
    page.wait_for_url(server.base + "/board")

    # Signed out, the same page offers to sign in.
    response = anonymous_page.goto(server.base + "/no-such-page")
    assert response.status == 404
    expect(anonymous_page.locator("h1")).to_have_text("Page not found")
    expect(anonymous_page.locator("a.button")).to_have_text("Sign in")
    head = anonymous_page.request.head(server.base + "/no-such-page", headers={"Accept": "text/html"})
    assert head.status == 404 and head.headers["content-type"].startswith("text/html") and head.body() == b""
    # The API keeps its JSON answer, whatever the client accepts.
    api = anonymous_page.request.get(server.base + "/v1/no-such-endpoint", headers={"Accept": "text/html"})
    assert api.status == 404 and api.json()["error"]["code"] == "route_not_found"
    api = anonymous_page.request.get(server.base + "/no-such-page")
    assert api.status == 404 and api.json()["error"]["code"] == "route_not_found"


def test_a_cancelled_order_earns_its_trip_nothing(page, server):
    trip = create_trip(page, server, "T-CXL-1")
    create_order(page, server, "O-CXL-1", trip_label="T-CXL-1 · Savannah, GA → Orlando, FL")
    create_order(page, server, "O-CXL-2", trip_label="T-CXL-1 · Savannah, GA → Orlando, FL")
    page.goto(server.base + f"/trips/{trip}/edit")
    page.fill("#miles", "311")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(server.base + f"/trips/{trip}?saved=1")
    # Alex is paid 25 % of revenue; the pay, left as the form showed it, follows a new revenue.
    expect(page.locator("#trip-money")).to_contain_text("$600.00")
    page.goto(server.base + f"/trips/{trip}/edit")
    page.fill("#revenue", "2800")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(server.base + f"/trips/{trip}?saved=1")
    expect(page.locator("#trip-money")).to_contain_text("$700.00")
    page.goto(server.base + f"/trips/{trip}/edit")
    page.fill("#revenue", "2400")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(server.base + f"/trips/{trip}?saved=1")
    expect(page.locator("#revenue-source")).to_have_text("set by hand · its orders $2,300.00")
    # $2,400 over 311 miles is $7.717…: rounded, not cut.
    expect(page.locator("dd", has_text="($7.72 per mile)")).to_be_visible()
    page.click("a:has-text('O-CXL-2')")
    expect(page.locator("#tracking")).to_have_count(1)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Cancel order')")
    # A cancelled order has no tracking link to give or make: no empty heading either.
    expect(page.locator("h1 .badge")).to_have_text("Cancelled")
    expect(page.locator("#tracking")).to_have_count(0)
    page.goto(server.base + f"/trips/{trip}")
    expect(page.locator("#revenue-source")).to_have_text("set by hand · its orders $1,150.00")
    # Let it follow the orders again: the cancelled one earns nothing, pay on the terms follows.
    page.click("button:has-text('Follow the orders')")
    expect(page.locator(".notice")).to_have_text("Revenue follows the orders: $1,150.00.")
    expect(page.locator("#revenue-source")).to_have_text("from its orders")
    expect(page.locator("#trip-money")).to_contain_text("$287.50")
    # Under way with a vehicle still to pick up, the page offers no completion that would be refused, and says why.
    page.click("button:has-text('Start trip')")
    expect(page.locator("h1 .badge")).to_have_text("In progress")
    expect(page.locator("button:has-text('Mark completed')")).to_have_count(0)
    expect(page.locator("#trip-head")).to_contain_text("1 vehicle still to pick up")


def test_a_trip_page_follows_its_status_driver_and_expenses_live(page, server, browser, dispatcher_state):
    trip = create_trip(page, server, "T-LIVE-1")
    page.evaluate("window.__sameDocument = true")
    # Another dispatcher starts the trip; the driver records a toll on the road.
    other = browser.new_context(storage_state=dispatcher_state).new_page()
    other.goto(server.base + f"/trips/{trip}")
    other.click("button:has-text('Start trip')")
    expect(other.locator("h1 .badge")).to_have_text("In progress")
    other.context.close()
    status, body = server.api("POST", "/v1/expenses", {"trip_id": trip, "category": "other", "amount_cents": 1850,
                                                       "date": "2026-11-22", "notes": "Bridge toll"},
                              token=server.api_sign_in(DRIVER))
    assert status in (200, 201), body

    # The open page follows without a reload: status, what it offers, the money and the expense.
    expect(page.locator("h1 .badge")).to_have_text("In progress", timeout=10_000)
    expect(page.locator("button:has-text('Mark completed')")).to_be_visible()
    expect(page.locator("button:has-text('Start trip')")).to_have_count(0)
    expect(page.locator("#trip-expenses")).to_contain_text("Bridge toll", timeout=10_000)
    expect(page.locator("#trip-expenses tbody tr")).to_contain_text("Alex Rivera")
    expect(page.locator("#trip-money")).to_contain_text("$18.50")
    assert page.evaluate("window.__sameDocument") is True
    shot(page, "trip-live")


def test_a_trip_with_many_expenses_shows_a_page_of_them_with_the_totals_of_all(page, server):
    trip = create_trip(page, server, "T-MANY-1")
    page.click("button:has-text('Start trip')")
    expect(page.locator("h1 .badge")).to_have_text("In progress")
    token = server.api_sign_in(DRIVER)
    for index in range(55):
        category, cents = ("tolls", 1000) if index % 5 else ("fuel", 10000)
        status, body = server.api("POST", "/v1/expenses", {"trip_id": trip, "category": category, "amount_cents": cents,
                                                           "date": "2026-11-22", "notes": f"Expense {index + 1}"}, token=token)
        assert status in (200, 201), body
    page.goto(server.base + f"/trips/{trip}")
    expenses = page.locator("#trip-expenses")
    expect(expenses.locator("tbody tr")).to_have_count(50)
    # 11 fills at $100 and 44 tolls at $10, all of them, whatever the page.
    expect(expenses.locator(".expense-totals")).to_contain_text("Fuel $1,100.00 (11)")
    expect(expenses.locator(".expense-totals")).to_contain_text("Tolls $440.00 (44)")
    expect(expenses.locator(".expense-totals")).to_contain_text("Total $1,540.00")
    expect(expenses.locator(".pager")).to_contain_text("1–50 of 55")
    shot(page, "trip-many-expenses")
    expenses.locator("a[rel=next]").click()
    expect(page.locator("#trip-expenses tbody tr")).to_have_count(5)
    expect(page.locator("#trip-expenses .pager")).to_contain_text("51–55 of 55")
    expect(page.locator("#trip-money")).to_contain_text("$1,540.00")


def test_an_open_order_page_follows_an_edit_made_elsewhere(page, server, browser, dispatcher_state):
    order = create_order(page, server, "O-LIVE-7")
    page.evaluate("window.__sameDocument = true")
    other = browser.new_context(storage_state=dispatcher_state).new_page()
    other.goto(server.base + f"/orders/{order}/edit")
    other.fill("#v0_price", "1,400.00")
    other.fill("#v0_model", "Accord Hybrid")
    other.click("button:has-text('Save changes')")
    other.wait_for_url(re.compile(rf"/orders/{order}"))
    other.context.close()
    # Revenue and vehicle, not only the status and the panels below them, follow without a reload.
    expect(page.locator("#order-summary")).to_contain_text("$1,400.00", timeout=10_000)
    expect(page.locator("#order-vehicles")).to_contain_text("Accord Hybrid")
    assert page.evaluate("window.__sameDocument") is True


def test_a_refusal_from_the_store_reads_as_words_next_to_its_field(page, server):
    # Every problem at once: the store's rules (number, dates) beside the form's own (the amount).
    page.goto(server.base + "/trips/new")
    page.fill("#start_date", "2026-11-24")
    page.fill("#end_date", "2026-11-20")
    page.fill("#revenue", "twelve")
    page.click("button:has-text('Create trip')")
    expect(page.locator("#number + .field-error")).to_have_text("This is required.")
    expect(page.locator("#end_date + .field-error")).to_have_text("This ends before it starts.")
    expect(page.locator("#revenue + .field-error")).to_contain_text("Enter an amount in dollars")
    expect(page.locator("p.form-error")).to_contain_text("Fix what is marked below")
    shot(page, "trip-form-errors")

    trip = create_trip(page, server, "T-WORDS-1")
    page.goto(server.base + f"/trips/{trip}/edit")
    page.fill("#start_date", "2026-11-24")
    page.fill("#end_date", "2026-11-20")
    page.click("button:has-text('Save changes')")
    error = page.locator("#end_date + .field-error")
    expect(error).to_have_text("This ends before it starts.")
    expect(page.locator("main")).not_to_contain_text("end_date")
    page.fill("#end_date", "2026-11-26")
    page.fill("#number", "T-WORDS\u200b-1")
    page.click("button:has-text('Save changes')")
    expect(page.locator("#number + .field-error")).to_have_text("This is one line of visible text.")
    # An amount past the limit says the limit, not how to type an amount.
    page.fill("#number", "T-WORDS-1")
    page.fill("#revenue", "1000000000")
    page.click("button:has-text('Save changes')")
    expect(page.locator("#revenue + .field-error")).to_have_text("At most $100,000,000.00.")


def test_a_delivery_window_before_the_pickup_is_refused_next_to_it(page, server):
    page.goto(server.base + "/orders/new")
    page.fill("#number", "O-EARLY-1")
    page.fill("#v0_price", "900")
    page.fill("#pickup_address", "Savannah, GA")
    page.fill("#pickup_window_start", "2026-11-20")
    page.fill("#delivery_address", "Orlando, FL")
    page.fill("#delivery_window_start", "2026-11-09")
    page.fill("#delivery_window_end", "2026-11-10")
    page.click("button:has-text('Create order')")
    expect(page.locator(".field-error", has_text="This is before the pickup window starts (2026-11-20).")).to_be_visible()
    assert page.url == server.base + "/orders"


def test_a_trip_without_a_driver_offers_no_start(page, server):
    trip = create_trip(page, server, "T-NODRIVER-1", driver="Assign later")
    expect(page.locator("h1 .badge")).to_have_text("Planned")
    expect(page.locator("button:has-text('Start trip')")).to_have_count(0)
    expect(page.locator("button:has-text('Cancel trip')")).to_have_count(1)
    # Orders imported onto it wait for a driver: the board opens on New, where they are.
    page.goto(server.base + "/orders/import")
    page.fill("#csv", "number,pickup_address,delivery_address,revenue,trip\n"
                      "O-NODRIVER-1,1 Harbor Rd Savannah GA,9 Main St Orlando FL,900,T-NODRIVER-1\n")
    page.click("button:has-text('Import')")
    page.wait_for_url(re.compile(r"/board\?status=new"))
    expect(page.locator(".notice")).to_have_text("Imported 1 order. It is on the New tab.")
    expect(page.locator("tr[data-href]", has_text="O-NODRIVER-1")).to_have_count(1)
    # Each change on the trip's page says what it did.
    page.goto(server.base + f"/trips/{trip}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("form[action$='/remove'] button:has-text('Remove')")
    expect(page.locator(".notice")).to_have_text("Order O-NODRIVER-1 taken off this trip. It waits on the board under New.")
    page.select_option("#order_id", page.locator("#order_id option", has_text="O-NODRIVER-1").get_attribute("value"))
    page.click("button:has-text('Add to trip')")
    expect(page.locator(".notice")).to_have_text("Order O-NODRIVER-1 added to this trip.")
    page.select_option("#driver_id", label="Alex Rivera")
    page.click("button:has-text('Assign')")
    expect(page.locator(".notice")).to_have_text("Trip T-NODRIVER-1 assigned to Alex Rivera.")
    shot(page, "trip-assigned-notice")
    # The notice is said once: a reload does not repeat it.
    page.reload()
    expect(page.locator(".notice")).to_have_count(0)
    page.select_option("#driver_id", label="Unassigned")
    page.click("button:has-text('Assign')")
    expect(page.locator(".notice")).to_have_text("Trip T-NODRIVER-1 has no driver now: it waits for one.")
    # Cancelled with its vehicle waiting and no driver: the confirmation and the notice say just that.
    expect(page.locator("form:has(button:has-text('Cancel trip'))")).to_have_attribute(
        "data-confirm", "Cancel trip T-NODRIVER-1 for good? 1 vehicle still waiting goes back to the board. Press OK to cancel the trip.")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Cancel trip')")
    expect(page.locator(".notice")).to_have_text("Trip T-NODRIVER-1 cancelled. 1 vehicle that was waiting is back on the board.")


def test_an_order_form_marks_every_problem_at_once(page, server):
    page.goto(server.base + "/orders/new")
    page.fill("#v0_vin", "1HGCM82633A004353")  # …352 is right
    page.fill("#delivery_radius", "5")
    page.fill("#pickup_window_start", "2026-11-20")
    page.fill("#delivery_address", "Orlando, FL")
    page.fill("#delivery_window_end", "2026-11-10")
    page.fill("#v0_price", "12,34")
    page.click("button:has-text('Create order')")
    for field, text in [("number", "This is required."), ("v0_vin", "check digit"), ("delivery_radius", "whole number from"),
                        ("pickup_address", "This is required."), ("delivery_window_end", "before the pickup window starts"),
                        ("v0_price", "Use a dot for cents")]:
        expect(page.locator(f"#{field} ~ .field-error")).to_contain_text(text)
    expect(page.locator("input[name=accept_vin_warning]")).to_have_count(1)
    shot(page, "order-form-every-problem")
    # The VIN confirmed while other fields are still wrong stays confirmed.
    page.check("input[name=accept_vin_warning]")
    page.click("button:has-text('Create order')")
    expect(page.locator("#v0_vin ~ .field-error")).to_have_count(0)
    expect(page.locator("input[name=accept_vin_warning]")).to_be_checked()

    # Editing: a blanked address and a reversed window show together too.
    page.fill("#number", "O-MANY-1")
    page.fill("#delivery_radius", "")
    page.fill("#pickup_address", "Savannah, GA")
    page.fill("#delivery_window_end", "2026-11-24")
    page.fill("#v0_price", "1234")
    page.click("button:has-text('Create order')")
    expect(page.locator("h1")).to_contain_text("O-MANY-1")
    page.click("text=Edit")
    page.fill("#pickup_address", "")
    page.fill("#delivery_window_start", "2026-12-10")
    page.fill("#delivery_window_end", "2026-12-01")
    page.click("text=Save changes")
    expect(page.locator("#pickup_address ~ .field-error")).to_contain_text("This is required.")
    expect(page.locator("#delivery_window_end ~ .field-error")).to_contain_text("This ends before it starts.")


def test_driver_and_unit_forms_mark_every_problem_at_once(page, server):
    page.goto(server.base + "/drivers/new")
    page.fill("#name", "   ")
    page.fill("#email", "casey@localhost")
    page.select_option("#pay_type", "per_mile")
    page.fill("#pay_rate", "150")
    page.click("button:has-text('Invite')")
    for field, text in [("name", "This is required."), ("email", "valid email"), ("pay_rate", "Enter dollars a mile, at most $100.00")]:
        expect(page.locator(f"#{field} ~ .field-error")).to_contain_text(text)
    expect(page.locator("#name")).to_be_focused()  # the first problem has the focus
    # A percentage says so in percent, not in the API's basis points; "25 %" is read as 25.
    page.select_option("#pay_type", "percentage")
    page.fill("#pay_rate", "150")
    page.click("button:has-text('Invite')")
    expect(page.locator("#pay_rate ~ .field-error")).to_have_text("Enter a percentage of revenue from 0 to 100, like 25 or 27.5.")
    page.fill("#name", "Casey Percent")
    page.fill("#email", "casey.percent@demo-carrier.example")
    page.fill("#pay_rate", "27.5 %")
    page.click("button:has-text('Invite')")
    page.wait_for_url(re.compile(r"/drivers\?invited="))
    expect(page.locator("tr", has_text="Casey Percent")).to_contain_text("27.5")

    page.goto(server.base + "/fleet/new")
    page.fill("#unit_number", "T-ALL-1")
    page.fill("#year", "2099")
    page.fill("#vin", "1HGCM82633A004353")
    page.fill("#plate", "AB#1")
    page.fill("#plate_state", "T1")
    page.click("button:has-text('Add')")
    for field, text in [("year", "must be between 1900 and"), ("vin", "check digit"), ("plate", "letters, digits"),
                        ("plate_state", "two-letter")]:
        expect(page.locator(f"#{field} ~ .field-error")).to_contain_text(text)
    shot(page, "unit-form-every-problem")

    page.goto(server.base + "/messages")
    page.fill("#title", "   ")
    page.fill("#body", "Call the office.")
    page.click("button:has-text('Send')")
    expect(page.locator("#driver_id ~ .field-error")).to_contain_text("Choose who gets the message.")
    expect(page.locator("#title ~ .field-error")).to_contain_text("This is required.")


def test_a_long_sent_message_can_be_read_whole(page, server):
    page.goto(server.base + "/messages")
    page.select_option("#driver_id", label="Alex Rivera")
    page.fill("#title", "Pickup notes for Friday")
    lines = ["Gate 4 opens at 06:00; ask for Dana at the window.", "Bring the dolly for the Tesla: it has flat tires.",
             "Photos of every panel, the yard disputes claims.", "Call me when you leave the yard."]
    page.fill("#body", "\n".join(lines))
    page.click("button:has-text('Send')")
    page.wait_for_url("**/messages?sent=1")
    row = page.locator("#sent tbody tr", has_text="Pickup notes for Friday")
    expect(row.locator("summary")).to_contain_text("Gate 4 opens at 06:00")
    expect(row.locator("details p")).not_to_be_visible()
    row.locator("summary").click()
    expect(row.locator("details p")).to_be_visible()
    expect(row.locator("details p")).to_contain_text("Call me when you leave the yard.")
    shot(page, "messages-long")


def test_a_driver_is_edited_from_the_drivers_page(page, server):
    page.goto(server.base + "/drivers")
    page.click("a:has-text('Jordan')")
    expect(page.locator("h1")).to_contain_text("Edit Jordan")
    expect(page.locator(".static")).to_contain_text("jordan@demo-carrier.example")  # the sign-in email stays
    other = page.context.new_page()  # another tab opens the same driver
    other.goto(page.url)
    page.fill("#phone", "+1 404 555 0199")
    page.select_option("#pay_type", "per_mile")
    page.fill("#pay_rate", "250")
    page.click("button:has-text('Save changes')")
    expect(page.locator("#pay_rate ~ .field-error")).to_contain_text("Enter dollars a mile, at most $100.00")
    expect(page.locator("#phone")).to_have_value("+1 404 555 0199")  # what was typed stays
    page.fill("#pay_rate", "0.72")
    shot(page, "driver-edit")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(re.compile(r"/drivers\?saved="))
    expect(page.locator(".notice")).to_contain_text("Saved Jordan")
    row = page.locator("tr", has_text="jordan@demo-carrier.example")
    expect(row).to_contain_text("+1 404 555 0199")
    expect(row).to_contain_text("$0.72 per mile")
    # The other tab saves what it was shown: refused, and it now shows what is saved.
    other.fill("#name", "Jordan From An Old Tab")
    other.click("button:has-text('Save changes')")
    expect(other.locator(".form-error")).to_contain_text("Someone else changed")
    expect(other.locator("#phone")).to_have_value("+1 404 555 0199")
    other.close()


def test_an_edit_keeps_the_line_breaks_of_fields_it_did_not_touch(page, server):
    # An import (or the API) may save a two-line address; a browser's one-line input drops its line break.
    page.goto(server.base + "/orders/import")
    page.fill("#csv", 'number,pickup_address,delivery_address,revenue\nO-LINES-1,"10 Yard Rd\nSavannah, GA",Orlando FL,900\n')
    page.click("button:has-text('Import')")
    page.goto(server.base + "/board?status=new&q=O-LINES-1")
    page.click("tr[data-href] >> text=O-LINES-1")
    page.click("text=Edit")
    page.fill("#pickup_point", "32.0809012, -81.0912034")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("Map point 32.08090, -81.09120")
    page.click("text=Edit")
    assert page.locator("input[name=was_pickup_address]").get_attribute("value") == "10 Yard Rd\nSavannah, GA"
    # Another field edited: the address is as saved, so its map point stays.
    page.fill("#v0_price", "950")
    page.click("text=Save changes")
    expect(page.locator("body")).to_contain_text("$950.00")
    expect(page.locator("body")).to_contain_text("Map point 32.08090, -81.09120")


def test_a_search_says_which_other_tabs_match(page, server):
    # O-5002 was delivered to Marietta: searching the New tab finds nothing there, and says where it is.
    page.goto(server.base + "/board?status=new")
    page.fill("#q", "marietta")
    page.press("#q", "Enter")
    expect(page.locator(".empty")).to_contain_text("No New orders match “marietta”.")
    expect(page.locator(".tabs a", has_text="Delivered").locator(".count.matching")).to_have_text("1")
    expect(page.locator(".tabs a", has_text="New").locator(".count")).to_have_text("0")
    expect(page.locator(".tabs .count.matching")).to_have_count(1)  # only tabs with matches stand out
    shot(page, "board-search-elsewhere")
    page.click(".elsewhere a:has-text('Delivered (1)')")
    expect(page.locator("tr[data-href]")).to_have_count(1)
    expect(page.locator("tr[data-href]")).to_contain_text("O-5002")
    expect(page.locator("#q")).to_have_value("marietta")
    # The driver and trip the board shows are searched too; a search that matches nowhere says what it looks at.
    page.goto(server.base + "/board?status=assigned&q=Sam+T-2001")
    expect(page.locator("tr[data-href]")).to_have_count(2)
    page.goto(server.base + "/board?status=new&q=zzzz-nowhere")
    expect(page.locator(".empty")).to_contain_text("No tab has one either")
    page.goto(server.base + "/board?status=delivered&q=marietta")
    # Cleared, the tabs count every order again.
    page.click("text=Clear")
    expect(page.locator(".tabs .count.matching")).to_have_count(0)
    expect(page.locator(".tabs a", has_text="Delivered").locator(".count")).not_to_have_text("0")


def test_a_trip_page_warns_of_the_drivers_other_trips_those_days_and_papers_out_of_date(page, server):
    today = datetime.datetime.now(datetime.timezone.utc).date()
    # The demo's T-1002 runs from yesterday to the day after tomorrow with Alex.
    create_trip(page, server, "T-OVERLAP-1", start=today.isoformat(), end=(today + datetime.timedelta(days=1)).isoformat())
    expect(page.locator("#trip-driver .heads-up")).to_contain_text("Alex Rivera also has trip T-1002 on ")
    # Alex's truck T-12 is registered for 18 more days: past this trip's end, so not mentioned.
    expect(page.locator("#trip-driver .heads-up")).not_to_contain_text("T-12")
    shot(page, "trip-heads-up")
    # Sam pulls TR-9, whose annual inspection ran out five days ago.
    create_trip(page, server, "T-PAPERS-1", driver="Sam Chen", start=(today + datetime.timedelta(days=30)).isoformat(),
                end=(today + datetime.timedelta(days=31)).isoformat())
    expect(page.locator("#trip-driver .heads-up")).to_contain_text("Trailer TR-9's annual DOT inspection expired ")
    # Without a driver, or once the trip is over, there is nothing to warn of.
    page.select_option("#driver_id", label="Unassigned")
    page.click("button:has-text('Assign')")
    expect(page.locator(".notice")).to_contain_text("has no driver now")
    expect(page.locator("#trip-driver .heads-up")).to_have_count(0)


def test_a_second_import_while_one_runs_is_refused_and_the_first_completes(page, server):
    import threading
    import time
    import urllib.error
    import urllib.parse
    import urllib.request
    page.goto(server.base + "/orders/import")
    csrf = page.locator("input[name=_csrf]").first.get_attribute("value")
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())

    def post(csv):
        data = urllib.parse.urlencode({"_csrf": csrf, "csv": csv}).encode()
        request = urllib.request.Request(server.base + "/orders/import", data=data, method="POST", headers={
            "Cookie": cookie, "Origin": server.base, "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    header = "number,pickup_address,delivery_address,revenue\n"
    line = ",1 Harbor Rd Savannah GA,9 Main St Orlando FL,900\n"
    # The second file is sent again and again while the first runs; one that came in before the first took
    # its turn is imported, or refuses the first instead (then the whole is tried again).
    for attempt in range(3):
        big = header + "".join(f"O-TURN-{attempt}-{n}{line}" for n in range(4000))
        first = {}
        running = threading.Thread(target=lambda: first.update(answer=post(big)))
        running.start()
        time.sleep(0.3)
        refused = []
        tries = 0
        while running.is_alive():
            tries += 1
            status, text = post(header + f"O-TURN-SECOND-{attempt}-{tries}{line}")
            if "Another import for this carrier is still running" in text:
                refused.append((status, f"O-TURN-SECOND-{attempt}-{tries}"))
        running.join()
        status, text = first["answer"]
        if "Another import for this carrier is still running" not in text:
            break
    assert status == 200 and "Imported 4,000 orders" in text, (status, text[:300])
    assert refused and all(status == 422 for status, _ in refused), "a second import ran beside the first"
    # A refused file wrote nothing.
    page.goto(server.base + f"/board?status=new&q={refused[0][1]}")
    expect(page.locator(".empty")).to_be_visible()


def test_drivers_page_shows_what_waits_on_a_drivers_phone(page, server):
    """A phone reports the driver's work it still holds; the Drivers page says so, item by item, until it arrives."""
    token = server.api_sign_in(DRIVER)
    report = {"device_id": "console-test-phone", "waiting_changes": 1, "waiting_files": 1, "file_bytes": 52_428_800,
              "items": [{"status": "waiting", "what": "the delivery of O-5004 and its video", "detail": "at Nov 28, 2026 18:05 UTC",
                         "reason": "not yet sent"},
                        {"status": "refused", "what": "the pickup ETA for O-5005", "detail": "pickup Nov 30, 2026 15:00 UTC",
                         "reason": "Not sent: the pickup ETA for O-5005 — dispatch gave O-5005 to another driver or took it away."}]}
    status, body = server.api("PUT", "/v1/device-backlog", report, token=token)
    assert status == 204, body
    page.goto(server.base + "/drivers")
    row = page.locator("tr", has_text="Alex Rivera")
    expect(row.locator(".phone-work summary")).to_have_text("2 waiting · 1 refused")
    row.locator(".phone-work summary").click()
    expect(row.locator(".phone-work")).to_contain_text("the delivery of O-5004 and its video")
    expect(row.locator(".phone-work")).to_contain_text("dispatch gave O-5005 to another driver")
    shot(page, "drivers-phone-work")
    # Everything arrived: the phone says so, and the column says so.
    status, body = server.api("PUT", "/v1/device-backlog", {"device_id": "console-test-phone", "waiting_changes": 0, "waiting_files": 0,
                                                             "file_bytes": 0, "items": []}, token=token)
    assert status == 204, body
    page.goto(server.base + "/drivers")
    expect(page.locator("tr", has_text="Alex Rivera").locator(".phone-work")).to_have_text("All sent")


def test_text_typed_without_spaces_wraps_instead_of_widening_pages(page, server):
    """A 64-character order number and a 500-character address without a space
    (both within their limits) wrap on every page that shows them."""
    number = "W" * 64
    page.goto(server.base + "/orders/new")
    page.fill("#number", number)
    page.fill("#v0_price", "10.00")
    page.fill("#pickup_address", "A" * 500)
    page.fill("#delivery_address", "B" * 500)
    page.click("form button[type=submit].primary")
    page.wait_for_url("**/orders/*")
    order = page.url.rsplit("/", 1)[1].split("?")[0]
    for path in [f"/orders/{order}", f"/orders/{order}/bill-of-lading", "/board?status=new&q=" + number]:
        page.goto(server.base + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1280 + 1, f"{path} is {width} px wide in a 1280 px window"
    # A vehicle with nothing typed reads as missing, not as a blank.
    page.goto(server.base + "/board?status=new&q=" + number)
    expect(page.locator("tbody tr").first.locator("td").nth(1)).to_contain_text("—")


def test_a_problem_at_a_stop_reaches_the_board_the_order_and_the_invoice(page, server):
    # The carrier's terms for time at stops; a wrong one is refused beside its field.
    page.goto(server.base + "/settings")
    page.fill("#detention_free_minutes", "2000")
    page.click("button:has-text('Save settings')")
    expect(page.locator("#detention_free_minutes + .field-error")).to_contain_text("0 to 1440")
    page.fill("#detention_free_minutes", "60")
    page.fill("#detention_rate", "75")
    page.fill("#dry_run_fee", "250")
    page.click("button:has-text('Save settings')")
    expect(page.locator(".notice")).to_contain_text("Saved")
    expect(page.locator("#detention_rate")).to_have_value("75.00")

    # A load on Alex's trip under way.
    page.goto(server.base + "/orders/new")
    page.fill("#number", "PR-1")
    page.fill("#v0_price", "500")
    page.fill("#customer", "Lakeshore Auto Auction")
    page.fill("#pickup_address", "Matteson, IL")
    page.fill("#delivery_address", "Gary, IN")
    page.select_option("#trip_id", page.locator("#trip_id option", has_text="T-1002").get_attribute("value"))
    page.click("button:has-text('Create order')")
    expect(page.locator("h1")).to_contain_text("Order PR-1")
    order_id = page.url.split("?")[0].rsplit("/", 1)[-1]

    # Alex has waited at the gate for three hours, then finds nothing to load.
    token = server.api_sign_in(DRIVER)
    waited = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    waiting_id = str(uuid.uuid4())
    status, answer = server.api("POST", "/v1/problems", {"id": waiting_id, "order_id": order_id, "stop": "pickup", "kind": "waiting",
                                                         "note": "Gate says two more hours", "reported_at": waited}, token=token)
    assert status == 201, answer
    # With a photo of the closed gate, sent resumably (tus) as the phone does.
    picture = photo("GATE CLOSED")
    tus = {"Tus-Resumable": "1.0.0", "Authorization": "Bearer " + token}
    metadata = ",".join(f"{key} {base64.b64encode(value.encode()).decode()}" for key, value in
                        [("problem_id", waiting_id), ("order_id", order_id)])
    created = urllib.request.urlopen(urllib.request.Request(server.base + "/v1/uploads", method="POST", data=b"", headers={
        **tus, "Upload-Length": str(len(picture)), "Upload-Metadata": metadata}))
    assert created.status == 201
    sent = urllib.request.urlopen(urllib.request.Request(server.base + created.headers["Location"], method="PATCH", data=picture, headers={
        **tus, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"}))
    assert sent.status == 204
    # Announced on the page dispatch has open, and on the order.
    expect(page.locator("#message-toast")).to_contain_text("Problem reported: Waiting at the stop at pickup", timeout=10_000)
    page.reload()
    expect(page.locator("#pickup-visit")).to_contain_text("On site since")
    expect(page.locator(".stop-problem")).to_contain_text("Waiting at the stop Gate says two more hours")
    gate = page.locator(".stop-problem img")
    expect(gate).to_have_count(1)
    wait_until(page, "(() => { const image = document.querySelector('.stop-problem img'); return !!image && image.complete && image.naturalWidth === 320; })()")
    status, answer = server.api("POST", "/v1/problems", {"id": str(uuid.uuid4()), "order_id": order_id, "stop": "pickup", "kind": "dry_run"},
                                token=token)
    assert status == 201, answer
    page.goto(server.base + "/board?status=assigned&q=PR-1")
    expect(page.locator("tr", has_text="PR-1").locator(".badge.problem")).to_have_text("Dry run (nothing to load) at pickup +1 more")
    shot(page, "board-problem")

    # Dispatch marks it picked up and delivered. The report cannot say the driver waited before the order existed: its time
    # is when the order was made (the server's tests bill hours of detention with a clock they move).
    page.goto(server.base + "/orders/" + order_id)
    expect(page.locator(".arrived").first).to_contain_text("(the driver reported waiting)")
    for button in ["Mark picked up", "Mark delivered"]:
        page.once("dialog", lambda dialog: dialog.accept())
        page.click(f"button:has-text('{button}')")
        expect(page.locator(".notice")).to_contain_text("Marked")
    expect(page.locator("#pickup-visit")).to_contain_text("Until marked picked up")
    expect(page.locator("#pickup-visit")).to_contain_text("on site")
    shot(page, "order-stop-times")
    # The invoice prepared at delivery bills the dry run beside the vehicle.
    page.click("#order-invoice")
    lines = page.locator("#invoice-lines")
    expect(lines).to_contain_text("Dry run at pickup, order PR-1")
    expect(page.locator("#invoice-total")).to_have_text("$750.00")
    shot(page, "invoice-stop-charges")


def test_an_order_at_risk_is_announced_once_on_every_page(page, server):
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    page.goto(server.base + "/orders/new")
    page.fill("#number", "AR-9")
    page.fill("#v0_price", "650")
    page.fill("#pickup_address", "Matteson, IL")
    page.fill("#pickup_window_start", today)
    page.fill("#delivery_address", "Gary, IN")
    page.fill("#delivery_window_start", today)
    page.select_option("#trip_id", page.locator("#trip_id option", has_text="T-1002").get_attribute("value"))
    page.click("button:has-text('Create order')")
    expect(page.locator("h1")).to_contain_text("Order AR-9")
    order_id = page.url.split("?")[0].rsplit("/", 1)[-1]
    page.goto(server.base + "/trips")

    # Alex expects to deliver it in two days: dispatch hears of it on whatever page is open.
    token = server.api_sign_in(DRIVER)
    later = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    status, answer = server.api("PATCH", f"/v1/orders/{order_id}/eta", {"delivery_eta": later}, token=token)
    assert status == 200, answer
    toast = page.locator("#message-toast")
    expect(toast).to_contain_text("AR-9: Delivery at risk: the driver's ETA", timeout=15_000)
    shot(page, "order-at-risk-announced")
    # Announced once: another page does not say it again.
    page.goto(server.base + "/customers")
    page.wait_for_timeout(1500)
    expect(toast).to_be_hidden()
    page.goto(server.base + "/orders/" + order_id)
    expect(page.locator("main")).to_contain_text("Dispatch alerted: Delivery at risk")
    expect(page.locator("#order-timeliness")).to_have_text("Delivery at risk")

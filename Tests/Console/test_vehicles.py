"""Loads of several vehicles in the console: the order form's vehicle rows
(added, removed, their VINs decoded as typed, the total following the
prices), refusals next to the vehicle they are about, the order's page
listing each vehicle, an edit that keeps them, and the demo's auction load."""
import re

from playwright.sync_api import expect

from conftest import shot


def test_an_order_of_three_vehicles_is_made_refused_and_edited_on_the_form(page, server):
    page.goto(server.base + "/orders/new")
    page.fill("#number", "DLR-3")
    page.fill("#pickup_name", "Lakeshore Auto Auction")
    page.fill("#pickup_address", "20000 Cicero Ave, Matteson, IL")
    page.fill("#delivery_address", "5600 W 38th St, Indianapolis, IN")
    # Only the first row shows; "Add a vehicle" brings the next ones.
    expect(page.locator("[data-vehicle-row]:visible")).to_have_count(1)
    # A VIN typed in full fills in the year and maker it encodes.
    page.fill("#v0_vin", "1HGCM82633A004352")
    expect(page.locator("#v0_year")).to_have_value("2003")
    expect(page.locator("#v0_make")).to_have_value("Honda")
    page.fill("#v0_model", "Accord")
    page.fill("#v0_lot", "LOT 4411")
    page.fill("#v0_price", "450")
    page.click("button:has-text('Add a vehicle')")
    page.fill("#v1_make", "Ford")
    page.fill("#v1_model", "F-150")
    page.select_option("#v1_type", "pickup")
    page.select_option("#v1_operable", "no")
    page.fill("#v1_vin", "1FTFW1ET5DFC1234O")  # not a VIN: no VIN has an O
    page.fill("#v1_price", "600")
    page.click("button:has-text('Add a vehicle')")
    page.fill("#v2_make", "Kia")
    page.fill("#v2_price", "400.50")
    expect(page.locator("[data-vehicles-total]")).to_have_text("$1,450.50")
    # A price that is not an amount is said, not silently left out of the total.
    page.fill("#v2_price", "abc")
    expect(page.locator("[data-vehicles-total]")).to_contain_text("$1,050.00 without a price that is not an amount")
    page.fill("#v2_price", "400.50")
    page.click("button:has-text('Create order')")
    # Nothing saved; the refusal is next to the second vehicle's VIN, and every row kept what was typed.
    expect(page.locator("#v1_vin ~ .field-error")).to_be_visible()
    expect(page.locator("[data-vehicle-row]:visible")).to_have_count(3)
    expect(page.locator("#v2_make")).to_have_value("Kia")
    shot(page, "order-vehicles-refused")
    page.fill("#v1_vin", "")
    page.click("button:has-text('Create order')")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}\?added=1$"))
    rows = page.locator(".vehicle-list tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(1)).to_contain_text("Inoperable")
    expect(rows.nth(0)).to_contain_text("LOT 4411")
    expect(page.locator("h2", has_text="3 vehicles")).to_be_visible()
    expect(page.locator("dd", has_text="$1,450.50")).to_be_visible()
    shot(page, "order-three-vehicles")

    # An edit: the Ford leaves (its row emptied), the Accord's price changes; the others keep their rows.
    page.click("a:has-text('Edit')")
    expect(page.locator("[data-vehicle-row]:visible")).to_have_count(3)
    page.locator("[data-vehicle-row]").nth(1).locator("[data-remove-vehicle]").click()
    expect(page.locator("[data-vehicle-row]:visible")).to_have_count(2)
    page.fill("#v0_price", "500")
    expect(page.locator("[data-vehicles-total]")).to_have_text("$900.50")
    shot(page, "order-vehicles-edit")
    page.click("button:has-text('Save changes')")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}\?saved=1"))
    expect(page.locator(".vehicle-list tbody tr")).to_have_count(2)
    expect(page.locator(".vehicle-list")).not_to_contain_text("Ford")
    expect(page.locator("dd", has_text="$900.50")).to_be_visible()


def test_the_demo_auction_load_is_listed_and_found_by_a_lot_number(page, server):
    page.goto(server.base + "/board?status=new&q=Silverado+2232")
    rows = page.locator("tbody tr[data-href]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("3 vehicles")
    rows.first.click()
    expect(page.locator(".vehicle-list tbody tr")).to_have_count(3)
    expect(page.locator(".vehicle-list")).to_contain_text("Inoperable")
    page.goto(page.url.split("?")[0] + "/bill-of-lading")
    expect(page.locator(".doc-table")).to_contain_text("2240")

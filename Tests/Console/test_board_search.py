from conftest import shot


def test_board_search_finds_a_word_inside_an_address_beside_a_short_word(page, server):
    # "Rd" is too short for the text index: beside a longer word it is skipped, not a filter that finds nothing.
    page.goto(server.base + "/board?status=new&q=Savannah+Rd")
    page.wait_for_selector("#board-table")
    assert "Matches on other tabs" in page.inner_text("#board-table")
    page.click("text=Assigned (1)")
    page.wait_for_selector("table.board")
    assert "Savannah" in page.inner_text("table.board")
    shot(page, "board-search")


def test_a_search_keeps_the_newest_first_sort(page, server):
    page.goto(server.base + "/board?status=new&sort=pickup_desc")
    page.wait_for_selector("#q")
    page.fill("#q", "Savannah")
    page.press("#q", "Enter")
    page.wait_for_url("**q=Savannah**")
    assert "sort=pickup_desc" in page.url

"""The message list's page-size picker shows the size in effect: the default when the query names
none (it showed "25 a page" over 50 rows), and the one chosen otherwise."""

import re

import pytest
from django.urls import reverse

from console.browse.forms import PAGE_SIZE, PAGE_SIZES
from tests.browse.conftest import login


@pytest.fixture
def sixty(index):
    for i in range(60):
        index.row(f"m-{i:03d}")


def _selected_size(html):
    select = re.search(r'<select name="size"[^>]*>(.*?)</select>', html, re.S).group(1)
    return re.findall(r'<option value="(\d+)"[^>]*selected', select)


def _rows(html):
    return html.count('class="message-row')


def test_a_fresh_list_picks_the_default_size_it_shows(personas, sixty):
    html = login(personas["viewer"]).get(reverse("message-list")).content.decode()

    assert _selected_size(html) == [str(PAGE_SIZE)]
    assert _rows(html) == PAGE_SIZE


@pytest.mark.parametrize("size", PAGE_SIZES)
def test_a_chosen_size_is_the_one_picked_and_shown(personas, sixty, size):
    html = login(personas["viewer"]).get(reverse("message-list"), {"size": size}).content.decode()

    assert _selected_size(html) == [str(size)]
    assert _rows(html) == min(size, 60)


def test_the_links_of_a_fresh_list_do_not_carry_a_size_nobody_chose(personas, sixty):
    html = login(personas["viewer"]).get(reverse("message-list")).content.decode()

    next_link = re.search(r'id="page-next"[^>]*href="([^"]*)"', html).group(1)
    assert "size=" not in next_link

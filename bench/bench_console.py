"""Console benchmark (issue 3): server time of the quarantine browser and the message detail
page over N quarantined messages (default 1M) in 20 queues and 50 failure groups.

The seed (bench/console_seed.py) writes bodies and events to the lake and the read models to
the console database in bulk. Each page is then requested in-process with Django's test client,
as a signed-in operator, and each request timed: p50 and p95 of BENCH_REQUESTS requests (default
40) after a few discarded warm-up ones. Run once on SQLite (the default) and once with
DATABASE_URL set to PostgreSQL.

Goals on PostgreSQL at 1M: browse p95 <= 100 ms, detail (1 MiB body) p95 <= 150 ms, page 1,000
no slower than 1.2 x page 1; the search box's answer (issue 14), for an id and for text, p95 <= 100
ms. BENCH_MESSAGES overrides N for a quick look (e.g. 50000).
"""

import time
from datetime import timedelta
from urllib.parse import quote, urlencode

from bench.support import CpuMeter, console_bench_setup, percentile

WARMUP = 3
PAGE = 1_000


def _time(client, urls, requests):
    """Server time of GETting the urls in turn: milliseconds, one per request after the
    warm-up, and the CpuMeter of those (this process and the database server)."""
    for i in range(WARMUP):
        _get(client, urls[i % len(urls)])
    samples = []
    with CpuMeter() as meter:
        for i in range(WARMUP, WARMUP + requests):
            started = time.perf_counter()
            _get(client, urls[i % len(urls)])
            samples.append((time.perf_counter() - started) * 1000)
    return samples, meter


def _get(client, url):
    response = client.get(url)
    # 302: the search box's answer for a message id is the way to its page.
    assert response.status_code in (200, 302), (url, response.status_code)


def _page_cursor(page):
    """The browser's cursor to page `page` (of the default sort), made as page `page - 1`'s
    "next" link would make it: walking 999 pages by HTTP would only time the walk."""
    from console.browse.forms import DEFAULT_SORT, PAGE_SIZE
    from console.browse.selectors import cursor_encode
    from console.readmodels.models import MessageIndex

    last_of_previous = MessageIndex.objects.order_by("-last_failure_at", "-message_id")[
        (page - 1) * PAGE_SIZE - 1
    ]
    return cursor_encode(last_of_previous, sort=DEFAULT_SORT)


def _browse(**params):
    return "/messages/?" + urlencode(params) if params else "/messages/"


def _search(q):
    return "/search/?" + urlencode({"q": q})


def run():
    n, requests, backend, cores = console_bench_setup()
    from django.test import Client

    from bench import console_seed
    from console.readmodels.models import MessageIndex

    started = time.perf_counter()
    seeded = console_seed.seed_fresh("console", n)
    seed_seconds = time.perf_counter() - started
    assert MessageIndex.objects.count() == n

    client = Client()
    client.force_login(console_seed.operator_user())

    by_size = sorted(seeded.groups, key=lambda g: g.count, reverse=True)
    group = by_size[len(by_size) // 4]  # a middling group
    rare = by_size[-1]
    sample = MessageIndex.objects.order_by("message_id")[n // 2]
    day = seeded.now - timedelta(days=1)
    first_page = _browse()
    measured = [
        ("browse: first page", [first_page]),
        (f"browse: page {PAGE:,} (keyset)", [_browse(after=_page_cursor(PAGE))]),
        ("filter: queue", [_browse(queue="bench.q05")]),
        ("filter: state (FAIL, 3%)", [_browse(state="FAIL")]),
        (f"filter: group ({group.count / n:.1%})", [_browse(group=group.fingerprint)]),
        ("filter: exception type", [_browse(exception_type="TimeoutError")]),
        (
            "filter: time range (last day)",
            [
                _browse(
                    since=day.strftime("%Y-%m-%d %H:%M"),
                    until=seeded.now.strftime("%Y-%m-%d %H:%M"),
                )
            ],
        ),
        ("filter: sender", [_browse(sender=sample.sender)]),
        ("filter: conversation", [_browse(conversation=sample.conversation_id)]),
        ("filter: candidate", [_browse(candidate="yes")]),
        (f"filter: reason text ({group.count / n:.1%})", [_browse(q=group.word)]),
        (f"filter: reason text ({rare.count / n:.1%})", [_browse(q=rare.word)]),
        ("detail: 1 MiB body", [f"/messages/{quote(m, safe='')}/" for m in seeded.big]),
        ("search: a whole id", [_search(sample.message_id)]),
        ("search: the beginning of ids", [_search(sample.message_id[:-2])]),
        ("search: a sender", [_search(sample.sender)]),
        (f"search: reason text ({group.count / n:.1%})", [_search(group.word)]),
        (f"search: reason text ({rare.count / n:.1%})", [_search(rare.word)]),
    ]
    if n < PAGE * 50:
        measured.pop(1)  # fewer messages than 1,000 pages

    rows = [
        {
            "benchmark": "seed (lake + read models)",
            "backend": backend,
            "messages": n,
            "seconds": round(seed_seconds, 1),
            "cores": cores,
        }
    ]
    p95 = {}
    for name, urls in measured:
        samples, meter = _time(client, urls, requests)
        p95[name] = percentile(samples, 95)
        rows.append(
            {
                "benchmark": name,
                "backend": backend,
                "messages": n,
                "requests": len(samples),
                "p50_ms": round(percentile(samples, 50), 1),
                "p95_ms": round(p95[name], 1),
                **meter.per_request(len(samples)),
                "goal": _goal(name),
                "cores": cores,
            }
        )
    page_key = f"browse: page {PAGE:,} (keyset)"
    if page_key in p95:
        rows.append(
            {
                "benchmark": f"page {PAGE:,} / page 1 (p95)",
                "backend": backend,
                "messages": n,
                "ratio": round(p95[page_key] / p95["browse: first page"], 2),
                "goal": "<= 1.2",
                "cores": cores,
            }
        )
    return rows


def _goal(name):
    if name.startswith("detail"):
        return "p95 <= 150 ms (PostgreSQL, 1M)"
    return "p95 <= 100 ms (PostgreSQL, 1M)"

"""What each broker's killed-consumer test shares: a few thousand dead letters, drained in
batches by a source of the test's own whose `manage.py consume_sources` is SIGKILLed mid-drain
and started again (see `killed_and_started_again` for what is checked).

A test module imports the `killed_mid_drain` fixture from here, and the `processes` one it
needs."""

import pytest

from tests.brokers.sources import killed_and_started_again, source_load
from tests.processes.conftest import processes  # noqa: F401 (the fixture)

COUNT = 3000
BATCH = 50


@pytest.fixture
def killed_mid_drain(processes, tmp_path):  # noqa: F811
    """`killed_mid_drain(url=, name=, kind=, url_env=, stream=, options=, drained=,
    after_kill=None)`: loads the source, runs it killed once and started again with `url` in
    `url_env` (its logs in the test's tmp_path), and gives the source, refreshed."""

    def run(*, url, name, kind, url_env, stream, options, drained, after_kill=None):
        source = source_load(
            name=name,
            kind=kind,
            url_env=url_env,
            stream=stream,
            options=options,
            batch_size=BATCH,
            prefetch=2 * BATCH,
        )
        killed_and_started_again(
            processes,
            source,
            env={url_env: url},
            logs=tmp_path,
            count=COUNT,
            drained=drained,
            after_kill=after_kill,
        )
        return source

    return run

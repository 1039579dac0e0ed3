"""When the scheduler looks at the standing rules: the archives daily, the auto-retries (and the
redirects' authority) every RULES_RETRY_SECONDS, on the default worker (no Spark: a rule's look
freezes its scope with pyarrow; its request executes on the spark worker as any other)."""


def test_the_archives_are_looked_at_daily_and_the_retries_every_minute(settings):
    from workers.celery import app

    app.finalize()  # as a worker or beat does when it starts: the schedule is made then
    app.loader.import_default_modules()  # and the apps' tasks are found by name
    archive = app.conf.beat_schedule["standing-rules-archive"]
    retry = app.conf.beat_schedule["standing-rules-retry"]

    assert archive["task"] == "workers.tasks.rules_archive_task"
    assert archive["schedule"] == float(settings.RULES_ARCHIVE_SECONDS) == 86400.0
    assert retry["task"] == "workers.tasks.rules_retry_task"
    assert retry["schedule"] == float(settings.RULES_RETRY_SECONDS) == 60.0
    assert {archive["task"], retry["task"]} <= set(app.tasks)
    assert not {archive["task"], retry["task"]} & set(app.conf.task_routes)  # default queue

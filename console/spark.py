"""The process's one Spark session, as the settings say. workers.spark builds it and knows
nothing of Django; this is where the settings meet it."""

from django.conf import settings


def spark_from_settings():
    # Imported here: pyspark is loaded only by the processes that run Spark, never by the web.
    from workers.spark import spark_session

    return spark_session(
        master=settings.SPARK_MASTER,
        remote=settings.SPARK_REMOTE,
        driver_memory=settings.SPARK_DRIVER_MEMORY,
    )

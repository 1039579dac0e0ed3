"""The process's one Spark session, as the settings say. workers.spark builds it and knows
nothing of Django; this is where the settings meet it."""

from django.conf import settings


def spark_from_settings():
    # Imported here: pyspark is loaded only by the processes that run Spark, never by the web.
    from workers.spark import spark_session_from

    return spark_session_from(settings)

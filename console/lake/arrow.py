"""Arrow data read back from what Spark wrote into the lake."""

import pyarrow as pa


def timestamps_utc(data):
    """An arrow table or record batch with its timestamps as UTC microseconds: Spark may write
    them as INT96 nanoseconds, with no zone."""
    columns = []
    for column in data.columns:
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp(column.type.unit, tz="UTC"))
            column = column.cast(pa.timestamp("us", tz="UTC"), safe=False)
        columns.append(column)
    return type(data).from_arrays(columns, names=data.schema.names)

"""The dashboard's chart, drawn on the server: a bar per hour, a count axis up to a round top and
a time axis with its first, middle and last hours."""

from datetime import UTC, datetime, timedelta

from console.browse.charts import (
    HEIGHT,
    LEFT,
    SPARK_HEIGHT,
    SPARK_WIDTH,
    TOP,
    hourly_bars,
    hourly_lines,
    sparkline,
)

T0 = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)


def _series(counts):
    return [(T0 + timedelta(hours=i), n) for i, n in enumerate(counts)]


def test_the_count_axis_ends_on_a_round_number_above_the_peak():
    chart = hourly_bars(_series([0, 3, 37, 12]))

    assert [t.label for t in chart.y_ticks] == ["0", "25", "50"]
    tallest = max(chart.bars, key=lambda b: b.count)
    assert tallest.count == 37
    assert tallest.y + tallest.height == chart.bottom  # bars stand on the time axis
    assert round(tallest.height / (chart.bottom - TOP), 2) == 0.74  # 37 of 50


def test_the_time_axis_names_the_first_middle_and_last_hours():
    chart = hourly_bars(_series([1] * 24))

    assert [t.label for t in chart.x_ticks] == ["03-01 00:00", "03-01 12:00", "03-01 23:00"]
    assert [t.anchor for t in chart.x_ticks] == ["middle", "middle", "end"]  # never cut off
    assert chart.x_ticks[0].at > LEFT and chart.bottom < HEIGHT


def test_a_quiet_week_still_has_an_axis_and_no_chart_is_drawn_for_nothing():
    chart = hourly_bars(_series([0] * 168))

    assert len(chart.bars) == 168 and {b.height for b in chart.bars} == {0}
    assert [t.label for t in chart.y_ticks] == ["0", "1"]
    assert hourly_bars([]) is None


def test_lines_share_one_count_axis_and_each_hour_names_every_count():
    chart = hourly_lines(
        [
            ("delivered", "delivered", _series([10, 40, 0])),
            ("failed", "failed attempts", _series([2, 0, 7])),
        ]
    )

    assert [t.label for t in chart.y_ticks] == ["0", "25", "50"]
    assert [(line.name, line.total) for line in chart.lines] == [("delivered", 50), ("failed", 9)]
    delivered = [tuple(map(float, p.split(","))) for p in chart.lines[0].points.split()]
    assert len(delivered) == 3 and delivered[2][1] == chart.bottom  # 0 lies on the time axis
    assert delivered[1][1] == round(TOP + (chart.bottom - TOP) * (1 - 40 / 50), 2)
    assert chart.hours[2].counts == [("delivered", 0), ("failed attempts", 7)]
    assert hourly_lines([("in", "in", [])]) is None


def test_a_sparkline_scales_to_its_own_peak():
    line = sparkline([0, 5, 10])

    points = [tuple(map(float, p.split(","))) for p in line.points.split()]
    assert (line.total, line.peak) == (15, 10)
    assert points[0] == (0.0, SPARK_HEIGHT - 1) and points[2] == (SPARK_WIDTH, 1.0)
    assert sparkline([0, 0]).points == f"0.0,{SPARK_HEIGHT - 1} {SPARK_WIDTH}.0,{SPARK_HEIGHT - 1}"
    assert sparkline([]) is None

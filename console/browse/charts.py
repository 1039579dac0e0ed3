"""Charts drawn on the server as SVG with axes: the page needs no script and no library to show
them, and the CSP stays as it is. The geometry is computed here; the template only places it."""

import math
from dataclasses import dataclass

# The drawing's own units (the SVG scales to its box): room on the left for the counts and below
# for the times.
WIDTH, HEIGHT = 840, 200
LEFT, BOTTOM, TOP, RIGHT = 44, 22, 8, 8
# Ranges a person picks, in hours.
RANGES = {"24h": 24, "7d": 7 * 24, "30d": 30 * 24}
DEFAULT_RANGE = "7d"


@dataclass(frozen=True)
class Bar:
    hour: object  # datetime of the hour it counts
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Tick:
    at: float  # x or y in the drawing
    label: str
    anchor: str = "middle"  # how its text sits on it (the last time label ends there)


@dataclass(frozen=True, kw_only=True)
class Frame:
    """What every hourly chart shares: its axes' ticks and the plot's edges in the drawing."""

    y_ticks: list
    x_ticks: list
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM  # y of the time axis
    right: int = WIDTH - RIGHT
    plot_height: int = HEIGHT - BOTTOM - TOP


@dataclass(frozen=True, kw_only=True)
class BarChart(Frame):
    bars: list


def _nice_top(peak):
    """The axis' top: the peak rounded up to 1, 2 or 5 times a power of ten."""
    if peak <= 0:
        return 1
    power = 10 ** math.floor(math.log10(peak))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= peak)


def hourly_bars(series):
    """A bar per hour of `series` [(hour, count)], a count axis from 0 to a round top (three
    ticks), and a time axis with the first, middle and last hours named. None if empty."""
    if not series:
        return None
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    top = _nice_top(max(n for _, n in series))
    step = plot_w / len(series)
    gap = 1 if step >= 3 else 0
    bars = []
    for i, (hour, count) in enumerate(series):
        h = count * plot_h / top
        bars.append(
            Bar(
                hour=hour,
                count=count,
                x=round(LEFT + i * step, 2),
                y=round(TOP + plot_h - h, 2),
                width=round(max(step - gap, 0.5), 2),
                height=round(h, 2),
            )
        )
    return BarChart(
        bars=bars, y_ticks=_y_ticks(top, plot_h), x_ticks=_x_ticks([h for h, _ in series], step)
    )


def _y_ticks(top, plot_h):
    """0, the middle and the top of the count axis (0 and 1 when the top is 1)."""
    ticks = [Tick(round(TOP + plot_h - v * plot_h / top, 2), f"{v:,}") for v in (0, top // 2, top)]
    return [ticks[0], ticks[2]] if top == 1 else ticks


def _x_ticks(hours, step):
    """The first, middle and last hours named under the time axis."""
    last = len(hours) - 1
    picks = sorted({0, len(hours) // 2, last})
    return [
        Tick(
            round(LEFT + (i + 0.5) * step, 2),
            hours[i].strftime("%m-%d %H:00"),
            "end" if i == last and last else "middle",  # the last one ends at the edge
        )
        for i in picks
    ]


@dataclass(frozen=True)
class Line:
    name: str  # the series' key, its CSS class
    label: str
    points: str  # "x,y x,y …", for <polyline points>
    total: int


@dataclass(frozen=True)
class Hour:
    """One hour's column, the target of its hover text: its counts, in the lines' order."""

    hour: object
    x: float
    width: float
    counts: list  # [(label, n)]


@dataclass(frozen=True, kw_only=True)
class LineChart(Frame):
    lines: list
    hours: list


def hourly_lines(series):
    """A line per series of `series` [(name, label, [(hour, count)])], all over the same hours,
    on one count axis from 0 to a round top. None if there are no hours."""
    if not series or not series[0][2]:
        return None
    hours = [hour for hour, _ in series[0][2]]
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    top = _nice_top(max((n for _, _, points in series for _, n in points), default=0))
    step = plot_w / len(hours)

    def y(n):
        return round(TOP + plot_h - n * plot_h / top, 2)

    lines = [
        Line(
            name=name,
            label=label,
            points=" ".join(
                f"{round(LEFT + (i + 0.5) * step, 2)},{y(n)}" for i, (_, n) in enumerate(points)
            ),
            total=sum(n for _, n in points),
        )
        for name, label, points in series
    ]
    columns = [
        Hour(
            hour=hour,
            x=round(LEFT + i * step, 2),
            width=round(step, 2),
            counts=[(label, points[i][1]) for _, label, points in series],
        )
        for i, hour in enumerate(hours)
    ]
    return LineChart(
        lines=lines, hours=columns, y_ticks=_y_ticks(top, plot_h), x_ticks=_x_ticks(hours, step)
    )


# A sparkline's box: small enough for a table cell.
SPARK_WIDTH, SPARK_HEIGHT = 96, 20


@dataclass(frozen=True)
class Sparkline:
    points: str  # for <polyline points>
    total: int
    peak: int
    width: int = SPARK_WIDTH
    height: int = SPARK_HEIGHT


def sparkline(counts):
    """A line through `counts` (oldest first) scaled to its own peak; None if there are none."""
    if not counts:
        return None
    peak = max(counts)
    step = SPARK_WIDTH / max(len(counts) - 1, 1)
    usable = SPARK_HEIGHT - 2  # a pixel above and below for the stroke

    def y(n):
        return round(SPARK_HEIGHT - 1 - (n * usable / peak if peak else 0), 2)

    return Sparkline(
        points=" ".join(f"{round(i * step, 2)},{y(n)}" for i, n in enumerate(counts)),
        total=sum(counts),
        peak=peak,
    )

"""`kadmin history report KIND --png FILE` draws KIND's own chart, from the report's own rows (real Spark, over the
logs a real ZooKeeper wrote while the sandbox's brokers bounced, moved the controller and changed ISRs)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from PIL import Image

from kadmin.pipeline import reports
from kadmin.pipeline.reports import KINDS

pytestmark = pytest.mark.integration


def bar_heights(ax: Any) -> list[float]:
    return [round(p.get_height(), 3) for p in ax.patches]


def test_each_kind_draws_its_own_chart_of_its_own_rows(spark, zk_history, run_nozk, tmp_path):  # type: ignore[no-untyped-def]
    logs, live, controller = zk_history
    out = tmp_path / "events"
    r = run_nozk("history", "ingest", str(logs), "--cluster", "prod", "--out", str(out))
    assert r.exit_code == 0, r.stderr

    rows: dict[str, list[dict[str, Any]]] = {}
    titles: dict[str, str] = {}
    images: dict[str, bytes] = {}
    for kind in KINDS:
        png = tmp_path / f"{kind}.png"
        r = run_nozk("history", "report", str(out), kind, "--cluster", "prod", "--png", str(png), "-o", "json")
        assert r.exit_code == 0, r.stderr
        rows[kind] = json.loads(r.stdout)["data"]
        images[kind] = png.read_bytes()
        with Image.open(png) as im:
            assert im.format == "PNG"
            titles[kind] = im.text["Title"]
            assert im.text["Description"] == f"kadmin history report {kind}"
    assert titles == {k: f"{reports.TITLES[k]} of prod" for k in KINDS}
    assert len(set(titles.values())) == len(KINDS) and len(set(images.values())) == len(KINDS)

    # each chart holds its report's numbers (the figure as the command draws it, before it is saved)
    bounces = reports.chart("bounces", rows["bounces"], "t")
    left, right = bounces.axes
    assert bar_heights(left) == [b["bounces"] for b in sorted(rows["bounces"], key=lambda b: b["broker_id"])] \
        == [0, 1, 2]
    b2 = next(b for b in rows["bounces"] if b["broker_id"] == 2)
    assert round(b2["downtime_max_ms"] / 1000, 3) in bar_heights(right) and b2["downtime_max_ms"] >= 300
    assert [t.get_text() for t in left.get_xticklabels()] == ["broker 1", "broker 2", "broker 3"]

    churn = reports.chart("isr-churn", rows["isr-churn"], "t").axes[0]
    by_broker = sorted(rows["isr-churn"], key=lambda c: c["broker_id"])
    assert bar_heights(churn) == [c["isr_shrinks"] for c in by_broker] + [c["isr_expands"] for c in by_broker]
    assert churn.get_ylabel() == "ISR changes"

    ctl = reports.chart("controllers", rows["controllers"], "t").axes[0]
    ids = list(ctl.lines[0].get_ydata())
    assert ids == [c["controller_id"] if c["controller_id"] is not None else -1 for c in rows["controllers"]]
    assert [i for i, c in zip(ids, rows["controllers"], strict=True) if c["event"] == "elected"] == [1, controller]

    ep = reports.chart("epochs", rows["epochs"], "t").axes[0]
    assert list(ep.lines[0].get_ydata()) == [p["max_broker_epoch"] if p["max_broker_epoch"] is not None else -1
                                             for p in rows["epochs"]]  # none: no live broker
    assert max(ep.lines[0].get_ydata()) == max(live[3]) and ep.get_ylabel() == "max broker epoch (-1: no live broker)"


def test_a_report_with_nothing_to_draw_says_so(spark, run_nozk, tmp_path):  # type: ignore[no-untyped-def]
    f = tmp_path / "watch.ndjson"
    f.write_text('{"event": "registered", "id": 4, "epoch": 100, "old_epoch": null, '
                 '"at": "2026-11-22T01:00:00.000Z"}\n')
    out = tmp_path / "events"
    assert run_nozk("history", "ingest", str(f), "--cluster", "nd", "--out", str(out)).exit_code == 0
    png = tmp_path / "churn.png"
    r = run_nozk("history", "report", str(out), "isr-churn", "--png", str(png))
    assert r.exit_code == 1 and f"--png {png}: no ISR changes to draw" in r.stderr
    assert not png.exists()

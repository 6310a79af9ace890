"""Long scans show a progress bar on a terminal only (the terminal is the mocked edge)."""

from __future__ import annotations

import io

from kadmin.render.progress import ScanProgress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_progress_off_a_terminal():
    stream = io.StringIO()
    with ScanProgress(stream) as progress:
        progress("partitions", 100, 0)
        progress("partitions", 100, 50)
    assert stream.getvalue() == ""


def test_progress_on_a_terminal(mocker):
    stream = FakeTTY()
    mocker.patch("rich.console.Console.is_terminal", new_callable=mocker.PropertyMock, return_value=True)
    with ScanProgress(stream) as progress:
        assert progress.enabled
        progress("partitions", 100, 0)
        progress("partitions", 100, 100)
    out = stream.getvalue()
    assert "reading partitions" in out and "100/100" in out

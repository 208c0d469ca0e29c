"""Headless Chromium (Debian's `chromium`) for the HTML report tests: the page as the browser built it
(--dump-dom, after its script ran), a screenshot, and the network requests it tried (a netlog)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from urllib.parse import urlsplit

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--disable-dev-shm-usage", "--mute-audio"]


def _run(args: list[str], timeout: float = 90) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="cgtool-chromium-") as profile:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout, check=False)


def dump_dom(html_path: str, netlog: str | None = None) -> str:
    """The DOM after load and script, as Chromium serializes it; with `netlog`, the requests go to that file."""
    extra = [f"--log-net-log={netlog}", "--net-log-capture-mode=Default"] if netlog else []
    done = _run([*extra, "--virtual-time-budget=3000", "--dump-dom", "file://" + os.path.abspath(html_path)])
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(html_path: str, png_path: str, size: str = "1400,1000", fragment: str = "") -> None:
    done = _run([f"--screenshot={png_path}", f"--window-size={size}", "--virtual-time-budget=3000",
                 "file://" + os.path.abspath(html_path) + fragment])
    assert done.returncode == 0 and os.path.getsize(png_path) > 10_000, done.stderr[-2000:]


# Chromium's own services, which it calls whatever page it shows (time, update, account checks) despite the flags
BROWSER_HOSTS = ("google.com", "googleapis.com", "gvt1.com", "gstatic.com")


def requested_urls(netlog: str) -> list[str]:
    """Every URL the run asked for, from Chromium's netlog (read as text: a log cut short at exit is still read)."""
    with open(netlog, encoding="utf-8", errors="replace") as fh:
        return sorted(set(re.findall(r'"url":"([^"]*)"', fh.read())))


def page_requests(netlog: str) -> list[str]:
    """The requested URLs other than the page's own file and Chromium's own services."""
    out = []
    for url in requested_urls(netlog):
        host = urlsplit(url).hostname or ""
        if url.startswith("file://") or any(host == h or host.endswith("." + h) for h in BROWSER_HOSTS):
            continue
        out.append(url)
    return out

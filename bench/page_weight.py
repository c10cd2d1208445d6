"""Page weight and first paint of the reader pages on an emulated slow phone network.

    python bench/page_weight.py                 # the real data (data/), built into a temporary folder
    python bench/page_weight.py --db computekb.db

Starts `computekb serve` on a loopback port, opens each reader page once in Chromium
(/usr/bin/chromium, through Playwright) at 390x844 with an empty cache, and measures over
the DevTools protocol:

- bytes transferred: the sum of `encodedDataLength` of every response the page loads
  (headers included, bodies as sent: gzip where the server compresses), HTML, CSS,
  JavaScript, images and the charts' requests alike;
- first paint: the page's first-contentful-paint, under Chromium DevTools' "Slow 4G"
  profile set by Network.emulateNetworkConditions (562.5 ms latency, 1.6 Mbit/s down
  and 750 kbit/s up, each times 0.9 as DevTools applies them). No CPU slowdown.

Goals (docs/BENCHMARKS.md, "Page weight"): every reader page, Datasette's accelerators table and
the dashboard under 150 KB transferred and first paint under 2 s; the dashboard with at most one
request per chart (each chart's SVG, drawn on the server, or a chart's data; its text paints first).
"""

import argparse
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from etl.build import build_database  # noqa: E402
from serving.serve import free_port, wait_until_up  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 390, "height": 844}
# Chromium DevTools' "Slow 4G" preset (front_end/core/sdk/NetworkManager.ts), as it sends it.
SLOW_4G = {"offline": False, "latency": 150 * 3.75,
           "downloadThroughput": 1.6 * 1000 * 1000 / 8 * 0.9, "uploadThroughput": 750 * 1000 / 8 * 0.9}
WEIGHT_GOAL_BYTES = 150 * 1000
PAINT_GOAL_MS = 2000


@dataclass
class Measure:
    page: str
    path: str
    status: int
    requests: int
    transferred: int        # bytes on the wire, every response of the page
    first_paint_ms: float
    charts: int             # charts the page draws, each allowed one data request
    data_requests: int = 0  # requests for a chart: its SVG, or its data (JSON of a query)

    @property
    def meets_goals(self):
        return (self.transferred < WEIGHT_GOAL_BYTES and self.first_paint_ms < PAINT_GOAL_MS
                and self.data_requests <= self.charts)


def reader_pages(db):
    """(name, path, has charts) of every reader page, with rows taken from the database."""
    with sqlite3.connect(db) as conn:
        article = conn.execute("select slug from articles order by published desc, slug limit 1").fetchone()[0]
        accelerator = conn.execute("select slug from accelerators order by memory_bandwidth_gbs desc limit 1").fetchone()[0]
        model = conn.execute("select slug from models order by slug limit 1").fetchone()[0]
    return [
        ("home", "/", 0),
        ("finder", "/-/accelerators?memory_gb__gte=80&memory_bandwidth_gbs__gte=3+TB/s", 0),
        ("spec sheet", f"/computekb/accelerators/{accelerator}", 0),
        ("model", f"/computekb/models/{model}", 0),
        ("compare", "/-/compare?ids=nvidia-h200-sxm,amd-mi300x,nvidia-b200", 0),
        ("compare picker", "/-/compare", 0),
        ("what fits", f"/-/what-fits?model={model}", 0),
        ("search", "/-/search?q=memoire", 0),
        ("search, A vs B", "/-/search?q=H100+vs+H200", 0),
        ("cost per token", "/-/cost-per-token", 0),
        ("article", f"/computekb/articles/{article}", 0),
        ("accelerators table", "/computekb/accelerators", 0),   # Datasette's table: its chart library on demand
        ("error page", "/computekb/accelerators/no-such-accelerator", 0),
        ("dashboard", DASHBOARD, dashboard_charts()),
    ]


DASHBOARD = "/-/dashboards/accelerator-landscape"


def dashboard_charts():
    """The charts the landscape dashboard's page draws (metadata.yml)."""
    import yaml
    config = yaml.safe_load((ROOT / "metadata.yml").read_text())["plugins"]["datasette-dashboards"]
    return len({chart for row in config["accelerator-landscape"]["layout"] for chart in row})


def measure(browser, base, name, path, charts):
    """One cold load of `path` on slow 4G: bytes of every response and first-contentful-paint."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    cdp.send("Network.emulateNetworkConditions", SLOW_4G)
    sizes, data = {}, []
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    page.on("request", lambda r: (("/-/charts/" in r.url and ".svg" in r.url) or (".json" in r.url and "sql=" in r.url))
            and data.append(r.url))
    response = page.goto(base + path, wait_until="load", timeout=120_000)
    page.wait_for_load_state("networkidle", timeout=120_000)
    paint = page.evaluate("""() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime""")
    context.close()
    return Measure(name, path, response.status, len(sizes), sum(sizes.values()), paint or float("nan"), charts, len(data))


def report(measures):
    print(f"{'page':20} {'status':>6} {'requests':>8} {'data':>9} {'KB':>8} {'first paint':>12}  goal")
    for m in measures:
        data = f"{m.data_requests}/{m.charts}" if m.charts else "-"
        goal = "met" if m.meets_goals else "NOT MET"
        print(f"{m.page:20} {m.status:>6} {m.requests:>8} {data:>9} {m.transferred / 1000:8.1f} "
              f"{m.first_paint_ms:10.0f}ms  {goal}")


def serve(db, port):
    command = [sys.executable, "-m", "computekb", "serve", "--db", str(db), "--data", str(ROOT / "data"), "--port", str(port)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, help="Serve this database instead of one built from data/.")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as work:
        db = args.db or Path(work) / "computekb.db"
        if not args.db:
            build_database(ROOT / "data", db)
        port = free_port()
        server = serve(db, port)
        base = f"http://127.0.0.1:{port}"
        try:
            if not wait_until_up(base, server):
                raise RuntimeError("computekb serve did not start")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                report([measure(browser, base, *page) for page in reader_pages(db)])
                browser.close()
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()

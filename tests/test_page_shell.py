"""Every HTML page: a language, a main landmark, the chart library only where charts are drawn, static
files cached for a year by their content hash, answers compressed."""

import pytest

from plugins.page_shell import cached_for_a_year, shell
from serving.metadata import versioned

VEGA_JS = '<script src="/-/static-plugins/datasette_vega/main.08f5d3d8.js"></script>'
VEGA_CSS = '<link rel="stylesheet" href="/-/static-plugins/datasette_vega/main.2acbb312.css">'


def page(body_class):
    return (f'<html>\n<head>\n    {VEGA_CSS}\n    {VEGA_JS}\n</head>\n<body class="{body_class}">\n'
            '<section class="content">\n<p>x</p>\n</section>\n</body>\n</html>')


def test_a_page_without_a_chart_loses_the_chart_library_and_gains_a_language_and_a_main_landmark():
    assert shell(page("reader finder")) == (
        '<html lang="en">\n<head>\n</head>\n<body class="reader finder">\n'
        '<section class="content" role="main">\n<p>x</p>\n</section>\n</body>\n</html>')


def test_a_table_page_names_the_chart_library_for_the_chart_button_and_loads_none_of_it():
    shelled = shell(page("table db-computekb table-accelerators"))
    assert shelled == (
        '<html lang="en">\n<head>\n<meta name="chart-library" content="/-/static-plugins/datasette_vega/main.08f5d3d8.js'
        ' /-/static-plugins/datasette_vega/main.2acbb312.css"></head>\n<body class="table db-computekb table-accelerators">\n'
        '<section class="content" role="main">\n<p>x</p>\n</section>\n</body>\n</html>')


def test_a_page_that_has_a_language_keeps_it():
    assert shell('<html lang="fr"><body class="x">').startswith('<html lang="fr">')


@pytest.mark.parametrize("path, query, expected", [
    ("/-/static-plugins/datasette_vega/main.08f5d3d8.js", "", True),
    ("/assets/reader.css", "v=2430c7ac14", True),
    ("/-/static/app.css", "d59929", True),
    ("/assets/reader.css", "", False),
    ("/-/static-plugins/datasette_dashboards/vega.min.js", "", False),
    ("/computekb/accelerators", "v=2430c7ac14", False),
])
def test_only_static_files_named_by_their_hash_are_cached_for_a_year(path, query, expected):
    assert cached_for_a_year(path, query) is expected


def test_an_asset_url_carries_the_hash_of_its_content(tmp_path):
    (tmp_path / "a.css").write_bytes(b"body{}")
    # sha256(b"body{}") = 7c98040a54...
    assert versioned("/assets/a.css", tmp_path) == "/assets/a.css?v=7c98040a54"
    assert versioned("/other/a.css", tmp_path) == "/other/a.css"


async def test_reader_pages_come_compressed_with_a_language_and_no_chart_library(fixture_client):
    response = await fixture_client.get("/-/accelerators", headers={"accept-encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.text.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    assert "datasette_vega" not in response.text
    assert '<section class="content" role="main">' in response.text

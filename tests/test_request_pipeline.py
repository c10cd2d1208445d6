"""The request pipeline as written down in serving/pipeline.py is the one Datasette builds."""

from datasette.plugins import pm

from serving.pipeline import INSTALLED, PLUGINS_FOLDER
from serving.serve import make_datasette


def wrappers_outermost_first(db_path):
    """The plugins whose `asgi_wrapper` Datasette applies, the outermost first (pluggy's order of hook
    implementations is the reverse of its call order, and the last wrapper called wraps the others)."""
    make_datasette(db_path)  # registers the plugins folder
    return [impl.plugin_name for impl in pm.hook.asgi_wrapper.get_hookimpls()]


def test_every_wrapper_is_written_down(fixture_db):
    assert sorted(wrappers_outermost_first(fixture_db)) == sorted(w.plugin for w in INSTALLED + PLUGINS_FOLDER)


def test_the_installed_wrappers_wrap_the_plugins_folders(fixture_db):
    assert wrappers_outermost_first(fixture_db)[:len(INSTALLED)] == [w.plugin for w in INSTALLED]

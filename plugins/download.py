"""The database download (`/computekb.db`) served as a static file: its size first, then megabyte reads.

Datasette sends the file in 4 KB reads, each a trip to a thread, and the gzip
wrapper compresses every read at its highest level on the one event loop: 18 MB
took 2.3 s alone and 8.4 s under load, while every other page waited its turns.
The file is the release, immutable while served: here it is read a megabyte at
a time off the event loop and sent as it is (`Content-Encoding: identity`, so
the gzip wrapper passes it through: an SQLite file compresses little and a
download has no need to). Only a GET or HEAD of the download path when
`allow_download` is on is answered here; anything else goes to Datasette.
"""

import asyncio
from pathlib import Path

from datasette import hookimpl

from serving.headers import encoded_security_headers
from serving.metadata import DATABASE

CHUNK_BYTES = 1 << 20


def download_path(datasette, scope) -> Path | None:
    """The file a request downloads, or None when Datasette answers it."""
    if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD") or scope["path"] != f"/{DATABASE}.db":
        return None
    database = datasette.databases.get(DATABASE)
    if not datasette.setting("allow_download") or database is None or database.is_mutable or not database.path:
        return None
    return Path(database.path)


async def send_file(path: Path, method: str, send):
    size = path.stat().st_size
    headers = [(b"content-type", b"application/octet-stream"), (b"content-length", str(size).encode()),
               (b"content-disposition", f'attachment; filename="{DATABASE}.db"'.encode()),
               (b"content-encoding", b"identity"), *encoded_security_headers()]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    if method == "HEAD":
        return await send({"type": "http.response.body", "body": b""})
    with path.open("rb") as file:
        while chunk := await asyncio.to_thread(file.read, CHUNK_BYTES):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


@hookimpl
def asgi_wrapper(datasette):
    def wrap(app):
        async def downloaded(scope, receive, send):
            path = download_path(datasette, scope)
            if path is None:
                return await app(scope, receive, send)
            await send_file(path, scope["method"], send)
        return downloaded
    return wrap

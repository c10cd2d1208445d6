"""The security headers every answer carries, defined once.

Two layers send them: the application (`plugins/guard.py`, for every answer
Datasette gives, also through its test client and `datasette serve`) and, under
`computekb serve` (the deployment image's command too), uvicorn itself, which
writes its own `400 Bad Request` to a malformed request before any application
code runs (`serving/serve.py`).
"""

# Datasette's own templates use inline scripts and styles, so 'unsafe-inline'
# stays; data is kept inert by escaping (tests/test_xss_browser.py). vega (charts
# of datasette-vega and datasette-dashboards) compiles its expressions with
# `new Function`, hence 'unsafe-eval'. Everything loads from this site: no CDN.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
])
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # what Datasette sets on its data pages: the same everywhere
    "x-frame-options": "SAMEORIGIN",
}
SECURITY_HEADER_NAMES = frozenset(name.encode("latin-1") for name in SECURITY_HEADERS)


def encoded_security_headers() -> list[tuple[bytes, bytes]]:
    """The headers as ASGI response headers (lower-case names, latin-1 bytes)."""
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in SECURITY_HEADERS.items()]

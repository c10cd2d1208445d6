"""The forbidden-host check compares canonical hosts: every spelling a browser or resolver reads as one
host is that host (etl/consistency.py). The bad-input cases forbidden-host-* check the build refuses each."""

import pytest

from etl.consistency import address_of, canonical_host, host_of


@pytest.mark.parametrize("url, host", [
    ("https://www.farm.example.net/x", "www.farm.example.net"),
    ("https://WWW.Farm.Example.NET./x", "www.farm.example.net"),              # case, trailing dot
    ("https://farm.example.net../x", "farm.example.net"),
    ("https://www%2Efarm%2eexample.net/x", "www.farm.example.net"),           # percent-encoded dots
    ("https://user:secret@farm.example.net:8443/x", "farm.example.net"),      # user information, port
    ("https://a%40farm.example.net@other.example/x", "other.example"),        # the host follows the last @
    ("https://x%40farm.example.net/", "farm.example.net"),                    # an encoded @ in the host itself
    ("https://farm\u3002example\uff0enet\uff61/x", "farm.example.net"),       # Unicode full stops
    ("https://b\u00fccher.example/x", "xn--bcher-kva.example"),               # IDNA
    ("https://codingmall.com\\@www.amd.com/x", "codingmall.com"),            # a backslash is a slash to browsers
    ("https:\\\\codingmall.com/x", "codingmall.com"),                          # ... in the slashes too
    ("HTTPS:codingmall.com/x", "codingmall.com"),                             # no slash at all: the host follows
    (" https://code\tmall.example/x", "codemall.example"),                     # spaces trimmed, tabs removed
    (None, ""),
])
def test_host_of_gives_the_canonical_host(url, host):
    assert host_of(url) == host


def test_a_forbidden_list_entry_is_canonical_too():
    assert canonical_host("Farm.Example.NET.") == "farm.example.net"
    assert canonical_host("B\u00dcCHER\u3002example") == "xn--bcher-kva.example"


@pytest.mark.parametrize("url, address", [
    ("https://github.com/API-Evangelist/lambda-labs/x.yml", ("github.com", "/api-evangelist/lambda-labs/x.yml")),
    ("https://github.com//api-evangelist/./x", ("github.com", "/api-evangelist/x")),
    ("https://github.com/api%2Devangelist/x", ("github.com", "/api-evangelist/x")),
    ("https://github.com", ("github.com", "/")),
])
def test_address_of_gives_the_canonical_path_too(url, address):
    assert address_of(url) == address

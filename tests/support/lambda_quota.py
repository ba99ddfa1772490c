"""A moto server that also answers Lambda's ``GetAccountSettings`` (moto 5 has no such route),
with the account quota a test sets: what ``doclake aws preflight`` reads first.

Its own server, started after the route is added: moto builds each service's routes when that
service is first asked, once per server."""

from __future__ import annotations

import json

import pytest

QUOTA = {"concurrent": 1000}


def _account_settings(request, full_url, headers):
    limit = QUOTA["concurrent"]
    body = {"AccountLimit": {"TotalCodeSize": 80530636800, "CodeSizeUnzipped": 262144000,
                             "CodeSizeZipped": 52428800, "ConcurrentExecutions": limit,
                             "UnreservedConcurrentExecutions": limit},
            "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": 0}}
    return 200, {"Content-Type": "application/json"}, json.dumps(body)


def start() -> tuple[str, object]:
    """(endpoint, server): a fresh moto server whose Lambda answers ``QUOTA``."""
    server_module = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    from moto.awslambda import urls

    urls.url_paths.setdefault(r"{0}/(?P<api_version>[^/]+)/account-settings/?$",
                              _account_settings)
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}", server

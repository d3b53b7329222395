"""A client for the broker's admin API (/api/v1) that checks every request
and every answer against the OpenAPI document the broker serves.

The document is made strict before use: every object schema that lists
its properties and does not say otherwise gets `additionalProperties:
false`, so a field the broker sends but the document does not describe
fails the test, as a missing or mistyped one does. Requests are checked
too (a test that means to send a bad request says so with check=False).
"""

from __future__ import annotations

import copy
import json

import requests
from openapi_core import OpenAPI
from openapi_core.contrib.requests import RequestsOpenAPIRequest, RequestsOpenAPIResponse
from openapi_spec_validator import validate as validate_spec


def strict(schema):
    """The document with closed objects (see the module doc)."""
    def walk(x):
        if isinstance(x, dict):
            if "properties" in x and "additionalProperties" not in x:
                x["additionalProperties"] = False
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    doc = copy.deepcopy(schema)
    walk(doc)
    return doc


class AdminApi:
    def __init__(self, broker, token: str | None = None):
        # The admin API answers 503 until the broker is ready (a broker
        # restarted by the test may still be loading its coordinators).
        broker.wait_ready()
        self.base = f"http://127.0.0.1:{broker.http_port}"
        self.token = token
        self.session = requests.Session()
        r = self.session.get(f"{self.base}/api/v1/openapi.json", timeout=10)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/json")
        self.document = r.json()
        validate_spec(self.document)
        doc = strict(self.document)
        # The document allows anonymous calls (the `{}` requirement: a
        # broker without a token, on loopback); openapi-core does not
        # honour an empty requirement, so calls made without a token are
        # checked against a copy that asks for none.
        self.anonymous = OpenAPI.from_dict({**doc, "security": []})
        self.openapi = OpenAPI.from_dict(doc)

    def call(self, method: str, path: str, body=None, *, expect: int | None = None,
             token: str | None = "default", check: bool = True, raw: bytes | None = None,
             documented: bool = True):
        """One request; returns (status, decoded JSON or None). The answer
        is checked against the document (unless the path is not in it:
        documented=False); the request unless check=False."""
        headers = {}
        tok = self.token if token == "default" else token
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        data = None
        if raw is not None:
            data = raw
            headers["Content-Type"] = "application/json"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = requests.Request(method, f"{self.base}{path}", data=data, headers=headers)
        prepared = self.session.prepare_request(req)
        r = self.session.send(prepared, timeout=60)
        oreq = RequestsOpenAPIRequest(prepared)
        spec = self.openapi if tok else self.anonymous
        if check and documented:
            spec.validate_request(oreq)
        if documented:
            spec.validate_response(oreq, RequestsOpenAPIResponse(r))
        payload = r.json() if r.content else None
        if expect is not None:
            assert r.status_code == expect, f"{method} {path}: {r.status_code} {r.text}"
        return r.status_code, payload

    def get(self, path: str, **kw):
        return self.call("GET", path, **kw)

    def error(self, method: str, path: str, body=None, *, status: int, code: str, **kw) -> str:
        """A request that must fail with `status` and Kafka's error name
        `code`; returns the message (which must say something)."""
        got, payload = self.call(method, path, body, **kw)
        assert got == status, f"{method} {path}: {got} {payload}"
        assert payload["error"]["code"] == code, payload
        assert len(payload["error"]["message"]) > 10, payload
        return payload["error"]["message"]

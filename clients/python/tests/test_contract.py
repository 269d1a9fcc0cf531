"""The client against the server's contract: /openapi.json of the real
server must have every route, query parameter and field the client uses,
with the same types, and every field of the schemas the client mirrors. A
change on the Go side that breaks the Python client fails here."""

from __future__ import annotations

import dataclasses
import datetime
import json
import typing
import urllib.request
from typing import Any, Dict, List

import airlock
from airlock import client, types

from .base import ServerTest

_SCALARS = {str: "string", int: "integer", bool: "boolean", float: "number", bytes: "string"}


class ContractTest(ServerTest):
    doc: Dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        with urllib.request.urlopen(cls.srv.url + "/openapi.json", timeout=10) as r:
            cls.doc = json.load(r)

    def resolve(self, s: Dict[str, Any]) -> Dict[str, Any]:
        while "$ref" in s:
            ref = s["$ref"]
            self.assertTrue(ref.startswith("#/"), ref)
            node: Any = self.doc
            for part in ref[2:].split("/"):
                node = node[part]
            s = node
        return s

    def schema(self, name: str) -> Dict[str, Any]:
        schemas = self.doc["components"]["schemas"]
        self.assertTrue(name in schemas, "the client reads schema %s; /openapi.json has no such schema" % name)
        return self.resolve(schemas[name])

    def operation(self, method: str, path: str) -> Dict[str, Any]:
        paths = self.doc["paths"]
        self.assertTrue(path in paths, "the client calls %s %s; /openapi.json has no such path" % (method, path))
        op = paths[path].get(method.lower())
        self.assertIsNotNone(op, "the client calls %s %s; /openapi.json has no such operation" % (method, path))
        return op

    def assertType(self, where: str, tp: Any, s: Dict[str, Any]) -> None:
        """assertType checks that the Python type tp reads what schema s describes."""
        ref = s.get("$ref", "")
        s = self.resolve(s)
        origin = typing.get_origin(tp)
        if origin is typing.Union:
            (tp,) = [a for a in typing.get_args(tp) if a is not type(None)]
            origin = typing.get_origin(tp)
        if dataclasses.is_dataclass(tp):
            self.assertEqual(ref.rsplit("/", 1)[-1], tp.API_SCHEMA, "%s: the client reads it as %s" % (where, tp.API_SCHEMA))
            return
        if origin in (list, List):
            self.assertEqual(s.get("type"), "array", where)
            self.assertType(where + "[]", typing.get_args(tp)[0], s.get("items", {}))
            return
        if origin in (dict, Dict):
            self.assertEqual(s.get("type"), "object", where)
            add = s.get("additionalProperties")
            if isinstance(add, dict):
                self.assertType(where + "{}", typing.get_args(tp)[1], add)
            return
        if tp is datetime.datetime:
            self.assertEqual((s.get("type"), s.get("format")), ("string", "date-time"), where)
            return
        want = _SCALARS.get(tp)
        self.assertIsNotNone(want, "%s: no JSON type for %r" % (where, tp))
        got = s.get("type")
        if want == "number" and got == "integer":
            return  # a float reads an integer
        self.assertEqual(got, want, "%s: the client reads a %s, /openapi.json says %s" % (where, want, got))

    def test_routes_and_query_parameters(self) -> None:
        for method, path in client.ROUTES:
            with self.subTest(route="%s %s" % (method, path)):
                op = self.operation(method, path)
                params = [self.resolve(p) for p in self.doc["paths"][path].get("parameters", [])]
                params += [self.resolve(p) for p in op.get("parameters", [])]
                names = {p["name"] for p in params if p.get("in") == "query"}
                for q in client.QUERY_PARAMS.get((method, path), []):
                    self.assertIn(q, names, "%s %s: the client sends ?%s=, which it does not declare" % (method, path, q))
                for seg in path.split("/"):
                    if seg.startswith("{"):
                        self.assertIn(seg[1:-1], {p["name"] for p in params if p.get("in") == "path"})

    def test_request_fields(self) -> None:
        spec = self.schema("Spec")["properties"]
        for name, want in client.SPEC_FIELDS.items():
            with self.subTest(field="Spec." + name):
                self.assertTrue(name in spec, "run/start send %s; the API's Spec has no such field" % name)
                self.assertEqual(self.resolve(spec[name]).get("type"), want, "Spec.%s" % name)
        for schema, fields in client.REQUEST_FIELDS.items():
            props = self.schema(schema)["properties"]
            for name, want in fields.items():
                with self.subTest(field="%s.%s" % (schema, name)):
                    self.assertTrue(name in props, "the client sends %s.%s; /openapi.json has no such field" % (schema, name))
                    got = self.resolve(props[name]).get("type")
                    self.assertTrue(got == want or (want == "number" and got == "integer"), "%s.%s: %s" % (schema, name, got))
        # The run's Result shape and the background Process, on the one route.
        self.operation("POST", "/v1/processes")

    def test_answer_fields_both_ways(self) -> None:
        for cls in types.API_TYPES:
            props = self.schema(cls.API_SCHEMA).get("properties", {})
            hints = typing.get_type_hints(cls)
            ours = {f.name for f in dataclasses.fields(cls) if not f.metadata.get("client_only")}
            with self.subTest(schema=cls.API_SCHEMA):
                for name in sorted(ours):
                    self.assertTrue(name in props, "%s.%s is read by the client; /openapi.json has no such field"
                                  % (cls.API_SCHEMA, name))
                    self.assertType("%s.%s" % (cls.API_SCHEMA, name), hints[name], props[name])
                missing = sorted(set(props) - ours)
                self.assertEqual(missing, [], "%s has fields the client's %s lacks: add them to airlock/types.py"
                                 % (cls.API_SCHEMA, cls.__name__))

    def test_error_shape(self) -> None:
        e = self.schema("Error")["properties"]["error"]
        props = self.resolve(e)["properties"]
        for name in ("code", "message", "field"):
            self.assertEqual(self.resolve(props[name]).get("type"), "string", "Error.error.%s" % name)
        busy = self.resolve(self.doc["components"]["responses"]["Busy"])
        self.assertIn("Retry-After", busy.get("headers", {}), "BusyError.retry_after reads Retry-After")
        # The codes the client maps to its classes are the ones the document names.
        described = json.dumps(self.doc)
        for code in ("invalid_request", "unauthorized", "not_found", "busy", "workspace_full", "workspace_not_found",
                     "refused_path", "engine_unavailable", "queue_timeout"):
            self.assertTrue(code in described, "the client maps code %s; /openapi.json never names it" % code)

    def test_event_streams(self) -> None:
        op = self.operation("GET", "/v1/processes/{id}/logs")
        self.assertIn("text/event-stream", op["responses"]["200"]["content"])
        for event in ("`stdout`", "`stderr`", "`end`", "`error`"):
            self.assertTrue(event in op["description"], "the follow reads the %s event" % event)
        for name in ("offset", "data"):
            self.assertIn(name, self.schema("LogChunk")["properties"])

    def test_every_error_code_has_its_class(self) -> None:
        """Every code /openapi.json names for Error.code maps to an exception
        class of its own kind, not to the fallback by status."""
        import re
        from airlock import errors
        desc = self.schema("Error")["properties"]["error"]["properties"]["code"]["description"]
        codes = set(re.findall(r"`([a-z_]+)`", desc))
        self.assertGreater(len(codes), 20, desc)
        for code in sorted(codes):
            with self.subTest(code=code):
                self.assertIn(code, errors._BY_CODE, "the server answers %s; the client has no class for it" % code)

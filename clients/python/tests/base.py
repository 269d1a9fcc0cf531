"""What every test case shares: the server, a client per tenant."""

from __future__ import annotations

import unittest

from . import server

import airlock


class ServerTest(unittest.TestCase):
    """ServerTest gives each test the shared server and clients of tenants
    alpha and beta."""

    srv: server.Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()

    def client(self, tenant: str = "alpha", **kw) -> airlock.Client:
        c = airlock.Client(self.srv.url, server.TOKENS[tenant], **kw)
        self.addCleanup(c.close)
        return c

    def setUp(self) -> None:
        self.c = self.client("alpha")

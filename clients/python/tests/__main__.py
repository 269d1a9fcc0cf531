"""python3 -m tests: every test of the client against one real server, then
the server stopped and the check that it left no container behind."""

from __future__ import annotations

import os
import sys
import time
import unittest

from . import server


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    t0 = time.monotonic()
    suite = unittest.defaultTestLoader.discover(here, top_level_dir=os.path.dirname(here))
    result = unittest.TextTestRunner(verbosity=2 if "-v" in sys.argv else 1).run(suite)
    ok = result.wasSuccessful()
    srv = server._server
    if srv is not None:
        srv.stop()
        left = srv.leftovers()
        if left:
            print("FAIL: the server left containers behind:\n  " + "\n  ".join(left))
            print(srv.log_text())
            ok = False
        else:
            print("no container of the test server left on the engine")
        if ok:
            srv.cleanup()
        else:
            print("the server's data dir and log: %s" % srv.dir)
    print("python client tests: %d run in %.1fs, %s" % (result.testsRun, time.monotonic() - t0, "ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

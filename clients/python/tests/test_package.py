"""The package as it ships: PEP 561's py.typed in the source and in what
setuptools builds from pyproject.toml."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class PackageTest(unittest.TestCase):
    def test_py_typed_ships(self) -> None:
        self.assertTrue(os.path.isfile(os.path.join(ROOT, "airlock", "py.typed")))
        try:
            import setuptools  # noqa: F401
        except ImportError:
            self.skipTest("setuptools is missing: only the source tree was checked")
        # Build from a copy, so the source tree gains no build/ or egg-info.
        d = tempfile.mkdtemp(prefix="airlock-pypkg-")
        self.addCleanup(shutil.rmtree, d, True)
        src = os.path.join(d, "src")
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
        out = os.path.join(d, "lib")
        p = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                            "--build-lib", out], cwd=src, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        built = sorted(os.listdir(os.path.join(out, "airlock")))
        self.assertIn("py.typed", built, "setuptools leaves py.typed out: %s" % built)
        self.assertIn("client.py", built)

"""The Python client's tests, against a real airlock serve (see server.py).

Run them all, with the check that no container is left behind, with
`python3 -m tests` from clients/python (make test-python does); one module
with `python3 -m unittest tests.test_run`.
"""

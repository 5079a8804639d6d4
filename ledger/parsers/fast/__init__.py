"""The fast paths of the scan, all producing the same item stream (``parsers.items``).

* ``scanner`` — find the lines worth reading in large byte blocks (Hyperscan, RE2 or ``bytes.find``);
* ``runs`` — read runs of runtime records in one match each; every other hit through the rules;
* ``child`` — scan a large plain file in a forked child, on the other core;
* ``counters`` — count a large file's counted lines with grep (or by byte range afterwards);
* ``options`` — ``ScanOptions``, the one set of knobs for all of them.
"""

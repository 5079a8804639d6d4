"""One name per figure: the CUDA graph pool's and the warm-up suggestion's figures leave the names
they were read under.

Revision ID: 0005_one_name_per_figure
Revises: 0004_scale
Create Date: 2026-12-01

Until now ``graph_capture_bytes`` was read from three lines and ``estimated_cuda_graph_bytes``
from two (issue 22).  Each figure gets one name; a stored fact moves by the line it was read
from (its ``text``, the evidence):

* ``CUDA graph pool memory: X GiB (actual), Y GiB (estimated), …``: X was ``graph_capture_bytes``,
  is ``cuda_graph_pool_bytes``; Y was ``estimated_cuda_graph_bytes``, is
  ``cuda_graph_pool_estimated_bytes``.
* ``Free memory on device (…) on startup. … G GiB for CUDAGraph memory. …``: G was
  ``graph_capture_bytes``, is ``cuda_graph_memory_bytes``.

``graph_capture_bytes`` keeps only ``Graph capturing finished … took Y GiB``, and
``estimated_cuda_graph_bytes`` only ``Estimated CUDA graph memory: X GiB total``.  Only names
change: every row, value and line stays.  (A boot that printed two wordings of one name for one
rank, read before 0005, keeps both facts: the ingest keeps one since 0005; ``ledger rm`` and a
re-ingest read it again.)  No table changes, so no view is touched.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_one_name_per_figure"
down_revision = "0004_scale"
branch_labels = None
depends_on = None

# (old name, new name, a literal of the line it was read from)
MOVES = [
    ("graph_capture_bytes", "cuda_graph_pool_bytes", "CUDA graph pool memory: "),
    ("estimated_cuda_graph_bytes", "cuda_graph_pool_estimated_bytes", "CUDA graph pool memory: "),
    ("graph_capture_bytes", "cuda_graph_memory_bytes", "GiB for CUDAGraph memory"),
]

# instr / strpos: a literal match (LIKE would read "_" and "%" as wildcards and fold case on SQLite)
_HOLDS = {"sqlite": "instr(text, :literal) > 0", "postgresql": "strpos(text, :literal) > 0"}


def _move(frm: str, to: str, literal: str) -> None:
    conn = op.get_bind()
    holds = _HOLDS[conn.dialect.name]
    conn.execute(sa.text(f"UPDATE fact SET name = :to WHERE name = :frm AND {holds}"),
                 {"to": to, "frm": frm, "literal": literal})


def upgrade() -> None:
    for old, new, literal in MOVES:
        _move(old, new, literal)


def downgrade() -> None:
    for old, new, literal in MOVES:
        _move(new, old, literal)

"""Migration 0005_one_name_per_figure moves facts read under the old meaning of a name: the CUDA
graph pool's two figures and the warm-up suggestion's CUDAGraph memory leave
graph_capture_bytes / estimated_cuda_graph_bytes, by the line each was read from; nothing else
changes.  Checked on a ledger of the real fixture 211 (every wording at once): taken back to
0004 the names are the old ones, and the upgrade moves them again, row for row."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from conftest import REAL

from ledger.db.migrate import alembic_config

F211 = next(REAL.glob("211_*.log"))


def names(engine) -> list[tuple[str, int, float]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(
            "SELECT name, line, value FROM fact WHERE name LIKE '%graph%bytes' ORDER BY line, name"))]


def test_downgrade_then_upgrade_moves_the_graph_figures_by_their_lines(db, cli):
    assert cli("ingest", str(F211)).exit_code == 0
    engine = sa.create_engine(db if "://" in db else f"sqlite:///{db}")
    new = names(engine)
    assert [(n, line) for n, line, _ in new] == [
        ("graph_capture_bytes", 24), ("cuda_graph_pool_bytes", 25), ("cuda_graph_pool_estimated_bytes", 25),
        ("cuda_graph_memory_bytes", 26)]
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0004_scale")
    old = names(engine)
    assert [(n, line) for n, line, _ in old] == [
        ("graph_capture_bytes", 24), ("estimated_cuda_graph_bytes", 25), ("graph_capture_bytes", 25),
        ("graph_capture_bytes", 26)]
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")
    assert names(engine) == new
    engine.dispose()


def test_the_capture_lines_figure_stays_graph_capture_bytes(db, cli):
    cli("ingest", str(F211))
    engine = sa.create_engine(db if "://" in db else f"sqlite:///{db}")
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0004_scale")
        command.upgrade(alembic_config(conn), "head")
    assert [line for n, line, _ in names(engine) if n == "graph_capture_bytes"] == [24]
    engine.dispose()

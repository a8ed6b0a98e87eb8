"""Hourly roll-ups as runs: ``rollup_hour`` (one row per gpu, provider, kind and hour) becomes
``rollup_series`` plus ``rollup_hour_run`` (one row per run of equal consecutive hours).

Every hour's figures are carried over as they are (hours before the raw-retention horizon
have no intervals left to recompute them from). A database whose intervals have no roll-ups
yet (moved from the layout before 0003) gets them computed.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 01:30:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0006'
down_revision: Union[str, Sequence[str], None] = '0005'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    from db import rollups

    bind = op.get_bind()
    existing = sa.inspect(bind).get_table_names()
    if 'rollup_series' not in existing:  # a pre-migration database made from the models has them
        _create_run_tables()
    hours = bind.execute(sa.text(
        "SELECT gpu_id, provider_id, kind_id, bucket, min, median, max, offers FROM rollup_hour "
        "ORDER BY gpu_id, provider_id, kind_id, bucket")).all() if 'rollup_hour' in existing else []
    series: dict[tuple[int, int, int], tuple[list[int], list[rollups.Figures]]] = {}
    for g, p, k, bucket, mn, md, mx, offers in hours:
        got = series.setdefault((g, p, k), ([], []))
        got[0].append(int(bucket) // rollups.HOUR)
        got[1].append((float(mn), float(md), float(mx), int(offers)))
    ids = rollups.series_ids(bind, wanted=series)
    rollups.write_runs(bind, ((ids[key], *run) for key, (h, f) in series.items() for run in rollups.encode(h, f)))
    if 'rollup_hour' in existing:
        op.drop_table('rollup_hour')
    has_rollups = bool(hours) or bind.execute(sa.text("SELECT 1 FROM rollup_day")).first() is not None
    if not has_rollups and bind.execute(sa.text("SELECT 1 FROM price_interval")).first() is not None:
        rollups.rebuild(bind, open_runs=False, index=False)  # every run in rollup_hour_run, as at this revision


def _create_run_tables() -> None:
    op.create_table('rollup_series',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('gpu_id', sa.SmallInteger(), nullable=False),
    sa.Column('provider_id', sa.SmallInteger(), nullable=False),
    sa.Column('kind_id', sa.SmallInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('gpu_id', 'provider_id', 'kind_id', name='uq_rollup_series')
    )
    op.create_table('rollup_hour_run',
    sa.Column('series_id', sa.SmallInteger(), autoincrement=False, nullable=False),
    sa.Column('start', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('hours', sa.SmallInteger(), nullable=False),
    sa.Column('min', sa.Float(), nullable=False),
    sa.Column('median', sa.Float(), nullable=False),
    sa.Column('max', sa.Float(), nullable=False),
    sa.Column('offers', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('series_id', 'start'),
    sqlite_with_rowid=False
    )


def downgrade() -> None:
    """Downgrade schema: every hour of every run back to its own row."""
    op.create_table('rollup_hour',
    sa.Column('gpu_id', sa.SmallInteger(), autoincrement=False, nullable=False),
    sa.Column('bucket', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('provider_id', sa.SmallInteger(), autoincrement=False, nullable=False),
    sa.Column('kind_id', sa.SmallInteger(), autoincrement=False, nullable=False),
    sa.Column('min', sa.Float(), nullable=False),
    sa.Column('median', sa.Float(), nullable=False),
    sa.Column('max', sa.Float(), nullable=False),
    sa.Column('offers', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('gpu_id', 'bucket', 'provider_id', 'kind_id'),
    sqlite_with_rowid=False
    )
    bind = op.get_bind()
    runs = bind.execute(sa.text(
        "SELECT s.gpu_id, s.provider_id, s.kind_id, r.start, r.hours, r.min, r.median, r.max, r.offers "
        "FROM rollup_hour_run r JOIN rollup_series s ON s.id = r.series_id")).all()
    rows = [{"g": g, "b": h * 3600, "p": p, "k": k, "mn": mn, "md": md, "mx": mx, "o": o}
            for g, p, k, start, n, mn, md, mx, o in runs for h in range(start, start + n)]
    if rows:
        bind.execute(sa.text("INSERT INTO rollup_hour (gpu_id, bucket, provider_id, kind_id, min, median, max, offers) "
                             "VALUES (:g, :b, :p, :k, :mn, :md, :mx, :o)"), rows)
    op.drop_table('rollup_hour_run')
    op.drop_table('rollup_series')

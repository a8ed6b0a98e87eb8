"""snapshot_time: every snapshot time of an imported archive series.

An import stored before this table existed leaves the times its intervals name (first and
last observation, next snapshot): the interior snapshots of an interval were not kept then.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 01:10:00.000000

"""
import json
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

# revision identifiers, used by Alembic.
revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    if 'snapshot_time' in sa.inspect(op.get_bind()).get_table_names():
        return  # a database made from the models before migrations existed
    op.create_table('snapshot_time',
    sa.Column('series', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('at', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.PrimaryKeyConstraint('series', 'at'),
    sqlite_with_rowid=False,
    )
    conn = op.get_bind()
    series = {}
    for offer_id, extra in conn.execute(sa.text("SELECT id, extra FROM offer")).all():
        extra = json.loads(extra) if isinstance(extra, str) else (extra or {})
        if isinstance(extra, dict) and extra.get('import_series'):
            series[offer_id] = str(extra['import_series'])
    if not series:
        return
    times = set()
    for offer_id, first, last, end in conn.execute(
            sa.text("SELECT offer_id, first_seen, last_seen, ends_at FROM price_interval")).all():
        if offer_id in series:
            times.update((series[offer_id], int(t)) for t in (first, last, end) if t is not None)
    conn.execute(sa.text("INSERT INTO snapshot_time (series, at) VALUES (:s, :t)"),
                 [{"s": s, "t": t} for s, t in sorted(times)])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('snapshot_time')

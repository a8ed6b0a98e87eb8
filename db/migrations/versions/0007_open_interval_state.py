"""An open interval's moving parts move to ``offer_state``: it gains ``observations``, and each
offer's current open interval takes its true ``last_seen`` and ``observations`` there while its
row holds the OPEN sentinel (see ``db.open_intervals``). Nothing is lost: downgrade writes them back.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 04:00:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

#: ``db.open_intervals.OPEN`` as this revision defines it (9999-12-31T23:59:59Z).
OPEN = 253_402_300_799

_OF_STATE = "(SELECT i.{column} FROM price_interval i WHERE i.id = offer_state.interval_id)"
_OF_INTERVAL = ("(SELECT s.{column} FROM offer_state s WHERE s.offer_id = price_interval.offer_id "
                "AND s.interval_id = price_interval.id)")


def upgrade() -> None:
    """Upgrade schema."""
    bind = op.get_bind()
    if 'observations' not in {c['name'] for c in sa.inspect(bind).get_columns('offer_state')}:
        op.add_column('offer_state', sa.Column('observations', sa.Integer(), nullable=False, server_default='1'))
    op.execute(
        f"UPDATE offer_state SET last_seen = {_OF_STATE.format(column='last_seen')}, "
        f"observations = {_OF_STATE.format(column='observations')} "
        "WHERE EXISTS (SELECT 1 FROM price_interval i WHERE i.id = offer_state.interval_id)")
    op.execute(f"UPDATE price_interval SET last_seen = {OPEN} WHERE ends_at IS NULL "
               "AND id IN (SELECT interval_id FROM offer_state)")


def downgrade() -> None:
    """Downgrade schema: every open interval's true values back into its row."""
    op.execute(f"UPDATE price_interval SET last_seen = {_OF_INTERVAL.format(column='last_seen')}, "
               f"observations = {_OF_INTERVAL.format(column='observations')} WHERE last_seen = {OPEN}")
    with op.batch_alter_table('offer_state') as batch:
        batch.drop_column('observations')

"""The GPUs a provider says are free to rent now, per offer: ``offer_state.available_count``
(NULL: no count stated). Current-only: a count that moves every collection would split the
price intervals if it were part of them; whether the offer was available is the history.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 09:30:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0012'
down_revision: Union[str, Sequence[str], None] = '0011'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    if 'available_count' not in {c['name'] for c in sa.inspect(op.get_bind()).get_columns('offer_state')}:
        op.add_column('offer_state', sa.Column('available_count', sa.Integer(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('offer_state') as batch:
        batch.drop_column('available_count')

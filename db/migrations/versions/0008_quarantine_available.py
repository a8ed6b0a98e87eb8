"""A quarantined observation keeps its availability: a held price that a later observation (or an
import of older snapshots) confirms is stored as it was seen, available or not, instead of
``available`` unknown. Rows quarantined before this revision keep NULL (not recorded).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 07:00:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0008'
down_revision: Union[str, Sequence[str], None] = '0007'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    if 'available' not in {c['name'] for c in sa.inspect(op.get_bind()).get_columns('quarantine')}:
        op.add_column('quarantine', sa.Column('available', sa.Boolean(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('quarantine') as batch:
        batch.drop_column('available')

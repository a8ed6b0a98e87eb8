"""Storage you can read: no sentinel, no side tables, provenance a column.

* ``price_interval`` (whose open rows held a far-future ``last_seen`` while ``offer_state`` held
  the true one) becomes two tables read through one view of the same name:
  ``price_interval_past`` (every interval that is no longer its offer's newest, written once)
  and ``price_interval_open`` (each offer's newest, rewritten in place; it replaces
  ``offer_state``, and takes its ``available_count``). Every row holds its true ``last_seen`` and ``observations``.
* ``interval_stated_start`` folds back into the intervals as the column ``stated_start``.
* The hourly runs get the same view: ``rollup_hour`` reads ``rollup_hour_run`` and
  ``rollup_hour_open``.
* ``scrape_run.source`` says where a run's observations came from (``live``, ``replay`` or
  ``import``), replacing the ``replay`` flag and the ``import of`` prefix of its message.

Nothing is lost: downgrade rebuilds the previous layout from the new one. The roll-ups are
rebuilt from the moved intervals (0013's index roll-up included: its own migration leaves that
to this one, since the roll-up code reads intervals through the view).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 09:30:00.000000

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0014'
down_revision: Union[str, Sequence[str], None] = '0013'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

#: The sentinel ``last_seen`` of revisions 0007-0013 (9999-12-31T23:59:59Z).
OPEN = 253_402_300_799
#: The message prefix an archive import wrote on its runs before ``scrape_run.source``.
IMPORT_NOTE = "import of "
#: An interval's columns after its id, in both tables and the view.
COLUMNS = ("offer_id, provider_id, gpu_id, kind_id, currency_id, price_per_hour, price_per_gpu_hour, available, "
           "first_seen, last_seen, ends_at, observations, stated_start")
RUN_FIELDS = "series_id, start, hours, min, median, max, offers"
#: PostgreSQL: where new interval ids come from (both tables take ids from it).
SEQUENCE = "price_interval_id_seq"

INTERVAL_VIEW = (f"CREATE VIEW price_interval AS SELECT id, {COLUMNS} FROM price_interval_past "
                 f"UNION ALL SELECT id, {COLUMNS} FROM price_interval_open")
RUN_VIEW = (f"CREATE VIEW rollup_hour AS SELECT {RUN_FIELDS} FROM rollup_hour_run "
            f"UNION ALL SELECT {RUN_FIELDS} FROM rollup_hour_open")


def _interval_columns() -> list[sa.Column]:
    return [
        sa.Column('provider_id', sa.SmallInteger(), nullable=False),
        sa.Column('gpu_id', sa.SmallInteger(), nullable=True),
        sa.Column('kind_id', sa.SmallInteger(), nullable=False),
        sa.Column('currency_id', sa.SmallInteger(), nullable=False),
        sa.Column('price_per_hour', sa.Float(), nullable=False),
        sa.Column('price_per_gpu_hour', sa.Float(), nullable=False),
        sa.Column('available', sa.Boolean(), nullable=True),
        sa.Column('first_seen', sa.BigInteger(), nullable=False),
        sa.Column('last_seen', sa.BigInteger(), nullable=False),
        sa.Column('ends_at', sa.BigInteger(), nullable=True),
        sa.Column('observations', sa.Integer(), nullable=False),
        sa.Column('stated_start', sa.BigInteger(), nullable=True),
    ]


def _create_tables(existing: set[str]) -> None:
    if 'price_interval_past' not in existing:
        op.create_table('price_interval_past',
        sa.Column('offer_id', sa.Integer(), nullable=False),
        *_interval_columns(),
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.ForeignKeyConstraint(['offer_id'], ['offer.id'], ),
        sa.PrimaryKeyConstraint('id')
        )
        op.create_index('ix_price_interval_past_gpu_last_first', 'price_interval_past',
                        ['gpu_id', 'last_seen', 'first_seen'], unique=False)
    if 'price_interval_open' not in existing:
        op.create_table('price_interval_open',
        sa.Column('offer_id', sa.Integer(), autoincrement=False, nullable=False),
        *_interval_columns(),
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('available_count', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['offer_id'], ['offer.id'], ),
        sa.PrimaryKeyConstraint('offer_id'),
        postgresql_with={'fillfactor': 50}
        )
        op.create_index('ix_price_interval_open_id', 'price_interval_open', ['id'], unique=True)
        op.create_index('ix_price_interval_open_provider', 'price_interval_open', ['provider_id'], unique=False)
        op.create_index('ix_price_interval_open_gpu', 'price_interval_open', ['gpu_id'], unique=False)


def _intervals_up(existing: set[str]) -> None:
    _create_tables(existing)
    if 'price_interval' not in existing:  # a database made from the models: nothing to move
        return
    plain = ("i.offer_id, i.provider_id, i.gpu_id, i.kind_id, i.currency_id, i.price_per_hour, i.price_per_gpu_hour, "
             "i.available, i.first_seen")
    stated = "(SELECT ss.stated_start FROM interval_stated_start ss WHERE ss.interval_id = i.id)"
    # each offer's newest interval, with the true values its state held while open
    op.execute(f"INSERT INTO price_interval_open (id, {COLUMNS}, available_count) SELECT i.id, {plain}, "
               f"CASE WHEN i.last_seen = {OPEN} THEN s.last_seen ELSE i.last_seen END, i.ends_at, "
               f"CASE WHEN i.last_seen = {OPEN} THEN s.observations ELSE i.observations END, {stated}, "
               "s.available_count FROM offer_state s JOIN price_interval i ON i.id = s.interval_id")
    # the others never held the sentinel
    op.execute(f"INSERT INTO price_interval_past (id, {COLUMNS}) SELECT i.id, {plain}, i.last_seen, i.ends_at, "
               f"i.observations, {stated} FROM price_interval i "
               "WHERE NOT EXISTS (SELECT 1 FROM offer_state s WHERE s.interval_id = i.id) ORDER BY i.id")
    op.drop_table('interval_stated_start')
    op.drop_table('offer_state')
    op.drop_table('price_interval')


def _scrape_run_up(bind: sa.engine.Connection) -> None:
    columns = {c['name'] for c in sa.inspect(bind).get_columns('scrape_run')}
    if 'source' not in columns:
        op.add_column('scrape_run', sa.Column('source', sa.String(length=8), nullable=False, server_default='live'))
    if 'replay' in columns:
        op.execute("UPDATE scrape_run SET source = 'replay' WHERE replay")
        op.execute("ALTER TABLE scrape_run DROP COLUMN replay")
    op.execute(f"UPDATE scrape_run SET source = 'import' WHERE error_message LIKE '{IMPORT_NOTE}%'")


def upgrade() -> None:
    """Upgrade schema."""
    bind = op.get_bind()
    existing = set(sa.inspect(bind).get_table_names())
    _intervals_up(existing)
    if bind.dialect.name == 'postgresql':
        op.execute(f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}")
        op.execute(f"SELECT setval('{SEQUENCE}', GREATEST(1, (SELECT COALESCE(MAX(id), 0) FROM "
                   "(SELECT id FROM price_interval_past UNION ALL SELECT id FROM price_interval_open) i)))")
    op.execute(INTERVAL_VIEW)
    op.execute(RUN_VIEW)
    _scrape_run_up(bind)
    if bind.execute(sa.text("SELECT 1 FROM price_interval LIMIT 1")).first() is not None:
        from db import rollups

        rollups.rebuild(bind)  # every roll-up from the intervals' true values (0013's index_day included)


def downgrade() -> None:
    """Downgrade schema: the layout of 0013, every value as it was."""
    bind = op.get_bind()
    op.execute("DROP VIEW rollup_hour")
    op.execute("DROP VIEW price_interval")
    op.add_column('scrape_run', sa.Column('replay', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute("UPDATE scrape_run SET replay = (source = 'replay')")
    op.execute("ALTER TABLE scrape_run DROP COLUMN source")
    if bind.dialect.name == 'postgresql':
        op.execute(f"DROP SEQUENCE {SEQUENCE}")
    op.create_table('price_interval',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('offer_id', sa.Integer(), nullable=False),
    *_interval_columns()[:-1],
    sa.ForeignKeyConstraint(['offer_id'], ['offer.id'], name='fk_price_interval_offer'),
    sa.PrimaryKeyConstraint('id', name='pk_price_interval_new')
    )
    op.create_index('ix_price_interval_gpu_last_first', 'price_interval', ['gpu_id', 'last_seen', 'first_seen'],
                    unique=False)
    op.create_table('offer_state',
    sa.Column('offer_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('interval_id', sa.Integer(), nullable=False),
    sa.Column('provider_id', sa.SmallInteger(), nullable=False),
    sa.Column('last_seen', sa.BigInteger(), nullable=False),
    sa.Column('observations', sa.Integer(), nullable=False, server_default='1'),
    sa.Column('available_count', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['offer_id'], ['offer.id'], ),
    sa.PrimaryKeyConstraint('offer_id')
    )
    op.create_index('ix_offer_state_provider', 'offer_state', ['provider_id', 'last_seen'], unique=False)
    op.create_table('interval_stated_start',
    sa.Column('interval_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('stated_start', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['interval_id'], ['price_interval.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('interval_id')
    )
    old = COLUMNS.removesuffix(", stated_start")
    rest = ("offer_id, provider_id, gpu_id, kind_id, currency_id, price_per_hour, price_per_gpu_hour, available, "
            "first_seen")
    op.execute(f"INSERT INTO price_interval (id, {old}) SELECT id, {old} FROM price_interval_past ORDER BY id")
    # an offer's open newest interval holds the sentinel again, its true values in its state
    op.execute(f"INSERT INTO price_interval (id, {old}) SELECT id, {rest}, "
               f"CASE WHEN ends_at IS NULL THEN {OPEN} ELSE last_seen END, ends_at, observations "
               "FROM price_interval_open ORDER BY id")
    op.execute("INSERT INTO offer_state (offer_id, interval_id, provider_id, last_seen, observations, available_count) "
               "SELECT offer_id, id, provider_id, last_seen, observations, available_count FROM price_interval_open")
    op.execute("INSERT INTO interval_stated_start (interval_id, stated_start) SELECT id, stated_start FROM "
               "(SELECT id, stated_start FROM price_interval_past UNION ALL SELECT id, stated_start FROM "
               "price_interval_open) i WHERE stated_start IS NOT NULL")
    if bind.dialect.name == 'postgresql':
        op.execute("SELECT setval(pg_get_serial_sequence('price_interval', 'id'), "
                   "GREATEST(1, (SELECT COALESCE(MAX(id), 0) FROM price_interval)))")
    op.drop_table('price_interval_open')
    op.drop_table('price_interval_past')

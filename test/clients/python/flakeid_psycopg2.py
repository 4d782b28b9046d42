"""psycopg2 hands a flakeid over as its text, exact but a str.
register_flakeid(conn) makes the connection read flakeid and flakeid[]
values as Python ints; parameters need nothing (an int or a str works)."""

import psycopg2.extensions


def register_flakeid(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT oid, typarray FROM pg_type WHERE oid = 'flakeid'::regtype")
        oid, array_oid = cur.fetchone()
    flakeid = psycopg2.extensions.new_type(
        (oid,), "FLAKEID", lambda value, cur: None if value is None else int(value)
    )
    psycopg2.extensions.register_type(flakeid, conn)
    psycopg2.extensions.register_type(
        psycopg2.extensions.new_array_type((array_oid,), "FLAKEID[]", flakeid), conn
    )

"""orders_app: a small shop's database code, the application under test in this example.

Two tables: ``stock`` (one row per item: how many are left, ``qty``) and ``orders`` (one row per
order: its item and quantity). Placing an order is one transaction: lock the item's stock row,
refuse when too few are left, take the quantity off the stock and insert the order. The order's
id, chosen by the client, makes placing it idempotent: an order placed again (a client retrying
after a lost connection) is found and not placed twice. Whatever happens to the database, what
the shop promises is

    for every item:  stock.qty + sum(orders.qty of the item) == the initial stock

and an order the shop confirmed is never lost.
"""

from __future__ import annotations


class OutOfStock(Exception):
    """Too few left: the order is refused and nothing is written."""


def schema(table_engine: str = "InnoDB") -> list[str]:
    return [
        "DROP TABLE IF EXISTS orders",
        "DROP TABLE IF EXISTS stock",
        f"CREATE TABLE stock (item INT NOT NULL PRIMARY KEY, qty BIGINT NOT NULL) ENGINE={table_engine}",
        f"CREATE TABLE orders (id BIGINT NOT NULL PRIMARY KEY, item INT NOT NULL, qty INT NOT NULL) "
        f"ENGINE={table_engine}",
    ]


def restock(cur, items: int, qty: int) -> None:
    """Every item 0 .. items-1 with ``qty`` in stock (autocommit)."""
    cur.execute("DELETE FROM stock")
    for i in range(0, items, 500):
        rows = [(item, qty) for item in range(i, min(items, i + 500))]
        cur.execute("INSERT INTO stock (item, qty) VALUES " + ",".join(["(%s, %s)"] * len(rows)),
                    [v for r in rows for v in r])


def place_order(cur, order_id: int, item: int, qty: int) -> int:
    """The shop's one write, inside the caller's transaction: returns the stock left. Placing the
    same order again changes nothing (the item's lock first, so an attempt still in flight ends
    before this one looks)."""
    cur.execute("SELECT qty FROM stock WHERE item = %s FOR UPDATE", (item,))
    row = cur.fetchone()
    left = row[0] if row else 0
    cur.execute("SELECT 1 FROM orders WHERE id = %s", (order_id,))
    if cur.fetchone():
        return int(left)  # placed already
    if left < qty:
        raise OutOfStock(f"item {item}: {left} left, {qty} ordered")
    cur.execute("UPDATE stock SET qty = qty - %s WHERE item = %s", (qty, item))
    cur.execute("INSERT INTO orders (id, item, qty) VALUES (%s, %s, %s)", (order_id, item, qty))
    return left - qty


def stock_level(cur, item: int) -> int:
    cur.execute("SELECT qty FROM stock WHERE item = %s", (item,))
    row = cur.fetchone()
    return int(row[0]) if row else 0


def stock_and_orders(cur) -> dict:
    """Stock and ordered quantity per item, read consistently: shared locks on every stock row
    first (no order can commit meanwhile: it needs its stock row's exclusive lock), then the orders.
    The caller holds a transaction."""
    # LOCK IN SHARE MODE, not MySQL 8's FOR SHARE: MariaDB (Galera) knows only the former
    cur.execute("SELECT item, qty FROM stock ORDER BY item LOCK IN SHARE MODE")
    stock = {str(item): int(qty) for item, qty in cur.fetchall()}
    cur.execute("SELECT item, SUM(qty) FROM orders GROUP BY item")
    ordered = {str(item): int(total) for item, total in cur.fetchall()}
    return {"stock": stock, "ordered": ordered}


def order_ids(cur) -> list[int]:
    cur.execute("SELECT id FROM orders")
    return [int(r[0]) for r in cur.fetchall()]

"""The shop's workload for ndbchaos: its schema, its two operations, what must hold at the end.

Registered through the entry point ``orders`` of the group ``ndbchaos.workloads``
(pyproject.toml), so a scenario names it ``workload="orders"``; the load's worker processes import
this module again by that name.
"""

from __future__ import annotations

from ndbchaos.workload.app import AppWorkload, Operation, Rejected, transaction

import orders_app as shop


class Orders(AppWorkload):
    name = "orders"
    defaults = {"items": 20, "stock": 1_000_000, "max_qty": 3}
    operations = (
        # each order has an id of its own: the durability check looks for every confirmed one;
        # placing it again is harmless (the shop finds it), so an unknown outcome is retried
        Operation("place_order", "write", weight=9, key="order_id", idempotent=True),
        Operation("stock_level", "read", weight=1),
        # now and then the whole shop, read consistently: the invariant must hold at every moment
        Operation("audit", "read", weight=0.05, invariant=True),
    )

    def schema(self, table_engine):
        return shop.schema(table_engine)

    def populate(self, cur):
        shop.restock(cur, self.params["items"], self.params["stock"])

    def generate(self, op, rng, slot):
        item = rng.randrange(self.params["items"])
        if op == "place_order":
            return {"order_id": self.next_key(slot), "item": item, "qty": rng.randint(1, self.params["max_qty"])}
        return {"item": item} if op == "stock_level" else None

    def place_order(self, cur, value):
        with transaction(cur):
            try:
                return shop.place_order(cur, value["order_id"], value["item"], value["qty"])
            except shop.OutOfStock as e:
                raise Rejected(str(e)) from None

    def stock_level(self, cur, value):
        return shop.stock_level(cur, value["item"])

    def audit(self, cur, value):
        with transaction(cur):
            return shop.stock_and_orders(cur)

    def final_keys(self, cur):
        return shop.order_ids(cur)

    def final_state(self, cur):
        return self.audit(cur, None)

    def invariant(self, state):
        initial = self.params["stock"]
        wrong = [f"item {item}: {qty} in stock + {state['ordered'].get(item, 0)} ordered"
                 for item, qty in state["stock"].items() if qty + state["ordered"].get(item, 0) != initial]
        if len(state["stock"]) != self.params["items"]:
            wrong.append(f"{len(state['stock'])} items in stock, {self.params['items']} expected")
        if not wrong:
            return None
        return f"{len(wrong)} item(s) off the initial {initial}: " + "; ".join(wrong[:3])

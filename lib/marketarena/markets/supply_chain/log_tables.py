"""What a supply_chain episode logs (``market.py``): the columns of its log tables, each kept as
column chunks (a step or a round each) and made a DataFrame once, at the end; and after each
retail phase the step's rows (buyers, visits, sales, attention, states) and its summary for the
next prompts (``StepSummary``, in the market's ``history``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.core.prompts import quote_text
from marketarena.markets.supply_chain.observations import ItemSummary, SellerSummary, StepSummary


class SupplyChainLog:
    """Mixin of ``SupplyChainMarket`` (``market.py``): its log tables (``TABLE_COLUMNS``,
    :meth:`tables`) and what a step logs (:meth:`_log_step`, reading the market's state: its ids
    and items, funds, stock, the step's allocation and spend, ``history``). The market resets
    ``chunks`` with each episode."""

    def _log_step(
        self,
        buyers,
        walk,
        sims,
        mask_active,
        active_idx,
        sold,
        prices,
        slogans,
        revenue,
        cogs,
        holding,
        profit,
    ):
        t, ids, items = self.t, self.ids, self.items
        bm = self.buyer_model
        tribes = np.array(bm.tribe_names, dtype=object)
        self._log(
            "buyers",
            step=t,
            buyer=np.arange(len(buyers.item)),
            persona_id=bm.persona_ids[buyers.persona],
            tribe=tribes[buyers.tribe],
            item=self._items[buyers.item],
            demand=buyers.demand,
            wtp=buyers.wtp,
            bought=walk.bought,
        )
        v = walk.visits
        b, s, x = (v[:, c].astype(np.int64) for c in range(3))
        wanted, stock, take = (v[:, c].astype(np.int64) for c in (3, 4, 5))
        self._log(
            "visits",
            step=t,
            buyer=b,
            agent_id=self._ids[s],
            item=self._items[x],
            wanted=wanted,
            stock_before=stock,
            bought=take,
            price=v[:, 6],
        )
        sale = take > 0
        self._log(
            "trades",
            step=t,
            kind="sale",
            agent_id=self._ids[s[sale]],
            counterparty=np.char.add("buyer-", b[sale].astype(str)).astype(object),
            item=self._items[x[sale]],
            qty=take[sale],
            price=v[sale, 6],
        )
        bj, aj = np.nonzero(mask_active)
        self._log(
            "attention",
            step=t,
            buyer=bj.astype(np.int64),
            agent_id=self._ids[active_idx[aj]],
            sim=sims[bj, aj].astype(np.float64),
        )
        self._log(
            "states",
            step=t,
            agent_id=self._ids,
            funds=self.funds.copy(),
            inventory_units=self.inv.sum(axis=1),
            inventory_value=self.inv_value.sum(axis=1),
            revenue=revenue,
            cogs=cogs,
            holding_cost=holding,
            profit=profit,
            spend=self._spend.astype(float),
            units_won=self._won.astype(np.int64),
            units_sold=sold.sum(axis=1),
            active=self.active.copy(),
        )
        summary_items = []
        for j, x in enumerate(items):
            units = int(sold[:, j].sum())
            rev = float((sold[:, j] * np.nan_to_num(prices[:, j])).sum())
            summary_items.append(
                ItemSummary(
                    item=x,
                    supply=int(self.supply[j]),
                    units_won=int(self._step_alloc[:, j].sum()),
                    clearing_price=self._clearing_price(
                        self._step_alloc[:, j], self._step_price[:, j]
                    ),
                    units_sold=units,
                    avg_sale_price=round(rev / units, 2) if units else None,
                )
            )
        sellers = [
            SellerSummary(
                agent_id=a,
                units_sold=int(sold[i].sum()),
                slogan=quote_text(slogans[i], self.p.slogan_max_chars).literal,
                prices={
                    x: int(prices[i, j]) for j, x in enumerate(items) if not np.isnan(prices[i, j])
                },
            )
            for i, a in enumerate(ids)
            if self.active[i] or sold[i].sum() > 0
        ]
        self.history.append(StepSummary(step=t, items=summary_items, sellers=sellers))

    TABLE_COLUMNS = {
        "states": [
            "step",
            "agent_id",
            "funds",
            "inventory_units",
            "inventory_value",
            "revenue",
            "cogs",
            "holding_cost",
            "profit",
            "spend",
            "units_won",
            "units_sold",
            "active",
        ],
        "bids": [
            "step",
            "round",
            "agent_id",
            "item",
            "qty",
            "price",
            "valid_set",
            "allocated",
            "final",
        ],
        "trades": ["step", "kind", "agent_id", "counterparty", "item", "qty", "price"],
        "buyers": ["step", "buyer", "persona_id", "tribe", "item", "demand", "wtp", "bought"],
        "visits": [
            "step",
            "buyer",
            "agent_id",
            "item",
            "wanted",
            "stock_before",
            "bought",
            "price",
        ],
        "attention": ["step", "buyer", "agent_id", "sim"],
        "slogans": ["step", "agent_id", "slogan", "vector"],
        "posts": ["step", "agent_id", "item", "price"],
    }

    def _log(self, table: str, **columns) -> None:
        """Append one chunk (a step or round) to a log table; scalars broadcast. Kept as columns
        and made a DataFrame once, in :meth:`tables` (a frame per chunk, 3 to 9 a step, cost more
        than the step's arithmetic)."""
        n = max((len(v) for v in columns.values() if isinstance(v, (np.ndarray, list))), default=1)
        self.chunks[table].append(
            {
                k: columns[k]
                if isinstance(columns[k], (np.ndarray, list))
                else np.repeat(columns[k], n)
                for k in self.TABLE_COLUMNS[table]
            }
        )

    def tables(self) -> dict[str, pd.DataFrame]:
        out = {}
        for name, cols in self.TABLE_COLUMNS.items():
            chunks = [c for c in self.chunks[name] if len(c[cols[0]])]
            out[name] = _joined(chunks) if chunks else pd.DataFrame(columns=cols)
        out["items"] = pd.DataFrame([it.model_dump() for it in self.p.items]).rename(
            columns={"id": "item"}
        )
        return out


def _joined(chunks: list[dict]) -> pd.DataFrame:
    """The chunks' rows one after another, as ``pd.concat`` of a DataFrame per chunk makes them:
    each column joined as one array where that gives the same column (every chunk a numpy array
    of one numeric or boolean dtype, or of text: numpy's fixed-width strings, or objects that are
    all ``str``), else the frames concatenated."""
    columns = {}
    for name in chunks[0]:
        parts = [c[name] for c in chunks]
        if not all(isinstance(a, np.ndarray) and a.ndim == 1 for a in parts):
            break
        kinds = {a.dtype.kind for a in parts}
        if kinds <= {"U", "O"} and all(
            a.dtype.kind == "U" or pd.api.types.infer_dtype(a, skipna=False) == "string"
            for a in parts
        ):
            columns[name] = np.concatenate([a.astype(object) for a in parts])
        elif len(kinds) == 1 and kinds <= set("biuf") and len({a.dtype for a in parts}) == 1:
            columns[name] = np.concatenate(parts)
        else:
            break
    else:
        return pd.DataFrame(columns)
    return pd.concat([pd.DataFrame(c) for c in chunks], ignore_index=True)

"""Market registry: market kind -> what its folder declares, each part loaded when first needed.

A market is a folder ``marketarena/markets/<kind>/`` whose ``__init__.py`` declares the kind::

    KIND = MarketKind(__name__, params="params:CournotParams", rules="market:CournotRules",
                      analysis="analysis:CournotAnalysis", phases=("quantity",))

Each part is named as ``"<module>:<name>"`` inside the market's package and imported only when a
caller asks for it, so a stage loads what its job needs: validating an instance's params imports
the market's ``params`` module alone (its economics, its baselines, pandas stay unloaded), the
simulate stage the rules, the metrics stage the analysis. The parts (``core.rules``,
``core.analysis``, ``core.sources``):

- ``params``: the instance params model (``core.params.MarketParams`` subclass); required;
- ``rules``: a ``MarketRules`` subclass (plan, seats, building an episode, prompts); required;
- ``analysis``: a ``MarketAnalysis`` subclass (reference, metrics, board, figures, summaries);
  required for the pipeline's stages after simulate;
- ``sources``: format name -> a ``MarketSource`` subclass, for markets that import published
  games; ``source_defaults``: ``"<module>:<name>"`` of a mapping (or a function returning one)
  format -> the params of an instance imported in that format (``config.parse_market`` fills them
  in before a key the instance writes), kept in a light module (the params one) since every
  params file with such an instance reads it.

Beside its parts, a declaration names ``phases``: the decision phases its market hands out
(``core.types.Decision.phase``), here so that reading the params checks what names them without
importing the market: a mock model's per-phase script (``llm/mock.py``, ``config.parse_params``).
The contract suite checks every decision's phase is one of them; ``default`` names none (it is a
per-phase script's key for the phases it does not name).

Markets are discovered: adding a folder with a ``KIND`` adds a market kind, and no stage changes.
``params.yaml`` may run a kind under several instance names (``markets: {bertrand_a10: {market:
bertrand, alpha: 10}}``); :func:`rules_for` and :func:`analysis_for` resolve an instance to its
part and params. A folder may also be registered from outside the package (:func:`register`):
the contract suite (``marketarena.testing.contract``) checks a market written elsewhere so.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import marketarena.markets

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.core.analysis import MarketAnalysis
    from marketarena.core.params import MarketParams
    from marketarena.core.rules import MarketRules
    from marketarena.core.sources import MarketSource


class MarketKind:
    """What a market's folder declares (module docstring); its parts load on first use."""

    def __init__(
        self,
        package: str,
        *,
        params: str,
        rules: str,
        analysis: str | None = None,
        sources: Mapping[str, str] | None = None,
        source_defaults: str | None = None,
        uses: tuple[str, ...] = (),
        phases: tuple[str, ...] = (),
    ):
        self.package, self._params, self._rules, self._analysis = package, params, rules, analysis
        if "default" in phases:
            raise ValueError(f"{package}: 'default' cannot name a phase (a mock script's key)")
        #: its decision phases (the module docstring)
        self.phases = tuple(phases)
        self._sources = dict(sources or {})
        self._source_defaults = source_defaults
        #: dotted keys of the global params sections its episodes depend on (``personas``,
        #: ``embedding.model``): fingerprinted, and what its stages depend on beside its folder
        self.uses = tuple(uses)

    @property
    def kind(self) -> str:
        return self.package.rpartition(".")[2]

    def __getstate__(self) -> dict[str, Any]:
        """The declaration alone (not its loaded parts): a worker process or a Ray task that
        receives a run of a market registered outside the package registers it again
        (``simulate/context.py``) and loads its parts itself."""
        return {
            k: self.__dict__[k]
            for k in (
                "package",
                "_params",
                "_rules",
                "_analysis",
                "_sources",
                "_source_defaults",
                "uses",
                "phases",
            )
        }

    @cached_property
    def folder(self) -> Path:
        """The market's folder: its code, templates and data (what its stages' code hash
        covers)."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise KeyError(f"market {self.kind!r}: no package {self.package}")
        return Path(list(spec.submodule_search_locations)[0])

    def _load(self, ref: str) -> Any:
        module, _, name = ref.partition(":")
        return getattr(importlib.import_module(f"{self.package}.{module}"), name)

    @cached_property
    def params_model(self) -> type["MarketParams"]:
        return self._load(self._params)

    @cached_property
    def rules(self) -> "MarketRules":
        return self._load(self._rules)()

    @cached_property
    def analysis(self) -> "MarketAnalysis":
        if self._analysis is None:
            raise KeyError(
                f"market {self.kind!r} declares no analysis: its episodes can be "
                "played, not measured"
            )
        return self._load(self._analysis)(self.rules)

    @property
    def formats(self) -> tuple[str, ...]:
        """The formats of published games the market imports."""
        return tuple(self._sources)

    def source(self, fmt: str) -> "MarketSource":
        """The importer of format ``fmt`` (a KeyError naming the formats there are)."""
        if fmt not in self._sources:
            offered = ", ".join(self._sources) or "none"
            raise KeyError(f"{self.kind} imports the formats {offered} (got {fmt!r})")
        return self._sources_loaded[fmt]

    @cached_property
    def _sources_loaded(self) -> dict[str, "MarketSource"]:
        return {fmt: self._load(ref)() for fmt, ref in self._sources.items()}

    def source_defaults(self, fmt: str) -> dict[str, Any]:
        """The params of an instance imported in format ``fmt`` (empty: none declared)."""
        if self._source_defaults is None:
            return {}
        table = self._load(self._source_defaults)
        table = table() if callable(table) else table
        return dict(table.get(fmt, {}))

    def analysis_of(self, mp: "MarketParams") -> "MarketAnalysis":
        """The analysis of instance ``mp``: its source's own where it is imported and the source
        brings one (``MarketSource.analysis``), else the market's."""
        if mp.source is not None:
            own = self.source(mp.source.format).analysis
            if own is not None:
                return self._source_analyses.setdefault(mp.source.format, own(self.rules))
        return self.analysis

    @cached_property
    def _source_analyses(self) -> dict[str, "MarketAnalysis"]:
        return {}


#: kinds registered from outside the package (:func:`register`)
_EXTRA: dict[str, MarketKind] = {}


@lru_cache(maxsize=1)
def _folders() -> tuple[str, ...]:
    return tuple(
        sorted(
            m.name
            for m in pkgutil.iter_modules(marketarena.markets.__path__)
            if m.ispkg and not m.name.startswith("_")
        )
    )


def market_names() -> tuple[str, ...]:
    """Every market kind: a folder of ``marketarena/markets`` not starting with ``_``, and any
    registered with :func:`register`."""
    return tuple(sorted({*_folders(), *_EXTRA}))


def registered(kind: str) -> MarketKind | None:
    """The declaration of ``kind`` when it was added with :func:`register` (None: a folder of
    ``marketarena/markets``, which every process finds by itself)."""
    return _EXTRA.get(kind)


def register(kind: MarketKind) -> Callable[[], None]:
    """Add a market kind declared outside ``marketarena/markets`` (a market in development, the
    contract suite's test market); returns the function that removes it again."""
    _EXTRA[kind.kind] = kind
    market_kind.cache_clear()
    return lambda: (_EXTRA.pop(kind.kind, None), market_kind.cache_clear())


@lru_cache(maxsize=None)
def market_kind(kind: str) -> MarketKind:
    """The declaration of market ``kind`` (a KeyError naming the known kinds)."""
    if kind in _EXTRA:
        return _EXTRA[kind]
    if kind not in _folders():
        raise KeyError(f"unknown market {kind!r} (known: {', '.join(market_names())})")
    declared = getattr(importlib.import_module(f"marketarena.markets.{kind}"), "KIND", None)
    if not isinstance(declared, MarketKind):
        raise KeyError(f"market {kind!r} is not ready: its package declares no KIND")
    return declared


def params_model(kind: str) -> type:
    """The params model of market ``kind``: its ``params`` module alone is imported."""
    return market_kind(kind).params_model


def rules_for(params: Any, instance: str) -> tuple["MarketRules", "MarketParams"]:
    """The rules and params of market instance ``instance`` of ``params.markets``."""
    mp = params.markets[instance]
    return market_kind(mp.market).rules, mp


def analysis_for(params: Any, instance: str) -> tuple["MarketAnalysis", "MarketParams"]:
    """The analysis (its source's, for an imported instance that has one) and params of
    ``instance``."""
    mp = params.markets[instance]
    return market_kind(mp.market).analysis_of(mp), mp

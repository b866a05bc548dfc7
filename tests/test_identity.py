"""One identity per model across studies (issue 54): the rule on the names the studies write, the
params table over it, and who each board row is (``overall.instance_players``)."""

import pandas as pd
import pytest

from marketarena.identity import IdentityOverride, identify
from marketarena.overall import instance_players

# (name as a study writes it, key, provider, date); written from the studies' own names
CASES = [
    # Agent Bazaar: a host before the name, in a folder (_) or a seat's model (/), and dashes
    ("anthropic_claude-sonnet-4-6", "claude-sonnet-4.6", "anthropic", ""),
    ("anthropic/claude-sonnet-4-6", "claude-sonnet-4.6", "anthropic", ""),
    ("claude-sonnet-4.6", "claude-sonnet-4.6", "anthropic", ""),
    ("openai-gpt-5.4", "gpt-5.4", "openai", ""),
    ("meta-llama/llama-3.1-70b-instruct", "llama-3.1-70b-instruct", "meta", ""),
    ("nvidia/llama-3.1-nemotron-70b-instruct", "llama-3.1-nemotron-70b-instruct", "nvidia", ""),
    # not a host: qwen-2.5 is Qwen's own name
    ("qwen-2.5-72b-instruct", "qwen-2.5-72b-instruct", "alibaba", ""),
    ("qwen/qwen3-8b", "qwen3-8b", "alibaba", ""),
    # BAZAAR, the collusion study, PACT: a date, a budget, an effort, a mode; their short names
    ("claude-opus-4-20250514-16K", "claude-opus-4 [16K]", "anthropic", "2025-05-14"),
    ("claude-opus-4-20250514-0K", "claude-opus-4 [0K]", "anthropic", "2025-05-14"),
    ("claude-sonnet-4-6-adaptive", "claude-sonnet-4.6 [adaptive]", "anthropic", ""),
    ("gpt-5.1-high", "gpt-5.1 [high]", "openai", ""),
    ("gpt-5-mini-medium", "gpt-5-mini [medium]", "openai", ""),
    ("mistral-medium", "mistral-medium", "mistral", ""),  # medium names the model here
    ("mistral-small-3-2", "mistral-small-3.2", "mistral", ""),
    ("grok-4-1-fast-non-reasoning", "grok-4.1-fast [non-reasoning]", "xai", ""),
    ("kimi-k2-thinking", "kimi-k2-thinking", "moonshot", ""),  # a release of its own
    ("grok-4-0709", "grok-4-0709", "xai", ""),  # a short stamp stays: it names a snapshot
    ("gpt-4o_mini", "gpt-4o-mini", "openai", ""),
    ("ernie_4_5_300b_a47b", "ernie-4.5-300b-a47b", "baidu", ""),
    ("llama4-scout", "llama-4-scout", "meta", ""),
    ("haiku35", "claude-3.5-haiku", "anthropic", ""),
    ("r1-0528", "deepseek-r1-0528", "deepseek", ""),
    ("qwen3-235B", "qwen3-235b", "alibaba", ""),
    ("o3", "o3", "openai", ""),
    ("gemma-3-12b-it", "gemma-3-12b-it", "google", ""),
]


@pytest.mark.parametrize(("name", "key", "provider", "date"), CASES)
def test_the_rule_reads_each_studys_spelling(name, key, provider, date):
    ident = identify(name)
    assert (ident.key, ident.provider, ident.date, ident.placed) == (key, provider, date, "rule")
    assert ident.name == name


def test_a_variant_is_the_same_model_run_another_way():
    a, b = identify("claude-opus-4-20250514-16K"), identify("claude-opus-4-20250514-0K")
    assert a.model == b.model == "claude-opus-4" and a.key != b.key
    assert (a.variant, b.variant) == ("16K", "0K")


def test_a_name_no_family_starts_is_its_own_model_marked_unplaced():
    ident = identify("Acme_FT-1")
    assert ident.placed == "unplaced" and ident.key == "acme-ft-1" and ident.provider == ""


def test_the_params_table_reads_another_name_or_gives_the_identity():
    table = {
        "gemma3": "gemma-3-27b-it",
        "Acme_FT-1": IdentityOverride(model="acme-ft-1", provider="acme", variant="sft"),
    }
    gemma = identify("gemma3", table)
    assert (gemma.key, gemma.provider, gemma.placed) == ("gemma-3-27b-it", "google", "table")
    assert identify("gemma3").key == "gemma-3"  # by the rule alone: which Gemma 3 is unknown
    acme = identify("Acme_FT-1", table)
    assert (acme.key, acme.provider, acme.placed) == ("acme-ft-1 [sft]", "acme", "table")


def test_each_board_row_is_its_roster_entry_or_the_model_its_study_logged():
    roster = [
        ("mine", None, "openai/gpt-5.4", "json"),  # an LLM entry: the endpoint's model id
        ("tagged", "shared-x", None, ""),  # a baseline followed on purpose
        ("naive", None, None, ""),  # a baseline: this instance only
    ]
    agents = pd.DataFrame(
        {
            "name": ["gpt-5.4", "gpt-5.4+stabilizing", "mine", "naive", "phi-4"],
            "kind": ["llm", "llm", "llm", "baseline", "llm"],
            "model": ["openai-gpt-5.4", "gpt-5.4", "openai/gpt-5.4", None, "microsoft/phi-4"],
            "harness": ["agent-bazaar-llm", "stabilizing", "json", "", "agent-bazaar-llm"],
        }
    )
    found = instance_players("crash_authors", roster, agents)
    assert found.keys == {
        "mine": "gpt-5.4",
        "tagged": "shared-x",
        "naive": None,
        "gpt-5.4": "gpt-5.4",
        "gpt-5.4+stabilizing": "gpt-5.4",
        "phi-4": "phi-4",
    }
    rows = pd.DataFrame(found.rows).set_index("name")
    assert rows.loc["gpt-5.4", "written"] == "openai-gpt-5.4"
    assert rows.loc["mine", "harness"] == "json"
    assert set(found.identities) == {"gpt-5.4", "phi-4"}

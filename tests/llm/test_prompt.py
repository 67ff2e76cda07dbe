"""Prompt templates, few-shot selection, query extraction, Retry-After and schema text, on
their own (no model, no plugin run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.errors import PredictionError
from pytest_queryeval.predict import prompt
from pytest_queryeval.predict.chat import ChatPredictor, retry_after
from tests.support import make_case

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("reply", "kind", "query", "how"), [
    ("```sql\nSELECT 1\n```", "sql", "SELECT 1", "```sql block"),
    ("Sure!\n```SQL\nSELECT 2\n```\nThis counts.", "sql", "SELECT 2", "```sql block"),
    ("```json\n{\"a\": 1}\n```\n```sql\nSELECT 3\n```", "sql", "SELECT 3",
     "```sql block, first of 2 blocks"),
    ("```python\nx = 1\n```", "sparql", "x = 1", "```python block (not sparql)"),
    ("~~~\nSELECT ?s WHERE { ?s ?p ?o }\n~~~", "sparql", "SELECT ?s WHERE { ?s ?p ?o }",
     "unlabelled fenced block"),
    ("  SELECT 4  ", "sql", "SELECT 4", "whole reply"),
    ("```json\n{\"dataset\": \"x\"}", "sdmx", "{\"dataset\": \"x\"}", "```json block"),  # cut off
])
def test_the_query_is_taken_from_the_reply(reply, kind, query, how):
    assert prompt.extract_query(reply, kind) == (query, how)


@pytest.mark.parametrize("reply", ["", "   \n", "```sql\n```", "```sql\n   \n```"])
def test_a_reply_without_a_query_is_an_error(reply):
    with pytest.raises(PredictionError, match="the model's reply holds no query"):
        prompt.extract_query(reply, "sql")


def test_templates_name_only_known_placeholders():
    assert prompt.check_template("{schema}\n{{literal}} {question}", "prompt")
    with pytest.raises(PredictionError, match=r"predictions.prompt: unknown placeholder "
                                              r"\{qestion\} \(known: \{question\}, \{evidence\}"):
        prompt.check_template("Q: {qestion}", "prompt")
    with pytest.raises(PredictionError, match=r"predictions.system: .*write a literal brace"):
        prompt.check_template("JSON like {\"a\": 1}", "system")
    with pytest.raises(PredictionError, match="unknown placeholder"):
        ChatPredictor({"source": "openai", "model": "m", "api_key": "k", "prompt": "{nope}"})


def _case(cid, question, gold="SELECT 1", kind="sql", datasource="db", **extra):
    return make_case(kind, id=cid, file=Path("t.yaml"), question=question, gold=gold,
                     datasource=datasource, **extra)


def test_few_shot_never_shows_the_case_or_its_question_and_prefers_its_datasource():
    case = _case("a", "How many?")
    others = [case, _case("dup", " how many? ", gold="SELECT 2"), _case("far", "Far?",
              datasource="other"), _case("sparql", "S?", kind="sparql"),
              _case("near", "Near?"), _case("nogold", "None?", gold=None),
              _case("broken", "Broken?", errors=["bad"])]
    assert [c.id for c in prompt.pick_examples(case, others, 5)] == ["near", "far"]
    assert prompt.pick_examples(case, others, 0) == []


def test_evidence_and_external_knowledge_fill_the_default_prompt():
    case = _case("a", "Top genre?", evidence="genre = Genre.Name",
                 external_knowledge="sales are InvoiceLine rows")
    fields = prompt.fields_of(case, "CREATE TABLE t (x INT);")
    assert prompt.render(None, prompt.DEFAULT_PROMPT, fields) == (
        "Schema:\nCREATE TABLE t (x INT);\n\nEvidence: genre = Genre.Name\n"
        "sales are InvoiceLine rows\n\nQuestion: Top genre?")
    bare = prompt.fields_of(_case("b", "Q?"), "")
    assert prompt.render(None, prompt.DEFAULT_PROMPT, bare) == "Question: Q?"
    assert bare["db_id"] == "db"


def test_retry_after_in_seconds_milliseconds_and_as_a_date():
    import email.utils
    import time

    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after({"retry-after": later}) <= 30
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


def test_rdf_schema_lists_classes_and_properties_with_counts(tmp_path):
    from pytest_queryeval.sources import open_source
    from pytest_queryeval.sources.describe import describe

    ttl = tmp_path / "g.ttl"
    ttl.write_text("@prefix ex: <http://example.org/> .\n"
                   "ex:a a ex:Room ; ex:floor 1 .\nex:b a ex:Room ; ex:floor 2 .\n"
                   "ex:c a ex:Sensor ; ex:in ex:a .\n")
    source = open_source("g", {"type": "rdf", "path": str(ttl)})
    try:
        text = describe(source)
    finally:
        source.close()
    assert text.splitlines() == [
        "Classes (instances):",
        "  <http://example.org/Room> (2)",
        "  <http://example.org/Sensor> (1)",
        "Properties (uses):",
        "  <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> (3)",
        "  <http://example.org/floor> (2)",
        "  <http://example.org/in> (1)",
    ]


def test_sdmx_schema_lists_the_datasets_dimensions_and_codes():
    pytest.importorskip("sdmx")
    from pytest_queryeval.sources.describe import describe_sdmx, target_datasets
    from pytest_queryeval.sources.sdmx_structure import structure_from_spec

    structure = structure_from_spec({"type": "sdmx-structure",
                                     "paths": [str(ROOT / "example_suite" / "data" / "sdmx")]})
    turns = [{"role": "user", "target": {"indicator_selection": [{"dataset_id": "IMF.STA:CPI"}]}}]
    assert target_datasets(turns) == ["IMF.STA:CPI"]
    text = describe_sdmx(structure, ["IMF.STA:CPI"], codes=3)
    assert text.startswith("Dataset IMF.STA:CPI:\n")
    assert ("  dimension COUNTRY (codelist IMF:CL_COUNTRY, 337 codes):\n"
            "    AFG: Afghanistan, Islamic Republic of\n    ALB: Albania\n    DZA: Algeria\n"
            "    ... and 334 more\n") in text
    assert "  dimension COICOP_1999 (codelist IMF:CL_COICOP_1999, 15 codes):\n" \
           "    CP01: Food and non-alcoholic beverages\n" in text


def test_dialect_placeholder_and_a_gold_per_dialect_as_example():
    """``{dialect}``: each fanned-out source's own dialect (issue 28); a few-shot example whose
    gold is keyed by dialect answers with the entry of the asking case's dialect."""
    duck = _case("q[duck]", "Q?", dialect="duckdb",
                 source_spec={"type": "duckdb", "path": "x.duckdb"})
    lite = _case("q", "Q?", source_spec={"type": "sqlite", "path": "x.sqlite"})
    pg = _case("p", "P?", source_spec={"type": "sqlalchemy",
                                       "url": "postgresql+psycopg://u@127.0.0.1/db"})
    assert [prompt.fields_of(c, "")["dialect"] for c in (duck, lite, pg)] == \
        ["duckdb", "sqlite", "postgres"]
    assert prompt.fields_of(_case("s", "S?", kind="sparql"), "")["dialect"] == ""
    assert prompt.render("{dialect}: {question}", "", prompt.fields_of(duck, "")) == \
        "duckdb: Q?"
    per_dialect = _case("g[duck]", "G?", dialect="duckdb",
                        gold={"sqlite": "SELECT 1", "duckdb": "SELECT 2"})
    assert prompt.gold_answer(per_dialect) == "```sql\nSELECT 2\n```"

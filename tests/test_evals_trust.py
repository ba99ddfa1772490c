"""What goes into the metric: failures counted in their model's group (infrastructure as
coverage), any schema compared by its types, figures per group with intervals that do not
collapse (tests/test_evals_statistics.py checks them against scipy and by hand), warnings a
quality team needs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evals.accounting import coverage
from evals.bootstrap import group_figures
from evals.label_import import import_labels
from evals.lakeio import write_events
from evals.score_run import run_scoring, score_lake
from evals.scoring import Label, Result, score_all
from extract.fields.base import Extraction
from extract.fields.publish import result_events
from extract.fields.result import succeeded_result
from infra import evals_wiring
from lake import events as ev

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
SCHEMA = "support.invoice_schema:Invoice"


def label(doc: str, **values) -> Label:
    return Label(doc, f"L-{doc}", "ann", T0 + timedelta(hours=1),
                 {k: tuple(v) for k, v in values.items()})


def result(doc: str, version: str | None = "v1", strategy: str = "single-pass", status: str =
           "succeeded", reason: str | None = None, minutes: float = 0, **values) -> Result:
    return Result(doc, f"J-{doc}-{strategy}-{minutes}", strategy, version,
                  T0 + timedelta(minutes=minutes), status, "nda",
                  {k: tuple((v, 1) for v in vs) for k, vs in values.items()}, reason)


# --- finding 2: failures -------------------------------------------------------------------------


def test_a_models_failures_count_in_its_group_and_infrastructure_is_coverage():
    labels = [label(f"d{i}", party=["A"]) for i in range(4)]
    results = [result("d0", party=["A"]),
               result("d1", status="failed", reason="invalid_output"),  # versioned failure
               result("d2", version=None, status="failed", reason="dead_letter"),  # old row
               result("d3", version=None, status="failed", reason="strategy_unavailable")]
    scored = score_all(labels, results)
    (group,) = group_figures(scored, resamples=0)
    assert (group.model_version, group.strategy) == ("v1", "single-pass")
    assert group.overall.documents == 3  # d0, and its two model failures as empty predictions
    s = group.overall.score
    assert (s.hits, s.predicted, s.expected) == (1, 1, 3)
    cover = coverage(labels, results)["single-pass"]
    assert (cover["labelled_documents_with_result"], cover["scored"],
            cover["not_scored_failed"], cover["scored_failed_extractions"]) == (4, 3, 1, 2)
    assert cover["not_scored_reasons"] == {"strategy_unavailable": 1}


# --- finding 3: any schema ------------------------------------------------------------------------


def _publish(lake: str, document_id: str, job_id: str, record) -> None:
    from support.invoice_schema import Invoice

    made = succeeded_result(document_id=document_id, job_id=job_id, strategy="single-pass",
                            schema_name=SCHEMA, extraction=Extraction(
                                Invoice.model_validate(record), model_version="m+1"),
                            processing_ms=5)
    write_events(lake, [ev.DocumentRegistered(document_id=document_id, job_id=job_id,
                                              source_name=f"{document_id}.pdf",
                                              sha256=document_id.ljust(64, "0"), bytes=1,
                                              occurred_at=T0),
                        *[e.model_copy(update={"occurred_at": T0 + timedelta(minutes=1)})
                          for e in result_events(made)]])


def test_a_custom_schema_is_scored_by_its_types(tmp_path: Path):
    """Finding 3: 1200.0 equals 1200, a nested item equals its spaced JSON, a date and a boolean
    compare by value; a wrong number is still wrong."""
    lake = str(tmp_path / "lake")
    doc, other = "0196a0b0-0000-7000-8000-00000000000a", "0196a0b0-0000-7000-8000-00000000000b"
    record = {"total": 1200.0, "issued": "2024-02-01", "paid": True, "buyer": "Acme  Corp",
              "items": [{"sku": "X1", "quantity": 2, "price": 600.0},
                        {"sku": "Y2", "quantity": 1, "price": 0.5}]}
    _publish(lake, doc, "0196a0b0-0000-7000-8000-0000000000a1", record)
    _publish(lake, other, "0196a0b0-0000-7000-8000-0000000000b1", {**record, "total": 1199})
    labels = tmp_path / "labels.jsonl"
    gold = {"total": 1200, "issued": "2024-02-01", "paid": "yes", "buyer": "Acme Corp",
            "items": [{"price": 0.5, "quantity": 1, "sku": "Y2"},
                      {"sku": "X1", "price": 600, "quantity": 2}]}
    labels.write_text("".join(json.dumps({"document_id": d, "fields": gold}) + "\n"
                              for d in (doc, other)))
    import_labels(lake, labels, "jsonl", labeller="ann", now=T0 + timedelta(hours=1))
    run = run_scoring(lake, since=None, until=None, now=T0 + timedelta(hours=2),
                      normalizers=evals_wiring.normalizers(), resamples=0)
    (group,) = run.groups
    fields = {k: (v.score.hits, v.score.predicted, v.score.expected)
              for k, v in group.fields.items()}
    assert fields == {"total": (1, 2, 2), "issued": (2, 2, 2), "paid": (2, 2, 2),
                      "buyer": (2, 2, 2), "items": (4, 4, 4)}
    assert evals_wiring.list_fields(SCHEMA) == ("items",)
    assert evals_wiring.schema_fields(SCHEMA) == ("total", "issued", "paid", "buyer", "items")
    target = evals_wiring.target_schema(SCHEMA)
    assert target.typed("total", "1200.0") == 1200
    assert target.typed("items", '{"sku": "X1", "quantity": 2, "price": 600.0}') == {
        "price": 600, "quantity": 2, "sku": "X1"}


# --- finding 7: per group, intervals, week over week -----------------------------------------------


def test_two_strategies_are_never_pooled_into_one_headline(tmp_path):
    lake = str(tmp_path / "lake")
    doc, job = "0196a0b0-0000-7000-8000-000000000001", "0196a0b0-0000-7000-8000-000000000002"
    sha = "ab" * 32
    write_events(lake, [ev.DocumentRegistered(document_id=doc, job_id=job, source_name="n.pdf",
                                              sha256=sha, bytes=1, occurred_at=T0)] + [
        ev.ResultPublished(document_id=doc, job_id=job, status="succeeded", strategy=s,
                           model_version="v", schema_name="nda", occurred_at=T0)
        for s in ("rules", "single-pass")])
    labels = tmp_path / "l.jsonl"
    labels.write_text(json.dumps({"sha256": sha, "fields": {"party": []}}) + "\n")
    import_labels(lake, labels, "jsonl", labeller="ann", now=T0)
    run = score_lake(lake, since=None, until=None, resamples=0)
    assert len(run.groups) == 2 and run.overall is None
    out = run.to_dict()
    assert out["overall"] is None and out["fields"] == {} and len(out["groups"]) == 2
    assert any("fewer than 30" in w for w in out["warnings"])


# --- what a quality team also expects: the gate, compare, breakdown, cost, blind sheet ----------


def _two_strategy_home(tmp_path: Path, n: int = 12) -> str:
    """A home whose lake holds n labelled documents, each with a rules result (right) and a
    single-pass result (one party written differently), the latter's model calls
    on the ledger."""
    home = tmp_path / "home"
    lake = str(home / "lake")
    events, labels = [], []
    for i in range(n):
        doc, job = f"0196a0b0-0000-7000-8000-{i:012d}", f"0196a0b0-0000-7000-9000-{i:012d}"
        sha = f"{i:064x}"
        events.append(ev.DocumentRegistered(document_id=doc, job_id=job, source_name=f"{i}.pdf",
                                            sha256=sha, bytes=1, occurred_at=T0))
        for strategy, values, tokens in (("rules", ["Acme, Inc.", "Beta"], 0),
                                         ("single-pass", ["Acme Inc.", "Beta"], 900)):
            events.append(ev.ResultPublished(
                document_id=doc, job_id=job, status="succeeded", strategy=strategy,
                model_version=f"{strategy}-v1", schema_name=None, input_tokens=tokens,
                processing_ms=100.0 if strategy == "rules" else 4000.0, occurred_at=T0))
            events += [ev.ResultFieldExtracted(document_id=doc, job_id=job, field="party",
                                               value=v, value_index=k, strategy=strategy,
                                               model_version=f"{strategy}-v1", occurred_at=T0)
                       for k, v in enumerate(values)]
        events.append(ev.ModelCalled(document_id=doc, job_id=job, call_id=f"c{i}",
                                     purpose="extract_fields", provider="gemini", model="m",
                                     outcome="ok", cost_usd=0.007, input_tokens=900,
                                     occurred_at=T0))
        labels.append(json.dumps({"sha256": sha, "fields": {"party": ["Acme, Inc.", "Beta"]}}))
    write_events(lake, events)
    (tmp_path / "labels.jsonl").write_text("\n".join(labels) + "\n")
    import_labels(lake, tmp_path / "labels.jsonl", "jsonl", labeller="ann", now=T0)
    return str(home)


def test_the_gate_compare_breakdown_and_cost_from_the_cli(tmp_path):
    from test_fields_cli import invoke

    home = _two_strategy_home(tmp_path)
    failed = invoke("evals", "score", "--home", home, "--fail-under", "90", "--dry-run")
    assert failed.exit_code == 1 and "FAIL: single-pass" in failed.output
    # the gate reads the interval's low end: single-pass is 50.00 on 12 documents that all
    # score alike, so Wilson's bound, (0.5 + z²/24 - z·sqrt(0.25/12 + z²/576)) / (1 + z²/12)
    z = 1.959963984540054
    low = (0.5 + z * z / 24 - z * (0.25 / 12 + z * z / 576) ** 0.5) / (1 + z * z / 12)
    assert 0.25 < low < 0.26
    at_point = invoke("evals", "score", "--home", home, "--fail-under", "50", "--dry-run")
    assert at_point.exit_code == 1 and f"interval low {100 * low:.2f}" in at_point.output
    assert invoke("evals", "score", "--home", home, "--fail-under", "25",
                  "--dry-run").exit_code == 0

    scored = json.loads(invoke("evals", "score", "--home", home, "--format", "json",
                               "--dry-run").stdout)
    groups = {g["strategy"]: g for g in scored["groups"]}
    llm, rules = groups["single-pass"], groups["rules"]
    assert llm["misses"]["party"] == {"formatting": 12, "wrong_value": 0, "missing": 0,
                                      "extra": 0}
    assert rules["misses"]["party"] == dict.fromkeys(("formatting", "wrong_value", "missing",
                                                      "extra"), 0)
    assert llm["cost_usd_per_document"] == pytest.approx(0.007)
    assert rules["cost_usd_per_document"] == 0.0
    assert (llm["processing_ms_per_document"], rules["processing_ms_per_document"]) == (
        4000.0, 100.0)
    assert llm["empty_rate"] == {"party": 0.0}
    assert scored["overall"] is None  # two groups: no pooled headline

    compared = invoke("evals", "compare", "rules", "single-pass@single-pass-v", "--home", home,
                      "--format", "json")
    assert compared.exit_code == 0, compared.output
    c = json.loads(compared.stdout)
    assert c["documents"] == 12 and c["f1_difference"] == pytest.approx(-0.5)
    # every document moved alike: the resamples cannot vary, so no interval (not a zero-width
    # one that would claim certainty)
    assert c["f1_difference_ci"] is None
    unknown = invoke("evals", "compare", "rules", "agentic", "--home", home)
    assert unknown.exit_code != 0 and "scored groups" in unknown.output


def test_a_blind_sheet_has_no_prefilled_value(tmp_path):
    from evals.labels import parse_csv
    from evals.sample import write_sheet

    picked = [{"document_id": "d1", "model_version": "v", "strategy": "rules",
               "values": {"party": [("Acme", 1)]}}]
    write_sheet(tmp_path / "blind.csv", picked, ["party", "term"], blind=True)
    text = (tmp_path / "blind.csv").read_text()
    assert "Acme" not in text and "rules" not in text
    (labels,) = parse_csv(tmp_path / "blind.csv")
    assert dict(labels.values) == {"party": (), "term": ()}


def test_cohen_kappa_by_hand():
    from evals.agreement import cohen_kappa

    first = ["2y", "1y", "2y", "3y"]
    second = ["2y", "1y", "1y", "3y"]
    # p_o = 3/4; p_e = (2*1 + 1*2 + 1*1) / 16 = 5/16; kappa = (12/16 - 5/16) / (11/16) = 7/11
    assert cohen_kappa(first, second) == pytest.approx(7 / 11)
    # one category everywhere: p_e = 1 and kappa is 0/0, undefined (not perfect agreement)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None
    assert cohen_kappa([], []) is None


def test_a_second_reviewer_is_agreement_not_a_replacement(tmp_path):
    from test_fields_cli import invoke

    from evals.lakeio import read_labels

    home = tmp_path / "home"
    lake = str(home / "lake")
    terms_a, terms_b = ["2 years", "1 year", "2 years", "3 years"], [
        "2 years", "1 year", "1 year", "3 years"]
    events, first, second = [], [], ["sha256,field,value,labeller"]
    for i in range(4):
        doc, job, sha = (f"0196a0b0-0000-7000-8000-{i:012d}", f"0196a0b0-0000-7000-9000-{i:012d}",
                         f"{i:064x}")
        events += [ev.DocumentRegistered(document_id=doc, job_id=job, source_name=f"{i}.pdf",
                                         sha256=sha, bytes=1, occurred_at=T0),
                   ev.ResultPublished(document_id=doc, job_id=job, status="succeeded",
                                      strategy="rules", model_version="v", schema_name="nda",
                                      occurred_at=T0)]
        first.append(json.dumps({"sha256": sha, "labeller": "ann", "fields": {
            "party": ["Acme, Inc."], "term": terms_a[i]}}))
        second += [f"{sha},party,Acme Inc.,bob", f"{sha},term,{terms_b[i]},bob"]
    write_events(lake, events)
    (tmp_path / "first.jsonl").write_text("\n".join(first) + "\n")
    (tmp_path / "second.csv").write_text("\n".join(second) + "\n")
    import_labels(lake, tmp_path / "first.jsonl", "jsonl", labeller="ann", now=T0)

    result = invoke("evals", "agreement", str(tmp_path / "second.csv"), "--home", str(home),
                    "--format", "json")
    assert result.exit_code == 0, result.output
    found = {f["field"]: f for f in json.loads(result.stdout)["fields"]}
    # 'Acme Inc.' and 'Acme, Inc.' are one token: they agree on every document, but with one
    # category throughout kappa is undefined, not 1.0
    assert found["party"]["observed"] == 1.0 and found["party"]["kappa"] is None
    assert found["term"]["kappa"] == pytest.approx(7 / 11)
    assert found["term"]["disagreements"] == ["0196a0b0-0000-7000-8000-000000000002"]
    assert {x.labeller for x in read_labels(lake)} == {"ann"}  # the first answer stays

    replaced = invoke("evals", "import-labels", str(tmp_path / "second.csv"), "--home",
                      str(home))
    assert "replace another labeller's answer" in replaced.output


# --- finding 8: in-sample ---------------------------------------------------------------------------


def test_scoring_the_shipped_model_on_its_training_documents_warns(tmp_path):
    from extract.fields.rules.strategy import RulesStrategy

    (training,) = evals_wiring.training_sets()
    shipped = RulesStrategy().model_version
    assert shipped.startswith(training.version_prefix + "+")  # the warning finds its groups
    assert len(training.sha256s) == 254
    lake = str(tmp_path / "lake")
    inside, outside = sorted(training.sha256s)[0], "f" * 64
    events = []
    for i, sha in enumerate((inside, outside)):
        doc, job = f"0196a0b0-0000-7000-8000-{i:012d}", f"0196a0b0-0000-7000-9000-{i:012d}"
        events += [ev.DocumentRegistered(document_id=doc, job_id=job, source_name=f"{i}.pdf",
                                         sha256=sha, bytes=1, occurred_at=T0),
                   ev.ResultPublished(document_id=doc, job_id=job, status="succeeded",
                                      strategy="rules", model_version=shipped,
                                      schema_name="nda", occurred_at=T0)]
    write_events(lake, events)
    (tmp_path / "l.jsonl").write_text("".join(
        json.dumps({"sha256": sha, "fields": {"term": []}}) + "\n" for sha in (inside, outside)))
    import_labels(lake, tmp_path / "l.jsonl", "jsonl", labeller="ann", now=T0)
    run = score_lake(lake, since=None, until=None, resamples=0,
                     training_sets=evals_wiring.training_sets())
    (warning,) = [w for w in run.warnings if "training set" in w]
    assert "1 of 2 scored documents" in warning and "in-sample" in warning
    clean = score_lake(lake, since=None, until=None, resamples=0)
    assert not [w for w in clean.warnings if "training set" in w]

"""Sections of the weekly report that explain a figure: per-field comparison rules (strict and
lenient F1, ``evals.lenient``) and per-field confidence (``evals.confidence``). Markdown lines,
pure functions of the figures, so ``evals.weekly`` stays the report's skeleton."""

from __future__ import annotations

from collections.abc import Sequence

from evals.bootstrap import GroupFigures
from evals.confidence import BINS, FieldConfidence
from evals.lenient import lenient_scores, rule_of
from evals.scoring import Scored

__all__ = ["confidence_markdown", "fields_markdown"]


def fields_markdown(groups: Sequence[GroupFigures], scored: Sequence[Scored]) -> list[str]:
    """Per field: strict F1 (the benchmark's tokens) beside lenient F1 (the stated
    normalisation); the hits lenient comparison adds are spelling, what stays missed is wrong."""
    lenient = lenient_scores(scored)
    lines = ["", "## Fields: strict and lenient F1", "",
             "Strict: the benchmark's exact tokens in the schema's normal form. Lenient: the rule "
             "beside each field. Spelling: values right under the lenient rule only; the misses "
             "left under it are wrong answers.", "",
             "| model version | strategy | field | strict F1 | lenient F1 | spelling | wrong "
             "or missing | lenient rule |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for g in groups:
        loose = lenient.get((g.model_version, g.strategy), {})
        for name, fig in sorted(g.fields.items()):
            other = loose.get(name)
            if other is None:
                continue
            spelling = other.hits - fig.score.hits
            lines.append(f"| {g.model_version} | {g.strategy} | {name} | "
                         f"{100 * fig.score.f1:.2f} | {100 * other.f1:.2f} | {spelling} | "
                         f"{other.expected - other.hits} | {rule_of(name).lenient} |")
    return lines


def confidence_markdown(found: Sequence[FieldConfidence]) -> list[str]:
    """Per field: does confidence say what to review? ECE, AUROC and the reliability table."""
    lines = ["", "## Confidence by field", "",
             "Each scored value is right (a hit) or wrong (a wrong or spurious value) and carries "
             "its result's confidence. ECE: expected calibration error over "
             f"{BINS} equal-width bins. AUROC: the probability that a right value is more "
             "confident than a wrong one (0.5 is chance), with Hanley and McNeil's 95% interval; "
             "confidence ranks errors when the AUROC is at least 0.7 and the interval's low end "
             "is above 0.5, with 5 right and 5 wrong values or more (`evals sample --strategy "
             "review` then orders that field's values by confidence, and draws the rest at "
             "random).", ""]
    if not found:
        return [*lines, "No scored value of the week carries a confidence."]
    lines += ["| model version | strategy | field | right | wrong | ECE | AUROC | interval | "
              "what to review |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f in found:
        ci = f"{f.auroc_ci[0]:.3f}-{f.auroc_ci[1]:.3f}" if f.auroc_ci else ""
        lines.append(f"| {f.model_version} | {f.strategy} | {f.field} | {f.right} | {f.wrong} | "
                     f"{'' if f.ece is None else f'{f.ece:.3f}'} | "
                     f"{'' if f.auroc is None else f'{f.auroc:.3f}'} | {ci} | {f.verdict} |")
    lines += ["", "### Reliability", "",
              "| model version | strategy | field | confidence | values | mean confidence | "
              "share right |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for f in found:
        lines += [f"| {f.model_version} | {f.strategy} | {f.field} | {b.low:.1f}-{b.high:.1f} | "
                  f"{b.values} | {'' if b.mean_confidence is None else f'{b.mean_confidence:.3f}'}"
                  f" | {'' if b.share_right is None else f'{b.share_right:.3f}'} |"
                  for b in f.bins]
    return lines



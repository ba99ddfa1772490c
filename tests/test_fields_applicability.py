"""Which documents are NDAs, learnt: the shipped classifier takes a letter-form NDA with no title
and refuses a merger agreement that mentions its "Confidentiality Agreement" (texts written
here, not drawn from the training generator); it is scored without scikit-learn; a word only
written documents use is never learnt; and, where the shared data is here, the shipped weights
are the ones training produces and its measured figures are recorded with them."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import SHARED

from extract.fields.applicability.model import NDA_MODEL_PATH, KindModel
from extract.fields.kinds import THRESHOLD, nda_score

SPLIT = SHARED / "data" / "kleister-nda" / "train"
RECALL_FLOOR = 0.95
PRECISION_FLOOR = 0.95
"""The real held-out documents' figures (docs/quality.md) less a margin for a retraining."""

LETTER_NDA = """Northgate Industrial Corp.
2100 Harbor Boulevard
Cleveland, Ohio 44114

June 9, 2016

Ms. Rebecca Stone
Tallis Equity Partners LLC
500 Fifth Avenue, New York, NY

Dear Ms. Stone:

You have informed us that Tallis Equity Partners LLC ("you") is interested in exploring a
possible acquisition of Northgate Industrial Corp. (the "Company"). In order to assist you in
your evaluation, the Company is willing to furnish you with certain information that is
non-public, confidential or proprietary in nature. In consideration of the Company furnishing
such information, you agree as follows.

1. All information concerning the Company that is furnished to you or your directors, officers,
employees, agents or advisors (collectively, "Representatives"), together with any notes or
analyses prepared by you that contain such information, is referred to as the "Evaluation
Material". You shall keep the Evaluation Material strictly confidential and shall use it solely
to evaluate the possible acquisition, and you shall not disclose it to anyone other than your
Representatives who need to know it.

2. The term Evaluation Material excludes information that is already in your possession, that
becomes publicly available other than through a breach of this letter agreement, or that you
receive from a source not bound by a confidentiality obligation to the Company.

3. If you are requested or required by law to disclose any Evaluation Material, you will give
the Company prompt written notice so that it may seek a protective order.

4. If you decide not to proceed, you will promptly return or destroy all Evaluation Material,
and an officer of yours will certify the destruction in writing.

5. You acknowledge that you are aware that United States securities laws prohibit any person
who has material non-public information about a company from purchasing or selling its
securities.

6. This letter agreement is governed by the laws of the State of New York. Its obligations
expire two years from the date of this letter.

Please confirm your agreement by signing and returning a copy of this letter.

Very truly yours,
NORTHGATE INDUSTRIAL CORP.
By: Martin Hale, Chief Executive Officer

Accepted and agreed:
TALLIS EQUITY PARTNERS LLC
By: Rebecca Stone, Managing Partner
"""

MERGER = """AGREEMENT AND PLAN OF MERGER

by and among

CRESTLINE MEDICAL, INC.,
ORION ACQUISITION SUB, INC.

and

BRIGHTWATER DIAGNOSTICS CORPORATION

Dated as of October 2, 2017

TABLE OF CONTENTS
Article I The Merger
Article II Effect of the Merger on Capital Stock
Article III Representations and Warranties of the Company
Article IV Representations and Warranties of Parent and Merger Sub
Article V Covenants Relating to Conduct of Business
Article VI Additional Agreements (including Section 6.4 Access to Information; Confidentiality)
Article VII Conditions Precedent
Article VIII Termination, Amendment and Waiver

This AGREEMENT AND PLAN OF MERGER (this "Agreement") is entered into as of October 2, 2017, by
and among Crestline Medical, Inc., a Delaware corporation ("Parent"), Orion Acquisition Sub, Inc.,
a Delaware corporation and a wholly owned subsidiary of Parent ("Merger Sub"), and Brightwater
Diagnostics Corporation, a Delaware corporation (the "Company").

ARTICLE I. THE MERGER
Section 1.1 The Merger. Upon the terms and subject to the conditions set forth in this
Agreement, and in accordance with the General Corporation Law of the State of Delaware, at the
Effective Time Merger Sub shall be merged with and into the Company, and the Company shall be the
surviving corporation.
Section 1.2 Closing. The closing of the Merger shall take place on the third business day after
the satisfaction or waiver of the conditions set forth in Article VII.

ARTICLE II. EFFECT OF THE MERGER ON CAPITAL STOCK
Section 2.1 Conversion of Securities. At the Effective Time, each share of Company Common Stock
issued and outstanding shall be converted into the right to receive $18.50 in cash, without
interest (the "Merger Consideration"). Each Company Stock Option shall be cancelled in exchange
for a cash payment.
Section 2.2 Exchange of Certificates. Parent shall deposit with the Paying Agent cash sufficient
to pay the aggregate Merger Consideration.

ARTICLE III. REPRESENTATIONS AND WARRANTIES OF THE COMPANY
Section 3.1 Organization. The Company is duly organized and validly existing under the laws of
the State of Delaware. Section 3.2 Capitalization. The authorized capital stock of the Company
consists of 100,000,000 shares of Company Common Stock. Section 3.3 SEC Reports. The Company has
filed all reports required to be filed with the Securities and Exchange Commission.

ARTICLE VI. ADDITIONAL AGREEMENTS
Section 6.1 Proxy Statement. As promptly as practicable, the Company shall prepare and file with
the SEC a proxy statement relating to the Company Stockholders Meeting.
Section 6.4 Access to Information; Confidentiality. The Company shall afford to Parent and its
representatives reasonable access during normal business hours to its properties, books,
contracts and records. All information exchanged pursuant to this Section 6.4 shall be subject
to the Confidentiality Agreement, dated June 12, 2017, between Parent and the Company (the
"Confidentiality Agreement"), which shall remain in full force and effect in accordance with its
terms.
Section 6.5 No Solicitation. The Company shall not solicit or knowingly facilitate any Takeover
Proposal; provided that the Company may furnish non-public information to a person that has made
a bona fide Takeover Proposal if such person has executed a confidentiality agreement with terms
no less restrictive than those of the Confidentiality Agreement.
Section 6.7 Regulatory Approvals. Each party shall file a notification under the HSR Act within
ten business days.

ARTICLE VII. CONDITIONS PRECEDENT
Section 7.1 Conditions to Each Party's Obligation. The obligations of each party to effect the
Merger are subject to the Company Stockholder Approval and the expiration of the HSR waiting
period.

ARTICLE VIII. TERMINATION
Section 8.1 Termination. This Agreement may be terminated at any time prior to the Effective
Time by mutual written consent of Parent and the Company. Section 8.3 Termination Fee. The
Company shall pay Parent a fee of $21,000,000 if this Agreement is terminated to accept a
Superior Proposal.

Section 9.8 Governing Law. This Agreement shall be governed by the laws of the State of Delaware.

IN WITNESS WHEREOF, Parent, Merger Sub and the Company have caused this Agreement to be signed
by their respective officers thereunto duly authorized.
"""


def test_a_letter_form_nda_with_no_title_applies_and_a_merger_agreement_does_not():
    assert nda_score(LETTER_NDA) >= THRESHOLD
    assert nda_score(MERGER) < THRESHOLD


def test_the_shipped_model_is_scored_without_scikit_learn():
    """The run time loads JSON and does a dot product: scikit-learn unimportable changes
    nothing."""
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "from extract.fields.kinds import nda_score\n"
            f"print(nda_score({LETTER_NDA!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert float(out.stdout) == pytest.approx(nda_score(LETTER_NDA))


def test_the_score_is_the_logistic_of_the_weights_on_every_named_feature():
    """The scorer reads only the weighted words' counts (2.6 ms an NDA when it named every
    feature); its score is the one the named features give, which training fitted: the head's
    words, the body's scaled counts and their norm over every word and pair, both title cues."""
    import math

    from extract.fields.applicability.features import BODY_LENGTH, features

    model = KindModel.load(NDA_MODEL_PATH)
    texts = [LETTER_NDA, MERGER, "", "NON-DISCLOSURE AGREEMENT\nThe parties agree.",
             "MERGER AGREEMENT " * 40 + "confidential information " * 3,
             "Confidential information, trade secrets. " * 30 + LETTER_NDA[:300]]
    for text in texts:
        z = model.intercept + sum(model.weights.get(k, 0.0) * v
                                  for k, v in features(text).items())
        expected = 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))
        assert model.score(text) == pytest.approx(expected, abs=1e-12), text[:40]
        body = [v for k, v in features(text).items() if k.startswith("w:")]
        if body:  # the body's vector is scaled to its fixed length, whatever the document's
            assert math.sqrt(sum(v * v for v in body)) == pytest.approx(BODY_LENGTH)
    assert len({round(model.score(t), 6) for t in texts}) >= 4  # the texts score apart


def test_the_counts_and_head_are_those_of_the_whole_texts_folding():
    """``counted`` folds only a prefix for the head and reads the words unfolded (for speed);
    what it gives must be what folding the whole text gives: the head is the first
    ``HEAD_CHARS`` of the folded text, the words and pairs those of the folded text. Texts where
    the prefix cuts a word, where white space fills the prefix, and shorter than the head."""
    import random
    from collections import Counter

    from extract.fields.applicability.features import HEAD_CHARS, NDA_TITLE, _words, counted

    rng = random.Random(7)
    words = ["Non-Disclosure", "AGREEMENT", "the", "Recipient", "merger", "confidential",
             "of", "x", "Agreementlongword" * 3, "secrecy", "agreement"]
    spaces = [" ", "  ", "\n", "\t \n", " " * 50, "\n" * 300, "\u2003", "\x1c"]
    texts = [LETTER_NDA, MERGER, "", "   ", "word " * 10,
             " " * 900 + "NON-DISCLOSURE AGREEMENT " * 30,
             "a" * 790 + " Secrecy Agreement " + "b" * 900]
    for _ in range(200):
        texts.append("".join(rng.choice(words) + rng.choice(spaces)
                             for _ in range(rng.randrange(0, 400))))
    for text in texts:
        folded = " ".join(text.lower().split())
        head = folded[:HEAD_CHARS]
        plain = _words(folded)
        counts = Counter(plain)
        counts.update("_".join(pair) for pair in zip(plain, plain[1:], strict=False))
        document = counted(text)
        assert document.head_words == set(_words(head)), text[:60]
        assert document.title == (NDA_TITLE.search(head) is not None), text[:60]
        assert document.counts == counts, text[:60]


def test_the_words_are_the_runs_of_three_letters_re_finds():
    """``_words`` splits a byte table's output instead of running ``re`` (for speed): it must
    give what ``re.findall(r"[a-z]{3,}")`` gives less the ignored words, on texts of short and
    long runs, capitals, digits, underscores and characters outside ASCII (one, two, three and
    four UTF-8 bytes, letters among them) between them."""
    import random
    import re

    from extract.fields.applicability.features import _IGNORED, _words

    rng = random.Random(13)
    pieces = ["abc", "ab", "a", "nda", "exhibit", "htm", "version", "Recipient", "x1y", "a_b",
              "é", "ß", "İ", "ǆ", "\u00a0", "\u2003", "\U0001f600", " ", "\n", "-", "?", "7"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 16)))
        expected = [w for w in re.findall(r"[a-z]{3,}", text) if w not in _IGNORED]
        assert _words(text) == expected, repr(text)


def test_a_word_only_written_documents_use_is_never_learnt():
    """Honesty: a feature must be used by real and by written documents alike."""
    from training.applicability.classifier import KindExample, fit

    def example(i: int, source: str, is_nda: bool, extra: str) -> KindExample:
        body = ("confidential information disclose recipient" if is_nda
                else "rent tenant premises landlord")
        return KindExample(f"{source}{i}", f"{source}{i}", is_nda, f"{body} {extra}", source)

    examples = [example(i, source, i % 2 == 0, "zorblat" if source == "written" else "")
                for source in ("written", "kleister") for i in range(8)]
    model = fit(examples)
    assert "w:zorblat" not in model.weights and model.weights.get("w:tenant", 0) < 0
    assert model.weights.get("w:recipient", 0) > 0


@pytest.mark.skipif(not (SPLIT / "expected.tsv").exists(),
                    reason=f"Kleister NDA train split not found at {SPLIT}")
def test_the_shipped_weights_are_what_training_produces(tmp_path):
    """`doclake fields train --applicability --out X` reproduces the shipped file."""
    from typer.testing import CliRunner

    from infra.cli.main import app

    out = tmp_path / "nda_kind.json"
    trained = CliRunner().invoke(app, ["fields", "train", "--applicability", "--out", str(out),
                                       "--data", str(SPLIT)], catch_exceptions=False)
    assert trained.exit_code == 0, trained.output
    fresh, shipped = KindModel.load(out), KindModel.load(NDA_MODEL_PATH)
    assert fresh.version == shipped.version
    assert fresh.weights == pytest.approx(shipped.weights) and set(fresh.weights) == set(
        shipped.weights)


@pytest.mark.skipif(not (SPLIT / "expected.tsv").exists(),
                    reason=f"Kleister NDA train split not found at {SPLIT}")
def test_held_out_real_documents_are_measured_here_not_read_from_the_training_output(tmp_path):
    """The held-out set: no group of it (a Kleister near-duplicate group, a corpus file, a
    whole kind of written document) is in the development set, and the shipped model was fitted
    on exactly the development set (its version's digest, recomputed here from the documents'
    names and texts). Its figures on the real held-out documents (Kleister, the shared corpus),
    apart from the written ones, are computed here from the run-time classifier's scores."""
    import hashlib

    from infra.cli.fields import DEFAULT_CACHE
    from training.applicability.classifier import load_examples

    corpus = SHARED / "corpus" if (SHARED / "corpus" / "MANIFEST.tsv").exists() else None
    dev, held = load_examples(SPLIT, DEFAULT_CACHE, corpus)  # the page texts `fields` keeps
    assert not {e.group for e in dev} & {e.group for e in held}
    assert {e.group for e in held if e.source == "written"}  # whole kinds are held out
    digest = hashlib.sha256("\n".join(sorted(
        f"{e.name} {hashlib.sha256(e.text.encode()).hexdigest()}" for e in dev)).encode()
    ).hexdigest()
    assert KindModel.load(NDA_MODEL_PATH).version == f"kind-lr1-{len(dev)}docs-{digest[:8]}"

    real = [e for e in held if e.source in ("kleister", "corpus")]
    taken = [nda_score(e.text) >= THRESHOLD for e in real]
    ndas = sum(e.is_nda for e in real)
    hits = sum(t and e.is_nda for t, e in zip(taken, real, strict=True))
    false_alarms = sum(t and not e.is_nda for t, e in zip(taken, real, strict=True))
    assert ndas >= 40  # the corpus's few readable PDFs fall in the development set today
    assert hits / ndas >= RECALL_FLOOR, (hits, ndas)
    assert hits / (hits + false_alarms) >= PRECISION_FLOOR, (hits, false_alarms)


def test_the_written_documents_are_training_tooling_not_runtime():
    """The generator of written contracts is no longer in the runtime package."""
    import importlib.util

    assert importlib.util.find_spec("extract.fields.applicability.written") is None
    assert importlib.util.find_spec("training.applicability.written") is not None

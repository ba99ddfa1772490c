"""Party candidates: organisations (a capitalised name ending in a legal suffix) and people (a
capitalised name in a place where agreements name people: the preamble, a defined-term
parenthesis, a signature line, a letter's salutation).

Recall first: many candidates are not parties (a parent company in a recital, a signatory acting
for the company); ``features`` describes each one's contexts and ``linear`` decides.
"""

from __future__ import annotations

import re

from extract.fields.rules.candidates import Candidate, group
from extract.fields.rules.patterns import compile_scan

__all__ = ["party_candidates"]

# The lookahead names every first letter a suffix can have: where the name's last word gives
# back characters one at a time, most places fail on it at once (speed only, same matches).
_SUFFIX = (r"(?=[IiCcLlNBAPpSGTHF])"
           r"(?:(?i:Inc|Incorporated|Corporation|Corp|Company|Co|LLC|Ltd|Limited)|L\.L\.C|LP|L\.P|LLP"
           r"|L\.L\.P|N\.V|B\.V|AG|A\.G|PLC|plc|S\.A|SA|GmbH|Bancorp|Bank|Trust|Holdings|Pty\.?\s+Ltd"
           r"|Group|Partners|Associates|Fund)\b\.?")
# A word of a proper name: capitalised, or a digit-led token (3M), or a roman numeral.
_NAME_WORD = r"(?:[A-Z0-9][\w'’.\-!¢/]*|[a-z]{1,2}[A-Z][\w'’.\-]*|&|and|of|the|de|du|for|[a-z]+\.com)"
# The same word, possessive: where whitespace must follow, giving characters back can never help,
# so re need not try (the same matches, several times faster on a long exhibit).
_NAME_WORD_FOLLOWED = (r"(?:[A-Z0-9][\w'’.\-!¢/]*+|[a-z]{1,2}[A-Z][\w'’.\-]*+|&|and|of|the|de|du|for"
                       r"|[a-z]++\.com)")
_COMPANY = compile_scan(
    rf"(?<![\w])((?:{_NAME_WORD_FOLLOWED}[ \t]*,?[ \t\n]+){{0,6}}{_NAME_WORD}[ \t]*,?[ \t]*\n?[ \t]*{_SUFFIX}"
    rf"(?:[ \t]*,?[ \t]*{_SUFFIX})?)")
# Words that begin a line or sentence but never a company name.
_LEADING_NOISE = {
    "the", "and", "of", "by", "between", "among", "this", "that", "with", "for", "to", "from",
    "employee", "executive", "dear", "agreement", "exhibit", "re", "attention", "attn", "party",
    "parties", "company", "name", "title", "date", "signature", "accepted", "agreed", "witness",
    "whereas", "now", "therefore", "in", "on", "at", "as", "if", "an", "a", "any", "each", "its",
    "all", "our", "your", "their", "his", "her", "confidential", "confidentiality", "non",
    "disclosure", "nondisclosure", "&", "de", "du", "/s/", "s/", "by:", "mutual", "form",
    "logo",
}
_CONNECTORS = {"&", "and", "of", "the", "de", "du", "for"}

# Possessive runs (++): what follows a name word is never a letter, so giving letters back never
# helps a match; re skips trying (speed only, the same matches).
_PERSON_NAME = (r"(?:(?:Mr|Ms|Mrs|Dr)\.\s+)?"
                # initials first ("J.H. Cromarty", "J. Patrick Mulcahy"), or a first name, middle
                # initials with or without their dot ("Steven A Ross") and one or two more names;
                # a name never crosses a line break (a signature block puts one name per line)
                r"((?:(?:[A-Z]\.[ \t]*){1,2}[A-Z][a-zA-Z'’\-]++(?:[ \t]+[A-Z][a-zA-Z'’\-]++)?"
                r"|[A-Z][a-zA-Z'’\-]++(?:[ \t]+[A-Z]\.?)*(?:[ \t]+[A-Z][a-zA-Z'’\-]++){1,2})"
                r"(?:,?[ \t]+(?:Jr\.?|Sr\.?|II|III|IV))?)(?:,?[ \t]+(?:M\.D\.|Ph\.D\.))?")
_I_COMMA = re.compile(r"I\s*,")  # a literal first: re finds it without trying every position


def _always(text: str) -> bool:
    return True


# (kind, pattern, a cheap test that must pass for the pattern to match anywhere in the text):
# a document without "individual", "resid..." or "an employee" skips that scan entirely.
_PERSON_CONTEXTS = [(kind, compile_scan(pattern), needed) for kind, pattern, needed in (
    ("defined", rf"(?=[A-Z]){_PERSON_NAME}\s*,?\s*\(\s*(?:the\s+|hereinafter\s+"
     r"(?:referred\s+to\s+as\s+|called\s+)?(?:the\s+)?)?[“\"]?[A-Z]",
     _always),
    ("individual", rf"(?=[A-Z]){_PERSON_NAME}\s*,\s*(?:an?\s+)?(?:individual|resident|residing|an employee)",
     lambda text: "individual" in text or "resid" in text or "an employee" in text),
    ("between", rf"(?:between|and|by|with)\s+{_PERSON_NAME}\s*[,(“\"]", _always),
    ("i_comma", rf"\bI\s*,\s+{_PERSON_NAME}\s*,", lambda text: _I_COMMA.search(text) is not None),
    ("signed", rf"/s/\s*{_PERSON_NAME}", _always),
    ("name_line", rf"(?:Name|Employee|Executive|Print(?:ed)?\s+Name)\s*:\s*{_PERSON_NAME}", _always),
    ("salutation", rf"Dear\s+(?:Mr|Ms|Mrs|Dr)\.?\s+{_PERSON_NAME}", _always),
    ("line", rf"(?m)^[ \t]*{_PERSON_NAME}[ \t]*$", _always),
)]
_PERSON_STOP = re.compile(
    r"\b(?:Agreement|Company|Confidential(?:ity)?|Non-?[Cc]ompetition|Non-?[Dd]isclosure|"
    r"Nondisclosure|Information|Section|Board|Directors?|Inc|Corporation|"
    r"Employee|Executive|Party|Parties|State|County|Court|Act|Exhibit|Article|Date|Title|Name|"
    r"Signature|President|Officer|Chief|Vice|Secretary|Trade|Secrets?|Materials?|Period|"
    r"Business|Services|Street|Avenue|Road|Suite|Drive|Boulevard|LLC|Ltd|Group|Holdings|Plan|"
    r"Recipient|Discloser|Disclosing|Receiving|Evaluation|Material|Representatives?|Purpose|"
    r"Effective|Notice|Term|Laws?|United|States|America|New|North|South|West|East|Page|The|This|By|"
    r"Print(?:ed)?|Signed|Witness|Logo|Release)\b")


def _trim_company(text: str) -> str | None:
    """Drop leading words that are not part of a name (and a street number or zip code before
    it); None if nothing name-like is left."""
    words = text.split()
    while words and (words[0].strip(",").lower() in _LEADING_NOISE or words[0].islower()
                     or _NUMBER.fullmatch(words[0])):
        words.pop(0)
    if len(words) < 2 and not (words and re.fullmatch(r"[A-Z0-9][\w.\-]*", words[0])):
        return None
    name = " ".join(words)
    if len(words) == 1 or words[0].lower() in _CONNECTORS or _ADDRESS_WORD.search(name):
        return None
    return name


# An address is no name ("Inverness Parkway, Suite 350, Englewood, CO" ends in a legal form's
# spelling).
_ADDRESS_WORD = re.compile(r"\b(?:Suite|Street|Avenue|Parkway|Road|Drive|Boulevard|Floor|Box)\b")


_NUMBER = re.compile(r"[\d\-]+[,.]?")
_WORDS = re.compile(r"\S+")
# A legal form that ends one name where another begins ("Kimberly Gold Mines, Inc. Shoshone
# Silver Mining Company"); "Bank", "Group" and the like also sit inside names, so they never split.
_ENDS_A_NAME = frozenset({"inc", "incorporated", "corp", "corporation", "company", "co", "llc",
                          "l.l.c", "ltd", "limited", "lp", "l.p", "llp", "plc", "ag", "gmbh",
                          "n.v", "b.v", "s.a", "sa"})
# "Heritage Bank of Nevada", "Sony Corporation of America": a place after the legal form.
_OF_PLACE = re.compile(r"[ \t]+of[ \t]+(?:[Tt]he[ \t]+)?[A-Z][a-zA-Z\-]+(?:[ \t]+[A-Z][a-zA-Z\-]+)?"
                       r"(?![\w])")


def _company_spans(raw: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) spans of ``raw`` (one match) that may be a whole name: all of it; its
    last line (a name crosses a line break only inside running text); what follows an 'and'
    ("Yu Zhou and Genexosome Technologies Inc."); either side of a legal form inside it
    (two names in a row, as a signature block sets them)."""
    words = [(w.start(), w.end(), w.group().strip(",").lower().rstrip(".")) for w in
             _WORDS.finditer(raw)]
    spans = {(0, len(raw), "company_multiline" if "\n" in raw else "company")}
    if "\n" in raw:
        last = raw.rindex("\n") + 1
        spans.add((last, len(raw), "company"))
    for i in range(1, len(words)):
        start, previous = words[i][0], words[i - 1][2]
        if previous in ("and", "&") and i > 1:
            spans.add((start, len(raw), "company_after_and"))
        if (previous in _ENDS_A_NAME and words[i][2] not in _ENDS_A_NAME and i > 1
                and raw[start].isupper()):
            spans.add((start, len(raw), "company_split"))
            spans.add((0, words[i - 1][1], "company_split"))
    return sorted(spans)


def _company_mentions(text: str) -> list[tuple[str, int, int, str]]:
    found = []
    for match in _COMPANY.finditer(text):
        raw, base = match.group(1), match.start(1)
        place = _OF_PLACE.match(text, match.end(1))
        for low, high, kind in _company_spans(raw):
            variant = raw[low:high]
            name = _trim_company(variant)
            if name is None:
                continue
            end = base + high
            start = end - len(variant) + variant.find(name.split()[0])
            name = " ".join(name.split())
            found.append((name, start, end, kind))
            the = text[max(start - 4, 0):start] == "The "  # 'The Hershey Company' is its name
            if the:
                found.append(("The " + name, start - 4, end, "company_the"))
            if place is not None and high == len(raw):
                extended = name + " " + " ".join(place.group().split())
                found.append((extended, start, place.end(), "company_of"))
                if the:
                    found.append(("The " + extended, start - 4, place.end(), "company_of"))
    return found


# A name with no legal form, described as an organisation right after it: "IXIA, a California
# corporation", "Myogen,\na Delaware corporation".
_DESCRIBED = compile_scan(
    r"(?<![\w])((?:[A-Z][\w'’.\-&]*+[ \t]+){0,3}[A-Z][\w'’.\-&]*+)[ \t]*,[ \t\n]*an?[ \t\n]+"
    r"(?:[A-Z][a-z]+[ \t\n]+){1,3}(?:[a-z]+[ \t\n]+)?(?:corporation|company|partnership)\b")


def _described_mentions(text: str) -> list[tuple[str, int, int, str]]:
    found = []
    for match in _DESCRIBED.finditer(text):
        words = match.group(1).split()
        while words and words[0].strip(",").lower() in _LEADING_NOISE:
            words.pop(0)
        if not words or words[-1].lower().strip(".,") in _LEGAL_ENDINGS:
            continue
        name = " ".join(words)
        if _PERSON_STOP.search(name.title()) or len(name) < 3:
            continue
        end = match.end(1)
        found.append((name, end - len(name), end, "company_described"))
    return found


_ALSO_LEGAL = frozenset({"bank", "trust", "holdings", "group", "partners", "associates", "fund",
                         "bancorp"})
# A word that ends a legal name: a name described as an organisation never ends in one.
_LEGAL_ENDINGS = _ENDS_A_NAME | _ALSO_LEGAL


def _person_mentions(text: str) -> list[tuple[str, int, int, str]]:
    found = []
    for kind, pattern, needed in _PERSON_CONTEXTS:
        if not needed(text):
            continue
        for match in pattern.finditer(text):
            name = " ".join(match.group(1).split())
            # an upper-case heading ("MUTUAL NON-DISCLOSURE AGREEMENT") is stopped as its
            # title-case spelling would be
            titled = " ".join(w.title() if w.isupper() else w for w in name.split())
            if (_PERSON_STOP.search(titled)
                    or name.isupper() and kind == "line" and len(name) < 6):
                continue
            found.append((name, match.start(1), match.end(1), f"person_{kind}"))
    return found


def party_candidates(text: str) -> list[Candidate]:
    """Every organisation and person that could be a party, grouped by Kleister token."""
    return group("party", _company_mentions(text) + _described_mentions(text)
                 + _person_mentions(text))

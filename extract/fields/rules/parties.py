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
_NAME_WORD = r"(?:[A-Z0-9][\w'’.\-!¢/]*|&|and|of|the|de|du|for|[a-z]+\.com)"
# The same word, possessive: where whitespace must follow, giving characters back can never help,
# so re need not try (the same matches, several times faster on a long exhibit).
_NAME_WORD_FOLLOWED = r"(?:[A-Z0-9][\w'’.\-!¢/]*+|&|and|of|the|de|du|for|[a-z]++\.com)"
_COMPANY = compile_scan(
    rf"(?<![\w])((?:{_NAME_WORD_FOLLOWED}[ \t]*,?[ \t\n]+){{0,6}}{_NAME_WORD}[ \t]*,?[ \t]*{_SUFFIX}"
    rf"(?:[ \t]*,?[ \t]*{_SUFFIX})?)")
# Words that begin a line or sentence but never a company name.
_LEADING_NOISE = {
    "the", "and", "of", "by", "between", "among", "this", "that", "with", "for", "to", "from",
    "employee", "executive", "dear", "agreement", "exhibit", "re", "attention", "attn", "party",
    "parties", "company", "name", "title", "date", "signature", "accepted", "agreed", "witness",
    "whereas", "now", "therefore", "in", "on", "at", "as", "if", "an", "a", "any", "each", "its",
    "all", "our", "your", "their", "his", "her", "confidential", "confidentiality", "non",
    "disclosure", "nondisclosure", "&", "de", "du", "/s/", "s/", "by:", "mutual", "form",
}
_CONNECTORS = {"&", "and", "of", "the", "de", "du", "for"}

# Possessive runs (++): what follows a name word is never a letter, so giving letters back never
# helps a match; re skips trying (speed only, the same matches).
_PERSON_NAME = (r"(?:(?:Mr|Ms|Mrs|Dr)\.\s+)?"
                r"([A-Z][a-zA-Z'’\-]++(?:\s+[A-Z]\.)*(?:\s+[A-Z][a-zA-Z'’\-]++){1,2}"
                r"(?:,?\s+(?:Jr\.?|Sr\.?|II|III|IV))?)(?:,?\s+(?:M\.D\.|Ph\.D\.))?")
_I_COMMA = re.compile(r"I\s*,")  # a literal first: re finds it without trying every position


def _always(text: str) -> bool:
    return True


# (kind, pattern, a cheap test that must pass for the pattern to match anywhere in the text):
# a document without "individual", "resid..." or "an employee" skips that scan entirely.
_PERSON_CONTEXTS = [(kind, compile_scan(pattern), needed) for kind, pattern, needed in (
    ("defined", rf"(?=[A-Z]){_PERSON_NAME}\s*,?\s*\(\s*(?:the\s+|hereinafter\s+)?[“\"]?[A-Z]",
     _always),
    ("individual", rf"(?=[A-Z]){_PERSON_NAME}\s*,\s*(?:an?\s+)?(?:individual|resident|residing|an employee)",
     lambda text: "individual" in text or "resid" in text or "an employee" in text),
    ("between", rf"(?:between|and|by|with)\s+{_PERSON_NAME}\s*[,(“\"]", _always),
    ("i_comma", rf"\bI\s*,\s+{_PERSON_NAME}\s*,", lambda text: _I_COMMA.search(text) is not None),
    ("signed", rf"/s/\s*{_PERSON_NAME}", _always),
    ("name_line", rf"(?:Name|Employee|Executive|Print(?:ed)?\s+Name)\s*:\s*{_PERSON_NAME}", _always),
    ("salutation", rf"Dear\s+(?:Mr|Ms|Mrs|Dr)\.?\s+{_PERSON_NAME}", _always),
    ("line", rf"(?m)^\s*{_PERSON_NAME}\s*$", _always),
)]
_PERSON_STOP = re.compile(
    r"\b(?:Agreement|Company|Confidential|Information|Section|Board|Directors?|Inc|Corporation|"
    r"Employee|Executive|Party|Parties|State|County|Court|Act|Exhibit|Article|Date|Title|Name|"
    r"Signature|President|Officer|Chief|Vice|Secretary|Trade|Secrets?|Materials?|Period|"
    r"Business|Services|Street|Avenue|Road|Suite|Drive|Boulevard|LLC|Ltd|Group|Holdings|Plan|"
    r"Recipient|Discloser|Disclosing|Receiving|Evaluation|Material|Representatives?|Purpose|"
    r"Effective|Notice|Term|Laws?|United|States|America|New|North|South|West|East|Page|The|By)\b")


def _trim_company(text: str) -> str | None:
    """Drop leading words that are not part of a name; None if nothing name-like is left."""
    words = text.split()
    while words and (words[0].strip(",").lower() in _LEADING_NOISE or words[0].islower()):
        words.pop(0)
    if len(words) < 2 and not (words and re.fullmatch(r"[A-Z0-9][\w.\-]*", words[0])):
        return None
    name = " ".join(words)
    if len(words) == 1 or words[0].lower() in _CONNECTORS:
        return None
    return name


def _company_mentions(text: str) -> list[tuple[str, int, int, str]]:
    found = []
    for match in _COMPANY.finditer(text):
        raw = match.group(1)
        # A name crosses a line break only inside running text; otherwise the last line wins.
        variants = {raw}
        if "\n" in raw:
            variants.add(raw.rsplit("\n", 1)[1])
        for variant in variants:
            name = _trim_company(variant)
            if name is None:
                continue
            end = match.end(1)
            start = end - len(variant) + variant.find(name.split()[0])
            kind = "company_multiline" if "\n" in variant else "company"
            found.append((" ".join(name.split()), start, end, kind))
            if text[max(start - 4, 0):start] == "The ":  # 'The Hershey Company' is its name
                found.append(("The " + " ".join(name.split()), start - 4, end, "company_the"))
    return found


def _person_mentions(text: str) -> list[tuple[str, int, int, str]]:
    found = []
    for kind, pattern, needed in _PERSON_CONTEXTS:
        if not needed(text):
            continue
        for match in pattern.finditer(text):
            name = " ".join(match.group(1).split())
            if _PERSON_STOP.search(name) or name.isupper() and kind == "line" and len(name) < 6:
                continue
            found.append((name, match.start(1), match.end(1), f"person_{kind}"))
    return found


def party_candidates(text: str) -> list[Candidate]:
    """Every organisation and person that could be a party, grouped by Kleister token."""
    return group("party", _company_mentions(text) + _person_mentions(text))
